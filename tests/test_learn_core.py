"""The learner's parts on their own (learn/core.py): the functional core (a pure, jit-able
update on a batch passed every step), its finiteness checks, and the supported ways to
switch or re-seed an estimator mid-run. (The per-example (CRF) estimator wrapper:
test_estimators_per_example.py.)"""

import jax
import jax.numpy as jnp
import numpyro
import numpy as np
import optax
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.learn import LearnerCore
from numpyro_ugm.model.problem import build_problem


@pytest.fixture(scope="module")
def spins():
    rng = np.random.default_rng(0)
    return {"x": rng.choice(np.array([-1, 1], np.int8), size=(40, 6))}


def test_core_update_is_pure_and_equals_the_learner_step(spins):
    learner = ugm.MLE(ugm.models.vbm, ugm.PCD(32), optax.sgd(0.05))
    state = learner.init(jax.random.PRNGKey(6), spins, 6)
    batch = learner.prepare(spins)
    step = jax.jit(learner.core.update)
    mine, info = step(state, batch.batch)
    again, _ = step(state, batch.batch)  # same input, same output: nothing hidden
    theirs, their_info = learner.update(state, batch)
    for a, b, c in zip(jax.tree.leaves(mine), jax.tree.leaves(again),
                       jax.tree.leaves(theirs)):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    # one type for one result: the typed StepInfo, the estimator's info typed inside it
    assert isinstance(info, ugm.learn.StepInfo) and isinstance(their_info, ugm.learn.StepInfo)
    assert isinstance(info.estimator, ugm.estimators.PCDInfo)
    assert info.log_likelihood is None  # PCD reports no running log Z
    assert info.names == their_info.names == ugm.estimators.PCDInfo._fields + (
        "grad_norm", "positive")
    assert all(np.asarray(v).dtype == np.float32 for v in info.diagnostics().values())
    # another batch changes the positive phase: the data is an argument, not a constant
    _, info1 = step(mine, batch.batch)
    _, info2 = step(mine, {"x": batch.batch["x"][:10]})
    assert float(info2.positive) != float(info1.positive)


def test_core_needs_no_learner(spins):
    problem = build_problem(ugm.models.vbm, spins, (6,))
    core = LearnerCore(problem.target, problem.param_model, ugm.PCD(16), optax.sgd(0.1),
                       num_examples=40)
    batch = problem.data
    state = core.init(jax.random.PRNGKey(0), batch)
    for _ in range(3):
        state, info = jax.jit(core.update)(state, batch)
    assert int(state.step) == 3 and int(state.failed_at) == -1
    assert np.isfinite(float(info.grad_norm))
    assert set(core.get_params(state)) == {"W", "b"}


def test_restart_estimator_switches_or_reseeds_mid_run(spins):
    pcd = ugm.MLE(ugm.models.vbm, ugm.PCD(32), optax.sgd(0.05))
    state = pcd.run(jax.random.PRNGKey(0), 5, spins, 6, progress_bar=False).state
    # switch to CD at the same parameters, optimizer state and step
    cd = ugm.MLE(ugm.models.vbm, ugm.CD(), optax.sgd(0.05))
    cd.init(jax.random.PRNGKey(0), spins, 6)
    switched = cd.restart_estimator(jax.random.PRNGKey(9), state)
    assert int(switched.step) == 5
    np.testing.assert_array_equal(switched.params["W"], state.params["W"])
    for a, b in zip(jax.tree.leaves(switched.opt_state), jax.tree.leaves(state.opt_state)):
        np.testing.assert_array_equal(a, b)
    result = cd.run(jax.random.PRNGKey(0), 3, spins, 6, init_state=switched,
                    progress_bar=False)
    assert int(result.state.step) == 8
    assert float(result.diagnostics["ess"][0]) == 40.0  # CD: one chain per example
    # re-seed PCD's chains from given positions (e.g. another learner's particles)
    position = pcd.particles(state)
    tempered = ugm.MLE(ugm.models.vbm, ugm.PCD(32, kernel=ugm.kernels.metropolis()),
                       optax.sgd(0.05))
    tempered.init(jax.random.PRNGKey(0), spins, 6)
    moved = tempered.restart_estimator(jax.random.PRNGKey(1), state, position=position)
    np.testing.assert_array_equal(tempered.particles(moved)["x"], position["x"])
    with pytest.raises(ValueError, match="sites and shapes"):
        tempered.restart_estimator(jax.random.PRNGKey(1), state,
                                   position={"x": position["x"][:5]})
    with pytest.raises(TypeError, match="no kernel states"):
        cd.restart_estimator(jax.random.PRNGKey(1), state, position=position)


