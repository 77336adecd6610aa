"""Network distributions (``network/diagnostics/distributions.py``) against networkx on
small random graphs (degrees, shared partners per edge by their definitions, all-pairs
shortest paths with the unreachable pairs), the edge-list checks, and their speed on
magnolia-sized networks."""

import time

import numpy as np
import pytest

from numpyro_ugm.network import graph_to_edges
from numpyro_ugm.network.diagnostics import distributions as network_distributions
from numpyro_ugm.network.diagnostics.distributions import (degree_distribution,
                                                           edgewise_shared_partners,
                                                           geodesic_distance_distribution,
                                                           indicators_to_edge_lists,
                                                           network_densities,
                                                           shared_partner_distribution)
from numpyro_ugm.network.diagnostics.goodness_of_fit import goodness_of_fit
from helpers.network import STATNET


NETWORKS = STATNET


def reference_distances(graph, n, directed):
    """Counts of pairs at distance 1..n−1 and Inf from networkx's all-pairs BFS."""
    nx = pytest.importorskip("networkx")
    lengths = dict(nx.all_pairs_shortest_path_length(graph))
    counts = np.zeros(n, np.int64)
    for i in range(n):
        for j in range(n):
            if i == j or (not directed and j < i):
                continue
            d = lengths[i].get(j)
            counts[n - 1 if d is None else d - 1] += 1
    return counts


@pytest.mark.parametrize("directed", [False, True])
def test_degree_distribution_matches_networkx(directed, random_graph):
    n = 40
    graphs = [random_graph(n, p, seed, directed) for seed, p in enumerate((0.02, 0.06, 0.15))]
    if directed:
        for kind, degrees in (("idegree", "in_degree"), ("odegree", "out_degree")):
            ref = np.stack([np.bincount([d for _, d in getattr(g, degrees)()], minlength=n)
                            for g, _ in graphs])
            got = degree_distribution([e for _, e in graphs], n, directed=True, kind=kind)
            np.testing.assert_array_equal(got, ref)
            np.testing.assert_array_equal(
                degree_distribution(graphs[1][1], n, directed=True, kind=kind), ref[1])
        with pytest.raises(ValueError, match="kind"):
            degree_distribution(graphs[0][1], n, directed=True)
    else:
        ref = np.stack([np.bincount([d for _, d in g.degree()], minlength=n)
                        for g, _ in graphs])
        np.testing.assert_array_equal(degree_distribution([e for _, e in graphs], n), ref)
        np.testing.assert_array_equal(degree_distribution(graphs[2][1], n), ref[2])
        assert degree_distribution(graphs[0][1], n).sum() == n


def shared_partners_by_definition(graph, edges, partner_type):
    """Shared partners of each edge from their definitions (networkx adjacency)."""
    nodes = list(graph.nodes)
    if not graph.is_directed():
        return [len(set(graph[i]) & set(graph[j])) for i, j in edges]
    e = graph.has_edge
    tests = {"OTP": lambda i, j, k: e(i, k) and e(k, j),
             "ITP": lambda i, j, k: e(j, k) and e(k, i),
             "RTP": lambda i, j, k: e(i, k) and e(k, i) and e(k, j) and e(j, k),
             "OSP": lambda i, j, k: e(i, k) and e(j, k),
             "ISP": lambda i, j, k: e(k, i) and e(k, j)}[partner_type]
    return [sum(tests(i, j, k) for k in nodes if k not in (i, j)) for i, j in edges]


