"""PCD-1 learning of an RBM 784x500 (batch 100, 100 chains): numpyro_ugm against a
hand-written plain-JAX PCD-1 step, timed interleaved in the same run.

Three rows, each ours / plain JAX (> 1: ours slower):

* ``MLE.update``: one public step (a prepared batch; it records the step's diagnostics
  and checks for failure on the host) against one jitted hand-written step;
* core step: the jitted ``learner.core.update`` alone (no host work) against the same;
* ``MLE.run``: a run of ``--steps`` updates on the batch (full batch, no progress bar,
  continuing from the last state), divided by its steps, against the hand-written step in
  a ``lax.scan`` of the same length.

Target (issue 14): ours <= 1.0 for ``MLE.update`` and ``MLE.run``.
Run: python benchmarks/bench_rbm_pcd.py [--repeats 50] [--steps 100]
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np
import optax

from _report import learner_step, report, timeit_many

import numpyro_ugm as ugm

V, H, BATCH, CHAINS, LR = 784, 500, 100, 100, 0.01


def plain_jax_pcd_step():
    """The textbook PCD-1 step written directly in JAX (sampling h|v then v|h)."""

    def step(params, chains, batch, key):
        W, b, c = params
        k1, k2 = jax.random.split(key)
        h_data = jax.nn.sigmoid(batch @ W + c)
        h = (jax.random.uniform(k1, (CHAINS, H)) < jax.nn.sigmoid(chains @ W + c)).astype(
            jnp.float32)
        v = (jax.random.uniform(k2, (CHAINS, V)) < jax.nn.sigmoid(h @ W.T + b)).astype(
            jnp.float32)
        h_model = jax.nn.sigmoid(v @ W + c)
        gW = batch.T @ h_data / BATCH - v.T @ h_model / CHAINS
        gb = batch.mean(0) - v.mean(0)
        gc = h_data.mean(0) - h_model.mean(0)
        return (W + LR * gW, b + LR * gb, c + LR * gc), v

    return jax.jit(step)


def plain_jax_pcd_run(num_steps):
    """``num_steps`` hand-written PCD-1 steps on one batch in a ``lax.scan``."""
    step = plain_jax_pcd_step()

    @jax.jit
    def run(params, chains, batch, key):
        def body(carry, step_key):
            return step(*carry, batch, step_key), None

        return jax.lax.scan(body, (params, chains), jax.random.split(key, num_steps))[0]

    return run


def load_data(num):
    try:
        from numpyro_ugm.datasets import binarized_mnist
        return binarized_mnist("train")[:num]
    except Exception:  # synthetic data when the shipped set is absent
        return (np.random.default_rng(0).random((num, V)) < 0.13).astype(np.int8)


def timeit_pair(fn_a, fn_b, repeats):
    """Median seconds of each, timed interleaved so both see the same machine load."""
    t = timeit_many({"a": fn_a, "b": fn_b}, repeats)
    return t["a"], t["b"]


def main(repeats=50, num_steps=100):
    data = load_data(BATCH)
    key = jax.random.PRNGKey(0)

    step, run = plain_jax_pcd_step(), plain_jax_pcd_run(num_steps)
    params = (0.01 * jax.random.normal(key, (V, H)), jnp.zeros(V), jnp.zeros(H))
    chains = (jax.random.uniform(key, (CHAINS, V)) < 0.5).astype(jnp.float32)
    batch = jnp.asarray(data, jnp.float32)
    plain_state = [params, chains]

    def plain():
        plain_state[0], plain_state[1] = step(*plain_state, batch, key)
        jax.block_until_ready(plain_state[0])

    def plain_run():
        plain_state[0], plain_state[1] = run(*plain_state, batch, key)
        jax.block_until_ready(plain_state[0])

    learner = ugm.MLE(ugm.models.rbm, ugm.PCD(CHAINS, num_mcmc_steps=1), optax.sgd(LR))
    ours_state = [learner.init(key, {"v": data}, V, H)]
    core_state = list(ours_state)  # the core step's own chain: update() continues its own
    prepared = learner.prepare({"v": data})

    def update():
        ours_state[0], _ = learner.update(ours_state[0], prepared)
        jax.block_until_ready(ours_state[0].params)

    def core():
        core_state[0], _ = learner_step(learner, core_state[0], prepared.batch)
        jax.block_until_ready(core_state[0].params)

    def ours_run():
        ours_state[0] = learner.run(key, num_steps, {"v": data}, V, H, progress_bar=False,
                                    init_state=ours_state[0]).state
        jax.block_until_ready(ours_state[0].params)

    t = timeit_many({"plain": plain, "update": update, "core": core}, repeats)
    t.update(timeit_many({"plain run": plain_run, "run": ours_run},
                         max(3, repeats // 10)))
    t["plain run"] /= num_steps
    t["run"] /= num_steps
    rows = [("plain JAX step (hand-written)", "plain"), ("MLE.update", "update"),
            ("core step (learner.core.update)", "core"),
            ("plain JAX lax.scan, per step", "plain run"),
            (f"MLE.run ({num_steps} steps), per step", "run")]
    print(f"{'implementation':<40}{'ms / PCD-1 update':>20}")
    for label, name in rows:
        print(f"{label:<40}{1e3 * t[name]:>20.2f}")
    for label, ours, plain_name, target in (
            ("MLE.update", "update", "plain", "target <= 1.0"),
            ("core step", "core", "plain", "no host work"),
            (f"MLE.run ({num_steps} steps)", "run", "plain run", "target <= 1.0")):
        ratio = t[ours] / t[plain_name]
        print(f"ratio {label} / plain = {ratio:.2f}  ({target})")
        report(f"RBM 784x500 PCD-1 update, {label}: ours / plain JAX (time)", f"{ratio:.2f}",
               f"{1e3 * t[ours]:.2f} vs {1e3 * t[plain_name]:.2f} ms per update, median; "
               f"{target}")
    return t["update"] / t["plain"], t["run"] / t["plain run"]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--steps", type=int, default=100, help="steps per MLE.run")
    args = parser.parse_args()
    main(args.repeats, args.steps)
