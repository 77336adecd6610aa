"""fit_ergm on large sparse networks without O(N) arrays
(models/network_sparse_statistics.py, models/ergm_sampled_mple.py): observed statistics
from the edge list against the dense ergm_statistics; change statistics of given dyads
against the dense ones; the exact sums over every dyad against brute force; the
case-control MPLE against the dense MPLE (all dyads: equal; a subsample: within its
stated Monte Carlo error); fit_ergm's sparse path against its dense path."""

import networkx as nx
import numpy as np
import pytest

from numpyro_ugm.network import (ErgmControl, MCMLEControl, SamplingControl, change_statistics,
                                 ergm_statistics, fit_ergm, gof_ergm, mple)
from numpyro_ugm.network.estimation.sampled_mple import (mple_samplesize, sample_dyads,
                                                  sample_non_ties, sampled_mple,
                                                  sampled_reference)
from numpyro_ugm.network.terms.structural import resolve_terms
from numpyro_ugm.network.terms.term import Network
from numpyro_ugm.network.graphs import graph_edge_list, graph_to_edges, pair_tables
from numpyro_ugm.network.estimation.sparse_statistics import (dyad_change_statistics,
                                                          dyadic_log_normalizer, dyadic_sums,
                                                          one_chain, sparse_statistics)

GWESP = "edges + nodematch('group') + nodecov('x') + gwesp(0.25, fixed=TRUE)"


def _network(n, p, directed=False, seed=0):
    """A random graph with a categorical and a numeric node attribute, its Network and
    its edge list."""
    rng = np.random.default_rng(seed)
    graph = nx.gnp_random_graph(n, p, seed=seed, directed=directed)
    attributes = {"group": rng.integers(3, size=n), "x": np.round(rng.normal(size=n), 2)}
    for v in graph:
        graph.nodes[v]["group"] = int(attributes["group"][v])
        graph.nodes[v]["x"] = float(attributes["x"][v])
    return graph, Network(n, directed, attributes), graph_edge_list(graph)


@pytest.fixture(scope="module")
def gwesp_network():
    """A 100-node network, its Network, edge list, gwesp terms and dense dyads (one set of
    terms for the tests below, so that they share compiled programs)."""
    graph, net, ties = _network(100, 0.04, seed=3)
    return graph, net, ties, resolve_terms(GWESP, net), graph_to_edges(graph).astype(
        np.float32)


def _check_statistics(net, ties, terms, formula, y, num_dyads):
    dense = np.asarray(ergm_statistics(y, formula, network=net), np.float64)
    np.testing.assert_allclose(sparse_statistics(net, terms, ties), dense, rtol=1e-6)
    # the change statistics of some dyads, from the neighbour lists
    _, i, j = pair_tables(net.num_nodes, net.directed)
    pick = np.random.default_rng(1).choice(num_dyads, 200, replace=False)
    got = dyad_change_statistics(one_chain(net, ties, dense), terms, i[pick], j[pick])
    X = np.asarray(change_statistics(y, formula, network=net))[pick]
    np.testing.assert_allclose(got, X, rtol=1e-6, atol=1e-6)


def test_statistics_from_the_edge_list_equal_the_dense_ones(gwesp_network):
    _, net, ties, terms, y = gwesp_network
    _check_statistics(net, ties, terms, GWESP, y, 4950)


@pytest.mark.slow
@pytest.mark.parametrize("directed", [False, True])
def test_statistics_of_every_kind_of_term_from_the_edge_list(directed):
    graph, net, ties = _network(50, 0.08, directed)
    formula = GWESP + (" + mutual + ttriple + ctriple + istar(2) + gwodegree(0.5) + "
                       "odegree(c(0, 2)) + isolates + nodefactor('group') + nodemix('group')"
                       if directed else " + triangle + gwdegree(0.5) + degree(c(0, 1)) + "
                       "kstar(2) + kstar(3) + isolates + absdiff('x') + nodefactor('group')")
    y = graph_to_edges(graph).astype(np.float32)
    _check_statistics(net, ties, resolve_terms(formula, net), formula, y, len(y))


