"""The block sweep behind the Gibbs and Metropolis kernels (kernels/blocks.py): with more
blocks than ``max_unrolled`` it scans padded tables, and still draws the exact
distribution's moments; new values merged by scatter (more blocks than a merge table
holds) are the draws of the gather merge, bit for bit; a lattice GMRF's sweep (real
sites: standard normals inverted once per sweep) is the checkerboard sweep written out.
(The kernels' distributions on every kind of model: test_kernels_gibbs.py,
test_kernels_metropolis.py.)"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers.states import GIBBS, GIBBS_RANDOM, all_states, exact_log_probs, random_params, run_chains

import numpyro_ugm as ugm


@functools.lru_cache(maxsize=None)
def vbm18_model():
    """18 spins (18 blocks > max_unrolled) and their parameters."""
    m = ugm.UGM(ugm.models.vbm, 18)
    return m, random_params(m, 6, {"W": 0.2, "b": 0.3})


@functools.lru_cache(maxsize=None)
def vbm18():
    """``vbm18_model`` with its exact moments E[x_i] and E[x_i x_j] (2^18 states)."""
    m, params = vbm18_model()
    states = all_states(m)
    p = np.exp(exact_log_probs(m, params))
    x = states["x"].astype(np.float64)
    mean = p @ x
    second = np.einsum("s,si,sj->ij", p, x, x)
    return m, params, mean, second


def moment_z_scores(mean, second, draws):
    """z-scores of the empirical E[x_i] and E[x_i x_j] (i < j) of i.i.d. spin draws."""
    x = np.asarray(draws, np.float64)
    n = len(x)
    iu = np.triu_indices(len(mean), 1)
    z_mean = (x.mean(0) - mean) / np.sqrt((1 - mean ** 2) / n)
    emp = (x.T @ x / n)[iu]
    z_pair = (emp - second[iu]) / np.sqrt((1 - second[iu] ** 2) / n)
    return np.concatenate([z_mean, z_pair])


@pytest.mark.slow
@pytest.mark.parametrize("spec", [GIBBS, GIBBS_RANDOM])
def test_more_blocks_than_unrolled(spec):
    m, params, mean, second = vbm18()
    assert len(m.target().blocks) == 18 > spec.max_unrolled
    num = 10000
    _, final, _ = run_chains(m, params, spec, num, 25)
    z = moment_z_scores(mean, second, final["x"])
    assert np.max(np.abs(z)) < 5.0, f"max |z| = {np.max(np.abs(z)):.2f} over {len(z)} moments"
    if spec is GIBBS:  # the same check rejects a run at the wrong temperature
        _, wrong, _ = run_chains(m, params, spec, num, 25, beta=0.75)
        assert np.max(np.abs(moment_z_scores(mean, second, wrong["x"]))) > 5.0


def test_scatter_merge_of_many_blocks_draws_what_the_gather_merge_draws(monkeypatch):
    """Models with more blocks than a merge table can hold (an ERGM's single-dyad blocks),
    or with small blocks (an ERGM's matchings), merge new values by scatter: the draws
    are the same, bit for bit."""
    from numpyro_ugm.kernels import blocks
    from numpyro_ugm.kernels.base import step_chains

    m, params = vbm18_model()  # 18 blocks > max_unrolled: padded tables
    start = m.target().random_state(jax.random.PRNGKey(0), (8,))

    def draws():
        kernel = ugm.kernels.gibbs().build(m.target())
        states = jax.vmap(kernel.init)(start)
        step = jax.jit(lambda k, s: step_chains(kernel, k, s, m.target().logdensity_fn(params)))
        return np.asarray(step(jax.random.PRNGKey(1), states)[0].position["x"])

    scattered_small = draws()  # 18 single-variable blocks: small ones
    monkeypatch.setattr(blocks, "SMALL_BLOCK_RATIO", 0)
    gathered = draws()
    monkeypatch.setattr(blocks, "MAX_MERGE_TABLE", 0)
    scattered = draws()
    np.testing.assert_array_equal(gathered, scattered)
    np.testing.assert_array_equal(gathered, scattered_small)
    assert not np.array_equal(gathered, np.asarray(start["x"]))


@pytest.mark.parametrize("looped", [False, True])
def test_lattice_gmrf_sweep_is_the_exact_checkerboard_sweep(monkeypatch, looped):
    """One Gibbs sweep of 3 chains of lattice_gmrf (block Metropolis too: its Gaussian
    draws are exact) is the checkerboard sweep written out, from the sweep's uniforms as
    the kernel lays them out (one draw, the first colour's variables then the second's):
    x_i ← ρ · mean of the 4 neighbours + ndtri(u_i) / √κ, colour by colour. The exact
    conditionals, and the numbers the kernel drew before it inverted a sweep's uniforms
    in one pass; ``looped``: the same with that pass in a loop over two halves (as for
    large lattices)."""
    from jax.scipy.special import ndtri

    from numpyro_ugm.kernels import blocks
    from numpyro_ugm.kernels.base import init_chains, step_chains

    if looped:
        monkeypatch.setattr(blocks, "MIN_LOOPED_NORMALS", 1)

    size, kappa, rho, chains = 6, 1.7, 0.6, 3
    target = ugm.UGM(ugm.models.lattice_gmrf, size).target()
    logdensity = target.logdensity_fn({"kappa": np.float32(kappa), "rho": np.float32(rho)})
    x = np.asarray(target.random_state(jax.random.PRNGKey(0), (chains,))["x"], np.float64)
    key = jax.random.PRNGKey(1)
    uniforms = np.asarray(jax.random.uniform(key, (chains, size * size), np.float32))
    expected, start = x.reshape(chains, -1).copy(), 0
    for block in target.blocks:
        idx = np.asarray(block["x"])
        grid = expected.reshape(chains, size, size)
        neighbours = sum(np.roll(grid, s, a) for s in (1, -1) for a in (1, 2))
        u = uniforms[:, start:start + len(idx)].astype(np.float64)
        expected[:, idx] = (0.25 * rho * neighbours.reshape(chains, -1)[:, idx]
                            + np.asarray(ndtri(u)) / np.sqrt(kappa))
        start += len(idx)
    for spec in (ugm.kernels.gibbs(), ugm.kernels.metropolis()):
        kernel = spec.build(target)
        step = jax.jit(lambda k, s: step_chains(kernel, k, s, logdensity)[0].position["x"])
        drawn = step(key, init_chains(kernel, {"x": jnp.asarray(x, jnp.float32)}, logdensity))
        np.testing.assert_allclose(np.asarray(drawn).reshape(chains, -1), expected,
                                   rtol=1e-5, atol=1e-5)


def test_looped_normals_of_an_odd_run_are_the_plain_ones(monkeypatch):
    """A sparse GMRF of 5 units (5 single-unit blocks: a run of 5 normals, padded to two
    halves when looped) steps to the same states, bit for bit, whether its normals are
    inverted in a loop over two halves or in one pass."""
    from numpyro_ugm.kernels import blocks
    from numpyro_ugm.kernels.base import init_chains, step_chains

    target = ugm.UGM(ugm.models.sparse_gmrf, 5).target()
    chol = np.tril(np.random.default_rng(0).normal(size=(5, 5)) * 0.3, -1) + np.eye(5)
    logdensity = target.logdensity_fn({"L": jnp.asarray(chol, jnp.float32)})
    start = target.random_state(jax.random.PRNGKey(0), (4,))

    def draws():
        kernel = ugm.kernels.gibbs().build(target)
        step = jax.jit(lambda k, s: step_chains(kernel, k, s, logdensity)[0].position["x"])
        return np.asarray(step(jax.random.PRNGKey(1), init_chains(kernel, start, logdensity)))

    plain = draws()
    monkeypatch.setattr(blocks, "MIN_LOOPED_NORMALS", 1)
    np.testing.assert_array_equal(draws(), plain)
