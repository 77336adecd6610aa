"""Goodness of fit of an exponential random graph model, as statnet's ``gof()`` and
``mcmc.diagnostics()`` do it: distributions of networks simulated from a fit against the
observed network's, MCMC diagnostics of sampled statistics, and a degeneracy check that
names the terms.

Networks are **edge lists**: an integer array ``(m, 2)`` of 0-based node ids on
``num_nodes`` nodes, one row per edge (``directed=True``: sender → receiver), no
self-loops, no repeated edges (undirected: ``(i, j)`` and ``(j, i)`` are the same edge).
:func:`indicators_to_edge_lists` turns the package's own graphs (edge indicators of the
``n(n−1)/2`` pairs, the site ``"y"`` of :func:`~numpyro_ugm.models.ergm`) into edge lists.

* Distributions of one network or of a sequence of networks (:func:`degree_distribution`,
  :func:`edgewise_shared_partners`, :func:`shared_partner_distribution`,
  :func:`geodesic_distance_distribution`), counted as ergm counts them. Degrees and shared
  partners of all the networks come from one sparse block-diagonal graph; distances from
  a breadth-first search from every node at once per network, on bitsets.
* :func:`goodness_of_fit`: the comparison (:class:`GoodnessOfFit`): its table prints like
  ergm's ``print(gof(fit))``, :meth:`GoodnessOfFit.plot` draws ergm's boxplot figure and
  :meth:`GoodnessOfFit.outside_interval` lists the values where the observed network
  leaves the simulated 95 % band.
* :func:`mcmc_diagnostics`: effective sample size, split R-hat, autocorrelation and the
  Monte Carlo z-score of each sampled statistic against the observed
  (:class:`StatisticsDiagnostics`, with a trace and autocorrelation figure).
* :func:`check_ergm_degeneracy`: warns (:class:`~numpyro_ugm.models.DegeneracyWarning`)
  naming the terms whose observed value lies outside the bulk of the sampled values, and
  when the simulated networks are nearly empty or nearly complete.

matplotlib is imported by the plotting methods only.
"""

import math
import operator
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._checks import check_count
from .graph_estimation import DegeneracyWarning
from .graphs import check_edge_list

__all__ = ["degree_distribution", "edgewise_shared_partners", "shared_partner_distribution",
           "geodesic_distance_distribution", "network_densities", "indicators_to_edge_lists",
           "monte_carlo_p_values", "goodness_of_fit", "GoodnessOfFit", "GofStatistic",
           "mcmc_diagnostics", "StatisticsDiagnostics", "check_ergm_degeneracy",
           "GOF_STATISTICS", "SHARED_PARTNER_TYPES"]

#: the distributions :func:`goodness_of_fit` compares (ergm's GOF terms), and "model"
GOF_STATISTICS = ("degree", "idegree", "odegree", "espartners", "distance", "model")

#: what a shared partner k of a directed edge i → j is (ergm's ``esp(type=)``); OTP is
#: ergm's default for directed networks
SHARED_PARTNER_TYPES = {"OTP": "outgoing two-path i → k → j",
                        "ITP": "incoming two-path j → k → i",
                        "RTP": "reciprocated two-path i ↔ k ↔ j",
                        "OSP": "outgoing shared partner i → k ← j",
                        "ISP": "incoming shared partner i ← k → j"}

# ergm's order of the tables (print.gof) and of the panels (plot.gof)
_TABLE_ORDER = ("model", "distance", "odegree", "idegree", "degree", "espartners")
_PANEL_ORDER = ("model", "degree", "odegree", "idegree", "espartners", "distance")
_TITLES = {"model": "model statistics", "distance": "minimum geodesic distance",
           "odegree": "out-degree", "idegree": "in-degree", "degree": "degree",
           "espartners": "edgewise shared partner"}
_X_LABELS = {"model": "model statistic", "distance": "minimum geodesic distance",
             "odegree": "odegree", "idegree": "idegree", "degree": "degree",
             "espartners": "edge-wise shared partners"}
_UNITS = {"model": "statistics", "distance": "dyads", "odegree": "nodes",
          "idegree": "nodes", "degree": "nodes", "espartners": "edges"}


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


class _Networks:
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
    nets = _Networks("degree_distribution", "edges", edges, num_nodes, directed)
    kinds = ("idegree", "odegree") if nets.directed else ("degree",)
    kind = kinds[0] if kind is None and not nets.directed else kind
    if kind not in kinds:
        raise ValueError(f"degree_distribution: kind must be one of {kinds} for a "
                         f"{'directed' if nets.directed else 'undirected'} network, got "
                         f"{kind!r}")
    return nets.result(_degree_rows(nets, kind))


def _degree_rows(nets, kind):
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


