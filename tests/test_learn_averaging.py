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


def test_trajectory_unchanged_and_average_is_the_mean_of_the_iterates():
    """On a noisy quadratic, the wrapped optimizer's iterates are the plain one's, and
    the state's mean is the mean of the iterates after update START."""
    plain, wrapped = optax.adam(0.05), ugm.averaged(optax.adam(0.05), START)
    a = b = {"W": jnp.zeros((3, 2)), "b": jnp.ones(2)}
    a_state, b_state = plain.init(a), wrapped.init(b)
    grad = jax.jit(jax.grad(lambda p, key: sum(
        jnp.sum((x - 1.0 + jax.random.normal(key, x.shape)) ** 2) for x in p.values())))
    iterates = []
    for key in jax.random.split(jax.random.PRNGKey(0), 12):
        updates, a_state = plain.update(grad(a, key), a_state, a)
        a = optax.apply_updates(a, updates)
        updates, b_state = wrapped.update(grad(b, key), b_state, b)
        b = optax.apply_updates(b, updates)
        np.testing.assert_array_equal(a["W"], b["W"])
        iterates.append(jax.tree.map(lambda x: np.asarray(x, np.float64), b))
    for name in b:
        mean = np.mean([it[name] for it in iterates[START:]], axis=0)
        np.testing.assert_allclose(b_state.mean[name], mean, rtol=1e-5, atol=1e-6)
        # the average is not the last iterate (else the check above could not fail)
        assert np.max(np.abs(mean - iterates[-1][name])) > 1e-3
    assert int(b_state.count) == 12 - START and int(b_state.step) == 12


def test_average_survives_continued_runs_and_checkpoints(spins, tmp_path):
    one = learner(ugm.averaged(optax.adam(0.05), START))
    full = one.run(jax.random.PRNGKey(1), 20, spins, 6, progress_bar=False)
    two = learner(ugm.averaged(optax.adam(0.05), START))
    first = two.run(jax.random.PRNGKey(1), 7, spins, 6, progress_bar=False,
                    checkpoint_every=7, checkpoint_dir=tmp_path)
    state, _ = two.restore(checkpoint.step_path(tmp_path, 7), spins, 6)
    np.testing.assert_array_equal(state.opt_state.mean["W"], first.state.opt_state.mean["W"])
    rest = two.run(None, 13, spins, 6, init_state=state, progress_bar=False)
    averaged = one.get_params(full.state, averaged=True)
    np.testing.assert_array_equal(averaged["W"],
                                  two.get_params(rest.state, averaged=True)["W"])
    np.testing.assert_array_equal(averaged["W"], full.state.opt_state.mean["W"])
    assert not np.array_equal(averaged["W"], full.params["W"])


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
