"""Iterate averaging (learn/averaging.py): the optimizer's trajectory is unchanged, the
average is the mean of the iterates from ``start`` on, it survives continued runs and
checkpoints, and misuse is an error. (That it removes Adam's noise on VBM-15:
test_estimator_defaults.py, slow.)"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import numpyro_ugm as ugm
from numpyro_ugm import checkpoint

START = 4


def learner(optimizer):
    return ugm.MLE(ugm.models.vbm, ugm.PCD(16), optimizer)


def test_trajectory_unchanged_and_average_is_the_mean_of_the_iterates(spins):
    plain = learner(optax.adam(0.05))
    wrapped = learner(ugm.averaged(optax.adam(0.05), START))
    a = plain.init(jax.random.PRNGKey(0), spins, 6)
    b = wrapped.init(jax.random.PRNGKey(0), spins, 6)
    iterates = []
    for _ in range(12):
        a, _ = plain.update(a)
        b, _ = wrapped.update(b)
        np.testing.assert_array_equal(plain.get_params(a)["W"], wrapped.get_params(b)["W"])
        iterates.append(np.asarray(b.params["W"], np.float64))  # unconstrained
    mean = np.mean(iterates[START:], axis=0)
    averaged = wrapped.get_params(b, averaged=True)
    np.testing.assert_allclose(averaged["W"], mean, rtol=1e-5, atol=1e-6)
    assert int(b.opt_state.count) == 12 - START
    # the average is not the last iterate (else the check above could not fail)
    assert np.max(np.abs(mean - iterates[-1])) > 1e-3


def test_average_survives_continued_runs_and_checkpoints(spins, tmp_path):
    one = learner(ugm.averaged(optax.adam(0.05), START))
    full = one.run(jax.random.PRNGKey(1), 20, spins, 6, progress_bar=False)
    two = learner(ugm.averaged(optax.adam(0.05), START))
    first = two.run(jax.random.PRNGKey(1), 7, spins, 6, progress_bar=False,
                    checkpoint_every=7, checkpoint_dir=tmp_path)
    state, _ = two.restore(checkpoint.step_path(tmp_path, 7), spins, 6)
    np.testing.assert_array_equal(state.opt_state.mean["W"], first.state.opt_state.mean["W"])
    rest = two.run(None, 13, spins, 6, init_state=state, progress_bar=False)
    np.testing.assert_array_equal(one.get_params(full.state, averaged=True)["W"],
                                  two.get_params(rest.state, averaged=True)["W"])


def test_misuse_is_an_error(spins):
    with pytest.raises(TypeError, match="averaged: optimizer must be an optax"):
        ugm.averaged("adam")
    with pytest.raises(ValueError, match="averaged: start must be an integer >= 0"):
        ugm.averaged(optax.adam(0.1), -1)
    plain = learner(optax.adam(0.05))
    state = plain.init(jax.random.PRNGKey(0), spins, 6)
    with pytest.raises(TypeError, match="needs an optimizer wrapped in ugm.averaged"):
        plain.get_params(state, averaged=True)
    wrapped = learner(ugm.averaged(optax.adam(0.05), START))
    state = wrapped.init(jax.random.PRNGKey(0), spins, 6)
    state, _ = wrapped.update(state)
    with pytest.raises(ValueError, match="no iterate averaged yet"):
        wrapped.get_params(state, averaged=True)
    with pytest.raises(ValueError, match="needs the current params"):
        opt = ugm.averaged(optax.sgd(0.1))
        opt.update({"a": jnp.ones(2)}, opt.init({"a": jnp.zeros(2)}))
