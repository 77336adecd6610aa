"""Fixtures of the network tests (tests/network/ mirrors numpyro_ugm/network/).

* ``network_data``: the folder of statnet's networks shipped inside the package
  (``flomarriage.npz``, ...); ``statnet(name)``: one of them as a networkx graph.
* ``brute_force``: statistics from their definitions, independent of the package's
  formulas (the dyad order, adjacency from dyads, random graphs, and the check of
  s(y), Δs of every dyad and Δs of blocks against brute force).
* ``compiled_cases``: networks with covariates, random networks and the compiled
  kernel's chains at them.

The sparse samplers' fixtures: sampling/conftest.py.
"""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers.network import STATNET

from numpyro_ugm.network import change_statistics, ergm_statistics
from numpyro_ugm.network.estimation.sparse_statistics import sparse_statistics
from numpyro_ugm.network.graphs import pair_tables
from numpyro_ugm.network.sampling.chains import init_network_chains
from numpyro_ugm.network.terms.compiled import native_chains
from numpyro_ugm.network.terms.structural import (change_statistics_of, resolve_terms,
                                                  term_names)
from numpyro_ugm.network.terms.term import Network


@pytest.fixture(scope="session")
def network_data():
    """The folder of statnet's networks shipped inside the package."""
    return STATNET


@pytest.fixture(scope="session")
def statnet():
    """``statnet(name)``: one of statnet's networks shipped inside the package
    (``datasets.network``)."""
    from numpyro_ugm import datasets

    return datasets.network


# --- brute force from the definitions ---------------------------------------------------


def _dyad_list(n, directed):
    """The dyads (i, j) in the package's documented order: i < j row by row, or every
    ordered pair i != j row by row."""
    return [(i, j) for i in range(n) for j in range(n) if (i != j if directed else i < j)]


def _to_adjacency(y, n, directed):
    A = np.zeros((n, n), np.int64)
    for e, (i, j) in enumerate(_dyad_list(n, directed)):
        A[i, j] = y[e]
        if not directed:
            A[j, i] = y[e]
    return A


def _brute_vector(brute, y, n, directed, names):
    values = brute(_to_adjacency(y, n, directed))
    return np.array([values[k] for k in names], np.float64)


def _brute_change(brute, y, e, n, directed, names):
    """s(y with dyad e on) − s(y with it off), from the brute-force statistics."""
    on, off = np.array(y), np.array(y)
    on[e], off[e] = 1, 0
    return (_brute_vector(brute, on, n, directed, names)
            - _brute_vector(brute, off, n, directed, names))


def _random_graphs(rng, count, num_dyads, density=(0.3, 0.5, 0.7)):
    return np.stack([rng.random(num_dyads) < density[g % len(density)]
                     for g in range(count)]).astype(np.int8)


def _package_values(net, network, directed, terms, graphs, toggled, bases, idx):
    """s(y), Δs of every dyad and Δs of blocks by the package, in one compiled call."""
    resolved = resolve_terms(terms, net)

    @jax.jit
    def package(graphs, toggled, bases, idx):
        kind = {"network": net} if network is not None else {"directed": directed}
        return (ergm_statistics(graphs, terms, **kind),
                change_statistics(toggled, terms, **kind),
                jax.vmap(lambda y, i: change_statistics_of(y, net, resolved, i))(bases, idx))

    values = package(jnp.asarray(graphs, jnp.float32), jnp.asarray(toggled, jnp.float32),
                     jnp.asarray(np.stack(bases), jnp.float32), jnp.asarray(np.stack(idx)))
    return resolved, [np.asarray(v) for v in values]


