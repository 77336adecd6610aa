"""The diagnostics the learner keeps across runs (learn/diagnostics.py): the warnings for a
running log-likelihood that is impossible (positive) or uncertain (a log Z standard error
beyond ``LOG_Z_SE_TOLERANCE``)."""

import warnings

import jax
import numpy as np
import optax
import pytest

import numpyro_ugm as ugm


@pytest.mark.slow
def test_impossible_or_uncertain_running_log_likelihood_warns(spins):
    """A running log Z below the data's log-potential (a positive log-likelihood) or with
    a standard error beyond LOG_Z_SE_TOLERANCE warns; a sound run does not. (PF's own
    log Z check, which would re-anneal, is off to let the low estimate through.)"""
    learner = ugm.MLE(ugm.models.vbm, ugm.PF(32, check_log_z=False), optax.sgd(0.01))
    state = learner.init(jax.random.PRNGKey(0), spins, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning at all
        sound = learner.run(None, 5, spins, 6, init_state=state, progress_bar=False)
    assert np.all(sound.diagnostics["log_likelihood"] < 0)
    assert np.all((sound.diagnostics["log_z_se"] > 0) & (sound.diagnostics["log_z_se"] < 1))
    low = state._replace(estimator_state=state.estimator_state._replace(
        log_z=state.estimator_state.log_z - 50.0))
    with pytest.warns(RuntimeWarning, match=r"log-likelihood was positive on 5 of 5 steps, "
                      r"first at step 0 .* impossible"):
        learner.run(None, 5, spins, 6, init_state=low, progress_bar=False)
    uncertain = state._replace(estimator_state=state.estimator_state._replace(
        log_z_var=state.estimator_state.log_z_var + 4.0))
    with pytest.warns(RuntimeWarning, match=r"standard error exceeded 1.0 nat from step 0"):
        learner.run(None, 5, spins, 6, init_state=uncertain, progress_bar=False)
