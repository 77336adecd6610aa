"""Graphs as data (models/graphs.py): edge variables, adjacency matrices and networkx
graphs converted into one another, with node orders and batches, and the errors for
matrices that are not graphs."""

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
    nx = pytest.importorskip("networkx")
    g = nx.Graph([("a", "b"), ("b", "c")])
    g.add_node("d")
    np.testing.assert_array_equal(graph_to_edges(g), [1, 0, 0, 1, 0, 0])
    np.testing.assert_array_equal(graph_to_edges(g, nodelist=["d", "c", "b", "a"]),
                                  [0, 0, 0, 1, 0, 1])
    back = edges_to_graph(graph_to_edges(g), nodelist=list(g.nodes))
    assert set(map(frozenset, back.edges)) == set(map(frozenset, g.edges))
    assert graph_to_edges([g, g]).shape == (2, 6)
    assert len(edges_to_graph(y[0])) == 2
