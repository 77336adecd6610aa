"""Distributions of networks as statnet's ``gof()`` counts them: degrees, edgewise shared
partners, geodesic distances and densities of one network or of a sequence of networks.

Networks are **edge lists**: an integer array ``(m, 2)`` of 0-based node ids on
``num_nodes`` nodes, one row per edge (``directed=True``: sender → receiver), no
self-loops, no repeated edges (undirected: ``(i, j)`` and ``(j, i)`` are the same edge).
:func:`indicators_to_edge_lists` turns the package's own graphs (edge indicators of the
``n(n−1)/2`` pairs, the site ``"y"`` of :func:`~numpyro_ugm.models.ergm`) into edge lists.

* :func:`degree_distribution`, :func:`edgewise_shared_partners`,
  :func:`shared_partner_distribution`, :func:`geodesic_distance_distribution` and
  :func:`network_densities`, counted as ergm counts them. Degrees and shared partners of
  all the networks come from one sparse block-diagonal graph; distances from a
  breadth-first search from every node at once per network, on bitsets.
"""

import operator
from typing import Any

import numpy as np

from ..graphs import check_edge_list

__all__ = ["degree_distribution", "edgewise_shared_partners", "shared_partner_distribution",
           "geodesic_distance_distribution", "network_densities", "indicators_to_edge_lists",
           "SHARED_PARTNER_TYPES", "Networks", "degree_rows", "shared_partner_rows",
           "distance_rows", "check_partner_type"]

#: what a shared partner k of a directed edge i → j is (ergm's ``esp(type=)``); OTP is
#: ergm's default for directed networks
SHARED_PARTNER_TYPES = {"OTP": "outgoing two-path i → k → j",
                        "ITP": "incoming two-path j → k → i",
                        "RTP": "reciprocated two-path i ↔ k ↔ j",
                        "OSP": "outgoing shared partner i → k ← j",
                        "ISP": "incoming shared partner i ← k → j"}


# --- input checks ---------------------------------------------------------------------


def _check_num_nodes(owner, num_nodes):
    if isinstance(num_nodes, (bool, np.bool_)):
        raise TypeError(f"{owner}: num_nodes must be an integer, got a bool")
    try:
        n = operator.index(num_nodes)
    except TypeError:
        raise TypeError(f"{owner}: num_nodes must be an integer, got {num_nodes!r} of type "
                        f"{type(num_nodes).__name__}") from None
    if n < 2:
        raise ValueError(f"{owner}: num_nodes must be at least 2, got {n}")
    return n


def _check_directed(owner, directed):
    if not isinstance(directed, (bool, np.bool_)):
        raise TypeError(f"{owner}: directed must be a bool, got {directed!r}")
    return bool(directed)


def _as_networks(owner, name, networks):
    """(list of (m, 2) int64 arrays, whether one network was given)."""
    if isinstance(networks, np.ndarray) or hasattr(networks, "__array__"):
        a = np.asarray(networks)
        if a.ndim == 3:
            return [check_edge_list(owner, f"{name}[{s}]", x) for s, x in enumerate(a)], False
        return [check_edge_list(owner, name, a)], True
    if isinstance(networks, (list, tuple)):
        if len(networks) == 0:
            raise ValueError(f"{owner}: {name} is empty (give an edge list (m, 2), "
                             "np.zeros((0, 2), int) for a network without edges, or a "
                             "non-empty sequence of edge lists)")
        try:
            a = np.asarray(networks)
        except ValueError:  # ragged: a sequence of edge lists of different lengths
            a = None
        if a is not None and a.ndim == 2:
            return [check_edge_list(owner, name, a)], True
        return [check_edge_list(owner, f"{name}[{s}]", x) for s, x in enumerate(networks)], False
    raise TypeError(f"{owner}: {name} must be an edge list (m, 2) or a sequence of them, "
                    f"got {type(networks).__name__}")


