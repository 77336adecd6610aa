"""The learning driver (learn/mle.py): estimator and optimizer checked, runs reproducible,
failures keep the last good state, weights of zero are not failures. (Data validation:
test_model_ugm.py; the per-example CRF mode: test_learn_crf.py; the running log Z of the
diagnostics against the exact one: test_estimators_base.py, its warnings:
test_learn_diagnostics.py; the reuse of the compiled steps: test_learn_setup.py and
test_learn_steps.py; agreement with exact maximum likelihood: test_end_to_end.py.)"""

import jax
import numpy as np
import optax
import pytest
from helpers.learning import make

import numpyro_ugm as ugm
from numpyro_ugm.datasets import vbm_problem
from numpyro_ugm.estimators.base import normalize
from numpyro_ugm.evaluate import exact

#: nats per case that CD-1 may fall short of the exact MLE's log-likelihood
LL_TOLERANCE = 1.0


def test_bad_estimator_and_optimizer():
    with pytest.raises(ValueError, match="num_particles"):
        ugm.PCD(0)
    with pytest.raises(ValueError, match="num_mcmc_steps must be"):
        ugm.CD(num_mcmc_steps=0)
    with pytest.raises(TypeError, match="optax"):
        ugm.MLE(ugm.models.vbm, ugm.PCD(4), "adam")
    with pytest.raises(TypeError, match="estimator"):
        ugm.MLE(ugm.models.vbm, "pcd", optax.sgd(0.1))


@pytest.mark.parametrize("settings, match", [
    (dict(num_steps=-5), "^MLE.run: num_steps must be an integer >= 0, got -5$"),
    (dict(num_steps=2.7), "^MLE.run: num_steps must be an integer >= 0, got 2.7 of type float"),
    (dict(batch_size=50.7), "^MLE: batch_size must be an integer >= 1, got 50.7"),
    (dict(batch_size=0), "^MLE: batch_size must be an integer >= 1, got 0"),
    (dict(checkpoint_every=1.5, checkpoint_dir="unused"), "^MLE.run: checkpoint_every"),
])
def test_counts_are_checked_not_rounded(spins, settings, match):
    """Issue 13: ``num_steps=2.7`` once ran 2 steps, ``-5`` none, ``batch_size=50.7``
    used 50; each is now an error naming the setting and the value."""
    settings = {"num_steps": 3, **settings}
    with pytest.raises(ValueError, match=match):
        make().run(jax.random.PRNGKey(0), settings.pop("num_steps"), spins, 6,
                   progress_bar=False, **settings)


def test_diverging_run_stops_and_keeps_last_good_state(spins):
    learner = make(lr=1e38)
    with pytest.raises(ugm.NonFiniteError) as err:
        learner.run(jax.random.PRNGKey(0), 50, spins, 6, progress_bar=False)
    e = err.value
    assert 0 <= e.step < 50
    # the last good state: before the update that made the failing step's parameters
    assert int(e.state.step) == max(e.step - 1, 0)
    params = learner.get_params(e.state)
    assert all(np.all(np.isfinite(np.asarray(v))) for v in params.values())
    assert len(e.diagnostics["grad_norm"]) == e.step + 1
    assert learner.last_state is e.state or int(learner.last_state.step) == e.step


@pytest.mark.slow
def test_same_key_same_result_with_and_without_progress_bar(spins):
    a = make().run(jax.random.PRNGKey(3), 30, spins, 6, progress_bar=False)
    b = make().run(jax.random.PRNGKey(3), 30, spins, 6, progress_bar=True)
    np.testing.assert_array_equal(a.params["W"], b.params["W"])
    np.testing.assert_array_equal(a.diagnostics["grad_norm"], b.diagnostics["grad_norm"])
    c = make().run(jax.random.PRNGKey(4), 30, spins, 6, progress_bar=False)
    assert not np.array_equal(a.params["W"], c.params["W"])
    # minibatches: the bar's pieces (one step each here) carry the epoch's order over
    learner = make()
    d, e = (learner.run(jax.random.PRNGKey(3), 30, spins, 6, batch_size=8, progress_bar=bar)
            for bar in (False, True))
    np.testing.assert_array_equal(d.params["W"], e.params["W"])
    assert not np.array_equal(a.params["W"], d.params["W"])


