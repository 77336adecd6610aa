"""Exponential random graph models (ERGMs, p* models) of undirected graphs.

An undirected graph on ``n`` nodes is one :class:`~numpyro_ugm.domains.Binary` site
``"y"`` over its ``n(n-1)/2`` node pairs, in the order of ``numpy.triu_indices(n, 1)``:
(0, 1), (0, 2), ..., (0, n-1), (1, 2), ... (``y[e] = 1``: the pair is an edge). The
log-potential is θ·s(y) for a vector of graph statistics s (:data:`STATISTICS`), with one
parameter per statistic in the site ``"theta"``.

The samplers never differentiate the whole graph's statistics: the model's factor gives
its own conditionals (:func:`numpyro_ugm.factor`), the **change statistics** θ·Δ_e s of
a block of pairs, computed from the adjacency rows of the block's nodes (degrees, and
shared partners A_i·A_j): O(n) per pair for edges, twostars, threestars, triangles,
isolates and gwdegree, so O(n²) for a block that is a perfect matching and O(n³) per
sweep. ``gwesp`` also needs the shared partners of the pair's neighbouring edges: it
gathers the rows of the pair's c common neighbours, O(n·(c + 1)) per pair (under
``vmap`` over chains, c is the largest in the batch), so a sweep of a sparse graph costs
O(n³) too, with one pair per update. All pairs at once (:func:`change_statistics`, the
MPLE) come from matrix products: O(n³) work, O(n²) memory.

The model also declares its Gibbs blocks, so no structure analysis runs at setup: pairs
interact only through a shared node for every statistic but gwesp, so the blocks are
**edge matchings** (the round-robin schedule: n − 1 perfect matchings for even n, n for
odd n); with ``edges`` alone, one block; with ``gwesp`` any two pairs interact (through
the shared partners of their neighbours), so each pair is its own block. The statistics
themselves (for the log-potential and learning) are written **multilinearly** where they
can be — each term a product of distinct edge variables (2-stars as
((Σ_j y_ij)² − Σ_j y_ij²)/2 per node, triangles as trace(A³)/6 with A the symmetric
adjacency built from the site, ...) — so their gradient is the change statistics too;
``gwesp`` and ``gwdegree`` hold (1 − e^{−α})^k for counts k and are not multilinear.

Helpers: :func:`graph_to_edges` / :func:`edges_to_adjacency` / :func:`edges_to_graph`
convert between graphs (networkx or adjacency arrays) and data; :func:`ergm_statistics`
computes s(y) for data; :func:`change_statistics` the change statistics Δ_e s(y);
:func:`mple` the maximum pseudo-likelihood estimate (logistic regression on the change
statistics), the usual starting point of MCMC maximum likelihood; :func:`check_degeneracy`
warns when sampled graphs collapse to the empty or the complete graph.
"""

import functools
import math
import warnings
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.typing import ArrayLike

from .._checks import check_count
from ..domains import Binary
from ..factors import factor

__all__ = ["ergm", "STATISTICS", "ergm_statistics", "change_statistics", "graph_to_edges",
           "edges_to_adjacency", "edges_to_graph", "num_pairs", "num_nodes_of", "mple",
           "check_degeneracy", "DegeneracyWarning"]

#: default decay α of the geometrically weighted statistics (statnet's ``fixed=TRUE``)
DEFAULT_DECAY = 0.5


# --- the graph as a site -------------------------------------------------------------


def num_pairs(num_nodes):
    """Number of node pairs n(n−1)/2 (variables of the site ``"y"``)."""
    n = int(num_nodes)
    return n * (n - 1) // 2


def num_nodes_of(num_edge_variables):
    """The n with n(n−1)/2 == ``num_edge_variables`` (raises if there is none)."""
    e = int(num_edge_variables)
    n = int(round((1 + math.sqrt(1 + 8 * e)) / 2))
    if num_pairs(n) != e:
        raise ValueError(f"{e} edge variables are not n(n-1)/2 for any number of nodes n")
    return n