class Networks:
    """Edge lists of S networks on n nodes, checked, as one block-diagonal graph of S·n
    nodes (network s holds the nodes s·n ... s·n + n − 1)."""

    def __init__(self, owner, name, networks, num_nodes, directed):
        self.n = _check_num_nodes(owner, num_nodes)
        self.directed = _check_directed(owner, directed)
        self.lists, self.single = _as_networks(owner, name, networks)
        self.count = len(self.lists)
        self.sizes = np.array([len(e) for e in self.lists], np.int64)
        self.network = np.repeat(np.arange(self.count), self.sizes)
        local = (np.concatenate(self.lists) if self.count else np.zeros((0, 2), np.int64))
        if local.size and (local.min() < 0 or local.max() >= self.n):
            bad = int(np.flatnonzero(np.any((local < 0) | (local >= self.n), axis=1))[0])
            s = int(self.network[bad])
            raise ValueError(f"{owner}: {name} has node ids outside 0..{self.n - 1} "
                             f"(num_nodes={self.n}), e.g. {local[bad].tolist()} in network "
                             f"{s}")
        loops = local[:, 0] == local[:, 1]
        if loops.any():
            bad = int(np.flatnonzero(loops)[0])
            raise ValueError(f"{owner}: {name} has a self-loop {local[bad].tolist()} in "
                             f"network {int(self.network[bad])}")
        self.offset = self.network * self.n
        self.source = local[:, 0] + self.offset
        self.target = local[:, 1] + self.offset
        if self.directed:
            key = self.source * self.n + local[:, 1]
        else:
            key = np.minimum(self.source, self.target) * self.n + np.maximum(local[:, 0],
                                                                             local[:, 1])
        if len(key) != len(np.unique(key)):
            order = np.argsort(key, kind="stable")
            dup = order[1:][np.diff(key[order]) == 0][0]
            what = "" if self.directed else " (undirected: (i, j) and (j, i) are one edge)"
            raise ValueError(f"{owner}: {name} repeats the edge {local[dup].tolist()}{what} "
                             f"in network {int(self.network[dup])}")

    def adjacency(self):
        """CSR adjacency of the block-diagonal graph (symmetric when undirected)."""
        import scipy.sparse as sparse

        N = self.count * self.n
        ones = np.ones(len(self.source), np.int32)
        A = sparse.csr_matrix((ones, (self.source, self.target)), shape=(N, N))
        return A if self.directed else (A + A.T).tocsr()

    def result(self, rows):
        """One row for one network, the (S, L) array otherwise."""
        return rows[0] if self.single else rows


def _histograms(values, groups, num_groups, length):
    """(num_groups, length) counts of the integers 0 <= values < length in each group."""
    flat = np.bincount(groups * length + values, minlength=num_groups * length)
    return flat.reshape(num_groups, length)


# --- distributions ---------------------------------------------------------------------


def degree_distribution(edges: Any, num_nodes: int, *, directed: bool = False,
                        kind: str | None = None) -> np.ndarray:
    """Number of nodes of each degree 0, 1, ..., n − 1 (ergm's ``degree(0:(n-1))``).

    Parameters
    ----------
    edges : array (m, 2) or sequence of arrays (m_s, 2)
        One network's edge list, or the edge lists of several networks.
    num_nodes : int
        Number of nodes n (nodes absent from the edge list are isolates).
    directed : bool
        Whether rows are sender → receiver.
    kind : {"degree", "idegree", "odegree"}, optional
        ``"degree"`` for an undirected network (the default there); a directed network
        needs ``"idegree"`` (number of senders of a node) or ``"odegree"`` (receivers).

    Returns
    -------
    numpy.ndarray (n,) or (S, n)
        Counts of nodes by degree, int64.
    """
    nets = Networks("degree_distribution", "edges", edges, num_nodes, directed)
    kinds = ("idegree", "odegree") if nets.directed else ("degree",)
    kind = kinds[0] if kind is None and not nets.directed else kind
    if kind not in kinds:
        raise ValueError(f"degree_distribution: kind must be one of {kinds} for a "
                         f"{'directed' if nets.directed else 'undirected'} network, got "
                         f"{kind!r}")
    return nets.result(degree_rows(nets, kind))