def test_continuing_a_run_equals_one_long_run(spins):
    learner = make()
    full = learner.run(jax.random.PRNGKey(5), 20, spins, 6, batch_size=8, progress_bar=False)
    first = learner.run(jax.random.PRNGKey(5), 12, spins, 6, batch_size=8,
                        progress_bar=False)
    rest = learner.run(None, 8, spins, 6, batch_size=8, init_state=first.state,
                       progress_bar=False)
    np.testing.assert_array_equal(full.params["W"], rest.params["W"])


def test_step_api_matches_run(spins):
    learner = make()
    state = learner.init(jax.random.PRNGKey(6), spins, 6)
    for _ in range(5):
        state, info = learner.update(state, spins)
    assert isinstance(info.estimator, ugm.estimators.PCDInfo)
    assert set(ugm.estimators.PCDInfo._fields) | {"grad_norm", "positive"} == set(
        info.diagnostics())
    run = make().run(jax.random.PRNGKey(6), 5, spins, 6, progress_bar=False)
    np.testing.assert_allclose(learner.get_params(state)["W"], run.params["W"], rtol=1e-6)


def recorded_couplings(core, state):
    return {"params/W": core.get_params(state)["W"]}


def test_thinning_keeps_every_kth_update_and_record_adds_entries(spins):
    """``run``'s public hooks (what SGMCMC is built on): ``thinning`` keeps the
    diagnostics of every k-th update, the updates unchanged; ``record`` adds what it reads
    of the state after each kept update."""
    full = make().run(jax.random.PRNGKey(2), 12, spins, 6, progress_bar=False)
    learner = make()
    thin = learner.run(jax.random.PRNGKey(2), 12, spins, 6, progress_bar=True, thinning=3,
                       record=recorded_couplings)
    np.testing.assert_array_equal(thin.params["W"], full.params["W"])
    assert set(thin.diagnostics) == set(full.diagnostics) | {"params/W"}
    for name, values in full.diagnostics.items():
        np.testing.assert_array_equal(thin.diagnostics[name], values[2::3])
    assert thin.diagnostics["params/W"].shape == (4, 6, 6)
    np.testing.assert_array_equal(thin.diagnostics["params/W"][-1], full.params["W"])
    with pytest.raises(ValueError, match=r"num_steps \(10\) must be a multiple of thinning"):
        learner.run(None, 10, spins, 6, thinning=3, init_state=thin.state)
    with pytest.raises(ValueError, match=r"checkpoint_every \(4\) must be a multiple"):
        learner.run(None, 12, spins, 6, thinning=3, init_state=thin.state,
                    checkpoint_every=4, checkpoint_dir="unused")
    with pytest.raises(ValueError, match=r"record returned \['grad_norm'\]"):
        learner.run(None, 3, spins, 6, init_state=thin.state, progress_bar=False,
                    record=lambda core, state: {"grad_norm": state.step})


def test_cd_on_rbm_with_minibatches_nears_the_exact_mle():
    """CD-1 on an RBM (16 visible, 8 hidden units summed out) with minibatches of 50 of
    300 noisy copies of 3 prototypes: its exact log-likelihood per case comes within
    LL_TOLERANCE of the exact MLE's (``fit_exact``: 1000 Adam steps by enumeration from
    the model's initial parameters). CD-1's bias and the last iterate's noise cost
    0.2-0.75 nats here over ten seeds; the start is 7 nats below, and the best model of
    independent units 4.8. (A rising positive phase, checked before, is no evidence:
    it also rises when the negative phase is lost.)"""
    rng = np.random.default_rng(1)
    proto = rng.random((3, 16)) < 0.5
    x = proto[rng.integers(0, 3, 300)] ^ (rng.random((300, 16)) < 0.05)
    data = {"v": x.astype(np.int8)}
    learner = ugm.MLE(ugm.models.rbm, ugm.CD(num_mcmc_steps=1), optax.adam(0.05))
    result = learner.run(jax.random.PRNGKey(0), 300, data, 16, 8, batch_size=50,
                         progress_bar=False)
    assert result.diagnostics["positive"].shape == (300,)
    m = ugm.UGM(ugm.models.rbm, 16, 8)
    best = ugm.fit_exact(m, data, num_steps=1000, optimizer=optax.adam(0.05))
    got = float(exact.log_likelihood(m, result.params, data))
    assert got > float(best.log_likelihood) - LL_TOLERANCE, (got, float(best.log_likelihood))
    # not blind: the start is far outside the tolerance
    start = best.trace["log_likelihood"][0]
    assert start < float(best.log_likelihood) - 5.0, start


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


