"""Statistics of large sparse networks from the edge list
(``network/estimation/sparse_statistics.py``): observed and change statistics against the
dense ones, and the exact sums over every dyad against brute force."""

import numpy as np
import pytest

from numpyro_ugm.network import change_statistics, ergm_statistics
from numpyro_ugm.network.terms.structural import resolve_terms
from numpyro_ugm.network.graphs import graph_to_edges, pair_tables
from numpyro_ugm.network.estimation.sparse_statistics import (dyad_change_statistics,
                                                              dyadic_log_normalizer, dyadic_sums,
                                                              one_chain, sparse_statistics)
from ergm_cases import GWESP, random_network


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
def test_statistics_of_every_kind_of_term_from_the_edge_list(directed, attributed_network):
    graph, net, ties = attributed_network(50, 0.08, directed)
    formula = GWESP + (" + mutual + ttriple + ctriple + istar(2) + "
                       "gwodegree(0.5, fixed=TRUE) + odegree(c(0, 2)) + isolates + "
                       "nodefactor('group') + nodemix('group')"
                       if directed else " + triangle + gwdegree(0.5, fixed=TRUE) + "
                       "degree(c(0, 1)) + kstar(2) + kstar(3) + isolates + absdiff('x') + "
                       "nodefactor('group')")
    y = graph_to_edges(graph).astype(np.float32)
    _check_statistics(net, ties, resolve_terms(formula, net), formula, y, len(y))


def _check_sums(n, directed):
    _, net, _ = random_network(n, 0.0, directed)
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