@functools.lru_cache(maxsize=None)
def _tables(n):
    """Constant tables of the n-node graph: ``pair`` (n, n), the edge index of each
    ordered pair (``n(n−1)/2`` on the diagonal, pointing at an appended zero), and the
    two nodes of each edge variable (``numpy.triu_indices`` order)."""
    i, j = np.triu_indices(n, 1)
    e = len(i)
    pair = np.full((n, n), e, np.int32)
    pair[i, j] = np.arange(e)
    pair[j, i] = np.arange(e)
    return pair, i.astype(np.int32), j.astype(np.int32)


def _padded(y):
    """``y`` (..., E) with a zero appended: the value of the diagonal pairs of ``_tables``."""
    return jnp.concatenate([y, jnp.zeros(y.shape[:-1] + (1,), y.dtype)], axis=-1)


def _adjacency(y, n):
    """Symmetric adjacency ``(..., n, n)`` (zero diagonal) from edge variables ``(..., E)``,
    by one gather (differentiable in ``y``)."""
    return _padded(y)[..., _tables(n)[0]]


def _colors(n, names):
    """The Gibbs coloring of the pairs: one color when the statistics are dyad
    independent (edges only), one color per pair with gwesp (any two pairs interact
    through the shared partners of their neighbours), else matchings (pairs interact
    only through a shared node)."""
    if set(names) <= {"edges"}:
        return np.zeros(num_pairs(n), np.int64)
    if "gwesp" in names:
        return np.arange(num_pairs(n))
    return _matching_colors(n)


@functools.lru_cache(maxsize=8)
def _matching_colors(n):
    """A color per edge variable such that each color is a matching (node-disjoint
    pairs): the round-robin schedule, n − 1 colors for even n, n for odd n (the fewest
    possible). Pairs (i, j) of the first m − 1 nodes (m = n rounded up to even) get
    (i + j) mod (m − 1); pairs with node m − 1 get 2i mod (m − 1)."""
    m = n + n % 2
    i, j = np.triu_indices(n, 1)
    return np.where(j == m - 1, 2 * i, i + j) % (m - 1)


# --- statistics s(y) ------------------------------------------------------------------
# Each is a function of the adjacency A (..., n, n) built from y and the decay. Those
# marked multilinear are sums of products of distinct edge variables as written, so a
# gradient in y gives their change statistics too (the structure analysis relies on it).


def _edges(A, decay):
    return jnp.sum(A, axis=(-2, -1)) / 2


def _twostars(A, decay):
    # Σ_i C(d_i, 2) written multilinearly: ((Σ_j A_ij)² − Σ_j A_ij²) / 2 per node
    d = jnp.sum(A, -1)
    return jnp.sum(d * d - jnp.sum(A * A, -1), -1) / 2


def _threestars(A, decay):
    # Σ_i C(d_i, 3) as the elementary symmetric polynomial e3 = (p1³ − 3 p1 p2 + 2 p3)/6
    p1, p2, p3 = (jnp.sum(A ** k, -1) for k in (1, 2, 3))
    return jnp.sum(p1 ** 3 - 3 * p1 * p2 + 2 * p3, -1) / 6


def _triangles(A, decay):
    # trace(A³)/6: with a zero diagonal every term A_ab A_bc A_ca has three distinct
    # pairs, so this is a product of distinct edges (O(n³) by one matrix product)
    return jnp.sum((A @ A) * A, axis=(-2, -1)) / 6


def _isolates(A, decay):
    # Π_j (1 − A_ij) is a product of distinct edges (the diagonal contributes 1)
    return jnp.sum(jnp.prod(1 - A, -1), -1)


def _gwesp(A, decay):
    # e^α Σ_{i<j} y_ij (1 − (1 − e^{−α})^{sp_ij}), sp_ij = shared partners (statnet's
    # gwesp(decay, fixed=TRUE)); not multilinear
    r = -jnp.expm1(-decay)
    return jnp.exp(decay) * jnp.sum(A * (1 - r ** (A @ A)), axis=(-2, -1)) / 2


def _gwdegree(A, decay):
    # e^α Σ_i (1 − (1 − e^{−α})^{d_i}) (statnet's gwdegree(decay, fixed=TRUE));
    # not multilinear
    r = -jnp.expm1(-decay)
    return jnp.exp(decay) * jnp.sum(1 - r ** jnp.sum(A, -1), -1)


# --- change statistics Δ_e s(y) = s(y, e on) − s(y, e off) ----------------------------


