"""Block Gibbs on a periodic Ising grid: numpyro_ugm's generic sampler against a
hand-written plain-JAX checkerboard sampler, timed in the same run.

The model is declared as an ordinary numpyro model,

    f(x) = J Σ (x · roll(x, 1, 0) + x · roll(x, 1, 1)) + h Σ x,   x ∈ {-1, +1}^(L×L),

and ``ugm.kernels.gibbs()`` finds the checkerboard coloring from the model itself. The
reference sampler knows the lattice: it keeps the two sublattices packed in two
(L, L/2) arrays and computes neighbour sums with rolls, drawing one 32-bit random word per
spin update (the fastest variant we could write; both use JAX's default PRNG).

Both run ``--chains`` chains vmapped, ``--sweeps`` sweeps per jitted call (``lax.scan``);
the rate is spin updates per second, best of ``--repeats`` interleaved timings. As a check
that both sample the same distribution, the mean energy per spin of the final states is
printed for each.

Target: ours >= 0.6x the hand-written rate. Run: ``python benchmarks/bench_gibbs_grid.py``.
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import numpyro

from _report import report

import numpyro_ugm as ugm


def ising_grid(size, J, h):
    """The periodic Ising grid as a numpyro model (spins on a ``size × size`` torus)."""
    x = numpyro.sample("x", ugm.Spin((size, size)))
    numpyro.factor("couplings", J * jnp.sum(x * jnp.roll(x, 1, 0) + x * jnp.roll(x, 1, 1)))
    numpyro.factor("field", h * jnp.sum(x))


def ours(size, J, h, chains, sweeps):
    """numpyro_ugm: ``gibbs()`` built from the model; returns (run, initial positions)."""
    m = ugm.UGM(ising_grid, size, J, h)
    kernel = ugm.kernels.gibbs(scan="systematic").build(m)

    def logdensity(x):
        return m.log_potential({}, x)

    @jax.jit
    def run(rng_key, position):
        states = jax.vmap(kernel.init, (0, None))(position, logdensity)

        def one_sweep(states, key):
            keys = jax.random.split(key, chains)
            return jax.vmap(lambda k, s: kernel.step(k, s, logdensity)[0])(keys, states), None

        states, _ = jax.lax.scan(one_sweep, states, jax.random.split(rng_key, sweeps))
        return states.position["x"]

    position = m.random_state(jax.random.PRNGKey(1), (chains,))
    return m, run, position


def hand_written(size, J, h, chains, sweeps):
    """Plain-JAX checkerboard Gibbs on packed sublattices; returns (run, pack, unpack).

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
        return jnp.where(bits < jax.nn.sigmoid(field) * 4294967296.0, 1.0, -1.0)

    @jax.jit
    def run(rng_key, packed):
        def one_sweep(carry, key):
            a, b = carry
            ka, kb = jax.random.split(key)
            a = half_sweep(ka, a, b, even_row)
            b = half_sweep(kb, b, a, ~even_row)
            return (a, b), None

        return jax.lax.scan(one_sweep, packed, jax.random.split(rng_key, sweeps))[0]

    rows = np.arange(size)[:, None]
    cols_a = 2 * np.arange(size // 2)[None, :] + rows % 2
    cols_b = 2 * np.arange(size // 2)[None, :] + 1 - rows % 2

    def pack(x):
        return x[:, rows, cols_a], x[:, rows, cols_b]

    def unpack(packed):
        a, b = packed
        x = jnp.zeros(a.shape[:1] + (size, size), a.dtype)
        return x.at[:, rows, cols_a].set(a).at[:, rows, cols_b].set(b)

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

    t0 = time.perf_counter()
    m, run_ours, x0 = ours(L, args.J, args.h, C, S)
    print(f"structure: {len(m.blocks)} blocks, multilinear={m.structure.multilinear} "
          f"(found in {time.perf_counter() - t0:.1f} s)")
    run_ref, pack, unpack = hand_written(L, args.J, args.h, C, S)
    p0 = pack(x0["x"])

    key = jax.random.PRNGKey(0)
    x_ours = jax.block_until_ready(run_ours(key, x0))  # compile + burn in
    p_ref = jax.block_until_ready(run_ref(key, p0))
    for _ in range(4):  # burn in, so that the energies below are equilibrium values
        key, k1, k2 = jax.random.split(key, 3)
        x_ours = run_ours(k1, {"x": x_ours})
        p_ref = run_ref(k2, p_ref)

    best = {"ours": np.inf, "hand-written": np.inf}
    for _ in range(args.repeats):  # interleaved, so that load from elsewhere hits both
        key, k1, k2 = jax.random.split(key, 3)
        t = time.perf_counter()
        x_ours = jax.block_until_ready(run_ours(k1, {"x": x_ours}))
        best["ours"] = min(best["ours"], time.perf_counter() - t)
        t = time.perf_counter()
        p_ref = jax.block_until_ready(run_ref(k2, p_ref))
        best["hand-written"] = min(best["hand-written"], time.perf_counter() - t)

    updates = C * L * L * S
    rate = {k: updates / v for k, v in best.items()}
    print(f"{L}x{L} periodic Ising grid, J={args.J}, h={args.h}, {C} chains, {S} sweeps per "
          f"call, best of {args.repeats}, backend {jax.default_backend()}")
    e_ours, se_ours = energy_per_spin(x_ours, args.J, args.h)
    e_ref, se_ref = energy_per_spin(unpack(p_ref), args.J, args.h)
    print(f"  energy per spin   ours {e_ours:+.4f} ± {se_ours:.4f}   "
          f"hand-written {e_ref:+.4f} ± {se_ref:.4f}")
    print(f"  ours          {rate['ours']:.3e} spin updates/s")
    print(f"  hand-written  {rate['hand-written']:.3e} spin updates/s")
    ratio = rate["ours"] / rate["hand-written"]
    print(f"  ratio ours / hand-written = {ratio:.2f} (target >= 0.6: "
          f"{'met' if ratio >= 0.6 else 'NOT met'})")
    report(f"{L}x{L} Ising block Gibbs: ours / plain JAX (spin updates per s)",
           f"{ratio:.2f}", f"{rate['ours']:.2e} vs {rate['hand-written']:.2e}; target >= 0.6")


if __name__ == "__main__":
    main()
