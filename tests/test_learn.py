"""The learning driver: inputs checked, runs reproducible, failures keep the last good
state. (Agreement with exact maximum likelihood is in test_learn_exact.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import numpyro_ugm as ugm


@pytest.fixture(scope="module")
def spins():
    rng = np.random.default_rng(0)
    return {"x": rng.choice(np.array([-1, 1], np.int8), size=(40, 6))}


def make(k=1, lr=0.05):
    return ugm.MLE(ugm.models.vbm, ugm.PCD(32, k=k), optax.sgd(lr))


def test_values_outside_domain_name_site_and_value(spins):
    bad = spins["x"].copy()
    bad[3, 2] = 0
    with pytest.raises(ValueError, match=r"site 'x': value 0 at example 3, index \(2,\)"):
        make().run(jax.random.PRNGKey(0), 2, {"x": bad}, 6, progress_bar=False)


def test_categorical_label_out_of_range():
    import numpyro

    def potts(n):
        J = numpyro.param("J", jnp.zeros((3, 3)))
        x = numpyro.sample("x", ugm.Categorical(n, 3))
        numpyro.factor("pairs", jnp.einsum("ik,kl,il->", x[:-1], J, x[1:]))

    data = {"x": np.array([[0, 1, 2, 3]])}
    with pytest.raises(ValueError, match="outside the domain Categorical"):
        ugm.MLE(potts, ugm.PCD(4), optax.sgd(0.1)).init(jax.random.PRNGKey(0), data, 4)


def test_wrong_shape_and_unknown_site(spins):
    with pytest.raises(ValueError, match=r"site 'x': data has shape \(40, 5\)"):
        make().init(jax.random.PRNGKey(0), {"x": spins["x"][:, :5]}, 6)
    with pytest.raises(KeyError, match="not state sites"):
        make().init(jax.random.PRNGKey(0), {"y": spins["x"]}, 6)
    with pytest.raises(ValueError, match="no examples"):
        make().init(jax.random.PRNGKey(0), {"x": spins["x"][:0]}, 6)


def test_missing_site_and_wrong_dtype_are_named():
    import numpyro

    def three(n):  # every pair of sites interacts: none can be summed out
        W = numpyro.param("W", jnp.zeros((n, n)))
        x, y, z = (numpyro.sample(s, ugm.Spin(n)) for s in "xyz")
        numpyro.factor("pairs", x @ W @ y + y @ W @ z + x @ W @ z)

    x = np.ones((5, 3), np.int8)
    learner = ugm.MLE(three, ugm.PCD(4), optax.sgd(0.1))
    with pytest.raises(NotImplementedError, match=r"latent sites \['y', 'z'\] interact"):
        learner.init(jax.random.PRNGKey(0), {"x": x}, 3)
    with pytest.raises(TypeError, match=r"site 'x': data has dtype <U\d+, expected numbers"):
        learner.init(jax.random.PRNGKey(0), {"x": x.astype(str), "y": x, "z": x}, 3)


def test_non_finite_initial_params(spins):
    params = {"W": jnp.zeros((6, 6)).at[1, 2].set(jnp.nan), "b": jnp.zeros(6)}
    with pytest.raises(FloatingPointError, match=r"'W' holds a non-finite value nan at index "
                                                 r"\(1, 2\)"):
        make().init(jax.random.PRNGKey(0), spins, 6, init_params=params)


def test_bad_estimator_and_optimizer():
    with pytest.raises(ValueError, match="num_particles"):
        ugm.PCD(0)
    with pytest.raises(ValueError, match="num_mcmc_steps must be"):
        ugm.CD(num_mcmc_steps=0)
    with pytest.raises(TypeError, match="optax"):
        ugm.MLE(ugm.models.vbm, ugm.PCD(4), "adam")
    with pytest.raises(TypeError, match="estimator"):
        ugm.MLE(ugm.models.vbm, "pcd", optax.sgd(0.1))


def test_diverging_run_stops_and_keeps_last_good_state(spins):
    learner = make(lr=1e38)
    with pytest.raises(ugm.NonFiniteError) as err:
        learner.run(jax.random.PRNGKey(0), 50, spins, 6, progress_bar=False)
    e = err.value
    assert 0 <= e.step < 50
    assert int(e.state.step) == e.step  # the state before the failing update
    params = learner.get_params(e.state)
    assert all(np.all(np.isfinite(np.asarray(v))) for v in params.values())
    assert len(e.diagnostics["grad_norm"]) == e.step + 1
    assert learner.last_state is e.state or int(learner.last_state.step) == e.step


def test_same_key_same_result_with_and_without_progress_bar(spins):
    a = make().run(jax.random.PRNGKey(3), 30, spins, 6, progress_bar=False)
    b = make().run(jax.random.PRNGKey(3), 30, spins, 6, progress_bar=True)
    np.testing.assert_array_equal(a.params["W"], b.params["W"])
    np.testing.assert_array_equal(a.diagnostics["grad_norm"], b.diagnostics["grad_norm"])
    c = make().run(jax.random.PRNGKey(4), 30, spins, 6, progress_bar=False)
    assert not np.array_equal(a.params["W"], c.params["W"])


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
    assert set(ugm.estimators.PCDInfo._fields) | {"grad_norm", "positive"} == set(info)
    run = make().run(jax.random.PRNGKey(6), 5, spins, 6, progress_bar=False)
    np.testing.assert_allclose(learner.get_params(state)["W"], run.params["W"], rtol=1e-6)


def test_cd_on_rbm_with_minibatches_increases_data_fit():
    rng = np.random.default_rng(1)
    proto = rng.random((3, 16)) < 0.5
    x = proto[rng.integers(0, 3, 300)] ^ (rng.random((300, 16)) < 0.05)
    learner = ugm.MLE(ugm.models.rbm, ugm.CD(1), optax.adam(0.05))
    result = learner.run(jax.random.PRNGKey(0), 300, {"v": x.astype(np.int8)}, 16, 4,
                         batch_size=50, progress_bar=False)
    assert result.diagnostics["positive"].shape == (300,)
    # the positive phase (mean free energy of data) rises as the model fits the data
    assert result.diagnostics["positive"][-20:].mean() > result.diagnostics["positive"][:20].mean() + 1.0