class _Dyads:
    """What the change statistics of some dyads (i, j) need, at the current graph:
    ``value`` y_ij, ``degree_i`` / ``degree_j`` the degrees of i and j without the pair,
    ``shared`` the number of shared partners of i and j, and, for gwesp,
    :meth:`partner_terms`. Built by :func:`_all_dyads` (every pair, from matrix products)
    or :func:`_block_dyads` (a block, from the adjacency rows of its nodes)."""

    def __init__(self, value, degree_i, degree_j, shared, partner_terms):
        self.value, self.degree_i, self.degree_j = value, degree_i, degree_j
        self.shared, self._partner_terms = shared, partner_terms

    def partner_terms(self, r):
        """Σ_k A_ik A_jk (r^{sp_ik} + r^{sp_jk}), the shared partners' counts sp of the
        pairs (i, k) and (j, k) taken with the pair (i, j) off."""
        return self._partner_terms(r)


def _all_dyads(y, n):
    """:class:`_Dyads` of every pair of the graph ``y`` (E,): O(n²) memory, O(n³) work
    (A @ A, and one more product for gwesp)."""
    _, i, j = _tables(n)
    A = _adjacency(y, n)
    d = jnp.sum(A, -1)
    sp = A @ A

    def partner_terms(r):
        # B = A ∘ r^{sp}; (B A)_ij + (B A)_ji sums r^{sp_ik} (resp. r^{sp_jk}) over the
        # common neighbours k; with y_ij on, each sp counts the pair once too many
        BA = ((A * r ** sp) @ A)
        return (BA[i, j] + BA[j, i]) * r ** (-y)

    return _Dyads(y, d[i] - y, d[j] - y, sp[i, j], partner_terms)


#: common neighbours whose adjacency rows gwesp's change statistic gathers at a time
PARTNER_CHUNK = 8


