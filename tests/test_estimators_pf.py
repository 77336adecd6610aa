"""A weighted estimator whose ESS collapses recovers and warns, never NaN."""

import jax
import numpy as np
import optax
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.datasets import vbm_problem
from numpyro_ugm.estimators.base import normalize


def test_normalize_never_returns_nan():
    import jax.numpy as jnp
    for bad in (jnp.array([jnp.nan, 0.0, 1.0]), jnp.full(3, -jnp.inf),
                jnp.array([jnp.inf, 0.0, 0.0]), jnp.full(3, jnp.nan)):
        out = np.asarray(normalize(bad))
        assert not np.any(np.isnan(out))
        assert abs(np.logaddexp.reduce(out)) < 1e-5


def test_collapsing_ess_recovers_and_warns():
    _, train, _ = vbm_problem(jax.random.PRNGKey(0), 10, 200, 10)
    # a huge step makes the weights of consecutive parameters degenerate
    learner = ugm.MLE(ugm.models.vbm, ugm.PF(20, ess_threshold=0.5), optax.sgd(3.0))
    with pytest.warns(RuntimeWarning, match="collapsed"):
        result = learner.run(jax.random.PRNGKey(1), 30, train, 10, progress_bar=False)
    d = result.diagnostics
    assert np.min(d["ess"]) < 1.5
    assert np.all(np.isfinite(d["grad_norm"]))
    assert all(np.all(np.isfinite(np.asarray(v))) for v in jax.tree.leaves(result.params))
    # the collapsed step resampled and rejuvenated, and the weights were sound after
    assert d["rejuvenated"][np.argmin(d["ess"])] == 1
    assert np.all(d["ess"][np.argmin(d["ess"]) + 1:] >= 1.0)


class ZeroWeightPCD(ugm.PCD):
    """PCD whose first particle has weight exactly zero (log weight −inf), as after an
    underflow in a tempering step."""

    def update(self, rng_key, state, m, params, data):
        state, particles, info = super().update(rng_key, state, m, params, data)
        log_weights = normalize(particles.log_weights.at[0].set(-np.inf))
        return state, particles._replace(log_weights=log_weights), info


def test_zero_weight_particles_are_not_a_failure():
    """A log weight of −inf is a particle of weight zero, not a non-finite step; NaN
    still is."""
    _, train, _ = vbm_problem(jax.random.PRNGKey(0), 6, 50, 10)
    learner = ugm.MLE(ugm.models.vbm, ZeroWeightPCD(8), optax.sgd(0.1))
    result = learner.run(jax.random.PRNGKey(1), 5, train, 6, progress_bar=False)
    assert int(result.state.failed_at) == -1 and int(result.state.step) == 5
    assert np.all(np.isfinite(result.diagnostics["grad_norm"]))
