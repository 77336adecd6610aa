"""``ugm.sample`` (sampling.py): its counts are checked before any work, and new counts
reuse the compiled chains without changing a number. (Its draws are checked against exact
enumeration with the kernels: test_kernels_*.py, network/test_ergm_model.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numpyro_ugm as ugm


@pytest.mark.parametrize("settings, match", [
    (dict(num_samples=10.5), "^sample: num_samples must be an integer >= 1, got 10.5"),
    (dict(num_chains=0), "^sample: num_chains must be an integer >= 1, got 0"),
    (dict(thinning=2.0), "^sample: thinning must be an integer >= 1, got 2.0"),
    (dict(num_warmup=-1), "^sample: num_warmup must be an integer >= 0, got -1"),
])
def test_counts_are_checked_not_rounded(settings, match):
    settings = {"num_samples": 10, **settings}
    with pytest.raises(ValueError, match=match):
        ugm.sample(None, {}, jax.random.PRNGKey(0), settings.pop("num_samples"), **settings)


def test_a_second_call_reuses_the_compiled_chains(count_traces):
    """Other keys, parameters, warm-up and thinning run the program
    compiled by the first call (one per model, kernel and num_samples)."""
    from helpers.models import chain3, spins3

    _, params, _, _ = spins3()
    model = count_traces(chain3)
    m = ugm.UGM(model)
    before = model.calls
    first = ugm.sample(m, params, jax.random.PRNGKey(0), 20, num_chains=2)
    assert model.calls > before  # the first call traced the chains
    with model.unchanged("a second ugm.sample"):
        again = ugm.sample(m, jax.tree.map(lambda a: 0.5 * a, params), jax.random.PRNGKey(1),
                           20, num_chains=2, num_warmup=5, thinning=3)
    assert (first["x"] != again["x"]).any()


def counted_vbm(n, traces):
    """``ugm.models.vbm(n)``, counting in ``traces`` how often it is traced."""
    traces.append(1)
    ugm.models.vbm(n)


def test_other_counts_reuse_the_compiled_chains():
    """Calls with other keys, parameters, warm-up, thinning, and numbers of draws and
    chains up to the same powers of two run the program compiled by the first call: the
    model is not traced again (it used to be, for every new num_samples or num_chains)."""
    traces = []
    m = ugm.UGM(counted_vbm, 4, traces)
    params = {"W": 0.3 * jnp.ones((4, 4)), "b": 0.2 * jnp.ones(4)}
    first = ugm.sample(m, params, jax.random.PRNGKey(0), 5, num_chains=3)
    before = len(traces)
    for num_samples, num_chains in [(6, 3), (7, 4), (8, 3), (5, 4)]:
        ugm.sample(m, params, jax.random.PRNGKey(0), num_samples, num_chains=num_chains)
    again = ugm.sample(m, jax.tree.map(lambda a: -a, params), jax.random.PRNGKey(1), 8,
                       num_chains=4, num_warmup=5, thinning=3)
    assert len(traces) == before
    assert (np.asarray(first["x"]) != np.asarray(again["x"])[:15]).any()
    ugm.sample(m, params, jax.random.PRNGKey(0), 9, num_chains=3)  # 16 draws: compiles
    assert len(traces) > before, "test is blind"


def test_padded_draws_and_chains_are_dropped():
    """The draws are those of the first chains and draws of a longer run with the same
    key: padding to powers of two changes no number."""
    m = ugm.UGM(ugm.models.vbm, 5)
    params = {"W": 0.4 * jnp.ones((5, 5)), "b": -0.1 * jnp.ones(5)}
    key = jax.random.PRNGKey(3)
    short = ugm.sample(m, params, key, 3, num_chains=3, num_warmup=2)["x"]
    long = ugm.sample(m, params, key, 10, num_chains=5, num_warmup=2)["x"]
    assert short.shape == (9, 5) and short.dtype == np.int8
    np.testing.assert_array_equal(np.reshape(short, (3, 3, 5)),
                                  np.reshape(long, (5, 10, 5))[:3, :3])


def test_init_state_is_checked():
    m = ugm.UGM(ugm.models.vbm, 3)
    params = m.init_params(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="init_state site 'x' has shape \\(2, 3\\); "
                                         "expected a leading axis of num_chains = 3"):
        ugm.sample(m, params, jax.random.PRNGKey(0), 2, num_chains=3,
                   init_state={"x": jnp.ones((2, 3))})
    with pytest.raises(KeyError, match="missing \\['x'\\], unknown \\['y'\\]"):
        ugm.sample(m, params, jax.random.PRNGKey(0), 2, init_state={"y": jnp.ones((1, 3))})