def _check_against_brute_force(brute, n, directed, terms, names, graphs, rng, network=None,
                               block_size=5):
    """s(y) (:func:`ergm_statistics`), Δs of every dyad (:func:`change_statistics`, the
    all-dyads view) with the dyad itself on and off, and Δs of blocks of dyads
    (:func:`change_statistics_of` with ``idx``, the block view) covering every dyad, at
    each graph and at the graph with the block's dyads all on and all off, against the
    brute-force statistics and toggling."""
    net = network if network is not None else Network(n, directed)
    G, E = graphs.shape
    eye = np.eye(E, dtype=np.int8)
    toggled = np.stack([np.maximum(graphs[:, None], eye), graphs[:, None] * (1 - eye)])
    blocks = rng.permutation(E).reshape(-1, block_size)
    bases, idx = [], []
    for y in graphs:
        for block in blocks:
            on, off = y.copy(), y.copy()
            on[block], off[block] = 1, 0
            bases += [y, on, off]
            idx += [block] * 3
    resolved, (stats, every, block) = _package_values(net, network, directed, terms, graphs,
                                                      toggled, bases, idx)
    assert term_names(resolved) == names
    want = np.stack([_brute_vector(brute, y, n, directed, names) for y in graphs])
    np.testing.assert_allclose(stats, want, rtol=1e-5, atol=1e-4)
    cache = {}

    def delta(y, e):
        key = (y.tobytes(), int(e))
        if key not in cache:
            cache[key] = _brute_change(brute, y, e, n, directed, names)
        return cache[key]

    assert every.shape == (2, G, E, E, len(names))
    for g, y in enumerate(graphs):
        want = np.stack([delta(y, e) for e in range(E)])
        for side in range(2):  # the dyad itself on, then off
            np.testing.assert_allclose(every[side, g, np.arange(E), np.arange(E)], want,
                                       rtol=1e-5, atol=1e-4, err_msg=f"graph {g} side {side}")
    want = np.stack([np.stack([delta(y, e) for e in i]) for y, i in zip(bases, idx)])
    np.testing.assert_allclose(block, want, rtol=1e-5, atol=1e-4)
    return stats


@pytest.fixture(scope="session")
def brute_force():
    """``dyad_list(n, directed)``, ``to_adjacency(y, n, directed)``,
    ``random_graphs(rng, count, num_dyads, density)`` and
    ``check_against_brute_force(brute, n, directed, terms, names, graphs, rng,
    network=None, block_size=5)``."""
    return types.SimpleNamespace(dyad_list=_dyad_list, to_adjacency=_to_adjacency,
                                 random_graphs=_random_graphs,
                                 check_against_brute_force=_check_against_brute_force)


# --- networks with covariates for the compiled kernel -----------------------------------


def _example_network(n, directed, seed=0):
    """A network with the attributes the table's examples use: ``x`` (numbers), ``g``
    (labels) and the dyadic covariate ``w``."""
    rng = np.random.default_rng(seed)
    return Network(n, directed, {"x": rng.normal(size=n).round(2),
                                 "g": rng.choice(["a", "b", "c"], n)},
                   {"w": rng.normal(size=(n, n)).round(2)})


def _dyads_at_random(rng, n, density, directed):
    """(edge list (m, 2), dyad indicators (E,)) of a random network."""
    _, i, j = pair_tables(n, directed)
    keep = rng.random(len(i)) < density
    return np.stack([i[keep], j[keep]], 1), keep.astype(np.float32)


def _native_state(edges, net, terms, num_chains, max_degree=None):
    """Numpy chains of the compiled kernel at the network ``edges``."""
    observed = sparse_statistics(net, terms, edges)
    state = init_network_chains(edges, net.num_nodes, num_chains, directed=net.directed,
                                statistics0=observed, max_degree=max_degree)
    return native_chains(state)


@pytest.fixture(scope="session")
def compiled_cases():
    """``network(n, directed, seed=0)``, ``random_edges(rng, n, density, directed)`` ->
    (edges, y) and ``native_state(edges, net, terms, num_chains, max_degree=None)``."""
    return types.SimpleNamespace(network=_example_network, random_edges=_dyads_at_random,
                                 native_state=_native_state)