def _block_dyads(y, n, idx):
    """:class:`_Dyads` of the pairs ``idx`` (b,) of the graph ``y`` (E,), from the
    adjacency rows of their nodes: O(b·n). gwesp's partner terms also gather the rows
    of the pair's common neighbours, :data:`PARTNER_CHUNK` at a time: O(b·n·(c + 1))
    for c common neighbours (under ``vmap`` the largest c of the batch), instead of
    O(n²) for the whole adjacency."""
    pair, nodes_i, nodes_j = _tables(n)
    pair = jnp.asarray(pair)
    padded = _padded(y)
    i, j = jnp.asarray(nodes_i)[idx], jnp.asarray(nodes_j)[idx]
    row_i, row_j = padded[pair[i]], padded[pair[j]]  # (b, n)
    value = padded[idx]

    def partner_terms(r):
        chunk = PARTNER_CHUNK
        width = -(-n // chunk) * chunk

        def one(row_i, row_j, v):
            common = row_i * row_j
            count = jnp.sum(common > 0)
            order = jnp.nonzero(common > 0, size=width, fill_value=0)[0]

            def body(carry):
                start, total = carry
                ks = jax.lax.dynamic_slice(order, (start,), (chunk,))
                weight = jnp.where(start + jnp.arange(chunk) < count, common[ks], 0)
                rows = padded[pair[ks]]  # (chunk, n): the common neighbours' rows
                sp_i, sp_j = rows @ row_i - v, rows @ row_j - v  # pair (i, j) off
                return start + chunk, total + jnp.sum(weight * (r ** sp_i + r ** sp_j))

            zero = jnp.zeros((), row_i.dtype)
            return jax.lax.while_loop(lambda c: c[0] < count, body, (0, zero))[1]

        return jax.vmap(one)(row_i, row_j, value)

    return _Dyads(value, jnp.sum(row_i, -1) - value, jnp.sum(row_j, -1) - value,
                  jnp.sum(row_i * row_j, -1), partner_terms)


def _change_edges(g, decay):
    return jnp.ones_like(g.value)


def _change_twostars(g, decay):
    return g.degree_i + g.degree_j


def _change_threestars(g, decay):
    return (g.degree_i * (g.degree_i - 1) + g.degree_j * (g.degree_j - 1)) / 2


def _change_triangles(g, decay):
    return g.shared


def _change_isolates(g, decay):
    return -((g.degree_i == 0).astype(g.value.dtype) + (g.degree_j == 0))


def _change_gwesp(g, decay):
    # the pair's own term e^α (1 − r^{sp_ij}), and each common neighbour k gives the
    # pairs (i, k), (j, k) one more shared partner: e^α (r^s − r^{s+1}) = r^s each
    r = -jnp.expm1(-decay)
    return jnp.exp(decay) * (1 - r ** g.shared) + g.partner_terms(r)


def _change_gwdegree(g, decay):
    # a node of degree d (without the pair) gains e^α (r^d − r^{d+1}) = r^d
    r = -jnp.expm1(-decay)
    return r ** g.degree_i + r ** g.degree_j


#: name -> (statistic of A, its change statistics, multilinear as written, uses a decay)
_STATISTICS = {
    "edges": (_edges, _change_edges, True, False),
    "twostars": (_twostars, _change_twostars, True, False),
    "threestars": (_threestars, _change_threestars, True, False),
    "triangles": (_triangles, _change_triangles, True, False),
    "isolates": (_isolates, _change_isolates, True, False),
    "gwesp": (_gwesp, _change_gwesp, False, True),
    "gwdegree": (_gwdegree, _change_gwdegree, False, True),
}
_ALIASES = {"edge": "edges", "kstar2": "twostars", "2-stars": "twostars",
            "2stars": "twostars", "kstar3": "threestars", "3-stars": "threestars",
            "triangle": "triangles", "isolate": "isolates"}

#: Names of the statistics :func:`ergm` knows (aliases: ``triangle``, ``kstar2``,
#: ``kstar3``, ``edge``, ``isolate``). ``gwesp`` and ``gwdegree`` take a decay α > 0,
#: either ``decay=`` or as a pair ``("gwesp", α)``.
STATISTICS = tuple(_STATISTICS)


def _parse(statistics, decay):
    """Normalize ``statistics`` to a tuple of (canonical name, decay or None)."""
    if isinstance(statistics, str):
        statistics = (statistics,)
    out = []
    for entry in statistics:
        if isinstance(entry, (tuple, list)):
            if len(entry) != 2:
                raise ValueError(f"ergm: a statistic given as a pair must be (name, decay), "
                                 f"got {entry!r}")
            name, value = entry
        else:
            name, value = entry, None
        if not isinstance(name, str):
            raise TypeError(f"ergm: statistic names are strings, got {name!r}")
        key = _ALIASES.get(name.lower(), name.lower())
        if key not in _STATISTICS:
            raise ValueError(f"ergm: unknown statistic {name!r}; known: {list(STATISTICS)}")
        uses_decay = _STATISTICS[key][3]
        if value is not None and not uses_decay:
            raise ValueError(f"ergm: statistic {name!r} takes no decay, got {value!r}")
        if uses_decay:
            value = float(decay if value is None else value)
            if not value > 0:
                raise ValueError(f"ergm: the decay of {name!r} must be > 0, got {value}")
        out.append((key, value))
    if not out:
        raise ValueError("ergm: give at least one statistic")
    if len(set(out)) < len(out):
        raise ValueError(f"ergm: a statistic is repeated in {statistics!r}")
    return tuple(out)


def _statistics(y, n, parsed):
    """s(y) (..., num_statistics) from edge variables (..., E)."""
    A = _adjacency(y, n)
    return jnp.stack([_STATISTICS[name][0](A, value) for name, value in parsed], axis=-1)


def _change_statistics(y, n, parsed, idx=None):
    """Δ s (b, num_statistics) of the pairs ``idx`` (all pairs if None) of one graph
    ``y`` (E,)."""
    g = _all_dyads(y, n) if idx is None else _block_dyads(y, n, idx)
    return jnp.stack([_STATISTICS[name][1](g, value) for name, value in parsed], axis=-1)


def ergm_statistics(edges: ArrayLike, statistics: Sequence = ("edges", "triangles"), *,
                    decay: float = DEFAULT_DECAY) -> jax.Array:
    """Graph statistics s(y) of edge data.

    Parameters
    ----------
    edges : array (..., n(n−1)/2)
        Edge indicators (0/1), as :func:`graph_to_edges` gives them; any leading axes.
    statistics : sequence of str or (str, float)
        As in :func:`ergm`.
    decay : float
        Decay α of ``gwesp`` / ``gwdegree``.

    Returns
    -------
    jax.Array (..., num_statistics)
        In the order of ``statistics`` (floating point).
    """
    parsed = _parse(statistics, decay)
    y = jnp.asarray(edges)
    y = y.astype(jnp.result_type(float)) if not jnp.issubdtype(y.dtype, jnp.floating) else y
    n = num_nodes_of(y.shape[-1])
    return _statistics(y, n, parsed)


def change_statistics(edges: ArrayLike, statistics: Sequence = ("edges", "triangles"), *,
                      decay: float = DEFAULT_DECAY) -> jax.Array:
    """Change statistics Δ_e s(y) = s(y with e on) − s(y with e off), for every pair e.

    The conditional log-odds of edge e given the rest is θ·Δ_e s(y), so the MPLE is the
    logistic regression of the observed y_e on these rows (:func:`mple`). Computed as
    the samplers compute them (O(n³) work and O(n²) memory per graph, from matrix
    products of the adjacency).

    Parameters
    ----------
    edges : array (..., n(n−1)/2)
        Edge indicators (0/1).
    statistics, decay
        As in :func:`ergm_statistics`.

    Returns
    -------
    jax.Array (..., n(n−1)/2, num_statistics)
    """
    parsed = _parse(statistics, decay)
    y = jnp.asarray(edges, jnp.result_type(float))
    n = num_nodes_of(y.shape[-1])
    flat = y.reshape((-1, y.shape[-1]))
    out = jax.vmap(lambda g: _change_statistics(g, n, parsed))(flat)
    return out.reshape(y.shape + (len(parsed),))


def _conditionals(y, theta, n, parsed):
    """The ``conditionals(site, idx)`` hook of the model's factor: log-probabilities
    (b, 2) of the pairs ``idx`` being off / on, [0, θ·Δ s]."""
    def conditionals(site, idx):
        if site != "y":
            return None
        log_odds = _change_statistics(y, n, parsed, idx) @ theta
        return jnp.stack([jnp.zeros_like(log_odds), log_odds], axis=-1)

    return conditionals


# --- the model -----------------------------------------------------------------------


def ergm(num_nodes: int, statistics: Sequence = ("edges", "triangles"), *,
         decay: float = DEFAULT_DECAY, prior_scale: float | None = None,
         init: ArrayLike | None = None) -> None:
    """Exponential random graph model: p(y; θ) ∝ exp(θ·s(y)) over undirected graphs.

    Sites: ``"y"``, a :class:`~numpyro_ugm.domains.Binary` site of the n(n−1)/2 node pairs
    (order of ``numpy.triu_indices(n, 1)``; data from :func:`graph_to_edges`), and
    ``"theta"``, one parameter per statistic in the order of ``statistics``.

    Statistics (:data:`STATISTICS`):

    * ``"edges"``: number of edges;
    * ``"twostars"``: Σ_i C(d_i, 2), pairs of edges sharing a node (``"kstar2"``);
    * ``"threestars"``: Σ_i C(d_i, 3) (``"kstar3"``);
    * ``"triangles"``: number of triangles (``"triangle"``);
    * ``"isolates"``: number of nodes of degree 0;
    * ``"gwesp"``: geometrically weighted edgewise shared partners with fixed decay α,
      e^α Σ_k (1 − (1 − e^{−α})^k) EP_k (statnet's ``gwesp(α, fixed=TRUE)``);
    * ``"gwdegree"``: geometrically weighted degree, e^α Σ_i (1 − (1 − e^{−α})^{d_i}).

    Gibbs takes each block's conditionals from its change statistics (see the module
    docstring): blocks are edge matchings, single pairs with ``gwesp``. The PF paper's
    triad model (Asuncion et al. 2010, sec. 4.2) is
    ``statistics=("edges", "twostars", "triangles")``.

    Parameters
    ----------
    num_nodes : int
        Number of nodes n (at least 2).
    statistics : sequence of str or (str, float)
        Statistic names; ``("gwesp", 0.25)`` gives a statistic its own decay.
    decay : float
        Default decay α > 0 of ``gwesp`` / ``gwdegree``.
    prior_scale : float, optional
        If given, ``theta`` gets independent Normal(0, prior_scale) priors (MAP);
        otherwise it is a ``numpyro.param`` site (maximum likelihood).
    init : array (num_statistics,), optional
        Initial ``theta`` of the ``numpyro.param`` site (default zeros).
    """
    n = check_count("ergm", "num_nodes", num_nodes, minimum=2)
    parsed = _parse(statistics, decay)
    k = len(parsed)
    if prior_scale is None:
        start = jnp.zeros(k) if init is None else jnp.asarray(init, jnp.result_type(float))
        if start.shape != (k,):
            raise ValueError(f"ergm: init must have shape ({k},) (one value per statistic), "
                             f"got {start.shape}")
        theta = numpyro.param("theta", start)
    else:
        theta = numpyro.sample("theta", dist.Normal(0.0, prior_scale).expand((k,)).to_event(1))
    y = numpyro.sample("y", Binary(num_pairs(n)))
    factor("statistics", theta @ _statistics(y, n, parsed),
           conditionals=_conditionals(y, theta, n, parsed),
           colors={"y": _colors(n, tuple(name for name, _ in parsed))},
           multilinear=all(_STATISTICS[name][2] for name, _ in parsed))


# --- graphs <-> data -----------------------------------------------------------------


def _is_networkx(obj):
    return hasattr(obj, "nodes") and hasattr(obj, "edges") and hasattr(obj, "adj")


def _networkx_adjacency(graph, nodelist):
    import networkx as nx

    if graph.is_directed():
        raise ValueError("graph_to_edges: the graph is directed; ERGMs here are undirected")
    if nx.number_of_selfloops(graph):
        raise ValueError("graph_to_edges: the graph has self-loops")
    return nx.to_numpy_array(graph, nodelist=nodelist, weight=None, dtype=np.int8)


def graph_to_edges(graph: Any, *, nodelist: Sequence | None = None,
                   dtype: Any = np.int8) -> np.ndarray:
    """Edge data (the site ``"y"``) from graphs.

    Parameters
    ----------
    graph : networkx.Graph, sequence of networkx.Graph, or array (..., n, n)
        A networkx graph (nodes in ``nodelist`` order, default ``list(graph.nodes)``),
        a list of graphs on the same nodes, or symmetric 0/1 adjacency matrices with a
        zero diagonal (any leading batch axes).
    nodelist : sequence, optional
        Node order for networkx graphs (it fixes the edge order; nodes of the list
        absent from the graph are isolates).
    dtype : numpy dtype
        dtype of the result.

    Returns
    -------
    numpy.ndarray (..., n(n−1)/2)
        Edge indicators of the pairs (i, j), i < j, in ``numpy.triu_indices(n, 1)`` order;
        a batch axis first for a list of graphs. Pass as ``{"y": edges}`` (add a leading
        axis for a single graph).
    """
    if _is_networkx(graph):
        nodes = list(graph.nodes) if nodelist is None else list(nodelist)
        return graph_to_edges(_networkx_adjacency(graph, nodes), dtype=dtype)
    if isinstance(graph, (list, tuple)) and graph and all(_is_networkx(g) for g in graph):
        nodes = list(graph[0].nodes) if nodelist is None else list(nodelist)
        for g in graph:
            if nodelist is None and set(g.nodes) != set(nodes):
                raise ValueError("graph_to_edges: the graphs have different node sets; "
                                 "give nodelist=")
        return np.stack([graph_to_edges(g, nodelist=nodes, dtype=dtype) for g in graph])
    A = np.asarray(graph)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"graph_to_edges: expected a networkx graph or adjacency "
                         f"matrices (..., n, n), got an array of shape {A.shape}")
    if not np.array_equal(A, np.swapaxes(A, -1, -2)):
        raise ValueError("graph_to_edges: the adjacency matrix is not symmetric "
                         "(ERGMs here are undirected)")
    if np.any(np.diagonal(A, axis1=-2, axis2=-1) != 0):
        raise ValueError("graph_to_edges: the adjacency matrix has a non-zero diagonal "
                         "(self-loops)")
    if not np.all((A == 0) | (A == 1)):
        raise ValueError("graph_to_edges: adjacency entries must be 0 or 1")
    i, j = np.triu_indices(A.shape[-1], 1)
    return A[..., i, j].astype(dtype)


