"""The MPLE (``network/estimation/mple.py``): a logistic regression on the change
statistics, against R's values."""

import warnings

import jax.numpy as jnp
import networkx as nx
import numpy as np
import pytest

from helpers.network import TRIAD, brute_statistics
import numpyro_ugm as ugm
from numpyro_ugm.network import edges_to_adjacency, mple
from numpyro_ugm.network.estimation.identifiability import find_separation


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


# 7 nodes, 9 edges, degrees 2,2,2,3,3,3,3: 15 two-stars, the fewest any 9-edge graph has
STAR_BOUND_EDGES = [(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (4, 5), (5, 6), (3, 5), (1, 6)]


def _graph(edges, n=7):
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(edges)
    return graph


def _edges_minus_quarter_kstar2(adjacency):
    """edges − kstar2 / 4 of graphs (..., n, n), from their degrees."""
    degree = adjacency.sum(-1)
    return degree.sum(-1) / 2 - (degree * (degree - 1) / 2).sum(-1) / 4


def test_an_mple_at_infinity_is_not_converged_and_names_its_direction():
    # issue 46 F5: Newton's θ = [86.45, −21.61] was reported converged; the ties'
    # Δkstar2 (≤ 4) and the non-ties' (≥ 4) are separated by edges − kstar2 / 4
    graph = _graph(STAR_BOUND_EDGES)
    with pytest.warns(RuntimeWarning, match=r"does not exist.*\['edges'\] → \+∞; "
                                            r"\['kstar2'\] → −∞.*edges - 0\.25·kstar2"):
        fit = mple(graph, "edges + kstar(2)")
    assert not fit.converged
    # the certificate, by brute force: no single toggle raises edges − kstar2 / 4
    a = np.asarray(edges_to_adjacency(ugm.network.graph_to_edges(graph)), np.float64)
    toggled = np.repeat(a[None], 21, axis=0)
    for k, (i, j) in enumerate(zip(*np.triu_indices(7, 1))):
        toggled[k, i, j] = toggled[k, j, i] = 1 - a[i, j]
    assert np.all(_edges_minus_quarter_kstar2(toggled) <= _edges_minus_quarter_kstar2(a))


def test_the_separated_mple_sits_on_a_face_of_the_convex_hull_of_every_graph():
    # every one of the 2^21 graphs on 7 nodes: none has a larger 4 edges − kstar2 than
    # the observed 36 − 15 = 21, so the observed statistics lie on the hull's boundary
    # and the MLE is at infinity too (the LP's direction (1, −0.25) is that face's normal)
    graph = _graph(STAR_BOUND_EDGES)
    y = np.asarray(ugm.network.graph_to_edges(graph), np.float64)
    x = np.asarray(ugm.network.change_statistics(y, "edges + kstar(2)"), np.float64)
    np.testing.assert_allclose(find_separation(x, y), [1.0, -0.25], atol=1e-9)
    i, j = np.triu_indices(7, 1)
    incidence = np.zeros((21, 7), np.int8)
    incidence[np.arange(21), i] = incidence[np.arange(21), j] = 1
    best = -np.inf
    for block in range(8):  # 2^18 graphs at a time
        codes = np.arange(block << 18, (block + 1) << 18)
        bits = ((codes[:, None] >> np.arange(21)) & 1).astype(np.int8)
        degree = bits.astype(np.int32) @ incidence
        best = max(best, np.max(4 * bits.sum(1) - (degree * (degree - 1) // 2).sum(1)))
    assert best == 4 * 9 - 15


def test_an_mple_that_exists_is_converged_without_a_warning():
    graph = _graph([(0, 1), (0, 2), (0, 3), (0, 4), (1, 2), (4, 5), (5, 6), (2, 6)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = mple(graph, "edges + kstar(2)")
    assert fit.converged and np.all(np.abs(np.asarray(fit.params["theta"])) < 10)
