"""Tree-block Gibbs (``ugm.kernels.tree_gibbs()``: a grid's even rows, odd rows, even
columns, odd columns, each drawn exactly given the rest) against checkerboard Gibbs
(``ugm.kernels.gibbs()``): effective samples per second of wall time.

Models:

* a 64 × 64 Ising grid with free boundary, f(x) = β Σ_(i~j) x_i x_j, β = 0.44 (near
  the critical 0.4407 of the infinite lattice); statistics |m| (the absolute
  magnetisation per spin) and the energy Σ x_i x_j;
* the image CRF of the PF paper (``ugm.models.grid_crf`` on a noisy 32 × 32 X image, as
  in examples/pf_image_crf.py) at a reasonable parameter (``--crf-w``, ``--crf-v``:
  node weights on [1, y_i], bond weights on [1, |y_i − y_j|]); statistics the mean label
  m and the log-potential.

Both kernels run the same chains' numbers of steps (one step = one sweep), interleaved in
one process: after a burn-in, ``--rounds`` rounds each run ``--steps`` steps of every
kernel (timed, compiled beforehand), recording the statistics at every step. ESS is
numpyro's autocorrelation-based multi-chain estimate over all rounds' draws; ESS/s
divides it by the timed seconds. Also timed (Ising grid, best of 5 × 100 sweeps): the
tables kept in the chain state (``cache_tables=True``, the default) against recomputed
at every step.

Run: ``python benchmarks/bench_tree_blocks.py`` (defaults: 16 chains, 500 burn-in
sweeps, 4 rounds × 500 sweeps); ``--quick`` for a short check.
"""

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from numpyro.diagnostics import effective_sample_size

import numpyro_ugm as ugm
from numpyro_ugm.kernels.base import init_chains, step_chains
from numpyro_ugm.models import grid_crf, image_features

try:
    from _report import report
except ImportError:  # run from elsewhere
    from benchmarks._report import report


def ising(size):
    """Free-boundary Ising grid with coupling ``beta``."""
    beta = numpyro.param("beta", jnp.zeros(()))
    x = numpyro.sample("x", ugm.Spin((size, size)))
    numpyro.factor("bonds", beta * (jnp.sum(x[1:] * x[:-1]) + jnp.sum(x[:, 1:] * x[:, :-1])))


def x_image(size=32, half_width=3):
    """The X-shaped ±1 label image of examples/pf_image_crf.py."""
    r, c = np.indices((size, size))
    arms = (np.abs(r - c) <= half_width) | (np.abs(r + c - (size - 1)) <= half_width)
    return np.where(arms, 1.0, -1.0)


def runner(m, params, spec, num_chains, statistics):
    """``(init(key) -> states, run(key, states, num_steps) -> (states, stats (T, S, C)))``,
    jitted, for ``spec`` on ``m`` at ``params``."""
    target = m.target()
    kernel = spec.build(target)
    f = target.logdensity_fn(params)

    @jax.jit
    def init(key):
        return init_chains(kernel, target.random_state(key, (num_chains,)), f)

    def run(key, states, num_steps):
        def body(states, k):
            states, _ = step_chains(kernel, k, states, f)
            return states, jax.vmap(statistics)(states.position)

        return jax.lax.scan(body, states, jax.random.split(key, num_steps))

    return init, jax.jit(run, static_argnums=2)


def caching(name, m, params, args, num_steps=100, repeats=5):
    """Seconds per sweep of tree-block Gibbs with its tables kept in the chain states
    (the default) and recomputed at every step, timed interleaved."""
    out = {}
    for cache in (True, False):
        init, run = runner(m, params, ugm.kernels.tree_gibbs(cache_tables=cache),
                           args.chains, lambda x: jnp.zeros(1))
        states = init(jax.random.PRNGKey(0))
        out[cache] = (run, jax.block_until_ready(run(jax.random.PRNGKey(1), states,
                                                     num_steps)[0]))
    best = {cache: np.inf for cache in out}
    for r in range(repeats):
        for cache, (run, states) in out.items():
            t = time.perf_counter()
            jax.block_until_ready(run(jax.random.PRNGKey(r), states, num_steps))
            best[cache] = min(best[cache], (time.perf_counter() - t) / num_steps)
    load = os.getloadavg()[0]
    print(f"{name}: tables kept {best[True] * 1e3:.2f} ms/sweep, recomputed "
          f"{best[False] * 1e3:.2f} ms/sweep ({args.chains} chains, load {load:.2f})")
    report(f"tree_gibbs tables recomputed / kept, time per sweep, {name}",
           f"{best[False] / best[True]:.2f}x",
           f"{best[True] * 1e3:.2f} ms kept; {args.chains} chains; load {load:.2f}")


