"""Block Gibbs and Metropolis on a periodic Ising grid: numpyro_ugm's generic samplers
against hand-written plain-JAX checkerboard samplers, timed in the same run.

The model is declared as an ordinary numpyro model,

    f(x) = J Σ (x · roll(x, 1, 0) + x · roll(x, 1, 1)) + h Σ x,   x ∈ {-1, +1}^(L×L),

and ``ugm.kernels.gibbs()`` / ``ugm.kernels.metropolis()`` find the checkerboard coloring
from the model itself (Metropolis flips every spin of a colour in parallel and accepts
each flip from its local energy difference). The reference samplers know the lattice:
they keep the two sublattices packed in two (L, L/2) arrays and compute neighbour sums
with rolls, drawing one 32-bit random word per spin update (the fastest variant we could
write; all use JAX's default PRNG). Gibbs draws each spin from its conditional, Metropolis
flips it with probability min(1, exp(−2 x_i (J Σ_neighbours + h))).

All run ``--chains`` chains vmapped, ``--sweeps`` sweeps per jitted call (``lax.scan``);
the rate is spin updates per second, best of ``--repeats`` timings, all four samplers
interleaved. As a check that ours and the reference sample the same distribution, the
mean energy per spin of the final states is printed for each.

Targets: ours >= 0.6x the hand-written rate for Gibbs, >= 0.25x for Metropolis.
Run: ``python benchmarks/bench_gibbs_grid.py``.
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import numpyro

from _grid import checkerboard_packing, interleaved_best
from _report import report

import numpyro_ugm as ugm


def ising_grid(size, J, h):
    """The periodic Ising grid as a numpyro model (spins on a ``size × size`` torus)."""
    x = numpyro.sample("x", ugm.Spin((size, size)))
    numpyro.factor("couplings", J * jnp.sum(x * jnp.roll(x, 1, 0) + x * jnp.roll(x, 1, 1)))
    numpyro.factor("field", h * jnp.sum(x))


def ours(size, J, h, chains, sweeps, spec=None):
    """numpyro_ugm: ``spec`` (default ``gibbs()``) built from the model; returns (model,
    run, initial positions)."""
    m = ugm.UGM(ising_grid, size, J, h)
    kernel = (spec or ugm.kernels.gibbs(scan="systematic")).build(m.target())

    def logdensity(x):
        return m.target().log_potential({}, x)

    @jax.jit
    def run(rng_key, position):
        states = jax.vmap(kernel.init, (0, None))(position, logdensity)

        def one_sweep(states, key):
            keys = jax.random.split(key, chains)
            return jax.vmap(lambda k, s: kernel.step(k, s, logdensity)[0])(keys, states), None

        states, _ = jax.lax.scan(one_sweep, states, jax.random.split(rng_key, sweeps))
        return states.position["x"]

    position = m.target().random_state(jax.random.PRNGKey(1), (chains,))
    return m, run, position


def hand_written(size, J, h, chains, sweeps, rule="gibbs"):
    """Plain-JAX checkerboard Gibbs (``rule="gibbs"``) or Metropolis (``"metropolis"``)
    on packed sublattices; returns (run, pack, unpack).

    Sublattice ``a`` holds the sites (i, j) with i + j even, ``b`` those with i + j odd,
    both packed along j: ``a[i, k] = x[i, 2k + i % 2]``, ``b[i, k] = x[i, 2k + 1 - i % 2]``.
    The up/down neighbours of ``a[i, k]`` are ``b[i ± 1, k]``, the left/right ones
    ``b[i, k]`` and ``b[i, k - 1]`` on even rows, ``b[i, k + 1]`` on odd rows (and
    symmetrically for ``b``).
    """
    if size % 2:
        raise ValueError("the checkerboard needs an even grid size")
    even_row = (jnp.arange(size) % 2 == 0)[:, None]

    def neighbour_sum(other, row_mask):
        side = jnp.where(row_mask, jnp.roll(other, 1, -1), jnp.roll(other, -1, -1))
        return jnp.roll(other, 1, -2) + jnp.roll(other, -1, -2) + other + side

    def half_sweep(key, own, other, row_mask):
        field = 2.0 * (J * neighbour_sum(other, row_mask) + h)  # log-odds of +1
        bits = jax.random.bits(key, own.shape, jnp.uint32).astype(jnp.float32)
        if rule == "gibbs":
            return jnp.where(bits < jax.nn.sigmoid(field) * 4294967296.0, 1.0, -1.0)
        flip = bits < jnp.exp(-own * field) * 4294967296.0  # log p(-x) / p(x) = -x·field
        return jnp.where(flip, -own, own)

    @jax.jit
    def run(rng_key, packed):
        def one_sweep(carry, key):
            a, b = carry
            ka, kb = jax.random.split(key)
            a = half_sweep(ka, a, b, even_row)
            b = half_sweep(kb, b, a, ~even_row)
            return (a, b), None

        return jax.lax.scan(one_sweep, packed, jax.random.split(rng_key, sweeps))[0]

    pack, unpack = checkerboard_packing(size)
    return run, pack, unpack


def energy_per_spin(x, J, h):
    """Mean over chains of -f(x) / L², and its standard error (a statistic both samplers
    must agree on)."""
    bonds = x * jnp.roll(x, 1, -2) + x * jnp.roll(x, 1, -1)
    e = np.asarray(-jnp.sum(J * bonds + h * x, axis=(-2, -1)) / x[0].size)
    return float(e.mean()), float(e.std() / np.sqrt(len(e)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--chains", type=int, default=256)
    parser.add_argument("--sweeps", type=int, default=20, help="sweeps per timed call")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--J", type=float, default=0.4)
    parser.add_argument("--h", type=float, default=0.05)
    args = parser.parse_args()
    L, C, S = args.size, args.chains, args.sweeps

    runs, states, unpacks = {}, {}, {}
    targets = {"gibbs": 0.6, "metropolis": 0.25}
    for rule in targets:
        t0 = time.perf_counter()
        spec = getattr(ugm.kernels, rule)(scan="systematic")
        m, run_ours, x0 = ours(L, args.J, args.h, C, S, spec)
        print(f"{rule}: {len(m.target().blocks)} blocks, multilinear={m.target().structure.multilinear} "
              f"(found in {time.perf_counter() - t0:.1f} s)")
        run_ref, pack, unpack = hand_written(L, args.J, args.h, C, S, rule)
        runs[f"{rule} ours"] = lambda k, x, run=run_ours: run(k, {"x": x})
        runs[f"{rule} hand-written"] = run_ref
        states[f"{rule} ours"], states[f"{rule} hand-written"] = x0["x"], pack(x0["x"])
        unpacks[f"{rule} ours"], unpacks[f"{rule} hand-written"] = (lambda x: x), unpack

    # compile, then burn in, so that the energies below are equilibrium values
    _, states = interleaved_best(runs, states, 5, jax.random.PRNGKey(0))
    best, states = interleaved_best(runs, states, args.repeats, jax.random.PRNGKey(1))

    updates = C * L * L * S
    print(f"{L}x{L} periodic Ising grid, J={args.J}, h={args.h}, {C} chains, {S} sweeps per "
          f"call, best of {args.repeats}, backend {jax.default_backend()}")
    for rule, target in targets.items():
        rate = {who: updates / best[f"{rule} {who}"] for who in ("ours", "hand-written")}
        energy = {who: energy_per_spin(unpacks[f"{rule} {who}"](states[f"{rule} {who}"]),
                                       args.J, args.h) for who in rate}
        (e_ours, se_ours), (e_ref, se_ref) = energy["ours"], energy["hand-written"]
        ratio = rate["ours"] / rate["hand-written"]
        print(f"  {rule}: energy per spin   ours {e_ours:+.4f} ± {se_ours:.4f}   "
              f"hand-written {e_ref:+.4f} ± {se_ref:.4f}   "
              f"(z = {(e_ours - e_ref) / np.hypot(se_ours, se_ref):+.2f})")
        print(f"  {rule}: ours {rate['ours']:.3e}, hand-written {rate['hand-written']:.3e} "
              f"spin updates/s; ratio {ratio:.2f} (target >= {target}: "
              f"{'met' if ratio >= target else 'NOT met'})")
        report(f"{L}x{L} Ising block {rule}: ours / plain JAX (spin updates per s)",
               f"{ratio:.2f}", f"{rate['ours']:.2e} vs {rate['hand-written']:.2e}; "
               f"target >= {target}")


if __name__ == "__main__":
    main()