def _check_partner_type(owner, partner_type):
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
    nets = _Networks(owner, "edges", edges, num_nodes, directed)
    partners = _shared_partners(nets, _check_partner_type(owner, partner_type))
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
    nets = _Networks(owner, "edges", edges, num_nodes, directed)
    _check_partner_type(owner, partner_type)
    return nets.result(_shared_partner_rows(nets, partner_type))


def _shared_partner_rows(nets, partner_type):
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
    nets = _Networks("geodesic_distance_distribution", "edges", edges, num_nodes, directed)
    return nets.result(_distance_rows(nets))


def _distance_rows(nets):
    """(S, n) distance counts, one all-pairs search per network."""
    rows = np.empty((nets.count, nets.n), np.int64)
    for s, e in enumerate(nets.lists):
        rows[s] = _distance_counts(e, nets.n, nets.directed)
    return rows


def network_densities(edges: Any, num_nodes: int, *, directed: bool = False) -> np.ndarray:
    """Density (edges over pairs: n(n−1)/2, or n(n−1) when directed) of each network:
    a float for one edge list, an array (S,) for a sequence."""
    nets = _Networks("network_densities", "edges", edges, num_nodes, directed)
    pairs = nets.n * (nets.n - 1) // (1 if nets.directed else 2)
    density = nets.sizes / pairs
    return float(density[0]) if nets.single else density


def indicators_to_edge_lists(y: Any) -> np.ndarray | list:
    """Edge lists from the package's undirected graphs: edge indicators ``(E,)`` or
    ``(S, E)`` of the pairs in ``numpy.triu_indices(n, 1)`` order (the site ``"y"`` of
    :func:`~numpyro_ugm.models.ergm`, e.g. ``ugm.sample`` output). Returns one (m, 2)
    array, or a list of them; n is ``num_nodes_of(E)``."""
    from .graphs import num_nodes_of

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


# --- goodness of fit -------------------------------------------------------------------


def monte_carlo_p_values(observed: Any, simulated: Any) -> np.ndarray:
    """ergm's two-sided Monte Carlo p-values of observed values among simulated ones.

    ``p = min(1, 2 min(P̂(sim ≥ obs), P̂(sim ≤ obs)))`` per column, the fractions taken
    over the simulations (ties count on both sides, so simulations all equal to the
    observed value give 1; an observed value beyond every simulation gives 0).

    Parameters
    ----------
    observed : array (L,)
    simulated : array (S, L)

    Returns
    -------
    numpy.ndarray (L,)
    """
    obs = np.asarray(observed, np.float64)
    sim = np.asarray(simulated, np.float64)
    if obs.ndim != 1 or sim.ndim != 2 or sim.shape[1] != obs.shape[0] or len(sim) == 0:
        raise ValueError(f"monte_carlo_p_values: need observed (L,) and simulated (S, L) "
                         f"with S >= 1, got {obs.shape} and {sim.shape}")
    above = np.mean(sim >= obs, axis=0)
    below = np.mean(sim <= obs, axis=0)
    return np.minimum(1.0, 2.0 * np.minimum(above, below))


def _decimals(values, most=4):
    """Fewest decimals (<= most) showing every value exactly (to 1e-9), as R's print
    shows a column with one number of decimals."""
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    for d in range(most + 1):
        if np.all(np.abs(np.round(v, d) - v) < 1e-9 * np.maximum(1.0, np.abs(v))):
            return d
    return most


def _format_table(labels, columns, header):
    """Right-aligned text table: ``columns`` a list of arrays, one per header name."""
    cells = []
    for col in columns:
        d = _decimals(col)
        cells.append([("NaN" if not np.isfinite(x) else f"{x:.{d}f}") for x in col])
    widths = [max(len(h), *(len(c) for c in cs)) if len(cs) else len(h)
              for h, cs in zip(header, cells)]
    label_width = max([0, *(len(str(x)) for x in labels)])
    lines = [" " * label_width + "".join(f" {h:>{w}}" for h, w in zip(header, widths))]
    for r, lab in enumerate(labels):
        lines.append(f"{str(lab):<{label_width}}" +
                     "".join(f" {cs[r]:>{w}}" for cs, w in zip(cells, widths)))
    return "\n".join(lines)


def _quantiles_of_ranks(sim):
    """Each simulated value's rank in its column over S (R's ``rank``, ties averaged)."""
    ranks = np.empty(sim.shape, np.float64)
    for c, column in enumerate(sim.T):
        ordered = np.sort(column)
        below = np.searchsorted(ordered, column, side="left")
        through = np.searchsorted(ordered, column, side="right")
        ranks[:, c] = (below + 1 + through) / 2
    return ranks / sim.shape[0]


