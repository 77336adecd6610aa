"""AIS estimates of an RBM's log Z (``ugm.ais.log_partition``): accuracy against exact
enumeration, speed against a hand-written plain-JAX AIS, compile time and peak memory.

Two RBMs with 784 visible units, trained by a few hundred PCD-1 updates on binarized MNIST
(synthetic digits-like data if the shipped set is absent), so that their weights have
structure:

* 784x12: exact log Z by enumerating the 2^12 hidden configurations (the visible units
  summed out); the AIS error is reported in units of AIS's own standard error
  (``--betas`` βs);
* 784x500: no exact value; ours and plain JAX must agree within their standard errors
  (``--large-betas`` βs, fewer, to keep the run short).

Both AIS implementations use the same base distribution (independent visible units fitted
to the data marginals, ``ugm.ais.base_rate_log_probs``; hidden units uniform), the same
number of chains and the same schedule of βs (Salakhutdinov & Murray's, shortened with
the same proportions), sum out the hidden units in the weights and
take one block-Gibbs sweep per β. They are timed interleaved in the same run (ratio
ours / plain, > 1: ours slower). Compile time (first call minus a later call) and the
growth of the peak resident memory during the first calls are measured in a fresh
process for each (``_report.first_call``); CPU only, so no device-memory statistics.

Run: python benchmarks/bench_ais.py [--chains 100] [--betas 1000] [--large-betas 300]
[--repeats 3]
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from _report import first_call, report, run_worker, timeit_many
from bench_rbm_pcd import V, load_data

import numpyro_ugm as ugm

TRAIN_EXAMPLES, TRAIN_STEPS, BATCH = 5000, 300, 100


def plain_jax_ais(num_hidden, num_chains):
    """AIS for a binary RBM written directly in JAX: p_β(v) ∝ exp((1−β) b0ᵀv + β bᵀv)
    Π_j (1 + exp(β (vᵀW + c)_j)), started from independent visible units with log-odds
    b0 (hidden units uniform at β = 0). Returns
    ``estimate(W, b, c, b0, key, betas) -> (log Z, standard error)``."""

    def log_p(v, vw, b, c, b0, beta):
        return v @ ((1.0 - beta) * b0 + beta * b) + jnp.sum(
            jax.nn.softplus(beta * (vw + c)), -1)

    @jax.jit
    def log_weights(W, b, c, b0, key, betas):
        start, key = jax.random.split(key)
        v = jax.random.bernoulli(start, jax.nn.sigmoid(b0), (num_chains, V)).astype(
            jnp.float32)

        def body(carry, xs):
            v, log_w = carry
            step_key, previous, beta = xs
            vw = v @ W
            log_w = log_w + log_p(v, vw, b, c, b0, beta) - log_p(v, vw, b, c, b0, previous)
            kh, kv = jax.random.split(step_key)
            h = jax.random.bernoulli(kh, jax.nn.sigmoid(beta * (vw + c))).astype(v.dtype)
            v = jax.random.bernoulli(kv, jax.nn.sigmoid(
                (1.0 - beta) * b0 + beta * (h @ W.T + b))).astype(v.dtype)
            return (v, log_w), None

        steps = (jax.random.split(key, betas.shape[0] - 1), betas[:-1], betas[1:])
        (_, log_w), _ = jax.lax.scan(body, (v, jnp.zeros(num_chains)), steps)
        return log_w

    def estimate(W, b, c, b0, key, betas):
        log_w = log_weights(W, b, c, b0, key, jnp.asarray(betas, jnp.float32))
        log_z0 = jnp.sum(jax.nn.softplus(b0)) + num_hidden * jnp.log(2.0)
        w = jnp.exp(log_w - jnp.max(log_w))
        return (float(log_z0 + jax.nn.logsumexp(log_w) - jnp.log(num_chains)),
                float(jnp.std(w) / (jnp.mean(w) * jnp.sqrt(num_chains))))

    return estimate


def setup(num_hidden, params=None):
    """The model (hidden units latent), its base log-probabilities fitted to the training
    data, the base's visible log-odds, and trained parameters (unless given)."""
    data = {"v": load_data(TRAIN_EXAMPLES)}
    m = ugm.UGM(ugm.models.rbm, V, num_hidden).observe(["v"])
    m.target().structure  # the one-time analysis of the model: setup, not compilation
    base = ugm.ais.base_rate_log_probs(m, data)
    b0 = base["v"][:, 1] - base["v"][:, 0]
    if params is None:
        learner = ugm.MLE(ugm.models.rbm, ugm.PCD(BATCH, num_mcmc_steps=1), optax.sgd(0.05))
        params = learner.run(jax.random.PRNGKey(num_hidden), TRAIN_STEPS, data, V,
                             num_hidden, batch_size=BATCH, progress_bar=False).params
    return m, base, b0, params


