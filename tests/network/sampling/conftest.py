"""Fixtures of the sparse samplers' tests.

* ``chain_checks``: the samplers' state checked from scratch (random edge lists, their
  adjacency, the consistency of lists, edge positions, degrees and bit sets).
* ``sparse_models``: small models written twice, as change functions of the sampler's
  views and as statistics of a dense adjacency by their definitions (undirected: edges,
  triangles, gwesp(ALPHA); directed: edges, mutual, transitive triples, OTP
  gwesp(ALPHA)), the views' quantities by brute force and ``check_views``. The change
  functions are module-level objects: one compilation per shape for every test.
"""

import math
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numpyro_ugm.network.sampling import chains as nc
from numpyro_ugm.network.sampling import views as nv

ALPHA = 0.7  # gwesp decay of the tests
R = -math.expm1(-ALPHA)


# --- the state ----------------------------------------------------------


def _adjacency(edges, n, directed):
    A = np.zeros((n, n))
    if len(edges):
        A[edges[:, 0], edges[:, 1]] = 1
        if not directed:
            A[edges[:, 1], edges[:, 0]] = 1
    return A


def _random_edges(rng, n, density, directed):
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b and (directed or a < b)]
    keep = rng.random(len(pairs)) < density
    return np.array([p for p, k in zip(pairs, keep) if k], np.int64).reshape(-1, 2)


def _check_bits(one, edges, state):
    A = _adjacency(edges, state.num_nodes, state.directed).astype(bool)
    for bits, matrix in [(one.bits, A)] + ([(one.in_bits, A.T)] if state.directed else []):
        unpacked = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")
        np.testing.assert_array_equal(unpacked[:, :state.num_nodes], matrix)


def _check_consistent(state):
    """Lists, edge positions, degrees, the edge list and the bit sets (if kept) of every
    chain of ``state`` (:class:`NetworkChains`, JAX arrays) agree."""
    for c in range(state.num_chains):
        one = jax.tree.map(lambda x: np.asarray(x[c]), state)
        m = int(one.num_edges)
        edges = one.edges[:m]
        key = edges if state.directed else np.sort(edges, 1)
        assert len(np.unique(key, axis=0)) == m
        if state.bits is not None:
            _check_bits(one, edges, state)
        lists = [(one.lists, one.degree, 0)]
        if state.directed:
            lists.append((one.in_lists, one.in_degree, 1))
        for table, degree, side in lists:
            assert degree.sum() == (m if state.directed else 2 * m)
            for node in range(state.num_nodes):
                d = degree[node]
                assert np.all(table[node, d:, 0] == -1)
                for neighbour, position in table[node, :d]:
                    assert 0 <= position < m
                    tie = edges[position]
                    if state.directed:
                        assert tie[side] == node and tie[1 - side] == neighbour
                    else:
                        assert {tie[0], tie[1]} == {node, neighbour}


@pytest.fixture(scope="session")
def chain_checks():
    """``random_edges(rng, n, density, directed)`` (m, 2), ``adjacency(edges, n,
    directed)`` and ``check_consistent(state)`` of the sparse chains."""
    return types.SimpleNamespace(random_edges=_random_edges, adjacency=_adjacency,
                                 check_consistent=_check_consistent)


# --- small models, their views and brute force ---------------------------------------


def undirected_change(view):
    """edges, triangles, gwesp(ALPHA)."""
    r = -jnp.expm1(-ALPHA)
    return jnp.stack([jnp.ones_like(view.value), view.shared,
                      jnp.exp(ALPHA) * (1 - r ** view.shared) + view.partner_terms(r)])


def directed_change(view):
    """edges, mutual, transitive triples, OTP gwesp(ALPHA)."""
    r = -jnp.expm1(-ALPHA)
    return jnp.stack([jnp.ones_like(view.value), view.reverse,
                      view.two_paths + view.shared_out + view.shared_in,
                      jnp.exp(ALPHA) * (1 - r ** view.two_paths) + view.otp_partner_terms(r)])


def edges_only(view):
    return jnp.ones_like(view.value)[None]


# --- brute force on dense adjacency matrices -----------------------------------------


def undirected_statistics(A):
    """edges, triangles, gwesp(ALPHA) by their definitions."""
    sp = A @ A
    return np.array([A.sum() / 2, np.trace(A @ A @ A) / 6,
                     math.exp(ALPHA) * np.sum(A * (1 - R ** sp)) / 2])


