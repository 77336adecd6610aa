"""``ugm.sample`` (sampling.py): its counts are checked before any work. (Its draws are
checked against exact enumeration with the kernels: test_kernels_*.py, test_models_ergm.py.)"""

import jax
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


def test_a_second_call_reuses_the_compiled_chains():
    """Other keys, parameters, warm-up and thinning run the program
    compiled by the first call (one per model, kernel and num_samples)."""
    from conftest import TraceCounter
    from helpers import chain3, spins3

    _, params, _, _ = spins3()
    model = TraceCounter(chain3)
    m = ugm.UGM(model)
    before = model.calls
    first = ugm.sample(m, params, jax.random.PRNGKey(0), 20, num_chains=2)
    assert model.calls > before  # the first call traced the chains
    with model.unchanged("a second ugm.sample"):
        again = ugm.sample(m, jax.tree.map(lambda a: 0.5 * a, params), jax.random.PRNGKey(1),
                           20, num_chains=2, num_warmup=5, thinning=3)
    assert (first["x"] != again["x"]).any()