def edges_to_adjacency(edges: ArrayLike, dtype: Any = np.int8) -> np.ndarray:
    """Symmetric adjacency matrices ``(..., n, n)`` from edge data ``(..., n(n−1)/2)``
    (the inverse of :func:`graph_to_edges` on arrays)."""
    y = np.asarray(edges)
    n = num_nodes_of(y.shape[-1])
    A = np.zeros(y.shape[:-1] + (n, n), dtype)
    i, j = np.triu_indices(n, 1)
    A[..., i, j] = y
    A[..., j, i] = y
    return A


def edges_to_graph(edges: ArrayLike, nodelist: Sequence | None = None) -> Any:
    """networkx graph(s) from edge data: one ``networkx.Graph`` for ``(E,)``, a list for
    ``(N, E)``. ``nodelist`` names the nodes (default 0..n−1)."""
    import networkx as nx

    y = np.asarray(edges)
    if y.ndim == 2:
        return [edges_to_graph(row, nodelist) for row in y]
    if y.ndim != 1:
        raise ValueError(f"edges_to_graph: expected (E,) or (N, E) edge data, got shape "
                         f"{y.shape}")
    n = num_nodes_of(y.shape[0])
    nodes = list(range(n)) if nodelist is None else list(nodelist)
    if len(nodes) != n:
        raise ValueError(f"edges_to_graph: nodelist has {len(nodes)} nodes, the data {n}")
    graph = nx.Graph()
    graph.add_nodes_from(nodes)
    i, j = np.triu_indices(n, 1)
    on = np.flatnonzero(y)
    graph.add_edges_from((nodes[i[e]], nodes[j[e]]) for e in on)
    return graph


