"""Block Gibbs on a 64x64 periodic Ising grid: numpyro_ugm, the hand-written plain-JAX
checkerboard sampler of ``bench_gibbs_grid.py`` and thrml's two-colour block Gibbs
(Extropic's ``thrml``, from PyPI), timed interleaved in the same run.

The model is the one of ``bench_gibbs_grid.py``: spins x ∈ {-1, +1}^(L×L) on a torus,

    log p(x) = J Σ (x · roll(x, 1, 0) + x · roll(x, 1, 1)) + h Σ x + const,

J = 0.4, h = 0.05, 256 chains, 20 sweeps per jitted call; ours and plain JAX are imported
from that script (not copied). For thrml the same model is an ``IsingEBM`` with one
``SpinNode`` per site, the 2 L² nearest-neighbour edges of the torus (weights J), biases h
and beta = 1 (thrml's energy is -beta (Σ b_i s_i + Σ J_ij s_i s_j), so exp(-energy) is the
same density), sampled by an ``IsingSamplingProgram`` whose two free blocks are the two
checkerboard colours, visited in order, as ours and plain JAX do. One timed call is
``thrml.sample_states`` with ``SamplingSchedule(n_warmup=sweeps, n_samples=1)``, vmapped
over the chains (thrml keeps no batch axis itself) and jitted.

What differs between the three:

* state: ours holds float ±1 spins in an (L, L) array, plain JAX two packed (L, L/2)
  float sublattices, thrml one boolean vector per colour (True = +1);
* neighbour sums: ours and plain JAX use shifts of the grid (rolls); thrml knows no
  lattice: it gathers each node's neighbours through index tables built from the edge
  list (one weight per edge, all equal to J here) and sums weight × spin;
* random numbers: plain JAX draws one 32-bit word per update, thrml calls
  ``jax.random.bernoulli`` (a float uniform per update), with keys split per block and
  sweep its own way; ours as in ``bench_gibbs_grid.py``. All use JAX's default PRNG;
* thrml's ``sample_states`` also reads the final state out through its ``StateObserver``
  once per call (a gather of all L² spins, once per 20 sweeps).

The rate is spin updates per second (chains × L² × sweeps / median seconds of
``--repeats`` interleaved timed calls, ``_report.timeit_many``); all samplers start from
the same states and are burnt in first. As a check that all sample the same
distribution, the mean energy per spin (-log p / L², over chains) of the final states and
its standard error are printed for each, with the pairwise differences in standard
errors.

Run: ``python benchmarks/bench_ising_thrml.py``; without thrml it says so and times ours
and plain JAX only (``pip install -e '.[bench]'`` or ``pip install thrml``).
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from _report import report, timeit_many
from bench_gibbs_grid import energy_per_spin, hand_written, ours


def thrml_sampler(thrml, size, J, h, chains, sweeps):
    """thrml's two-colour block Gibbs on the torus; returns (run, pack, unpack), where
    ``pack`` turns (chains, L, L) ±1 spins into thrml's per-colour boolean block states
    and ``unpack`` does the reverse."""
    from thrml.models import IsingEBM, IsingSamplingProgram

    n = size * size
    nodes = [thrml.SpinNode() for _ in range(n)]
    site = np.arange(n).reshape(size, size)
    edges = [(nodes[site[i, j]], nodes[site[(i + di) % size, (j + dj) % size]])
             for i in range(size) for j in range(size) for di, dj in ((1, 0), (0, 1))]
    ebm = IsingEBM(nodes, edges, jnp.full(n, h, jnp.float32),
                   jnp.full(len(edges), J, jnp.float32), jnp.array(1.0, jnp.float32))

    colour = (np.arange(size)[:, None] + np.arange(size)[None, :]).ravel() % 2
    index = [np.flatnonzero(colour == c) for c in (0, 1)]
    blocks = [thrml.Block([nodes[k] for k in idx]) for idx in index]
    program = IsingSamplingProgram(ebm, blocks, [])
    schedule = thrml.SamplingSchedule(n_warmup=sweeps, n_samples=1, steps_per_sample=1)

    def one_chain(key, state):
        out = thrml.sample_states(key, program, schedule, list(state), [], blocks)
        return [o[0] for o in out]  # drop the n_samples axis

    @jax.jit
    def run(rng_key, state):
        return jax.vmap(one_chain)(jax.random.split(rng_key, chains), state)

    def pack(x):
        flat = x.reshape(x.shape[0], n)
        return [flat[:, idx] > 0 for idx in index]

    def unpack(state):
        flat = jnp.zeros((state[0].shape[0], n), jnp.float32)
        for idx, s in zip(index, state):
            flat = flat.at[:, idx].set(2.0 * s.astype(jnp.float32) - 1.0)
        return flat.reshape(-1, size, size)

    return run, pack, unpack


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--chains", type=int, default=256)
    parser.add_argument("--sweeps", type=int, default=20, help="sweeps per timed call")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--burnin", type=int, default=4, help="untimed calls first")
    parser.add_argument("--J", type=float, default=0.4)
    parser.add_argument("--h", type=float, default=0.05)
    parser.add_argument("--no-thrml", action="store_true", help="time ours and plain JAX only")
    args = parser.parse_args()
    L, C, S, J, h = args.size, args.chains, args.sweeps, args.J, args.h

    try:
        if args.no_thrml:
            raise ImportError
        import thrml
    except ImportError:
        thrml = None
        print("thrml is not installed (or --no-thrml): skipping its column "
              "(pip install -e '.[bench]')")

    t0 = time.perf_counter()
    m, run_ours, x0 = ours(L, J, h, C, S)
    run_plain, pack_plain, unpack_plain = hand_written(L, J, h, C, S)
    samplers = {"ours": (lambda k, s: {"x": run_ours(k, s)}, lambda x: {"x": x},
                         lambda s: s["x"]),
                "plain JAX": (run_plain, pack_plain, unpack_plain)}
    if thrml is not None:
        samplers["thrml"] = thrml_sampler(thrml, L, J, h, C, S)
    print(f"built in {time.perf_counter() - t0:.1f} s (ours: {len(m.target().blocks)} blocks)")

    key = jax.random.PRNGKey(0)
    state = {}
    t0 = time.perf_counter()
    for name, (run, pack, _) in samplers.items():  # compile + burn in, same start
        state[name] = pack(x0["x"])
        for _ in range(1 + args.burnin):
            key, sub = jax.random.split(key)
            state[name] = jax.block_until_ready(run(sub, state[name]))
    print(f"compiled and burnt in ({(1 + args.burnin) * S} sweeps) in "
          f"{time.perf_counter() - t0:.1f} s")

    keys = iter(jax.random.split(key, 1000 * len(samplers)))

    def timed(name):
        run = samplers[name][0]

        def call():
            state[name] = jax.block_until_ready(run(next(keys), state[name]))
        return call

    sec = timeit_many({name: timed(name) for name in samplers}, args.repeats, warmup=0)

    updates = C * L * L * S
    rate = {name: updates / s for name, s in sec.items()}
    energy = {name: energy_per_spin(samplers[name][2](state[name]), J, h) for name in samplers}
    print(f"{L}x{L} periodic Ising grid, J={J}, h={h}, {C} chains, {S} sweeps per call, "
          f"median of {args.repeats} interleaved, backend {jax.default_backend()}"
          + (f", thrml {thrml.__version__}" if thrml is not None else ""))
    print(f"{'sampler':<12}{'spin updates/s':>16}{'ms / call':>11}{'energy per spin':>22}")
    for name in samplers:
        e, se = energy[name]
        print(f"{name:<12}{rate[name]:>16.3e}{1e3 * sec[name]:>11.1f}"
              f"{e:>+14.4f} ± {se:.4f}")
    names = list(samplers)
    worst = 0.0
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            z = (energy[a][0] - energy[b][0]) / np.hypot(energy[a][1], energy[b][1])
            worst = max(worst, abs(z))
            print(f"  energy {a} - {b}: {z:+.2f} standard errors")
    print(f"  energies {'agree' if worst < 4 else 'DISAGREE'} (largest |difference| "
          f"{worst:.2f} standard errors)")

    r_plain = rate["ours"] / rate["plain JAX"]
    print(f"ours / plain JAX = {r_plain:.2f} (spin updates per s)")
    if thrml is None:
        report(f"{L}x{L} Ising block Gibbs: ours / thrml (spin updates per s)", "skipped",
               "thrml not installed")
    else:
        r_thrml = rate["ours"] / rate["thrml"]
        print(f"ours / thrml = {r_thrml:.2f} (spin updates per s; > 1: ours faster)")
        report(f"{L}x{L} Ising block Gibbs: ours / thrml (spin updates per s)",
               f"{r_thrml:.2f}",
               f"{rate['ours']:.2e} vs {rate['thrml']:.2e}; thrml {thrml.__version__}; "
               f"> 1: ours faster; energies within {worst:.1f} s.e.")
    report(f"{L}x{L} Ising block Gibbs: ours / plain JAX, with thrml run "
           "(spin updates per s)", f"{r_plain:.2f}",
           f"{rate['ours']:.2e} vs {rate['plain JAX']:.2e}, median of {args.repeats}")


if __name__ == "__main__":
    main()