@dataclass(frozen=True)
class GofStatistic:
    """The observed network against the simulated ones for one statistic.

    Attributes
    ----------
    name : str
        ``"degree"``, ``"idegree"``, ``"odegree"``, ``"espartners"``, ``"distance"`` or
        ``"model"``.
    labels : tuple of str
        The value of each column: degrees / shared partners ``"0"``, ``"1"``, ...;
        distances ``"1"``, ..., ``"Inf"``; model statistics their names.
    observed : numpy.ndarray (L,)
        The observed network's counts (or statistics).
    simulated : numpy.ndarray (S, L)
        The simulated networks' counts (or statistics).
    """

    name: str
    labels: tuple
    observed: np.ndarray
    simulated: np.ndarray

    @property
    def title(self) -> str:
        """ergm's title of the table (``"degree"``, ``"minimum geodesic distance"``...)."""
        return _TITLES[self.name]

    @property
    def mean(self) -> np.ndarray:
        """Mean of each column over the simulations."""
        return self.simulated.mean(axis=0)

    @property
    def minimum(self) -> np.ndarray:
        """Smallest value of each column over the simulations."""
        return self.simulated.min(axis=0)

    @property
    def maximum(self) -> np.ndarray:
        """Largest value of each column over the simulations."""
        return self.simulated.max(axis=0)

    @property
    def p_values(self) -> np.ndarray:
        """ergm's two-sided Monte Carlo p-values (:func:`monte_carlo_p_values`)."""
        return monte_carlo_p_values(self.observed, self.simulated)

    @property
    def observed_proportions(self) -> np.ndarray:
        """What ergm's figure shows of the observed network: the counts over their total
        (the fraction of nodes, edges, dyads); for ``"model"``, the fraction of the
        simulations at or above the observed value."""
        if self.name == "model":
            return np.mean(self.simulated >= self.observed, axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.observed / self.observed.sum()

    @property
    def simulated_proportions(self) -> np.ndarray:
        """(S, L) what ergm's figure shows of the simulations: each network's counts over
        its total (1 where the total is 0, as ergm); for ``"model"``, each simulated
        value's rank among the simulations over S."""
        if self.name == "model":
            return _quantiles_of_ranks(self.simulated)
        total = self.simulated.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = self.simulated / total
        return np.where(np.isnan(p), 1.0, p)

    def interval(self, level: float = 0.95, *, scale: str = "proportion") -> np.ndarray:
        """(2, L) central ``level`` interval of the simulations (R's default quantiles):
        of the proportions plotted (``scale="proportion"``, ergm's band; for ``"model"``
        this is the raw statistics) or of the counts (``scale="count"``)."""
        _check_level("GofStatistic.interval", level)
        if scale not in ("proportion", "count"):
            raise ValueError(f"GofStatistic.interval: scale must be 'proportion' or "
                             f"'count', got {scale!r}")
        values = (self.simulated_proportions if scale == "proportion"
                  and self.name != "model" else self.simulated)
        tail = (1 - level) / 2
        return np.quantile(values, [tail, 1 - tail], axis=0)

    def outside_interval(self, level: float = 0.95, *, scale: str = "proportion") -> tuple:
        """Labels of the values where the observed network lies outside the central
        ``level`` interval of the simulations (:meth:`interval`)."""
        lo, hi = self.interval(level, scale=scale)
        obs = (self.observed_proportions if scale == "proportion" and self.name != "model"
               else self.observed)
        out = (obs < lo - 1e-12) | (obs > hi + 1e-12)
        return tuple(self.labels[k] for k in np.flatnonzero(out))

    def table(self) -> str:
        """ergm's table: obs, min, mean, max, MC p-value, without the rows that are 0 in
        the observed network and in every simulation."""
        keep = ~((self.observed == 0) & (self.minimum == 0) & (self.maximum == 0))
        rows = np.flatnonzero(keep)
        columns = [self.observed[rows], self.minimum[rows], self.mean[rows],
                   self.maximum[rows], self.p_values[rows]]
        return (f"Goodness-of-fit for {self.title}\n\n" +
                _format_table([self.labels[r] for r in rows], columns,
                              ["obs", "min", "mean", "max", "MC p-value"]))

    def __str__(self) -> str:
        return self.table()


def _check_level(owner, level):
    if not 0 < float(level) < 1:
        raise ValueError(f"{owner}: level must be in (0, 1), got {level!r}")


@dataclass(frozen=True)
class GoodnessOfFit:
    """Result of :func:`goodness_of_fit`: one :class:`GofStatistic` per statistic.

    Print it for ergm's tables, call :meth:`plot` for ergm's figure and
    :meth:`outside_interval` for the values the fit misses.
    """

    statistics: dict
    num_nodes: int
    directed: bool
    num_simulations: int
    partner_type: str = field(default="OTP")

    def __getitem__(self, name: str) -> GofStatistic:
        if name not in self.statistics:
            raise KeyError(f"GoodnessOfFit: no statistic {name!r}; it has "
                           f"{list(self.statistics)}")
        return self.statistics[name]

    def table(self) -> str:
        """ergm's ``print(gof(fit))``: the tables in ergm's order (model statistics,
        distances, out-degree, in-degree, degree, edgewise shared partners)."""
        names = [s for s in _TABLE_ORDER if s in self.statistics]
        return "\n\n".join(self.statistics[s].table() for s in names)

    def __str__(self) -> str:
        return self.table()

    def outside_interval(self, level: float = 0.95, *, scale: str = "proportion") -> dict:
        """The fit's misses: for each statistic, the labels of the values where the
        observed network leaves the central ``level`` interval of the simulations (the
        light lines of :meth:`plot` for the default ``level``, on the proportions
        plotted; ``scale="count"`` compares the counts). Statistics without a miss map
        to an empty tuple."""
        return {s: self.statistics[s].outside_interval(level, scale=scale)
                for s in self.statistics}

    def plot(self, *, log_odds: bool = False, statistics: Sequence | None = None,
             num_columns: int | None = None, figsize: tuple | None = None,
             title: str = "Goodness-of-fit diagnostics") -> Any:
        """ergm's ``plot(gof(fit))``: one panel per statistic.

        Each panel holds, per value, the boxplot of the simulated proportions (the
        fraction of nodes of each degree, of edges with each number of shared partners,
        of dyads at each distance; without outliers, as ergm), their 2.5 % and 97.5 %
        quantiles as light grey lines with open circles, the simulated means as blue
        diamonds and the observed network as a thick black line. The values shown stop,
        as ergm's, 3 after the last with a p-value below 1 (or, if there is none, the
        last observed non-zero; if none either, after 4 values, where ergm shows every
        value); distances end with the unreachable pairs "NR". The
        model statistics panel shows each simulated statistic's rank among the
        simulations over S and, for the observed, the fraction of simulations at or
        above it (near 0.5 in a good fit).

        Parameters
        ----------
        log_odds : bool
            Plot log(p / (1 − p)) of the proportions instead (ergm's
            ``plotlogodds=TRUE``); infinite values are drawn at the finite extremes.
        statistics : sequence of str, optional
            Which panels (default: all, in ergm's order: model, degree, odegree, idegree,
            espartners, distance).
        num_columns : int, optional
            Panels per row (default: up to 3).
        figsize : (float, float), optional
        title : str
            The figure's title.

        Returns
        -------
        matplotlib.figure.Figure
        """
        import matplotlib.pyplot as plt

        names = ([s for s in _PANEL_ORDER if s in self.statistics] if statistics is None
                 else list(statistics))
        for s in names:
            if s not in self.statistics:
                raise ValueError(f"GoodnessOfFit.plot: statistics names {s!r}, which this "
                                 f"result lacks (it has {list(self.statistics)})")
        if not names:
            raise ValueError("GoodnessOfFit.plot: no statistics to plot")
        cols = min(len(names), 3) if num_columns is None else int(num_columns)
        if cols < 1:
            raise ValueError(f"GoodnessOfFit.plot: num_columns must be >= 1, got {cols}")
        rows = -(-len(names) // cols)
        fig, axes = plt.subplots(rows, cols, squeeze=False, layout="constrained",
                                 figsize=figsize or (4.8 * cols, 3.9 * rows))
        for ax, s in zip(axes.ravel(), names):
            _plot_panel(ax, self.statistics[s], log_odds)
        for ax in axes.ravel()[len(names):]:
            ax.set_visible(False)
        fig.suptitle(title)
        return fig


def _shown_columns(stat):
    """ergm's plot.gof choice of columns (0-based): all for model statistics; else up to
    3 past the last p-value below 1 (or the last observed non-zero; where there is none
    either, the first 4 values, where ergm shows them all), with the Inf column of
    distances appended."""
    L = len(stat.labels)
    if stat.name == "model":
        return list(range(L)), False
    infinite = stat.name == "distance"
    finite = L - 1 if infinite else L
    p = stat.p_values[:finite]
    marks = np.flatnonzero(p < 1 if p.min() < 1 else stat.observed[:finite] > 0)
    last = marks.max() + 1 + 3 if len(marks) else 4
    cols = list(range(min(last, finite)))
    return (cols + [L - 1], True) if infinite else (cols, False)


def _plot_panel(ax, stat, log_odds):
    cols, gap = _shown_columns(stat)
    sim = stat.simulated_proportions
    obs = stat.observed_proportions
    bds = np.quantile(sim, [0.025, 0.975], axis=0)
    unit = _UNITS[stat.name]
    if stat.name == "model":
        ylabel = ("log-odds of the " if log_odds else "") + "quantile among simulations"
    else:
        ylabel = f"log-odds for {unit}" if log_odds else f"proportion of {unit}"
    if log_odds:
        with np.errstate(divide="ignore", invalid="ignore"):
            sim, obs, bds = (np.log(v / (1 - v)) for v in (sim, obs, bds))
        finite = np.concatenate([a[np.isfinite(a)].ravel() for a in (sim, obs, bds)])
        lo, hi = (finite.min(), finite.max()) if finite.size else (-1.0, 1.0)
        sim, obs, bds = (np.where(np.isposinf(v), hi, np.where(np.isneginf(v), lo, v))
                         for v in (sim, obs, bds))
    x = np.arange(1, len(cols) + 1)
    labels = [stat.labels[c] for c in cols]
    if gap:
        labels[-1] = "NR"
    ax.boxplot(sim[:, cols], positions=x, widths=0.6, showfliers=False, patch_artist=True,
               boxprops={"facecolor": "white"}, medianprops={"color": "black"})
    ax.set_xticks(x, labels, fontsize=7, rotation=90 if stat.name == "model" else 0)
    # the finite values joined by lines; the unreachable pairs apart, as ergm
    parts = [slice(0, len(cols) - 1), slice(len(cols) - 1, None)] if gap else [slice(None)]
    for part in parts:
        xs, cs = x[part], cols[part]
        for q in (0, 1):
            ax.plot(xs, bds[q, cs], color="0.75", lw=1)
            ax.plot(xs, bds[q, cs], "o", mfc="none", mec="black", ms=4)
        ax.plot(xs, obs[cs], color="black", lw=2.5)
        ax.plot(xs, obs[cs], "o", color="black", ms=4)
    ax.plot(x, sim[:, cols].mean(axis=0), "D", color="blue", ms=5)
    ax.set_xlabel(_X_LABELS[stat.name])
    ax.set_ylabel(ylabel)


def goodness_of_fit(observed_edges: Any, simulated_edges: Any, num_nodes: int,
                    directed: bool = False, *, statistics: Sequence | None = None,
                    partner_type: str = "OTP", model_names: Sequence | None = None,
                    observed_model_statistics: Any = None,
                    simulated_model_statistics: Any = None) -> GoodnessOfFit:
    """Goodness of fit of a network model, as statnet's ``gof(fit)``: the observed
    network's distributions against those of networks simulated from the fit.

    Parameters
    ----------
    observed_edges : array (m, 2)
        The observed network's edge list (0-based node ids).
    simulated_edges : sequence of arrays (m_s, 2)
        Edge lists of the S networks simulated from the fitted model (ergm uses 100).
    num_nodes : int
        Number of nodes n of every network.
    directed : bool
        Whether rows are sender → receiver.
    statistics : sequence of str, optional
        Among ``"degree"`` (undirected), ``"idegree"``, ``"odegree"`` (directed),
        ``"espartners"``, ``"distance"`` and ``"model"``. Default, as ergm's: degree,
        espartners and distance (directed: idegree, odegree, espartners, distance), and
        model when model statistics are given.
    partner_type : str
        Shared partners of a directed edge (:data:`SHARED_PARTNER_TYPES`): OTP, ergm's
        default.
    model_names, observed_model_statistics, simulated_model_statistics
        The fitted model's statistics: names (k,), observed (k,) and of the simulated
        networks (S, k), for the ``"model"`` table (optional).

    Returns
    -------
    GoodnessOfFit
        One :class:`GofStatistic` per statistic (counts of the values 0..n−1 for degrees,
        0..n−2 for shared partners, 1..n−1 and Inf for distances), with ergm's table and
        figure.
    """
    owner = "goodness_of_fit"
    obs = _Networks(owner, "observed_edges", observed_edges, num_nodes, directed)
    if not obs.single:
        raise ValueError(f"{owner}: observed_edges must be one edge list (m, 2), got "
                         f"{obs.count} networks")
    sims = _Networks(owner, "simulated_edges", simulated_edges, num_nodes, directed)
    if sims.single:
        raise ValueError(f"{owner}: simulated_edges must be a sequence of edge lists (one "
                         "per simulated network), got a single edge list")
    n, directed, S = obs.n, obs.directed, sims.count
    _check_partner_type(owner, partner_type)
    has_model = observed_model_statistics is not None or simulated_model_statistics is not None
    allowed = (("idegree", "odegree") if directed else ("degree",)) + (
        "espartners", "distance", "model")
    if statistics is None:
        statistics = allowed[:-1] + (("model",) if has_model else ())
    statistics = list(statistics)
    for s in statistics:
        if s not in allowed:
            raise ValueError(f"{owner}: statistics must be among {allowed} for a "
                             f"{'directed' if directed else 'undirected'} network, got {s!r}")
    if len(set(statistics)) != len(statistics):
        raise ValueError(f"{owner}: statistics repeats a name: {statistics}")

    result = {}
    for s in statistics:
        if s in ("degree", "idegree", "odegree"):
            pair = [_degree_rows(x, s) for x in (obs, sims)]
            labels = tuple(str(d) for d in range(n))
        elif s == "espartners":
            pair = [_shared_partner_rows(x, partner_type) for x in (obs, sims)]
            labels = tuple(str(d) for d in range(n - 1))
        elif s == "distance":
            pair = [_distance_rows(x) for x in (obs, sims)]
            labels = tuple(str(d) for d in range(1, n)) + ("Inf",)
        else:
            pair, labels = _model_statistics(owner, model_names, observed_model_statistics,
                                             simulated_model_statistics, S)
            pair = [pair[0][None], pair[1]]
        result[s] = GofStatistic(s, labels, np.asarray(pair[0][0]), np.asarray(pair[1]))
    return GoodnessOfFit(result, n, directed, S, partner_type)


def _model_statistics(owner, names, observed, simulated, num_sims):
    if observed is None or simulated is None:
        raise ValueError(f"{owner}: the 'model' table needs observed_model_statistics (k,) "
                         "and simulated_model_statistics (S, k)")
    obs = np.asarray(observed, np.float64)
    sim = np.asarray(simulated, np.float64)
    if obs.ndim != 1 or sim.ndim != 2 or sim.shape[1] != obs.shape[0]:
        raise ValueError(f"{owner}: observed_model_statistics must be (k,) and "
                         f"simulated_model_statistics (S, k), got {obs.shape} and "
                         f"{sim.shape}")
    if sim.shape[0] != num_sims:
        raise ValueError(f"{owner}: simulated_model_statistics has {sim.shape[0]} rows, "
                         f"one per simulated network is {num_sims}")
    names = (tuple(f"stat{k}" for k in range(obs.shape[0])) if names is None
             else tuple(str(x) for x in names))
    if len(names) != obs.shape[0]:
        raise ValueError(f"{owner}: model_names has {len(names)} names for "
                         f"{obs.shape[0]} statistics")
    return [obs, sim], names


# --- MCMC diagnostics of sampled statistics ----------------------------------------------


def _as_samples(owner, sampled_statistics, observed, names):
    x = np.asarray(sampled_statistics, np.float64)
    if x.ndim == 2:
        x = x[None]
    if x.ndim != 3:
        raise ValueError(f"{owner}: sampled_statistics must be (num_chains, num_draws, k) "
                         f"(or (num_draws, k)), got shape {np.shape(sampled_statistics)}")
    if x.shape[1] < 2:
        raise ValueError(f"{owner}: sampled_statistics needs at least 2 draws per chain, "
                         f"got {x.shape[1]}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{owner}: sampled_statistics has non-finite values")
    obs = np.asarray(observed, np.float64).reshape(-1)
    if obs.shape[0] != x.shape[2]:
        raise ValueError(f"{owner}: observed has {obs.shape[0]} values for {x.shape[2]} "
                         "sampled statistics")
    names = (tuple(f"stat{k}" for k in range(x.shape[2])) if names is None
             else tuple(str(s) for s in names))
    if len(names) != x.shape[2]:
        raise ValueError(f"{owner}: names has {len(names)} names for {x.shape[2]} "
                         "statistics")
    return x, obs, names


@dataclass(frozen=True)
class StatisticsDiagnostics:
    """MCMC diagnostics of sampled statistics (:func:`mcmc_diagnostics`), per term.

    Attributes
    ----------
    names : tuple of str
    observed : numpy.ndarray (k,)
    samples : numpy.ndarray (num_chains, num_draws, k)
    mean, sd : numpy.ndarray (k,)
        Over all chains and draws (sd with ddof=1).
    effective_sample_size : numpy.ndarray (k,)
        numpyro's (Geyer's initial monotone sequence over the chains); NaN for a
        constant statistic.
    r_hat : numpy.ndarray (k,)
        numpyro's split Gelman-Rubin (NaN with fewer than 4 draws per chain).
    autocorrelation : numpy.ndarray (num_lags, k)
        Autocorrelation by lag 0, 1, ..., averaged over the chains.
    monte_carlo_se : numpy.ndarray (k,)
        sd / sqrt(effective_sample_size): the Monte Carlo standard error of the mean.
    z_scores, p_values : numpy.ndarray (k,)
        (mean − observed) / monte_carlo_se and its two-sided normal p-value (as ergm's
        individual p-values of mcmc.diagnostics: at the MLE the sampled mean is the
        observed, so a small p-value means the fit or the sampler is off).
    """

    names: tuple
    observed: np.ndarray
    samples: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    effective_sample_size: np.ndarray
    r_hat: np.ndarray
    autocorrelation: np.ndarray
    monte_carlo_se: np.ndarray
    z_scores: np.ndarray
    p_values: np.ndarray

    def table(self) -> str:
        """One row per term: observed, mean, sd, MC s.e., z, p-value, ESS, R-hat."""
        C, D, _ = self.samples.shape
        columns = [self.observed, self.mean, self.sd, self.monte_carlo_se, self.z_scores,
                   self.p_values, self.effective_sample_size, self.r_hat]
        columns = [np.round(c, 4) for c in columns]
        header = ["obs", "mean", "sd", "MC s.e.", "z", "p-value", "ESS", "R-hat"]
        return (f"Sampled statistics: {C} chain(s) x {D} draws\n\n" +
                _format_table(self.names, columns, header))

    def __str__(self) -> str:
        return self.table()

    def plot(self, *, max_lag: int | None = None, figsize: tuple | None = None) -> Any:
        """Trace (each chain a line, the observed value dashed red) and autocorrelation
        (by lag, averaged over chains) of each term: one row of two panels per term.

        Returns
        -------
        matplotlib.figure.Figure
        """
        import matplotlib.pyplot as plt

        k = len(self.names)
        lags = self.autocorrelation.shape[0] if max_lag is None else int(max_lag) + 1
        lags = max(1, min(lags, self.autocorrelation.shape[0]))
        fig, axes = plt.subplots(k, 2, squeeze=False, layout="constrained",
                                 figsize=figsize or (10, 2.4 * k))
        for t, name in enumerate(self.names):
            trace, acf = axes[t]
            for chain in self.samples[:, :, t]:
                trace.plot(chain, lw=0.7)
            trace.axhline(self.observed[t], color="red", ls="--", lw=1)
            trace.set_ylabel(name)
            trace.set_title(f"{name}: trace (ESS {self.effective_sample_size[t]:.0f})",
                            fontsize=9)
            acf.vlines(np.arange(lags), 0, self.autocorrelation[:lags, t])
            acf.axhline(0, color="black", lw=0.5)
            acf.set_ylim(min(-0.1, np.nanmin(self.autocorrelation[:lags, t])), 1.05)
            acf.set_title(f"{name}: autocorrelation", fontsize=9)
        axes[-1, 0].set_xlabel("draw")
        axes[-1, 1].set_xlabel("lag")
        return fig


def mcmc_diagnostics(sampled_statistics: Any, observed: Any, names: Sequence | None = None,
                     *, max_lag: int = 100) -> StatisticsDiagnostics:
    """MCMC diagnostics of the statistics sampled at a fit (statnet's
    ``mcmc.diagnostics``): effective sample size, split R-hat and autocorrelation per term
    (numpyro's :func:`~numpyro.diagnostics.effective_sample_size`,
    :func:`~numpyro.diagnostics.split_gelman_rubin`,
    :func:`~numpyro.diagnostics.autocorrelation`), and the distance of the sampled mean
    from the observed value in Monte Carlo standard errors.

    Parameters
    ----------
    sampled_statistics : array (num_chains, num_draws, k) or (num_draws, k)
        Statistics of the sampled networks, chains in order.
    observed : array (k,)
        The observed network's statistics.
    names : sequence of str, optional
        Term names (default ``stat0``, ``stat1``, ...).
    max_lag : int
        Largest lag kept in ``autocorrelation``.

    Returns
    -------
    StatisticsDiagnostics
    """
    from numpyro.diagnostics import autocorrelation, effective_sample_size, split_gelman_rubin

    owner = "mcmc_diagnostics"
    x, obs, names = _as_samples(owner, sampled_statistics, observed, names)
    max_lag = check_count(owner, "max_lag", max_lag, minimum=0)
    C, D, k = x.shape
    flat = x.reshape(C * D, k)
    mean = flat.mean(axis=0)
    sd = flat.std(axis=0, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ess = np.asarray(effective_sample_size(x), np.float64)
        rhat = (np.asarray(split_gelman_rubin(x), np.float64) if D >= 4
                else np.full(k, np.nan))
        acf = np.nanmean(np.asarray(autocorrelation(x, axis=1), np.float64), axis=0)
    constant = sd == 0
    ess = np.where(constant, np.nan, ess)
    acf = acf[: max_lag + 1]
    se = np.where(constant, 0.0, sd / np.sqrt(np.where(constant, 1.0, ess)))
    diff = mean - obs
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(se > 0, diff / np.where(se > 0, se, 1.0),
                     np.where(diff == 0, 0.0, np.sign(diff) * np.inf))
    p = np.array([math.erfc(abs(v) / math.sqrt(2)) for v in z])
    return StatisticsDiagnostics(names, obs, x, mean, sd, ess, rhat, acf, se, z, p)


# --- degeneracy --------------------------------------------------------------------------


def check_ergm_degeneracy(sampled_statistics: Any, observed: Any,
                          names: Sequence | None = None, simulated_densities: Any = None, *,
                          observed_density: float | None = None, level: float = 0.99,
                          near_extreme: float = 0.1, extreme_fraction: float = 0.5,
                          warn: bool = True) -> dict:
    """Warn when a fitted ERGM is degenerate: its sampled statistics far from the observed,
    or its simulated networks nearly empty or nearly complete.

    A term is far when the observed value lies outside the central ``level`` interval
    of its sampled values (all chains pooled): at the MLE the observed statistics are
    the model's mean, well inside. A simulated network is nearly empty when its density
    is at most ``near_extreme`` times the observed density (nearly complete: when its
    non-edge density is at most ``near_extreme`` times the observed one); without
    ``observed_density``, only exactly empty or complete networks count. Either is
    reported when at least ``extreme_fraction`` of the simulated networks are.

    Parameters
    ----------
    sampled_statistics : array (num_chains, num_draws, k) or (num_draws, k)
    observed : array (k,)
    names : sequence of str, optional
        Term names, used in the warning.
    simulated_densities : array (S,), optional
        Densities of networks simulated from the fit (:func:`network_densities`).
    observed_density : float, optional
        The observed network's density.
    level : float
        Central probability of the sampled values the observed must lie in.
    near_extreme, extreme_fraction : float
        What nearly empty / complete means, and how many such networks are too many.
    warn : bool
        Issue the :class:`~numpyro_ugm.models.DegeneracyWarning` (else only report).

    Returns
    -------
    dict
        ``degenerate`` (bool), ``far_terms`` (names of the far terms), ``terms`` (per
        name: ``observed``, ``mean``, ``sd``, ``lower``, ``upper`` (the interval),
        ``fraction_below`` (of the sampled values under the observed), ``far``), and,
        with densities, ``mean_density``, ``fraction_near_empty``,
        ``fraction_near_complete``.
    """
    owner = "check_ergm_degeneracy"
    x, obs, names = _as_samples(owner, sampled_statistics, observed, names)
    _check_level(owner, level)
    for name, value in (("near_extreme", near_extreme),
                        ("extreme_fraction", extreme_fraction)):
        if not 0 < float(value) <= 1:
            raise ValueError(f"{owner}: {name} must be in (0, 1], got {value!r}")
    flat = x.reshape(-1, x.shape[2])
    tail = (1 - level) / 2
    lower, upper = np.quantile(flat, [tail, 1 - tail], axis=0)
    far = (obs < lower) | (obs > upper)
    terms = {name: {"observed": float(obs[t]), "mean": float(flat[:, t].mean()),
                    "sd": float(flat[:, t].std(ddof=1)), "lower": float(lower[t]),
                    "upper": float(upper[t]),
                    "fraction_below": float(np.mean(flat[:, t] < obs[t])),
                    "far": bool(far[t])}
             for t, name in enumerate(names)}
    report = {"far_terms": [names[t] for t in np.flatnonzero(far)], "terms": terms}
    problems = []
    if report["far_terms"]:
        detail = "; ".join(
            f"{s}: observed {terms[s]['observed']:.6g}, sampled mean {terms[s]['mean']:.6g} "
            f"(central {level:.0%}: {terms[s]['lower']:.6g} to {terms[s]['upper']:.6g})"
            for s in report["far_terms"])
        problems.append(f"the observed {', '.join(report['far_terms'])} lie(s) outside the "
                        f"central {level:.0%} of the sampled values ({detail})")
    if simulated_densities is not None:
        d = np.asarray(simulated_densities, np.float64).reshape(-1)
        if d.size == 0 or np.any((d < 0) | (d > 1)) or not np.all(np.isfinite(d)):
            raise ValueError(f"{owner}: simulated_densities must be a non-empty array of "
                             "densities in [0, 1]")
        if observed_density is None:
            empty, full = d == 0, d == 1
            what = "empty", "complete"
        else:
            d0 = float(observed_density)
            if not 0 <= d0 <= 1:
                raise ValueError(f"{owner}: observed_density must be in [0, 1], got {d0}")
            empty = (d <= near_extreme * d0) if d0 > 0 else np.zeros(d.shape, bool)
            full = ((1 - d) <= near_extreme * (1 - d0)) if d0 < 1 else np.zeros(d.shape, bool)
            what = "nearly empty", "nearly complete"
        report.update(mean_density=float(d.mean()), fraction_near_empty=float(empty.mean()),
                      fraction_near_complete=float(full.mean()))
        for frac, label in ((empty.mean(), what[0]), (full.mean(), what[1])):
            if frac >= extreme_fraction:
                problems.append(f"{frac:.0%} of the {d.size} simulated networks are {label} "
                                f"(mean density {d.mean():.4g}"
                                + ("" if observed_density is None
                                   else f", observed {float(observed_density):.4g}") + ")")
    report["degenerate"] = bool(problems)
    if problems and warn:
        warnings.warn(
            "ERGM degeneracy: " + "; and ".join(problems) + ". The fit (or its sampler) "
            "does not reproduce the observed network: the parameters may be in a "
            "degenerate region, or the MCMC has not converged. Check the terms named, "
            "try curved terms (gwesp, gwdegree) instead of triangles/stars, or a longer "
            "burn-in.", DegeneracyWarning, stacklevel=2)
    return report