def _check_sums(n, directed):
    _, net, _ = _network(n, 0.0, directed)
    formula = "edges + nodematch('group') + nodecov('x')"
    terms = resolve_terms(formula, net)
    empty = np.zeros(len(pair_tables(n, directed)[1]), np.float32)
    x = np.asarray(change_statistics(empty, formula, network=net), np.float64)
    theta = np.array([-1.5, 0.7, 0.3])
    eta = x @ theta
    p = 1 / (1 + np.exp(-eta))
    total, first, second, scale = dyadic_sums(net, terms, theta, True)
    np.testing.assert_allclose(total, np.sum(np.logaddexp(0, eta)), rtol=1e-12)
    np.testing.assert_allclose(first, p @ x, rtol=1e-10)
    np.testing.assert_allclose(second, (x * (p * (1 - p))[:, None]).T @ x, rtol=1e-10)
    np.testing.assert_allclose(scale, np.abs(x).sum(0), rtol=1e-12)
    return net, terms, theta, total


def test_sums_over_every_dyad_are_exact():
    _check_sums(7, False)  # the undirected rows fold pairs of nodes: odd n leaves one


@pytest.mark.slow
@pytest.mark.parametrize("directed", [False, True])
def test_sums_over_every_dyad_are_exact_for_any_size(directed):
    for n in (2, 3, 66, 129):
        net, terms, theta, total = _check_sums(n, directed)
        assert dyadic_log_normalizer(net, terms, theta) == pytest.approx(total, rel=1e-12)


def test_non_ties_are_a_uniform_sample_without_repeats():
    _, net, ties = _network(40, 0.1)
    tie_set = {tuple(t) for t in ties.tolist()}
    rng = np.random.default_rng(0)
    counts = np.zeros((40, 40))
    for _ in range(200):
        i, j = sample_non_ties(ties, 40, False, 50, rng)  # by rejection: 50 of ~700
        pairs = set(zip(i.tolist(), j.tolist()))
        assert len(pairs) == 50 and not pairs & tie_set and np.all(i < j)
        counts[i, j] += 1
    non_ties = 40 * 39 // 2 - len(ties)
    cells = counts[np.triu_indices(40, 1)]
    cells = cells[[(a, b) not in tie_set for a, b in zip(*np.triu_indices(40, 1))]]
    expected = 200 * 50 / non_ties
    assert abs(cells.mean() - expected) < 1e-9
    assert cells.var() < 2 * expected  # binomial spread, no favoured dyads
    i, j = sample_non_ties(ties, 40, True, 10 ** 6, rng)  # directed, all of them
    assert len(i) == 40 * 39 - len(ties) and len(set(zip(i.tolist(), j.tolist()))) == len(i)
    assert mple_samplesize(10 ** 8, 100) == 80_000 and mple_samplesize(100, 3) == 320


def test_case_control_mple_equals_the_dense_mple_with_every_dyad_and_is_close_without(
        gwesp_network):
    graph, net, ties, terms, _ = gwesp_network
    observed = sparse_statistics(net, terms, ties)
    dense = np.asarray(mple(graph, GWESP, network=net).params["theta"], np.float64)
    rng = np.random.default_rng(0)
    every = sampled_mple(sample_dyads(net, terms, ties, observed, 10 ** 9, rng))
    np.testing.assert_allclose(every.theta, dense, atol=1e-5)
    assert np.all(every.sampling_cov == 0) and every.converged
    part = sampled_mple(sample_dyads(net, terms, ties, observed, 1000, rng))
    error = np.sqrt(np.diag(part.sampling_cov))
    assert np.all(error > 0) and np.all(np.abs(part.theta - dense) < 4 * error), (
        part.theta, dense, error)
    # the reference: the dyad-independent part at its sampled MLE, gwesp at 0, exact log Z
    theta, log_z = sampled_reference(net, terms, part.sample)
    assert theta[3] == 0
    x = np.asarray(change_statistics(np.zeros(4950, np.float32), GWESP, network=net))[:, :3]
    assert log_z == pytest.approx(np.sum(np.logaddexp(0, x @ theta[:3])), rel=1e-6)