def degree_rows(nets, kind):
    """(S, n) degree counts of every network at once."""
    N = nets.count * nets.n
    ends = {"degree": np.concatenate([nets.source, nets.target]),
            "idegree": nets.target, "odegree": nets.source}[kind]
    degree = np.bincount(ends, minlength=N)
    return _histograms(degree, np.arange(N) // nets.n, nets.count, nets.n)


def _shared_partners(nets, kind):
    """Shared partners of every edge of the block-diagonal graph (in edge order)."""
    A = nets.adjacency()
    i, j = nets.source, nets.target
    if not nets.directed:
        left, right = A[i], A[j]
    else:
        At = A.T.tocsr()
        if kind == "OTP":    # i → k and k → j: row i of A, column j of A
            left, right = A[i], At[j]
        elif kind == "ITP":  # j → k and k → i
            left, right = A[j], At[i]
        elif kind == "RTP":  # i ↔ k and k ↔ j
            R = A.multiply(At).tocsr()
            left, right = R[i], R[j]
        elif kind == "OSP":  # i → k and j → k
            left, right = A[i], A[j]
        else:                # ISP: k → i and k → j
            left, right = At[i], At[j]
    return np.asarray(left.multiply(right).sum(axis=1), np.int64).reshape(-1)


def check_partner_type(owner, partner_type):
    """Refuse a shared partner type not in :data:`SHARED_PARTNER_TYPES`."""
    if partner_type not in SHARED_PARTNER_TYPES:
        raise ValueError(f"{owner}: partner_type must be one of {tuple(SHARED_PARTNER_TYPES)}"
                         f", got {partner_type!r}")
    return partner_type


def edgewise_shared_partners(edges: Any, num_nodes: int, *, directed: bool = False,
                             partner_type: str = "OTP") -> np.ndarray | list:
    """Number of shared partners of each edge.

    Undirected: the common neighbours of i and j. Directed (ergm's ``esp(type=)``,
    :data:`SHARED_PARTNER_TYPES`): by default ``"OTP"``, ergm's default for directed
    networks, the nodes k with i → k → j for the edge i → j.

    Parameters
    ----------
    edges, num_nodes, directed
        As in :func:`degree_distribution`.
    partner_type : {"OTP", "ITP", "RTP", "OSP", "ISP"}
        What a shared partner is in a directed network (ignored when undirected).

    Returns
    -------
    numpy.ndarray (m,) or list of arrays (m_s,)
        Shared partners of each edge, in the order of the rows of the edge list(s).
    """
    owner = "edgewise_shared_partners"
    nets = Networks(owner, "edges", edges, num_nodes, directed)
    partners = _shared_partners(nets, check_partner_type(owner, partner_type))
    per_network = np.split(partners, np.cumsum(nets.sizes)[:-1])
    return per_network[0] if nets.single else per_network


def shared_partner_distribution(edges: Any, num_nodes: int, *, directed: bool = False,
                                partner_type: str = "OTP") -> np.ndarray:
    """Number of edges with 0, 1, ..., n − 2 shared partners (ergm's ``esp(0:(n-2))``,
    the ``espartners`` of ``gof``).

    Parameters
    ----------
    edges, num_nodes, directed, partner_type
        As in :func:`edgewise_shared_partners` (directed: OTP by default, as ergm's).

    Returns
    -------
    numpy.ndarray (n − 1,) or (S, n − 1)
        Counts of edges by their number of shared partners, int64.
    """
    owner = "shared_partner_distribution"
    nets = Networks(owner, "edges", edges, num_nodes, directed)
    check_partner_type(owner, partner_type)
    return nets.result(shared_partner_rows(nets, partner_type))


def shared_partner_rows(nets, partner_type):
    """(S, n − 1) shared partner counts of every network at once."""
    partners = _shared_partners(nets, partner_type)
    return _histograms(partners, nets.network, nets.count, nets.n - 1)


if hasattr(np, "bitwise_count"):
    _popcount = np.bitwise_count
else:  # numpy < 2
    _BYTE_BITS = np.array([bin(b).count("1") for b in range(256)], np.uint8)

    def _popcount(words):
        return _BYTE_BITS[words.view(np.uint8)].reshape(words.shape + (8,)).sum(-1)


#: sources searched together by :func:`_distance_counts` (bits of each node's bitset)
_SOURCE_BLOCK = 64 * 64


def _distance_counts(edges, n, directed):
    """(n,) counts of the pairs (ordered when directed) at distance 1..n−1, and Inf.

    A breadth-first search from many sources at once: each node holds the set of the
    sources that have reached it as a bitset (one bit per source), and one step ORs, for
    every node, the frontier sets of the nodes with an edge into it from the frontier.
    For the k nodes with edges, a step costs O(m · k / 64) word operations at most, the
    search (diameter) steps, and the memory O(k · min(k, 4096) / 8) bytes (sources in
    blocks of 4096).
    """
    counts = np.zeros(n, np.int64)
    pairs = n * (n - 1) // (1 if directed else 2)
    if len(edges):
        tail, head = edges[:, 0], edges[:, 1]
        if not directed:
            tail, head = np.concatenate([tail, head]), np.concatenate([head, tail])
        nodes, local = np.unique(np.concatenate([tail, head]), return_inverse=True)
        tail, head = local[:len(tail)], local[len(tail):]
        k = len(nodes)
        order = np.argsort(head, kind="stable")
        tail, head = tail[order], head[order]
        one = np.uint64(1)
        for first in range(0, k, _SOURCE_BLOCK):
            sources = np.arange(first, min(first + _SOURCE_BLOCK, k))
            bit = sources - first
            reached = np.zeros((k, -(-len(sources) // 64)), np.uint64)
            reached[sources, bit // 64] = np.left_shift(one, (bit % 64).astype(np.uint64))
            frontier = reached.copy()
            active = np.zeros(k, bool)  # nodes whose frontier set is not empty
            active[sources] = True
            for d in range(1, n):
                live = active[tail]  # only edges out of the frontier carry news
                live_tail, live_head = tail[live], head[live]
                if len(live_head) == 0:
                    break
                starts = np.flatnonzero(np.r_[True, live_head[1:] != live_head[:-1]])
                receivers = live_head[starts]
                incoming = np.bitwise_or.reduceat(frontier[live_tail], starts, axis=0)
                new = incoming & ~reached[receivers]
                hit = new.any(axis=1)
                if not hit.any():
                    break
                receivers, new = receivers[hit], new[hit]
                counts[d - 1] += int(_popcount(new).sum())
                reached[receivers] |= new
                frontier[active] = 0
                frontier[receivers] = new
                active[:] = False
                active[receivers] = True
        if not directed:
            counts //= 2
    counts[n - 1] = pairs - counts[:n - 1].sum()
    return counts


def geodesic_distance_distribution(edges: Any, num_nodes: int, *,
                                   directed: bool = False) -> np.ndarray:
    """Number of pairs at each geodesic distance 1, ..., n − 1 and unreachable (ergm's
    ``ergm.geodistdist``, the ``distance`` of ``gof``).

    Undirected networks count unordered pairs (n(n−1)/2 in all), directed networks
    ordered pairs (n(n−1)), with the distance from i to j along directed paths.

    Parameters
    ----------
    edges, num_nodes, directed
        As in :func:`degree_distribution`.

    Returns
    -------
    numpy.ndarray (n,) or (S, n)
        Entry d − 1 counts the pairs at distance d (d = 1, ..., n − 1); the last entry
        counts the pairs with no path ("Inf"). int64.
    """
    nets = Networks("geodesic_distance_distribution", "edges", edges, num_nodes, directed)
    return nets.result(distance_rows(nets))


def distance_rows(nets):
    """(S, n) distance counts, one all-pairs search per network."""
    rows = np.empty((nets.count, nets.n), np.int64)
    for s, e in enumerate(nets.lists):
        rows[s] = _distance_counts(e, nets.n, nets.directed)
    return rows


def network_densities(edges: Any, num_nodes: int, *, directed: bool = False) -> np.ndarray:
    """Density (edges over pairs: n(n−1)/2, or n(n−1) when directed) of each network:
    a float for one edge list, an array (S,) for a sequence."""
    nets = Networks("network_densities", "edges", edges, num_nodes, directed)
    pairs = nets.n * (nets.n - 1) // (1 if nets.directed else 2)
    density = nets.sizes / pairs
    return float(density[0]) if nets.single else density


def indicators_to_edge_lists(y: Any) -> np.ndarray | list:
    """Edge lists from the package's undirected graphs: edge indicators ``(E,)`` or
    ``(S, E)`` of the pairs in ``numpy.triu_indices(n, 1)`` order (the site ``"y"`` of
    :func:`~numpyro_ugm.models.ergm`, e.g. ``ugm.sample`` output). Returns one (m, 2)
    array, or a list of them; n is ``num_nodes_of(E)``."""
    from ..graphs import num_nodes_of

    a = np.asarray(y)
    if a.ndim not in (1, 2):
        raise ValueError(f"indicators_to_edge_lists: y must be (E,) or (S, E) edge "
                         f"indicators, got shape {a.shape}")
    if not np.all((a == 0) | (a == 1)):
        raise ValueError("indicators_to_edge_lists: y must hold 0/1 edge indicators")
    i, j = np.triu_indices(num_nodes_of(a.shape[-1]), 1)
    pairs = np.stack([i, j], axis=1).astype(np.int64)
    if a.ndim == 1:
        return pairs[a.astype(bool)]
    return [pairs[row.astype(bool)] for row in a]
