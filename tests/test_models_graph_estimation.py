"""The ERGM estimation helpers (models/graph_estimation.py): MPLE is the logistic
regression of each edge on its change statistics (computed here from the definitions),
and the degeneracy check warns on draws piled at the empty or the complete graph."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from helpers import TRIAD, brute_statistics
from helpers import ergm_model as model

import numpyro_ugm as ugm
from numpyro_ugm.validation import to_data
from numpyro_ugm.models import DegeneracyWarning, check_degeneracy, edges_to_adjacency, mple


def logistic_regression(X, t, steps=50):
    """Newton-Raphson in float64: argmax Σ t log σ(Xβ) + (1 − t) log σ(−Xβ)."""
    beta = np.zeros(X.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-X @ beta))
        H = X.T @ (X * (p * (1 - p))[:, None])
        beta = beta + np.linalg.solve(H, X.T @ (t - p))
    return beta


@pytest.mark.slow  # the triad6 fixture's exact fit costs 15 s; R's MPLE values are checked
# by test_models_ergm_fit.py and test_models_graph_terms.py in the default suite
def test_mple_is_logistic_regression_on_change_statistics(triad6_problem):
    m, theta_true, data, _ = triad6_problem
    y = np.asarray(data["y"][:40])
    # change statistics from the definitions (toggle every pair of every graph)
    rows = []
    for g in y:
        for e in range(len(g)):
            on, off = g.copy(), g.copy()
            on[e], off[e] = 1, 0
            a, b = (brute_statistics(edges_to_adjacency(v)) for v in (on, off))
            rows.append([a[s] - b[s] for s in TRIAD])
    beta = logistic_regression(np.array(rows, np.float64), y.reshape(-1).astype(np.float64))
    result = mple({"y": y}, TRIAD)
    assert result.converged
    np.testing.assert_allclose(np.asarray(result.params["theta"]), beta, atol=2e-4)
    # the objective is ugm.pseudo_log_likelihood, at its maximum there
    pl = float(ugm.pseudo_log_likelihood(m, result.params, {"y": y}))
    np.testing.assert_allclose(float(result.pseudo_log_likelihood), pl, rtol=1e-5)
    assert pl >= float(ugm.pseudo_log_likelihood(m, {"theta": jnp.asarray(beta + 0.01)},
                                                 {"y": y}))


def _gibbs_draws(m, num_chains=100, sweeps=30):
    """A jitted θ -> final states of ``num_chains`` Gibbs chains (one compilation for
    every θ, unlike ``ugm.sample``, which closes over its parameters)."""
    kernel = ugm.kernels.gibbs().build(m.target())

    @jax.jit
    def run(theta, key):
        f = lambda x: m.target().log_potential({"theta": theta}, x)  # noqa: E731
        x = m.target().random_state(key, (num_chains,))

        def sweep(i, x):
            keys = jax.random.split(jax.random.fold_in(key, i), num_chains)
            return jax.vmap(lambda k, p: kernel.step(k, kernel.init(p), f)[0].position)(
                keys, x)

        return to_data(m.target().state_sites, jax.lax.fori_loop(0, sweeps, sweep, x))

    return run


@pytest.mark.slow
def test_degeneracy_warning():
    m = model(8, ("edges", "triangles"))
    draws = _gibbs_draws(m)
    key = jax.random.PRNGKey(0)
    full = draws(jnp.array([-1.0, 2.0]), key)
    with pytest.warns(DegeneracyWarning, match="complete graph"):
        summary = check_degeneracy(full)
    assert summary["degenerate"] and summary["fraction_full"] > 0.9
    empty = {"y": np.zeros((100, 28), np.int8)}
    with pytest.warns(DegeneracyWarning, match="empty graph"):
        check_degeneracy(empty)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegeneracyWarning)
        tame = draws(jnp.array([-1.0, 0.1]), key)
        summary = check_degeneracy(tame)
        assert not summary["degenerate"] and 0.1 < summary["mean_density"] < 0.5
        # the data themselves empty: nothing to warn about
        check_degeneracy(empty, data={"y": np.zeros((3, 28), np.int8)})
        # a learner's state: its estimator's particles (PCD starts uniform)
        learner = ugm.MLE(m, ugm.PCD(50), optax.sgd(0.0))
        state = learner.init(key, {"y": np.asarray(tame["y"][:20])})
        assert 0.3 < check_degeneracy(state)["mean_density"] < 0.7
    # weighted particles are read too
    with pytest.warns(DegeneracyWarning):
        check_degeneracy(ugm.estimators.base.Particles(
            {"y": jnp.ones((10, 28))}, jnp.full(10, -jnp.log(10.0))))