def test_finiteness_checks_are_exact_when_sums_overflow_or_values_are_not_finite():
    from numpyro_ugm.learn.core import _norm_and_finite, all_finite

    big = jnp.full((4,), 3e38, jnp.float32)  # finite values whose sums overflow
    cases = {"finite": (jnp.arange(6.0).reshape(2, 3), True), "overflow": (big, True),
             "inf": (jnp.array([1.0, jnp.inf]), False),
             "-inf": (jnp.array([-jnp.inf, 1.0]), False),
             "nan": (jnp.array([jnp.nan, 1.0]), False),
             "big and nan": (big.at[0].set(jnp.nan), False)}
    for name, (x, expected) in cases.items():
        tree = {"a": x, "b": jnp.ones(3), "n": jnp.arange(3)}  # integer leaves ignored
        assert bool(jax.jit(all_finite)(tree)) is expected, name
        norm, finite = jax.jit(_norm_and_finite)({"a": x, "b": jnp.ones(3)})
        assert bool(finite) is expected, name
        if name == "finite":
            np.testing.assert_allclose(norm, optax.tree.norm({"a": x, "b": jnp.ones(3)}),
                                       rtol=1e-6)


def test_chains_of_a_real_site_that_diverge_stop_learning_naming_the_site():
    """A step that makes a Gaussian's precision negative: the exact Gaussian draws of
    the next update are NaN, and the run stops there, naming the site; its state is the
    last good one, before the step that made the precision negative (issue 46)."""
    def gaussian():
        x = numpyro.sample("x", ugm.Real(3))
        a = numpyro.param("a", 0.5)
        numpyro.factor("q", -0.5 * a * jnp.sum(x ** 2))

    data = {"x": np.random.default_rng(0).normal(size=(200, 3)) * 10.0}
    with pytest.raises(ugm.NonFiniteError, match=r"real site\(s\) 'x'.*diverged") as error:
        ugm.MLE(gaussian, ugm.PCD(16), optax.sgd(5.0)).run(
            jax.random.PRNGKey(0), 5, data, progress_bar=False)
    assert float(error.value.state.params["a"]) > 0


def test_learning_from_an_unnormalizable_start_is_refused_before_the_first_update(tmp_path):
    """Issue 46 item 16. Before: MLE started from a 3-variable GMRF whose precision
    I − 0.6(J − I) has smallest eigenvalue −0.2 (numpy's eigvalsh below), or from
    f = +0.1 x⁴, and its first updates averaged chains of an improper density (the
    runs went on: the chain-spread check stops some ~10 updates later, others drift
    off silently). Now init refuses the start, naming the site, the parameters and
    what to do; normalizable starts (the same models at a positive definite precision,
    −0.1 x⁴) pass, and restore does not judge its template's default values."""
    from numpyro_ugm.runtime import checkpoint

    Q = np.eye(3) - 0.6 * (np.ones((3, 3)) - np.eye(3))
    assert np.linalg.eigvalsh(Q).min() == pytest.approx(-0.2)

    def gmrf(start=np.eye(3)):
        x = numpyro.sample("x", ugm.Real(3))
        P = numpyro.param("P", jnp.asarray(start, jnp.float32))
        numpyro.factor("q", -0.5 * x @ P @ x)

    def quartic(c=0.1):
        x = numpyro.sample("x", ugm.Real(1))
        numpyro.factor("f", numpyro.param("c", c) * jnp.sum(x ** 4))

    rng, key = np.random.default_rng(0), jax.random.PRNGKey(0)
    data = {"x": rng.normal(size=(50, 3))}
    fit = ugm.MLE(gmrf, ugm.PCD(8), optax.sgd(0.01))
    site = r"^learning: chains of the real site\(s\) 'x' would have diverged"
    with pytest.raises(FloatingPointError, match=site + r".*eigenvalue -0.2.*at the "
                       r"parameters 'P' from init_params\. Pass init_params"):
        fit.init(key, data, init_params={"P": Q})
    assert fit.last_state is None  # nothing was built, no update ran
    with pytest.raises(FloatingPointError, match=site):
        fit.run(key, 5, data, init_params={"P": Q}, progress_bar=False)
    with pytest.raises(FloatingPointError, match=site):
        ugm.posterior.SGMCMC(gmrf, ugm.PCD(8), 1e-4).init(key, data, init_params={"P": Q})
    with pytest.raises(FloatingPointError, match=site + r".*'c' from the model's initial"):
        ugm.MLE(quartic, ugm.PCD(8), optax.sgd(0.01)).init(key, {"x": data["x"][:, :1]})
    ugm.MLE(quartic, ugm.PCD(8), optax.sgd(0.01)).init(key, {"x": data["x"][:, :1]}, -0.1)
    # a model whose default start is improper: learned from a proper one, restored
    fit = ugm.MLE(gmrf, ugm.PCD(8), optax.sgd(0.01))
    fit.run(key, 2, data, Q, init_params={"P": np.eye(3, dtype=np.float32)}, progress_bar=False,
            checkpoint_every=2, checkpoint_dir=tmp_path)
    state, _ = ugm.MLE(gmrf, ugm.PCD(8), optax.sgd(0.01)).restore(
        checkpoint.latest(tmp_path), data, Q)
    assert np.linalg.eigvalsh(np.asarray(state.params["P"])).min() > 0.5