def _full_precision_gaussian(n):
    import jax.numpy as jnp
    import numpyro
    x = numpyro.sample("x", ugm.Real(n))
    p = numpyro.param("P", jnp.eye(n))
    numpyro.factor("q", -0.25 * x @ (p + p.T) @ x)


@pytest.mark.slow
@pytest.mark.parametrize("estimator", [
    ugm.CD(num_mcmc_steps=1), ugm.PCD(200), ugm.PF(200), ugm.MCMCMLE(200), ugm.SMC(200),
    ugm.PSMC(200),
    ugm.PCD(200, kernel=ugm.kernels.mala(sites=("x",)))],
    ids=["cd", "pcd", "pf", "mcmcmle", "smc", "psmc", "pcd-mala"])
def test_every_estimator_learns_a_gaussian_mrf_to_the_inverse_sample_covariance(estimator):
    """The MLE of a full precision is the inverse sample covariance (exact): each
    estimator's averaged iterates reach it within 0.05 (entries of order 1), closer
    than the precision the data came from (0.14 away)."""
    n = 4
    rng = np.random.default_rng(0)
    a = rng.normal(size=(n, n))
    truth = a @ a.T / n + np.eye(n)
    x = rng.multivariate_normal(np.zeros(n), np.linalg.inv(truth), size=500)
    mle = np.linalg.inv(x.T @ x / len(x))
    assert np.abs(mle - truth).max() > 0.1  # the test can tell the two apart
    learner = ugm.MLE(_full_precision_gaussian, estimator,
                      ugm.averaged(optax.adam(0.02), 1000))
    result = learner.run(jax.random.PRNGKey(1), 3000, {"x": x}, n, progress_bar=False)
    p = np.asarray(learner.get_params(result.state, averaged=True)["P"])
    error = np.abs((p + p.T) / 2 - mle).max()
    assert error < 0.05, error


def test_a_failed_update_keeps_the_last_good_state_as_run_does():
    """Issue 46 item 18, the step API. Before: ``update``'s NonFiniteError carried the
    state it was given, whose precision (made by the update before, SGD at rate 0.5 on
    data of variance 9) had smallest eigenvalue −1.13, where the chains diverged; now
    it carries that update's input (step − 1, a positive definite precision), as
    ``run`` does, and a retry from it at a smaller rate steps on."""
    data = {"x": np.random.default_rng(0).normal(size=(200, 3)) * 3.0}

    def smallest_eigenvalue(learner, state):
        p = np.asarray(learner.get_params(state)["P"], np.float64)
        return np.linalg.eigvalsh((p + p.T) / 2).min()

    fit = ugm.MLE(_full_precision_gaussian, ugm.PCD(16), optax.sgd(0.5))
    states = [fit.init(jax.random.PRNGKey(0), data, 3)]
    with pytest.raises(ugm.NonFiniteError, match="diverged") as error:
        for _ in range(10):
            states.append(fit.update(states[-1])[0])
    e = error.value
    assert smallest_eigenvalue(fit, states[-1]) < 0 < smallest_eigenvalue(fit, e.state)
    assert int(e.state.step) == e.step - 1 == int(states[-2].step)
    np.testing.assert_array_equal(e.state.params["P"], states[-2].params["P"])
    assert fit.last_state is e.state and int(e.state.failed_at) == e.step
    retry = ugm.MLE(_full_precision_gaussian, ugm.PCD(16), optax.sgd(0.005))
    retry.init(jax.random.PRNGKey(0), data, 3)
    state, _ = retry.update(e.state)
    assert int(state.failed_at) == -1 and int(state.step) == e.step
    assert smallest_eigenvalue(retry, state) > 0


def test_data_given_as_an_array_names_the_expected_dict_and_the_state_sites():
    """``MLE.run(key, n, array, ...)`` (an array, not ``{"x": array}``) raised
    ``AttributeError: 'numpy.ndarray' object has no attribute 'items'``; it now says
    which form is expected and names the model's state sites."""
    learner = ugm.MLE(ugm.models.vbm, ugm.PCD(8), optax.adam(1e-2))
    with pytest.raises(TypeError, match=r"^data must be a dict of site name -> array, "
                       r"\{\"site\": array\} .*state sites: \['x'\]\), got ndarray"):
        learner.run(jax.random.PRNGKey(0), 3, np.zeros((10, 4), np.int8), 4,
                    progress_bar=False)
