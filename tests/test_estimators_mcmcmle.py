"""MCMC-MLE (estimators/mcmcmle.py): when a round starts (the gradient vanished, the ESS
fell below the restart threshold, ``reset_every``) and what the new round starts from
(resampled or carrying the weights). (Its log Z and gradient against exact enumeration:
test_estimators_base.py; the update it shares with PF: test_estimators_reweighting.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from helpers.paths import vbm8_path as vbm8

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact


@pytest.mark.slow
def test_mcmcmle_starts_a_round_when_the_gradient_vanishes():
    """The PF paper's criterion: a round ends at the importance-sampled optimum (mean
    absolute gradient below ``gradient_tol``), which the learner reports through
    ``Estimator.record_gradients``; the learner's core hands it the gradient it took."""
    m, start, _ = vbm8()
    est = ugm.MCMCMLE(16, num_mcmc_steps=1, restart_threshold=0.0, gradient_tol=0.05,
                      check_log_z=False)  # the check has tests of its own
    state = jax.jit(lambda key: est.init(key, m.target(), start, None))(jax.random.PRNGKey(0))
    update = jax.jit(lambda key, s: est.update(key, s, m.target(), start, None))
    grads = jax.tree.map(jnp.ones_like, start)
    for scale, expected in ((1.0, 0.0), (0.01, 1.0)):
        observed = est.record_gradients(state, jax.tree.map(lambda g: scale * g, grads))
        np.testing.assert_allclose(float(observed.gradient), scale, rtol=1e-6)
        _, _, info = update(jax.random.PRNGKey(1), observed)
        assert float(info.rejuvenated) == expected
    learner = ugm.MLE(ugm.models.vbm, est, optax.sgd(0.01))
    data = exact.sample(m, start, jax.random.PRNGKey(3), 50)
    learned = learner.init(jax.random.PRNGKey(2), data, 8)
    learned, info = learner.update(learned)
    mean_abs = float(learned.estimator_state.gradient)
    assert 0 < mean_abs < float(info.grad_norm)


def frozen_mcmcmle_round(estimator, down_offset, num_up=8):
    """One MCMC-MLE update that starts a round, on a strongly coupled VBM-8 whose sweeps
    flip no spin (two frozen modes, all up and all down): ``num_up`` of the 16 chains
    are up, and the anchor free energies give each down chain e^-down_offset of an up
    chain's weight. Returns the new state, the particles and the spins."""
    m = ugm.UGM(ugm.models.vbm, 8, fields=False)
    params = {"W": jnp.full((8, 8), 3.0)}
    state = jax.jit(lambda key: estimator.init(key, m.target(), params, None))(
        jax.random.PRNGKey(0))
    up = jnp.where(jnp.arange(16)[:, None] < num_up, 1, -1) * jnp.ones(8, jnp.int32)
    position = {"x": up.astype(state.position["x"].dtype)}
    energy = m.target().free_energies(params, position) + jnp.where(up[:, 0] < 0, down_offset, 0.0)
    state = state._replace(position=position, anchor_free_energy=energy.astype(
        state.anchor_free_energy.dtype))
    update = jax.jit(lambda key, s: estimator.update(key, s, m.target(), params, None))
    new_state, particles, info = update(jax.random.PRNGKey(1), state)
    assert float(info.rejuvenated) == 1.0
    spins = np.asarray(new_state.position["x"])
    assert np.all(np.abs(spins.sum(axis=1)) == 8)  # one sweep flipped no spin
    return new_state, particles, spins


@pytest.mark.slow
def test_mcmcmle_resamples_a_round_whose_ess_is_low():
    """Four chains up, twelve down with weights of e^-10 (ESS about 4 of 16, below the
    default resample_threshold 0.9): the round starts from the sample resampled by the
    weights, so every chain is up and the weights are equal again (as drawn, or with
    the weights carried, three quarters would be down)."""
    est = ugm.MCMCMLE(16, num_mcmc_steps=1, restart_threshold=0.9, check_log_z=False)
    _, particles, spins = frozen_mcmcmle_round(est, 10.0, num_up=4)
    assert np.all(spins == 1)
    np.testing.assert_allclose(np.exp(np.asarray(particles.log_weights)), 1 / 16, rtol=1e-5)


@pytest.mark.parametrize("resample_threshold", [pytest.param(0.9, marks=pytest.mark.slow), None])
def test_mcmcmle_carries_the_weights_into_a_round_whose_ess_is_high(resample_threshold):
    """Weights of e^-0.5 for the down chains (ESS 15.1 of 16, above 0.9·16) and a round
    forced by reset_every=1: the chains stay as they are, and the new round keeps their
    weights (the paper's rounds, resample_threshold=None, make them equal and lose the
    mass the weights had moved)."""
    est = ugm.MCMCMLE(16, num_mcmc_steps=1, reset_every=1,
                      resample_threshold=resample_threshold, check_log_z=False)
    state, particles, spins = frozen_mcmcmle_round(est, 0.5)
    np.testing.assert_array_equal(spins[:, 0], np.repeat([1, -1], 8))
    weights = np.exp(np.asarray(particles.log_weights))
    expected = (np.repeat([1.0, np.exp(-0.5)], 8) if resample_threshold is not None
                else np.ones(16))
    np.testing.assert_allclose(weights, expected / expected.sum(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(state.anchor_log_weights),
                               np.asarray(particles.log_weights))
