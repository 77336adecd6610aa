"""Renamed arguments of the numpyro adapters keep working for a release, with a
DeprecationWarning that names the new spelling (the estimators' and kernels' renames are
in test_estimator_config.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.infer import UGMSampler, gibbs_fn


def test_gibbs_fn_num_steps_is_num_mcmc_steps():
    with pytest.warns(DeprecationWarning, match="'num_steps' is deprecated, use "
                                                "'num_mcmc_steps'"):
        old = gibbs_fn(ugm.models.vbm, 5, num_steps=3)
    new = gibbs_fn(ugm.models.vbm, 5, num_mcmc_steps=3)
    assert old.num_mcmc_steps == new.num_mcmc_steps == 3
    with pytest.warns(DeprecationWarning, match="num_mcmc_steps"):
        assert new.num_steps == 3
    params = {"W": 0.3 * jnp.ones((5, 5)), "b": jnp.zeros(5)}
    start = {"x": jnp.ones(5)}
    key = jax.random.PRNGKey(0)
    np.testing.assert_array_equal(old(key, start, params)["x"], new(key, start, params)["x"])
    with pytest.raises(ValueError, match="num_mcmc_steps must be an integer >= 1"):
        gibbs_fn(ugm.models.vbm, 5, num_mcmc_steps=1.5)


def test_sampler_kernel_is_keyword_only():
    spec = ugm.kernels.metropolis()
    with pytest.warns(DeprecationWarning, match="kernel=..."):
        old = UGMSampler(ugm.models.vbm, spec)
    assert old._spec == UGMSampler(ugm.models.vbm, kernel=spec)._spec
    with pytest.raises(TypeError, match="1 positional argument"):
        UGMSampler(ugm.models.vbm, spec, None, None)
