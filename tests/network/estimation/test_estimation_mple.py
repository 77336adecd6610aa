"""The MPLE (``network/estimation/mple.py``): a logistic regression on the change
statistics, against R's values."""

import jax.numpy as jnp
import numpy as np
import pytest

from helpers.network import TRIAD, brute_statistics
import numpyro_ugm as ugm
from numpyro_ugm.network import edges_to_adjacency, mple


def logistic_regression(X, t, steps=50):
    """Newton-Raphson in float64: argmax Σ t log σ(Xβ) + (1 − t) log σ(−Xβ)."""
    beta = np.zeros(X.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-X @ beta))
        H = X.T @ (X * (p * (1 - p))[:, None])
        beta = beta + np.linalg.solve(H, X.T @ (t - p))
    return beta


@pytest.mark.slow  # the triad6 fixture's exact fit costs 15 s; R's MPLE values are checked
# by tests/network/test_fit.py and tests/network/terms/ in the default suite
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