@pytest.mark.parametrize("directed", [False, True])
def test_shared_partners_match_their_definition(directed, random_graph):
    n = 30
    graphs = [random_graph(n, p, seed, directed, reciprocity=0.6)
              for seed, p in ((3, 0.2), (4, 0.35))]
    types = ("OTP", "ITP", "RTP", "OSP", "ISP") if directed else ("OTP",)
    for partner_type in types:
        per_edge = edgewise_shared_partners([e for _, e in graphs], n, directed=directed,
                                            partner_type=partner_type)
        for (graph, edges), got in zip(graphs, per_edge):
            ref = np.array(shared_partners_by_definition(graph, edges, partner_type))
            assert ref.max() >= 2  # the graphs are dense enough to tell counts apart
            np.testing.assert_array_equal(got, ref)
        dist = shared_partner_distribution([e for _, e in graphs], n, directed=directed,
                                           partner_type=partner_type)
        assert dist.shape == (2, n - 1)
        for row, got in zip(dist, per_edge):
            np.testing.assert_array_equal(row, np.bincount(got, minlength=n - 1))
    if not directed:
        # each triangle gives each of its 3 edges a partner; networkx counts it at 3 nodes
        graph, edges = graphs[0]
        triangles = pytest.importorskip("networkx").triangles(graph)
        assert edgewise_shared_partners(edges, n).sum() == sum(triangles.values())


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("block", [64, 4096])
def test_geodesic_distances_match_networkx(directed, block, monkeypatch, random_graph):
    # 64: sources searched in two blocks (the graph has over 64 nodes with edges)
    monkeypatch.setattr(network_distributions, "_SOURCE_BLOCK", block)
    n = 120
    graphs = [random_graph(n, p, seed, directed) for seed, p in ((5, 0.012), (6, 0.03))]
    got = geodesic_distance_distribution([e for _, e in graphs], n, directed=directed)
    for (graph, edges), row in zip(graphs, got):
        assert len(np.unique(edges)) > 64
        ref = reference_distances(graph, n, directed)
        assert ref[-1] > 0 and np.flatnonzero(ref[:-1]).max() >= 4  # unreachable and long
        np.testing.assert_array_equal(row, ref)
        assert row.sum() == (n * (n - 1) if directed else n * (n - 1) // 2)


def test_geodesic_distances_of_small_components():
    # a dyad, a mutual dyad (directed), a 3-path, an isolate: counted by hand
    edges = np.array([[0, 1], [2, 3], [3, 4]])
    got = geodesic_distance_distribution(edges, 6)
    np.testing.assert_array_equal(got, [3, 1, 0, 0, 0, 15 - 4])
    directed = np.array([[0, 1], [1, 0], [2, 3], [3, 4]])
    got = geodesic_distance_distribution(directed, 6, directed=True)
    np.testing.assert_array_equal(got, [4, 1, 0, 0, 0, 30 - 5])
    empty = geodesic_distance_distribution(np.zeros((0, 2), int), 4)
    np.testing.assert_array_equal(empty, [0, 0, 0, 6])


def test_edge_lists_are_checked():
    ok = np.array([[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="self-loop"):
        degree_distribution(np.array([[0, 1], [2, 2]]), 4)
    with pytest.raises(ValueError, match="repeats the edge"):
        degree_distribution(np.array([[0, 1], [1, 0]]), 4)
    # directed: both orientations are two edges
    degree_distribution(np.array([[0, 1], [1, 0]]), 4, directed=True, kind="idegree")
    with pytest.raises(ValueError, match=r"outside 0\.\.3"):
        degree_distribution(np.array([[0, 4]]), 4)
    with pytest.raises(ValueError, match=r"shape \(m, 2\)"):
        degree_distribution(np.array([0, 1, 2]), 4)
    with pytest.raises(TypeError, match="integer node ids"):
        degree_distribution(ok.astype(float), 4)
    with pytest.raises(TypeError, match="num_nodes"):
        degree_distribution(ok, 4.0)
    with pytest.raises(ValueError, match="num_nodes"):
        degree_distribution(np.zeros((0, 2), int), 1)
    with pytest.raises(TypeError, match="directed"):
        degree_distribution(ok, 4, directed="yes")
    with pytest.raises(ValueError, match="partner_type"):
        edgewise_shared_partners(ok, 4, directed=True, partner_type="XYZ")
    with pytest.raises(ValueError, match=r"simulated_edges has a self-loop .* network 1"):
        goodness_of_fit(ok, [ok, np.array([[0, 0]])], 4)
    with pytest.raises(ValueError, match="single edge list"):
        goodness_of_fit(ok, ok, 4)
    with pytest.raises(ValueError, match="statistics"):
        goodness_of_fit(ok, [ok], 4, statistics=["idegree"])


def test_indicators_to_edge_lists_round_trip():
    graph = pytest.importorskip("networkx").gnp_random_graph(9, 0.4, seed=2)
    y = graph_to_edges(graph, nodelist=range(9))
    edges = indicators_to_edge_lists(y)
    assert sorted(map(tuple, edges.tolist())) == sorted(tuple(sorted(e)) for e in graph.edges)
    both = indicators_to_edge_lists(np.stack([y, 1 - y]))
    assert len(both[0]) + len(both[1]) == 36
    np.testing.assert_allclose(network_densities(both, 9), [y.mean(), 1 - y.mean()])


@pytest.mark.slow
def test_distribution_timing_on_magnolia_sized_networks():
    """Prints (asserts nothing about) the time of the three distributions of 100
    networks the size of faux.magnolia.high."""
    path = NETWORKS / "faux_magnolia_high.npz"
    data = np.load(path, allow_pickle=False)
    edges, n = data["edges"], int(data["num_nodes"])
    rng = np.random.default_rng(0)
    sims = []
    for _ in range(100):  # same number of edges, half rewired at random
        keep = edges[rng.random(len(edges)) < 0.5]
        extra = rng.integers(0, n, (3 * len(edges), 2))
        extra = np.unique(np.sort(extra[extra[:, 0] != extra[:, 1]], 1), axis=0)
        both = np.unique(np.concatenate([np.sort(keep, 1), extra[rng.permutation(len(extra))]
                                         [:len(edges) - len(keep)]]), axis=0)
        sims.append(both)
    for name, f in (("degree", degree_distribution),
                    ("espartners", shared_partner_distribution),
                    ("distance", geodesic_distance_distribution)):
        start = time.perf_counter()
        f(sims, n)
        print(f"{name}: {time.perf_counter() - start:.2f} s for 100 networks of {n} nodes")
    start = time.perf_counter()
    goodness_of_fit(edges, sims, n)
    print(f"goodness_of_fit: {time.perf_counter() - start:.2f} s")
