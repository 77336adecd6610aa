"""Fixtures of the diagnostics tests: random graphs with their edge lists, and pyplot on
the Agg backend."""

import numpy as np
import pytest


def _random_graph(n, p, seed, directed, reciprocity=0.0):
    """A G(n, p) graph (directed: with a fraction ``reciprocity`` of its edges made
    mutual) and its edge list (rows shuffled, undirected rows in either orientation)."""
    nx = pytest.importorskip("networkx")
    graph = nx.gnp_random_graph(n, p, seed=seed, directed=directed)
    rng = np.random.default_rng(seed)
    if directed:
        arcs = list(graph.edges())
        graph.add_edges_from((j, i) for k, (i, j) in enumerate(arcs)
                             if rng.random() < reciprocity)
    edges = np.array(list(graph.edges()), np.int64).reshape(-1, 2)
    edges = edges[rng.permutation(len(edges))]
    if not directed:
        flip = rng.random(len(edges)) < 0.5
        edges[flip] = edges[flip, ::-1]
    return graph, edges


@pytest.fixture(scope="session")
def random_graph():
    """``random_graph(n, p, seed, directed, reciprocity=0.0)``: a G(n, p) graph and its
    edge list (rows shuffled, undirected rows in either orientation)."""
    return _random_graph


@pytest.fixture
def pyplot_agg():
    """matplotlib.pyplot on the Agg backend (nothing displayed), or skip."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