def compare(name, m, params, statistics, names, args, extra=()):
    """Interleaved runs of Gibbs and tree-block Gibbs (and the ``extra`` (label, spec)
    pairs); prints and reports ESS/s."""
    specs = {"gibbs": ugm.kernels.gibbs(), "tree_gibbs": ugm.kernels.tree_gibbs(),
             **dict(extra)}
    runs, states, draws, seconds = {}, {}, {}, {}
    key = jax.random.PRNGKey(args.seed)
    for label, spec in specs.items():
        init, run = runner(m, params, spec, args.chains, statistics)
        key, a, b = jax.random.split(key, 3)
        t = time.perf_counter()
        states[label] = jax.block_until_ready(run(b, init(a), args.burn_in)[0])
        jax.block_until_ready(run(b, states[label], args.steps))  # compile the round
        print(f"{name} {label}: burn-in and compilation {time.perf_counter() - t:.1f} s",
              flush=True)
        runs[label], draws[label], seconds[label] = run, [], 0.0
    order = np.random.default_rng(args.seed)
    for _ in range(args.rounds):
        for label in order.permutation(list(specs)):
            key, sub = jax.random.split(key)
            t = time.perf_counter()
            states[label], stats = jax.block_until_ready(
                runs[label](sub, states[label], args.steps))
            seconds[label] += time.perf_counter() - t
            draws[label].append(np.asarray(stats))
    load = os.getloadavg()[0]
    print(f"\n{name}: {args.chains} chains x {args.rounds * args.steps} sweeps "
          f"(load {load:.2f})")
    print(f"{'kernel':>12} {'s/sweep':>9} " + " ".join(
        f"{'ESS ' + n:>12} {'ESS/s ' + n:>14}" for n in names))
    per_second = {}
    for label in specs:
        series = np.concatenate(draws[label], 0)  # (T, C, S)
        ess = [float(effective_sample_size(np.moveaxis(series[..., k], 0, 1)))
               for k in range(len(names))]
        per_second[label] = [e / seconds[label] for e in ess]
        sweep = seconds[label] / (args.rounds * args.steps)
        print(f"{label:>12} {sweep:9.5f} " + " ".join(
            f"{e:12.1f} {r:14.1f}" for e, r in zip(ess, per_second[label])))
    for label in [s for s in specs if s != "gibbs"]:
        for k, n in enumerate(names):
            ratio = per_second[label][k] / per_second["gibbs"][k]
            report(f"{label} / checkerboard Gibbs ESS/s, {name}, {n}", f"{ratio:.2f}x",
                   f"{per_second[label][k]:.1f} vs {per_second['gibbs'][k]:.1f} ESS/s; "
                   f"{args.chains} chains x {args.rounds * args.steps} sweeps; "
                   f"load {load:.2f}")
    for label in specs:
        report(f"seconds per sweep, {name}, {label}",
               f"{seconds[label] / (args.rounds * args.steps) * 1e3:.2f} ms",
               f"{args.chains} chains; load {load:.2f}")


def main(args):
    size = args.size
    m = ugm.UGM(ising, size)
    params = {"beta": jnp.asarray(args.beta, jnp.float32)}

    def ising_stats(x):
        x = x["x"]
        energy = jnp.sum(x[1:] * x[:-1]) + jnp.sum(x[:, 1:] * x[:, :-1])
        return jnp.stack([jnp.abs(jnp.mean(x)), energy])

    name = f"Ising {size}x{size} free boundary beta={args.beta}"
    if args.model in ("both", "ising"):
        caching(name, m, params, args)
        compare(name, m, params, ising_stats, ["|m|", "energy"], args)
    if args.model == "ising":
        return

    rng = np.random.default_rng(args.seed)
    y = x_image() + rng.standard_normal((32, 32))
    node, edge = image_features(jnp.asarray(y, jnp.float32))
    crf = ugm.UGM(grid_crf, node, edge)
    crf_params = {"w": jnp.asarray(args.crf_w, jnp.float32),
                  "v": jnp.asarray(args.crf_v, jnp.float32)}
    f = crf.target().logdensity_fn(crf_params)

    def crf_stats(x):
        return jnp.stack([jnp.mean(x["x"]), f(x)])

    compare(f"image CRF 32x32 w={args.crf_w} v={args.crf_v}", crf, crf_params, crf_stats,
            ["m", "log-potential"], args,
            [("tree_gibbs(table_fields)", ugm.kernels.tree_gibbs(table_fields=True))])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--beta", type=float, default=0.44)
    parser.add_argument("--chains", type=int, default=16)
    parser.add_argument("--burn-in", type=int, default=500)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--crf-w", type=float, nargs=2, default=[0.0, 1.0])
    parser.add_argument("--crf-v", type=float, nargs=2, default=[0.9, -0.3])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--model", choices=["both", "ising", "crf"], default="both")
    args = parser.parse_args()
    if args.quick:
        args.burn_in, args.steps, args.rounds, args.chains = 50, 50, 2, 4
    main(args)
