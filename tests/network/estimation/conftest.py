"""Fixtures of the estimation tests: models with known answers (``tests/ergm_cases.py``)."""

import numpy as np
import pytest
from ergm_cases import (GWESP, DyadModel, FiveNode, bernoulli_simulator, design,
                        random_network)

from numpyro_ugm.network.graphs import graph_to_edges
from numpyro_ugm.network.terms.structural import resolve_terms


@pytest.fixture(scope="session")
def five_node():
    """The edges + triangles model on 5 nodes, enumerated (:class:`ergm_cases.FiveNode`)."""
    return FiveNode()


@pytest.fixture(scope="session")
def dyad_model():
    """A dyad-independent design and its exact sampler."""
    return DyadModel(design, bernoulli_simulator)


@pytest.fixture(scope="session")
def attributed_network():
    """``attributed_network(n, p, directed=False, seed=0)``: a random graph with node
    attributes, its Network and edge list."""
    return random_network


@pytest.fixture(scope="module")
def gwesp_network():
    """A 100-node network, its Network, edge list, gwesp terms and dense dyads (one set of
    terms for the tests that use it, so that they share compiled programs)."""
    graph, net, ties = random_network(100, 0.04, seed=3)
    return graph, net, ties, resolve_terms(GWESP, net), graph_to_edges(graph).astype(
        np.float32)
