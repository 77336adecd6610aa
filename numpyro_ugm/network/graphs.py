"""Graphs as the state of a model, and graphs <-> data.

An undirected graph on ``n`` nodes is one :class:`~numpyro_ugm.domains.Binary` site
``"y"`` over its ``n(n-1)/2`` node pairs, in the order of ``numpy.triu_indices(n, 1)``:
(0, 1), (0, 2), ..., (0, n-1), (1, 2), ... (``y[e] = 1``: the pair is an edge). A
directed graph has one variable per ordered pair (i, j), i ≠ j, ``n(n−1)`` of them in
row-major order: (0, 1), ..., (0, n−1), (1, 0), (1, 2), ... (``y[e] = 1``: a tie i → j).
:func:`graph_to_edges` / :func:`edges_to_adjacency` / :func:`edges_to_graph` convert
between graphs (networkx or adjacency arrays) and such data; :func:`pair_tables` and
:func:`adjacency` are the constant tables and the differentiable adjacency matrix that
the statistics (:mod:`numpyro_ugm.network.terms.structural`) are computed from.
"""

import functools
import math
from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ..runtime.optional import require

__all__ = ["graph_to_edges", "graph_edge_list", "edges_to_adjacency", "edges_to_graph",
           "num_pairs", "num_dyads", "num_nodes_of", "pair_tables", "with_zero_pair", "adjacency",
           "as_edge_data", "check_edge_list", "is_networkx"]

# --- the graph as a site -------------------------------------------------------------


def num_pairs(num_nodes: int) -> int:
    """Number of node pairs n(n−1)/2 (variables of the site ``"y"``)."""
    n = int(num_nodes)
    return n * (n - 1) // 2


def num_dyads(num_nodes: int, directed: bool = False) -> int:
    """Number of dyad variables: n(n−1)/2 node pairs, or n(n−1) ordered pairs."""
    n = int(num_nodes)
    return n * (n - 1) if directed else n * (n - 1) // 2


def num_nodes_of(num_edge_variables: int, directed: bool = False) -> int:
    """The n with n(n−1)/2 (directed: n(n−1)) == ``num_edge_variables`` (raises if there
    is none)."""
    e = int(num_edge_variables)
    n = int(round((1 + math.sqrt(1 + (4 if directed else 8) * e)) / 2))
    if num_dyads(n, directed) != e:
        form = "n(n-1)" if directed else "n(n-1)/2"
        raise ValueError(f"{e} edge variables are not {form} for any number of nodes n")
    return n