def _as_edge_data(data):
    """``{"y": (N, E)}`` from a dict, edge array (E,) / (N, E), or networkx graph(s)."""
    if isinstance(data, dict):
        if set(data) != {"y"}:
            raise KeyError(f"ERGM data has the single site 'y', got {list(data)}")
        y = np.asarray(data["y"])
    elif _is_networkx(data) or (isinstance(data, (list, tuple)) and data
                                and _is_networkx(data[0])):
        y = graph_to_edges(data)
    else:
        y = np.asarray(data)
    return {"y": y[None] if y.ndim == 1 else y}


# --- estimation helpers --------------------------------------------------------------


def mple(data: Any, statistics: Sequence = ("edges", "triangles"), *,
         decay: float = DEFAULT_DECAY, prior_scale: float | None = None,
         num_steps: int = 200, tol: float = 1e-6, return_result: bool = False) -> Any:
    """Maximum pseudo-likelihood estimate of θ (Strauss & Ikeda 1990).

    The pseudo-likelihood Π_e p(y_e | y_−e; θ) of an ERGM is a logistic regression of each
    y_e on its change statistics Δ_e s(y) (:func:`change_statistics`). It is maximized
    here through the generic
    :func:`~numpyro_ugm.evaluate.pseudo.fit_pseudo_likelihood` (L-BFGS on
    :func:`~numpyro_ugm.evaluate.pseudo.pseudo_log_likelihood`), whose conditionals come
    from one gradient of the potential. The MPLE is consistent for many graphs but can be
    far from the MLE for one graph with strong dependence; it is the usual starting point
    of MCMC maximum likelihood (``init_params=`` of :meth:`~numpyro_ugm.learn.MLE.run`).

    Parameters
    ----------
    data : dict, array or networkx graph(s)
        ``{"y": (N, E)}``, edge data ``(E,)`` / ``(N, E)``, or networkx graph(s).
    statistics, decay, prior_scale
        As in :func:`ergm` (with ``prior_scale``: maximum penalized pseudo-likelihood).
    num_steps : int
        Maximum L-BFGS steps.
    tol : float
        Stop when the gradient norm reaches ``tol``.
    return_result : bool
        Return the full :class:`~numpyro_ugm.evaluate.pseudo.PseudoFitResult` instead of
        the parameters.

    Returns
    -------
    dict ``{"theta": array}`` (or the fit result)
        When the pseudo-likelihood has no maximum (e.g. a statistic whose change
        statistics separate the observed edges from the non-edges) the result has
        ``converged`` False and diverging parameters.
    """
    from ..evaluate.pseudo import fit_pseudo_likelihood
    from ..model import UGM

    data = _as_edge_data(data)
    n = num_nodes_of(data["y"].shape[-1])
    m = UGM(ergm, n, statistics, decay=decay, prior_scale=prior_scale)
    params = m.init_params(jax.random.PRNGKey(0))
    params = {"theta": jnp.zeros_like(params["theta"])}
    result = fit_pseudo_likelihood(m, data, params=params, num_steps=num_steps, tol=tol)
    return result if return_result else result.params