def directed_statistics(A):
    """edges, mutual, transitive triples (a→b, b→c, a→c), OTP gwesp(ALPHA)."""
    tp = A @ A  # tp[x, y] = #{k: x→k→y}
    return np.array([A.sum(), np.sum(A * A.T) / 2, np.sum(tp * A),
                     math.exp(ALPHA) * np.sum(A * (1 - R ** tp))])


def undirected_truth(A, i, j, r):
    """The view's quantities of pair (i, j) from the dense adjacency."""
    off = A.copy()
    off[i, j] = off[j, i] = 0
    common = off[i] * off[j]
    partner = sum(r ** (off[i] @ off[k]) + r ** (off[j] @ off[k])
                  for k in np.flatnonzero(common))
    return {"value": A[i, j], "degree_i": off[i].sum(), "degree_j": off[j].sum(),
            "shared": common.sum(), "partner": partner}


def directed_truth(A, i, j, r):
    """The view's quantities of tie i -> j from the dense adjacency."""
    off = A.copy()
    off[i, j] = 0
    out_common, in_common = off[i] * off[j], off[:, i] * off[:, j]
    # tp(x, y) = #{k: x→k→y} = off[x] · off[:, y]
    partner = (sum(r ** (off[i] @ off[:, b]) for b in np.flatnonzero(out_common))
               + sum(r ** (off[a] @ off[:, j]) for a in np.flatnonzero(in_common)))
    return {"value": A[i, j], "reverse": A[j, i], "out_i": off[i].sum(),
            "in_i": off[:, i].sum(), "out_j": off[j].sum(), "in_j": off[:, j].sum(),
            "two_paths": np.sum(off[i] * off[:, j]), "cycles": np.sum(off[:, i] * off[j]),
            "shared_out": out_common.sum(), "shared_in": in_common.sum(),
            "partner": partner}


_VIEWS = {}


def views_of(state, chain, i, j):
    """The view quantities of the pairs (i[k], j[k]) of one chain and the test's change
    function of each (jitted, vmapped over pairs); partner sums at r = R."""
    directed = state.directed
    if directed not in _VIEWS:
        names = (["value", "reverse", "out_i", "in_i", "out_j", "in_j", "two_paths",
                  "cycles", "shared_out", "shared_in"] if directed
                 else ["value", "degree_i", "degree_j", "shared"])
        change = directed_change if directed else undirected_change

        def one(state, chain, i, j):
            view = nv.dyad_view(state, i, j, chain)
            out = {name: getattr(view, name) for name in names}
            out["partner"] = (view.otp_partner_terms(R) if directed
                              else view.partner_terms(R))
            out["i"], out["j"], out["change"] = view.i, view.j, change(view)
            return out

        _VIEWS[directed] = jax.jit(jax.vmap(one, in_axes=(None, None, 0, 0)))
    got = _VIEWS[directed](state, chain, jnp.asarray(i, jnp.int32), jnp.asarray(j, jnp.int32))
    return {k: np.asarray(v) for k, v in got.items()}


def check_views(state, chain, i, j, check_change=False):
    """Views (and, with ``check_change``, the change function against s(on) − s(off)
    by definition) of pairs (i[k], j[k]) against brute force."""
    directed, n = state.directed, state.num_nodes
    A = _adjacency(nc.network_edges(state)[chain], n, directed)
    got = views_of(state, chain, i, j)
    np.testing.assert_array_equal(got["i"], i)
    np.testing.assert_array_equal(got["j"], j)
    truth = directed_truth if directed else undirected_truth
    statistics = directed_statistics if directed else undirected_statistics
    for k, (a, b) in enumerate(zip(i, j)):
        expected = truth(A, a, b, R)
        for name, value in expected.items():
            assert got[name][k] == pytest.approx(value, rel=1e-5, abs=1e-5), (name, a, b)
        if check_change:
            on, off = A.copy(), A.copy()
            on[a, b], off[a, b] = 1, 0
            if not directed:
                on[b, a], off[b, a] = 1, 0
            np.testing.assert_allclose(got["change"][k], statistics(on) - statistics(off),
                                       rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="session")
def sparse_models():
    """``ALPHA``, ``R``; ``undirected_change``, ``directed_change``, ``edges_only`` (change
    functions of a view), ``undirected_statistics``, ``directed_statistics`` (of a dense
    adjacency), ``undirected_truth``, ``directed_truth`` and ``check_views(state, chain,
    i, j, check_change=False)``."""
    return types.SimpleNamespace(
        ALPHA=ALPHA, R=R, undirected_change=undirected_change,
        directed_change=directed_change, edges_only=edges_only,
        undirected_statistics=undirected_statistics,
        directed_statistics=directed_statistics, undirected_truth=undirected_truth,
        directed_truth=directed_truth, check_views=check_views)