@functools.lru_cache(maxsize=None)
def pair_tables(n: int, directed: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Constant tables of the n-node graph: ``pair`` (n, n), the variable index of each
    ordered pair (i, j) (the diagonal points at an appended zero, index ``num_dyads``),
    and the two nodes of each variable (for a directed graph, the tie's sender and
    receiver)."""
    if directed:
        i, j = np.nonzero(~np.eye(n, dtype=bool))
    else:
        i, j = np.triu_indices(n, 1)
    e = len(i)
    pair = np.full((n, n), e, np.int32)
    pair[i, j] = np.arange(e)
    if not directed:
        pair[j, i] = np.arange(e)
    return pair, i.astype(np.int32), j.astype(np.int32)


def with_zero_pair(y: jnp.ndarray) -> jnp.ndarray:
    """``y`` (..., E) with a zero appended: the value of the diagonal pairs of
    :func:`pair_tables`."""
    return jnp.concatenate([y, jnp.zeros(y.shape[:-1] + (1,), y.dtype)], axis=-1)


def adjacency(y: jnp.ndarray, n: int, directed: bool = False) -> jnp.ndarray:
    """Adjacency ``(..., n, n)`` (zero diagonal; symmetric unless ``directed``) from edge
    variables ``(..., E)``, by one gather (differentiable in ``y``)."""
    return with_zero_pair(y)[..., pair_tables(n, directed)[0]]


# --- graphs <-> data -----------------------------------------------------------------


def is_networkx(obj) -> bool:
    """Whether ``obj`` looks like a networkx graph (nodes, edges and adjacency)."""
    return hasattr(obj, "nodes") and hasattr(obj, "edges") and hasattr(obj, "adj")


def _check_networkx(graph, nodelist):
    """Refuse a multigraph, self-loops or a ``nodelist`` that repeats a node (the
    messages of :func:`graph_to_edges`)."""
    nx = require("networkx", "network", "a networkx graph")

    if graph.is_multigraph():
        raise ValueError("graph_to_edges: the graph is a multigraph (networkx "
                         f"{type(graph).__name__}); ERGMs here model binary ties: pass "
                         "networkx.Graph(graph) / networkx.DiGraph(graph) to merge parallel "
                         "edges")
    loops = list(nx.selfloop_edges(graph))
    if loops:
        raise ValueError(f"graph_to_edges: the graph has {len(loops)} self-loop(s), e.g. "
                         f"at node {loops[0][0]!r}; remove them "
                         "(graph.remove_edges_from(networkx.selfloop_edges(graph)))")
    if len(set(nodelist)) != len(nodelist):
        raise ValueError("graph_to_edges: nodelist repeats a node")


def _networkx_adjacency(graph, nodelist):
    nx = require("networkx", "network", "a networkx graph")

    _check_networkx(graph, nodelist)
    return nx.to_numpy_array(graph, nodelist=nodelist, weight=None, dtype=np.int8)


def graph_edge_list(graph: Any, nodelist: Sequence | None = None) -> np.ndarray:
    """The ties of a networkx graph as an edge list (m, 2) of node indices (in
    ``nodelist`` order, default ``list(graph.nodes)``), rows in the order of
    :func:`pair_tables` (undirected: i < j), without the dense (n, n) adjacency of
    :func:`graph_to_edges`; the same checks (no multigraph, no self-loops)."""
    nodes = list(graph.nodes) if nodelist is None else list(nodelist)
    _check_networkx(graph, nodes)
    index = {v: k for k, v in enumerate(nodes)}
    e = np.array([(index[u], index[v]) for u, v in graph.edges() if u in index and v in index],
                 np.int64).reshape(-1, 2)
    if not graph.is_directed():
        e = np.sort(e, 1)
    return e[np.lexsort((e[:, 1], e[:, 0]))]


def graph_to_edges(graph: Any, *, nodelist: Sequence | None = None,
                   directed: bool | None = None, dtype: Any = np.int8) -> np.ndarray:
    """Edge data (the site ``"y"``) from graphs.

    Parameters
    ----------
    graph : networkx.Graph / DiGraph, sequence of them, or array (..., n, n)
        A networkx graph (nodes in ``nodelist`` order, default ``list(graph.nodes)``),
        a list of graphs on the same nodes, or 0/1 adjacency matrices with a zero
        diagonal (any leading batch axes; symmetric unless ``directed``).
    nodelist : sequence, optional
        Node order for networkx graphs (it fixes the edge order; nodes of the list
        absent from the graph are isolates).
    directed : bool, optional
        Whether the dyads are ordered pairs; default: a networkx ``DiGraph`` is directed,
        a ``Graph`` or an array is not.
    dtype : numpy dtype
        dtype of the result.

    Returns
    -------
    numpy.ndarray (..., E)
        Edge indicators in the order of :func:`pair_tables` (E = n(n−1)/2 pairs i < j,
        or n(n−1) ordered pairs); a batch axis first for a list of graphs. Pass as
        ``{"y": edges}`` (add a leading axis for a single graph).
    """
    if is_networkx(graph):
        nodes = list(graph.nodes) if nodelist is None else list(nodelist)
        is_directed = graph.is_directed()
        if directed is not None and bool(directed) != is_directed:
            raise ValueError(f"graph_to_edges: directed={directed} but the graph is a "
                             f"networkx {type(graph).__name__}")
        return graph_to_edges(_networkx_adjacency(graph, nodes), directed=is_directed,
                              dtype=dtype)
    if isinstance(graph, (list, tuple)) and graph and all(is_networkx(g) for g in graph):
        nodes = list(graph[0].nodes) if nodelist is None else list(nodelist)
        for g in graph:
            if nodelist is None and set(g.nodes) != set(nodes):
                raise ValueError("graph_to_edges: the graphs have different node sets; "
                                 "give nodelist=")
        return np.stack([graph_to_edges(g, nodelist=nodes, directed=directed, dtype=dtype)
                         for g in graph])
    A = np.asarray(graph)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"graph_to_edges: expected a networkx graph or adjacency "
                         f"matrices (..., n, n), got an array of shape {A.shape}")
    if not directed and not np.array_equal(A, np.swapaxes(A, -1, -2)):
        raise ValueError("graph_to_edges: the adjacency matrix is not symmetric; pass "
                         "directed=True for a directed network")
    if np.any(np.diagonal(A, axis1=-2, axis2=-1) != 0):
        raise ValueError("graph_to_edges: the adjacency matrix has a non-zero diagonal "
                         "(self-loops)")
    if not np.all((A == 0) | (A == 1)):
        raise ValueError("graph_to_edges: adjacency entries must be 0 or 1 (a multigraph "
                         "or valued network is not a binary ERGM's data)")
    _, i, j = pair_tables(A.shape[-1], bool(directed))
    return A[..., i, j].astype(dtype)


def edges_to_adjacency(edges: ArrayLike, dtype: Any = np.int8,
                       directed: bool = False) -> np.ndarray:
    """Adjacency matrices ``(..., n, n)`` from edge data ``(..., E)`` (the inverse of
    :func:`graph_to_edges` on arrays; symmetric unless ``directed``)."""
    y = np.asarray(edges)
    n = num_nodes_of(y.shape[-1], directed)
    A = np.zeros(y.shape[:-1] + (n, n), dtype)
    _, i, j = pair_tables(n, directed)
    A[..., i, j] = y
    if not directed:
        A[..., j, i] = y
    return A


def edges_to_graph(edges: ArrayLike, nodelist: Sequence | None = None,
                   directed: bool = False) -> Any:
    """networkx graph(s) from edge data: one ``networkx.Graph`` (``DiGraph`` if
    ``directed``) for ``(E,)``, a list for ``(N, E)``. ``nodelist`` names the nodes
    (default 0..n−1)."""
    nx = require("networkx", "network", "a networkx graph")

    y = np.asarray(edges)
    if y.ndim == 2:
        return [edges_to_graph(row, nodelist, directed) for row in y]
    if y.ndim != 1:
        raise ValueError(f"edges_to_graph: expected (E,) or (N, E) edge data, got shape "
                         f"{y.shape}")
    n = num_nodes_of(y.shape[0], directed)
    nodes = list(range(n)) if nodelist is None else list(nodelist)
    if len(nodes) != n:
        raise ValueError(f"edges_to_graph: nodelist has {len(nodes)} nodes, the data {n}")
    graph = nx.DiGraph() if directed else nx.Graph()
    graph.add_nodes_from(nodes)
    _, i, j = pair_tables(n, directed)
    on = np.flatnonzero(y)
    graph.add_edges_from((nodes[i[e]], nodes[j[e]]) for e in on)
    return graph


def as_edge_data(data: Any, directed: bool | None = None) -> dict:
    """``{"y": (N, E)}`` from a dict, edge array (E,) / (N, E), or networkx graph(s)."""
    if isinstance(data, dict):
        if set(data) != {"y"}:
            raise KeyError(f"ERGM data has the single site 'y', got {list(data)}")
        y = np.asarray(data["y"])
    elif is_networkx(data) or (isinstance(data, (list, tuple)) and data
                                and is_networkx(data[0])):
        y = graph_to_edges(data, directed=directed)
    else:
        y = np.asarray(data)
    return {"y": y[None] if y.ndim == 1 else y}


def check_edge_list(owner: str, name: str, edges: Any, num_nodes: int | None = None,
                    directed: bool = False) -> np.ndarray:
    """An edge list as (m, 2) int64, or an error naming ``owner`` and ``name``: the shape
    and dtype, and with ``num_nodes`` also node ids in range, no self-loops and no repeated
    tie (an undirected pair in either orientation)."""
    e = np.asarray(edges)
    if e.size == 0:
        return np.zeros((0, 2), np.int64)
    if e.ndim != 2 or e.shape[1] != 2:
        raise ValueError(f"{owner}: {name} must be an edge list of shape (m, 2), got shape "
                         f"{e.shape}")
    if e.dtype == bool or not np.issubdtype(e.dtype, np.integer):
        raise TypeError(f"{owner}: {name} must hold integer node ids, got dtype {e.dtype}")
    e = e.astype(np.int64, copy=False)
    if num_nodes is None:
        return e
    if e.min() < 0 or e.max() >= num_nodes:
        raise ValueError(f"{owner}: {name} must hold node ids in [0, {num_nodes}), got "
                         f"values in [{e.min()}, {e.max()}]")
    if np.any(e[:, 0] == e[:, 1]):
        raise ValueError(f"{owner}: {name} has self-loops (i, i); ERGM networks have none")
    key = e if directed else np.sort(e, 1)
    if len(np.unique(key, axis=0)) < len(e):
        kind = "ties" if directed else "edges (in either orientation)"
        raise ValueError(f"{owner}: {name} has repeated {kind} (multi-edges)")
    return e