class DegeneracyWarning(RuntimeWarning):
    """Sampled graphs collapsed to the empty or the complete graph (ERGM degeneracy)."""


def _edge_particles(obj):
    """(S, E) edge values from samples, particles or learner/estimator states."""
    for attr in ("state", "estimator_state", "kernel_state"):  # RunResult, LearnState, PCD
        if hasattr(obj, attr) and not isinstance(obj, dict):
            inner = getattr(obj, attr)
            if inner is not None and not isinstance(inner, (np.ndarray, jax.Array)):
                try:
                    return _edge_particles(inner)
                except TypeError:
                    pass
    if hasattr(obj, "position") and not isinstance(obj, dict):
        return _edge_particles(obj.position)
    if isinstance(obj, dict):
        if "y" not in obj:
            raise KeyError(f"check_degeneracy: no site 'y' among {list(obj)}")
        obj = obj["y"]
    if isinstance(obj, (np.ndarray, jax.Array, list)):
        y = np.asarray(obj)
        return y.reshape((-1, y.shape[-1]))
    raise TypeError(f"check_degeneracy: cannot find edge particles in {type(obj).__name__}")


def check_degeneracy(particles: Any, *, data: Any = None, threshold: float = 0.9,
                     warn: bool = True) -> dict:
    """Warn when sampled graphs collapse to the empty or the complete graph.

    Near a degenerate θ an ERGM puts almost all its mass on the empty or the full
    graph (Handcock 2003): the particles of a learner then sit there, the negative
    phase is a point mass, and learning or simulation is meaningless. This checks the
    fraction of particles that are empty or complete graphs.

    Parameters
    ----------
    particles : array (S, E), dict with ``"y"``, or a learner result / state
        Edge particles: samples (``ugm.sample`` output), ``Particles``, an estimator
        state, a :class:`~numpyro_ugm.learn.LearnState` or a
        :class:`~numpyro_ugm.learn.RunResult` (its estimator's particles).
    data : dict or array, optional
        Observed graphs: if given, no warning is issued when the data are themselves that
        extreme.
    threshold : float
        Warn when at least this fraction of particles is empty, or complete.
    warn : bool
        Issue the :class:`DegeneracyWarning` (else only report).

    Returns
    -------
    dict
        ``fraction_empty``, ``fraction_full``, ``mean_density`` (of the particles),
        ``degenerate`` (bool).
    """
    y = _edge_particles(particles).astype(np.float64)
    density = y.mean(axis=-1)
    summary = {"fraction_empty": float(np.mean(density == 0.0)),
               "fraction_full": float(np.mean(density == 1.0)),
               "mean_density": float(np.mean(density))}
    data_extreme = {"empty": False, "full": False}
    if data is not None:
        d = _as_edge_data(data)["y"].astype(np.float64).mean(-1)
        data_extreme = {"empty": np.mean(d == 0.0) >= threshold,
                        "full": np.mean(d == 1.0) >= threshold}
    problems = []
    if summary["fraction_empty"] >= threshold and not data_extreme["empty"]:
        problems.append(f"{summary['fraction_empty']:.0%} of the {len(y)} particles are the "
                        "empty graph")
    if summary["fraction_full"] >= threshold and not data_extreme["full"]:
        problems.append(f"{summary['fraction_full']:.0%} of the {len(y)} particles are the "
                        "complete graph")
    summary["degenerate"] = bool(problems)
    if problems and warn:
        warnings.warn(
            "ERGM degeneracy: " + " and ".join(problems) + " (mean density "
            f"{summary['mean_density']:.3f}). The parameters are in or near a degenerate "
            "region where the model puts nearly all its mass on an extreme graph; the "
            "negative phase is then a point mass. Start from the MPLE (ergm.mple), lower "
            "the learning rate, or use curved statistics such as gwesp.",
            DegeneracyWarning, stacklevel=2)
    return summary
