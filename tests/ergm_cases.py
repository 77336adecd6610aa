"""ERGMs with known answers for the network tests: the edges + triangles model on 5 nodes
enumerated (1,024 graphs: exact MLE, moments and log Z, sampled exactly or by Gibbs), a
dyad-independent design sampled exactly, and random attributed networks.

The samplers are numpy closures with their own generators (persistent state for Gibbs),
called with the tests' keys, which they ignore. The estimation tests get these through
the fixtures of ``tests/network/estimation/conftest.py``.
"""

import itertools
from collections.abc import Callable
from typing import NamedTuple

import networkx as nx
import numpy as np
from scipy import special

from numpyro_ugm.network.graphs import graph_edge_list
from numpyro_ugm.network.terms.term import Network

#: a formula with every kind of dependence: dyadic covariates and gwesp
GWESP = "edges + nodematch('group') + nodecov('x') + gwesp(0.25, fixed=TRUE)"


# --- a dyad-independent model ------------------------------------------------------------


def design(num_dyads=200, seed=0):
    """(x (num_dyads, 2), s_obs): a random design and the statistics of one draw."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(num_dyads), rng.normal(size=num_dyads)])
    y = rng.random(num_dyads) < special.expit(x @ np.array([-1.0, 0.8]))
    return x, x.T @ y


def bernoulli_simulator(x, num_chains=2, num_draws=500, seed=1):
    """Exact draws of the dyad-independent model with design ``x``."""
    rng = np.random.default_rng(seed)

    def simulate(theta, rng_key):
        p = special.expit(x @ np.asarray(theta))
        return (rng.random((num_chains, num_draws, x.shape[0])) < p).astype(float) @ x

    return simulate


class DyadModel(NamedTuple):
    """The dyad-independent model: ``design(...)`` and ``simulator(x, ...)``."""

    design: Callable
    simulator: Callable


# --- the 5-node edges + triangles model, enumerated -------------------------------------


def five_node_statistics():
    """(1024, 2): edges and triangles of every graph on 5 nodes (bit d of the index: dyad d
    of the 10 pairs in lexicographic order)."""
    pairs = list(itertools.combinations(range(5), 2))
    index = {p: i for i, p in enumerate(pairs)}
    bits = (np.arange(1024)[:, None] >> np.arange(10)) & 1
    triangles = np.zeros(1024)
    for a, b, c in itertools.combinations(range(5), 3):
        triangles += bits[:, index[a, b]] * bits[:, index[a, c]] * bits[:, index[b, c]]
    return np.column_stack([bits.sum(1), triangles]).astype(float)


class FiveNode:
    """The enumerated model: ``statistics`` (1024, 2), ``observed`` (5 edges, 2
    triangles), the exact MLE ``theta`` and its covariance ``cov``, and samplers."""

    def __init__(self):
        self.statistics = five_node_statistics()
        self.observed = np.array([5.0, 2.0])
        self.theta, self.cov = self._mle()

    def moments(self, theta):
        """(mean, covariance, log Z) at θ, exact."""
        lw = self.statistics @ theta
        log_z = special.logsumexp(lw)
        w = np.exp(lw - log_z)
        mean = w @ self.statistics
        centered = self.statistics - mean
        return mean, (centered * w[:, None]).T @ centered, log_z

    def log_likelihood(self, theta):
        """l(θ) of the observed statistics, exact."""
        return float(theta @ self.observed - self.moments(theta)[2])

    def _mle(self):
        theta = np.zeros(2)
        for _ in range(50):
            mean, cov, _ = self.moments(theta)
            theta = theta + np.linalg.solve(cov, self.observed - mean)
        mean, cov, _ = self.moments(theta)
        assert np.allclose(mean, self.observed, atol=1e-10)
        return theta, np.linalg.inv(cov)

    def exact_simulator(self, num_chains=2, num_draws=1000, seed=0):
        """Independent draws of the statistics at θ."""
        rng = np.random.default_rng(seed)
        stats = self.statistics

        def simulate(theta, rng_key):
            lw = stats @ np.asarray(theta)
            p = np.exp(lw - special.logsumexp(lw))
            return stats[rng.choice(1024, size=(num_chains, num_draws), p=p)]

        return simulate

    def gibbs_simulator(self, num_chains=4, num_draws=1000, seed=0, flips=1):
        """Random-scan Gibbs on the 10 dyads, ``flips`` single-dyad updates per draw,
        chains persistent across calls."""
        rng = np.random.default_rng(seed)
        state = rng.integers(0, 1024, size=num_chains)
        stats = self.statistics

        def simulate(theta, rng_key):
            nonlocal state
            theta = np.asarray(theta)
            out = np.empty((num_chains, num_draws, 2))
            dyads = rng.integers(0, 10, size=(num_draws, flips, num_chains))
            uniforms = rng.random((num_draws, flips, num_chains))
            for t in range(num_draws):
                for f in range(flips):
                    bit = 1 << dyads[t, f]
                    on, off = state | bit, state & ~bit
                    p_on = special.expit((stats[on] - stats[off]) @ theta)
                    state = np.where(uniforms[t, f] < p_on, on, off)
                out[:, t] = stats[state]
            return out

        return simulate


# --- random attributed networks ----------------------------------------------------------


def random_network(n, p, directed=False, seed=0):
    """A random graph with a categorical and a numeric node attribute, its Network and
    its edge list."""
    rng = np.random.default_rng(seed)
    graph = nx.gnp_random_graph(n, p, seed=seed, directed=directed)
    attributes = {"group": rng.integers(3, size=n), "x": np.round(rng.normal(size=n), 2)}
    for v in graph:
        graph.nodes[v]["group"] = int(attributes["group"][v])
        graph.nodes[v]["x"] = float(attributes["x"][v])
    return graph, Network(n, directed, attributes), graph_edge_list(graph)
