"""Graphs as data (numpyro_ugm/network/graphs.py): edge variables, adjacency matrices and
networkx graphs converted into one another, with node orders and batches, and the errors
for matrices and graphs that are not binary networks."""

import networkx as nx
import numpy as np
import pytest

from numpyro_ugm.network import edges_to_adjacency, edges_to_graph, graph_to_edges


def test_graph_conversions():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, (3, 2, 10)).astype(np.int8)  # batch of 5-node graphs
    A = edges_to_adjacency(y)
    assert A.shape == (3, 2, 5, 5)
    np.testing.assert_array_equal(graph_to_edges(A), y)
    i, j = np.triu_indices(5, 1)
    assert A[0, 0, i[3], j[3]] == y[0, 0, 3] and A[0, 0, j[3], i[3]] == y[0, 0, 3]
    with pytest.raises(ValueError, match="not symmetric"):
        graph_to_edges(np.triu(np.ones((4, 4)), 1))
    with pytest.raises(ValueError, match="diagonal"):
        graph_to_edges(np.ones((4, 4)))
    g = nx.Graph([("a", "b"), ("b", "c")])
    g.add_node("d")
    np.testing.assert_array_equal(graph_to_edges(g), [1, 0, 0, 1, 0, 0])
    np.testing.assert_array_equal(graph_to_edges(g, nodelist=["d", "c", "b", "a"]),
                                  [0, 0, 0, 1, 0, 1])
    back = edges_to_graph(graph_to_edges(g), nodelist=list(g.nodes))
    assert set(map(frozenset, back.edges)) == set(map(frozenset, g.edges))
    assert graph_to_edges([g, g]).shape == (2, 6)
    assert len(edges_to_graph(y[0])) == 2


def test_bad_graphs_are_refused_by_graph_to_edges():
    loop = nx.Graph([(0, 1), (1, 1)])
    with pytest.raises(ValueError, match="self-loop"):
        graph_to_edges(loop)
    multi = nx.MultiGraph([(0, 1), (0, 1), (1, 2)])
    with pytest.raises(ValueError, match="multigraph"):
        graph_to_edges(multi)
    asymmetric = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])
    with pytest.raises(ValueError, match="directed=True"):
        graph_to_edges(asymmetric)
    np.testing.assert_array_equal(graph_to_edges(asymmetric, directed=True),
                                  [1, 0, 0, 1, 0, 0])
    with pytest.raises(ValueError, match="directed=False but the graph"):
        graph_to_edges(nx.DiGraph([(0, 1)]), directed=False)
    # a DiGraph in node order gives the row-major ordered pairs
    dg = nx.DiGraph()
    dg.add_nodes_from(range(3))
    dg.add_edges_from([(2, 0), (0, 1), (1, 0)])
    np.testing.assert_array_equal(graph_to_edges(dg), [1, 0, 1, 0, 1, 0])