@pytest.mark.slow
def test_the_stated_monte_carlo_error_of_the_case_control_mple_is_its_spread():
    graph, net, ties = _network(300, 0.02, seed=1)
    terms = resolve_terms(GWESP, net)
    observed = sparse_statistics(net, terms, ties)
    fits = [sampled_mple(sample_dyads(net, terms, ties, observed, 3000,
                                      np.random.default_rng(r))) for r in range(40)]
    spread = np.std([f.theta for f in fits], axis=0, ddof=1)
    stated = np.sqrt(np.mean([np.diag(f.sampling_cov) for f in fits], axis=0))
    assert np.all((spread > 0.6 * stated) & (spread < 1.6 * stated)), (spread, stated)


def test_a_dyad_independent_fit_from_the_edge_list_is_the_exact_one():
    graph, _, _ = _network(80, 0.05, seed=2)
    formula = "edges + nodematch('group') + nodecov('x')"
    dense = fit_ergm(graph, formula)
    # Newton from the sampled MLE
    sparse = fit_ergm(graph, formula, control=ErgmControl(mple_samplesize=200))
    # "auto" takes the sparse path above sparse_limit dyads
    auto = fit_ergm(graph, formula, control=ErgmControl(SamplingControl(sparse_limit=1000)))
    np.testing.assert_allclose(auto.estimates, sparse.estimates, rtol=1e-9)
    limited = fit_ergm(graph, formula, control=ErgmControl(SamplingControl(
        sparse_limit=1000, dyad_draws_limit=1000)))
    with pytest.raises(NotImplementedError, match="dyad_draws_limit = 1000"):
        gof_ergm(limited, 10)
    # the same MLE; the dense observed statistics are float32 sums
    np.testing.assert_allclose(sparse.estimates, dense.estimates, rtol=1e-6)
    np.testing.assert_allclose(sparse.stderr, dense.stderr, rtol=1e-6)
    assert sparse.log_likelihood == pytest.approx(dense.log_likelihood, abs=1e-6)
    assert sparse.bic == pytest.approx(dense.bic, abs=1e-5)
    with pytest.raises(ValueError, match="mple_samplesize"):
        ErgmControl(mple_samplesize="all")


@pytest.mark.slow
def test_a_gwesp_fit_from_the_edge_list_follows_the_dense_one():
    graph, _, _ = _network(80, 0.05, seed=2)
    options = {"sampling": SamplingControl(samplesize=4 * 64, interval=256, effective_size=None),
               "mcmle": MCMLEControl(max_iterations=2)}
    dense = fit_ergm(graph, GWESP, control=ErgmControl(mple_samplesize=None, **options))
    every = fit_ergm(graph, GWESP, control=ErgmControl(mple_samplesize=10 ** 9, **options))
    # every dyad: the same start, statistics and reference, so the same chains
    np.testing.assert_allclose(every.estimates, dense.estimates, atol=1e-4)
    assert every.log_likelihood == pytest.approx(dense.log_likelihood, abs=1e-3)
    sampled = fit_ergm(graph, GWESP, control=ErgmControl(mple_samplesize=500, **options))
    combined = np.hypot(sampled.stderr, dense.stderr)
    assert np.all(np.abs(sampled.estimates - dense.estimates) < 3 * combined)
    assert abs(sampled.log_likelihood - dense.log_likelihood) < 4 * np.hypot(
        sampled.log_likelihood_se, dense.log_likelihood_se) + 0.5
