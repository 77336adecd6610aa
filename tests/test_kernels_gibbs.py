"""The samplers sample the right distribution: Gibbs (kernels/gibbs.py) on every kind of
model — and Metropolis beside it where a test is parametrized over kernels.

Every check compares draws against the exact distribution computed by brute force
(``helpers``: itertools over all configurations, each evaluated with ``m.log_potential``). Chains start
uniformly at random, run independently (``vmap``), and only their final states are kept,
so the draws are i.i.d. from the kernel's distribution after ``num_steps`` steps. The
total-variation threshold is the sampling noise of that many i.i.d. exact draws (mean + 6
standard deviations of the TV of multinomial samples from the exact distribution, drawn
here), and every test also shows that it can fail: the uniform starting states, and for
some models the same kernel run at a wrong temperature, exceed the threshold.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from helpers import (GIBBS, GIBBS_2, GIBBS_RANDOM, METROPOLIS, abs7, all_states, binary3,
                     check_tv, exact_log_probs, potts5, random_params, run_chains, vbm8)

import numpyro_ugm as ugm

# --- models ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def rbm53():
    m = ugm.UGM(ugm.models.rbm, 5, 3)
    return m, random_params(m, 5, {"W": 1.2, "b": 0.5, "c": 0.5})


# --- distribution tests ---------------------------------------------------------------


# random scan and Metropolis run by default in test_more_blocks_than_unrolled and
# test_kernels_metropolis.py
@pytest.mark.parametrize("spec,steps", [(GIBBS, 30),
                                        pytest.param(GIBBS_RANDOM, 60, marks=pytest.mark.slow),
                                        pytest.param(METROPOLIS, 60, marks=pytest.mark.slow)])
def test_spin_vbm(spec, steps):
    m, params = vbm8()
    assert len(m.blocks) == 8 and m.structure.multilinear
    wrong = 0.75 if spec in (GIBBS, METROPOLIS) else None
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)


@pytest.mark.slow
@pytest.mark.parametrize("spec,steps", [(GIBBS, 30)])
def test_binary_third_order(spec, steps):
    m, params = binary3()
    st = m.structure
    assert st.multilinear
    assert len(m.blocks) < 7 and max(len(b["x"]) for b in m.blocks) > 1  # real blocks
    wrong = 0.75 if spec is GIBBS else None
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)


def gated_triple():
    """x1 and x2 interact only through T·x0·x1·x2: at a domain state with x0 = 0 their
    mixed derivative is 0, and a structure probe that misses the edge would update them
    as one block (a regression: that sampler had TV ≈ 0.35 here)."""
    T = numpyro.param("T", 4.0)
    b = numpyro.param("b", jnp.array([2.0, -2.0, -2.0, 0.5]))
    x = numpyro.sample("x", ugm.Binary(4))
    numpyro.factor("triple", T * x[0] * x[1] * x[2])
    numpyro.factor("fields", b @ x)
    numpyro.factor("pair", x[0] * x[3])


def test_gated_third_order_interaction():
    m = ugm.UGM(gated_triple)
    assert all(not {1, 2} <= set(np.asarray(b["x"]).tolist()) for b in m.blocks)
    params = m.init_params(jax.random.PRNGKey(0))
    check_tv(m, params, GIBBS, 20000, 30)


# Metropolis on a Potts model runs by default in test_kernels_metropolis.py
@pytest.mark.parametrize("spec,steps", [(GIBBS, 30),
                                        pytest.param(METROPOLIS, 40, marks=pytest.mark.slow)])
def test_categorical_potts(spec, steps):
    m, params = potts5()
    assert m.structure.multilinear and len(m.blocks) == 3  # odd ring
    wrong = 0.75 if spec is METROPOLIS else None
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)


# random scan: checked by default in test_spin_vbm and test_more_blocks_than_unrolled
@pytest.mark.parametrize("spec,steps", [(GIBBS, 30),
                                        pytest.param(GIBBS_RANDOM, 60, marks=pytest.mark.slow)])
def test_not_multilinear_exact_conditionals(spec, steps):
    m, params = abs7()
    assert not m.structure.multilinear  # Gibbs evaluates f at each value
    assert len(m.blocks) < 7  # the graph from flips still gives blocks
    wrong = 0.75 if spec is GIBBS else None
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)


@pytest.mark.parametrize("spec,steps", [(GIBBS_2, 15)])
def test_rbm_joint(spec, steps):
    m, params = rbm53()
    assert m.blocks == [{"v": None}, {"h": None}]
    wrong = 0.75
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)


# --- more than max_unrolled blocks: the scanned padded-table path ---------------------


@functools.lru_cache(maxsize=None)
def vbm18():
    m = ugm.UGM(ugm.models.vbm, 18)
    params = random_params(m, 6, {"W": 0.2, "b": 0.3})
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
    assert len(m.blocks) == 18 > spec.max_unrolled
    num = 10000
    _, final, _ = run_chains(m, params, spec, num, 25)
    z = moment_z_scores(mean, second, final["x"])
    assert np.max(np.abs(z)) < 5.0, f"max |z| = {np.max(np.abs(z)):.2f} over {len(z)} moments"
    if spec is GIBBS:  # the same check rejects a run at the wrong temperature
        _, wrong, _ = run_chains(m, params, spec, num, 25, beta=0.75)
        assert np.max(np.abs(moment_z_scores(mean, second, wrong["x"]))) > 5.0



def test_scatter_merge_of_many_blocks_draws_what_the_gather_merge_draws(monkeypatch):
    """Models with more blocks than a merge table can hold (an ERGM's single-dyad blocks)
    merge new values by scatter: the draws are the same, bit for bit."""
    from numpyro_ugm.kernels import blocks
    from numpyro_ugm.kernels.base import step_chains

    m, params, _, _ = vbm18()  # 18 blocks > max_unrolled: padded tables
    start = m.target().random_state(jax.random.PRNGKey(0), (8,))

    def draws():
        kernel = ugm.kernels.gibbs().build(m.target())
        states = jax.vmap(kernel.init)(start)
        step = jax.jit(lambda k, s: step_chains(kernel, k, s, m.logdensity_fn(params)))
        return np.asarray(step(jax.random.PRNGKey(1), states)[0].position["x"])

    gathered = draws()
    monkeypatch.setattr(blocks, "MAX_MERGE_TABLE", 0)
    scattered = draws()
    np.testing.assert_array_equal(gathered, scattered)
    assert not np.array_equal(gathered, np.asarray(start["x"]))
