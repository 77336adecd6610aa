"""The samplers sample the right distribution: Gibbs (kernels/gibbs.py) on every kind of
model — and Metropolis beside it where a test is parametrized over kernels.

Every check compares draws against the exact distribution computed by brute force
(``helpers``: itertools over all configurations, each evaluated with ``m.target().log_potential``). Chains start
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
from helpers.models import abs7, binary3, potts5, vbm8
from helpers.states import GIBBS, GIBBS_2, GIBBS_RANDOM, METROPOLIS, check_tv, random_params

import numpyro_ugm as ugm

# --- models ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def rbm53():
    m = ugm.UGM(ugm.models.rbm, 5, 3)
    return m, random_params(m, 5, {"W": 1.2, "b": 0.5, "c": 0.5})


# --- distribution tests ---------------------------------------------------------------


# random scan and Metropolis run by default in test_kernels_blocks.py and
# test_kernels_metropolis.py
@pytest.mark.parametrize("spec,steps", [(GIBBS, 30),
                                        pytest.param(GIBBS_RANDOM, 60, marks=pytest.mark.slow),
                                        pytest.param(METROPOLIS, 60, marks=pytest.mark.slow)])
def test_spin_vbm(spec, steps):
    m, params = vbm8()
    assert len(m.target().blocks) == 8 and m.target().structure.multilinear
    wrong = 0.75 if spec in (GIBBS, METROPOLIS) else None
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)


@pytest.mark.slow
@pytest.mark.parametrize("spec,steps", [(GIBBS, 30)])
def test_binary_third_order(spec, steps):
    m, params = binary3()
    st = m.target().structure
    assert st.multilinear
    assert len(m.target().blocks) < 7 and max(len(b["x"]) for b in m.target().blocks) > 1  # real blocks
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
    assert all(not {1, 2} <= set(np.asarray(b["x"]).tolist()) for b in m.target().blocks)
    params = m.init_params(jax.random.PRNGKey(0))
    check_tv(m, params, GIBBS, 20000, 30)


# Metropolis on a Potts model runs by default in test_kernels_metropolis.py
@pytest.mark.parametrize("spec,steps", [(GIBBS, 30),
                                        pytest.param(METROPOLIS, 40, marks=pytest.mark.slow)])
def test_categorical_potts(spec, steps):
    m, params = potts5()
    assert m.target().structure.multilinear and len(m.target().blocks) == 3  # odd ring
    wrong = 0.75 if spec is METROPOLIS else None
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)


# random scan: checked by default in test_spin_vbm and test_more_blocks_than_unrolled
@pytest.mark.parametrize("spec,steps", [(GIBBS, 30),
                                        pytest.param(GIBBS_RANDOM, 60, marks=pytest.mark.slow)])
def test_not_multilinear_exact_conditionals(spec, steps):
    m, params = abs7()
    assert not m.target().structure.multilinear  # Gibbs evaluates f at each value
    assert len(m.target().blocks) < 7  # the graph from flips still gives blocks
    wrong = 0.75 if spec is GIBBS else None
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)


@pytest.mark.parametrize("spec,steps", [(GIBBS_2, 15)])
def test_rbm_joint(spec, steps):
    m, params = rbm53()
    assert m.target().blocks == [{"v": None}, {"h": None}]
    wrong = 0.75
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)