def estimators(num_hidden, num_chains, betas, params=None):
    """(ours, plain), each a callable key -> (log Z, standard error), and the params."""
    m, base, b0, params = setup(num_hidden, params)
    plain = plain_jax_ais(num_hidden, num_chains)

    def ours(key):
        r = ugm.ais.log_partition(m, params, key, num_chains, betas, base_log_probs=base)
        return float(r.log_z), float(r.stderr)

    return ours, lambda key: plain(params["W"], params["b"], params["c"], b0, key,
                                   betas), params


def worker(path, which, num_hidden, num_chains, num_betas):
    """In a fresh process: compile time and peak-memory growth of one implementation."""
    params = {k: jnp.asarray(v) for k, v in np.load(path).items()}
    fns = estimators(num_hidden, num_chains, ugm.ais.default_betas(num_betas), params)
    fn = dict(zip(("ours", "plain"), fns))[which]
    key = jax.random.PRNGKey(0)
    print(json.dumps(first_call(lambda: fn(key), repeats=1)))


def main(chains=100, repeats=3, sizes=((12, 1000), (500, 300))):
    print(f"AIS on RBMs 784xH (PCD-1, {TRAIN_STEPS} updates on {TRAIN_EXAMPLES} digits); "
          f"{chains} chains")
    header = (f"{'H':>4} {'betas':>6} {'impl':>6} {'log Z':>11} {'stderr':>7} "
              f"{'(est-exact)/se':>15} {'run s':>7} {'compile s':>9} {'peak MB':>8}")
    print(header + "\n" + "-" * len(header))
    for num_hidden, num_betas in sizes:
        ours, plain, params = estimators(num_hidden, chains, ugm.ais.default_betas(num_betas))
        exact = (float(ugm.exact.log_partition(ugm.UGM(ugm.models.rbm, V, num_hidden),
                                               params)) if num_hidden <= 20 else None)
        keys = iter(jax.random.split(jax.random.PRNGKey(1), 4 * (repeats + 1)))
        results = {"ours": [], "plain": []}
        times = timeit_many({
            "ours": lambda: results["ours"].append(ours(next(keys))),
            "plain": lambda: results["plain"].append(plain(next(keys)))}, repeats)
        with tempfile.TemporaryDirectory() as tmp:
            path = str(Path(tmp) / "params.npz")
            np.savez(path, **{k: np.asarray(v) for k, v in params.items()})
            first = {which: run_worker(__file__, "--worker", path, which, str(num_hidden),
                                       str(chains), str(num_betas))
                     for which in ("ours", "plain")}
        z = {}
        for which in ("ours", "plain"):
            log_z, se = results[which][-1]
            z[which] = (log_z - exact) / se if exact is not None else float("nan")
            f = first[which]
            print(f"{num_hidden:>4} {num_betas:>6} {which:>6} {log_z:>11.4f} {se:>7.4f} "
                  f"{z[which]:>15.2f} {times[which]:>7.3f} {f['compile']:>9.2f} "
                  f"{f['peak_mb']:>8.1f}")
        ratio = times["ours"] / times["plain"]
        (lz_o, se_o), (lz_p, se_p) = results["ours"][-1], results["plain"][-1]
        agree = (lz_o - lz_p) / np.hypot(se_o, se_p)
        if exact is not None:
            print(f"exact log Z {exact:.4f}")
            report(f"AIS, RBM 784x{num_hidden} ({chains} chains, {num_betas} betas): "
                   "(estimate - exact) / stderr, ours; plain JAX",
                   f"{z['ours']:.2f}; {z['plain']:.2f}",
                   f"stderr {se_o:.3f}; {se_p:.3f} nats")
        else:
            report(f"AIS, RBM 784x{num_hidden} ({chains} chains, {num_betas} betas): "
                   "(ours - plain JAX) / combined stderr",
                   f"{agree:.2f}",
                   f"log Z {lz_o:.2f} +- {se_o:.2f}, {lz_p:.2f} +- {se_p:.2f}")
        report(f"AIS, RBM 784x{num_hidden}: time ours / plain JAX; compile ours / plain",
               f"{ratio:.2f}; {first['ours']['compile'] / first['plain']['compile']:.2f}",
               f"run {times['ours']:.2f} vs {times['plain']:.2f} s; compile "
               f"{first['ours']['compile']:.1f} vs {first['plain']['compile']:.1f} s; "
               f"median of {repeats}")
        peaks = f"{first['ours']['peak_mb']:.0f}; {first['plain']['peak_mb']:.0f} MB"
        report(f"AIS, RBM 784x{num_hidden}: peak memory growth of the first call, ours; "
               "plain JAX", peaks, "max RSS above RSS before it, in a fresh process")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], *map(int, sys.argv[4:7]))
        sys.exit()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--betas", type=int, default=1000, help="βs for the 784x12 RBM")
    parser.add_argument("--large-betas", type=int, default=300, help="βs for 784x500")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    main(args.chains, args.repeats, ((12, args.betas), (500, args.large_betas)))
