"""Planning exact inference on an interaction graph: an elimination order chosen by the
min-fill heuristic, the cliques it creates, and the size of their tables — known, and
refused above a budget, before anything runs (:func:`plan_elimination`).

Eliminating variable v from a pairwise model sums (or maximizes) over v the tables of
every factor that contains it; the result is a message over v's remaining neighbours,
which become pairwise connected ("fill-in"). The largest clique, v with its neighbours at
its elimination, has K^(w+1) entries, w the width of the order (the graph's treewidth for
the best order): a chain or tree has width 1, an L × W strip width min(L, W), a complete
graph on n variables width n − 1. Min-fill (eliminate the variable whose neighbours lack
the fewest edges among them, ties to the fewest neighbours, then the lowest index) is a
heuristic: optimal on chains and trees, not always on grids (width 15 on a 10 × 20 grid,
whose treewidth is 10; the banded order below gets 11 or 10 there).

**Banded plans.** Unrolled, a plan compiles one step per variable: fine for a tree of a
few hundred variables, slow for a 10 × 200 strip. When the variables have an order of
small bandwidth b (every edge joins variables at most b apart in it: a chain in index
order has b = 1, a strip taken column by column b = its width; the index order and the
reverse Cuthill–McKee order are tried) and K^(b+1) is within a factor
:data:`BAND_SLACK` of the min-fill clique, the plan is ``banded``:
:mod:`~numpyro_ugm.structure.contraction` runs it as one ``lax.scan`` over the variables in
that order, carrying a table over the last b of them — the forward-backward recursions
on a chain, the transfer matrix on a strip — one compiled step whatever the length.

**Forest plans.** A forest (width 1) without a narrow band — a tree CRF — is rooted at
the centre of each tree and run level by level, deepest first (:class:`Forest`): one
``lax.scan`` over the levels, each level's messages to the parents at once; its depth,
not its size, sets the number of steps.
"""

import heapq
from typing import NamedTuple

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import reverse_cuthill_mckee

__all__ = ["EliminationPlan", "Step", "Band", "Forest", "plan_elimination",
           "MAX_TABLE_SIZE", "BAND_SLACK"]

#: the largest clique table (entries, per example) an elimination may build by default
MAX_TABLE_SIZE = 2 ** 22

#: a banded plan is taken when its table is at most this many times the min-fill clique's
BAND_SLACK = 4


class Band(NamedTuple):
    """A banded plan: the variables in ``order`` (n,); at position p the edges to the
    b positions before it (``edge`` (n, b): edge id or −1, the window's oldest slot
    first; ``flip`` (n, b): whether that edge's table is stored (new, old))."""

    width: int
    order: np.ndarray
    edge: np.ndarray
    flip: np.ndarray


class Step(NamedTuple):
    """One elimination: ``variable`` summed out of the tables ``inputs`` (each a factor
    id with the clique axes of its variables), leaving a message over ``scope``."""

    variable: int
    scope: tuple
    inputs: tuple


class Forest(NamedTuple):
    """A forest plan: per level, deepest first, its variables (``node`` (L, W), padded
    with the dummy n), their parents (``parent``, the dummy n for padding), the edge to the
    parent (``edge``, −1 for padding) and whether its table is stored (parent, node)
    (``flip``); ``roots`` (R,)."""

    node: np.ndarray
    parent: np.ndarray
    edge: np.ndarray
    flip: np.ndarray
    roots: np.ndarray


def _forest(num_variables, edges):
    """The :class:`Forest` of a graph without cycles, each tree rooted at its centre (the
    middle of a longest path: the fewest levels)."""
    nbrs = [[] for _ in range(num_variables)]
    for e, (i, j) in enumerate(edges):
        nbrs[i].append((int(j), e))
        nbrs[j].append((int(i), e))

    def bfs(start):
        parent, order = {start: (-1, -1)}, [start]
        for v in order:
            for u, e in nbrs[v]:
                if u not in parent:
                    parent[u] = (v, e)
                    order.append(u)
        return parent, order

    seen = np.zeros(num_variables, bool)
    roots, links, depth = [], {}, np.zeros(num_variables, np.int64)
    for start in range(num_variables):
        if seen[start]:
            continue
        far = bfs(start)[1][-1]
        parent, order = bfs(far)
        path = [order[-1]]
        while parent[path[-1]][0] >= 0:
            path.append(parent[path[-1]][0])
        root = path[len(path) // 2]
        parent, order = bfs(root)
        roots.append(root)
        seen[order] = True
        for v in order[1:]:
            links[v] = parent[v]
            depth[v] = depth[parent[v][0]] + 1
    levels = [np.flatnonzero(depth == d) for d in range(int(depth.max()), 0, -1)]
    width = max((len(level) for level in levels), default=1)
    shape = (len(levels), width)
    node, up = np.full(shape, num_variables), np.full(shape, num_variables)
    edge, flip = -np.ones(shape, np.int64), np.zeros(shape, bool)
    for k, level in enumerate(levels):
        node[k, :len(level)] = level
        up[k, :len(level)] = [links[v][0] for v in level]
        edge[k, :len(level)] = [links[v][1] for v in level]
        flip[k, :len(level)] = [edges[links[v][1], 0] != v for v in level]
    return Forest(node, up, edge, flip, np.asarray(roots, np.int64))


class EliminationPlan(NamedTuple):
    """What :func:`plan_elimination` decides.

    Attributes
    ----------
    num_variables : int
    num_values : int
        K, the largest number of values of a variable (tables are K × ... × K; a
        variable with fewer values has −inf beyond them).
    edges : ndarray (E, 2)
        The pairwise factors (factor id e is edge e; the message of step t is factor
        id E + t).
    steps : tuple of Step
        In elimination order.
    width : int
        The largest clique minus one (the treewidth of the order).
    table_size : int
        Entries of the largest table, K^(width + 1) (banded: K^(band width + 1)).
    band : Band or None
        The banded plan, when it is taken (see the module docstring).
    forest : Forest or None
        The forest plan, when it is taken.
    """

    num_variables: int
    num_values: int
    edges: np.ndarray
    steps: tuple
    width: int
    table_size: int
    band: Band | None
    forest: Forest | None = None

    @property
    def order(self) -> tuple:
        return tuple(s.variable for s in self.steps)

    @property
    def chain(self) -> bool:
        """Whether the graph is the path 0 − 1 − … − (n − 1) (its edges in that order)."""
        n = self.num_variables
        bonds = np.stack([np.arange(n - 1), np.arange(1, n)], 1)
        return n >= 2 and self.edges.shape == bonds.shape and np.array_equal(self.edges, bonds)


def _band(num_variables, edges):
    """The :class:`Band` of the better of the index order and the reverse Cuthill–McKee
    order (the smaller bandwidth)."""
    if not len(edges):
        return None
    graph = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])),
                       shape=(num_variables, num_variables)).tocsr()
    best = None
    for order in (np.arange(num_variables),
                  np.asarray(reverse_cuthill_mckee(graph, symmetric_mode=False), np.int64)):
        position = np.empty(num_variables, np.int64)
        position[order] = np.arange(num_variables)
        width = int(np.max(np.abs(position[edges[:, 0]] - position[edges[:, 1]])))
        if best is None or width < best[0]:
            best = (width, order, position)
    width, order, position = best
    edge = -np.ones((num_variables, width), np.int64)
    flip = np.zeros((num_variables, width), bool)
    a, b = position[edges[:, 0]], position[edges[:, 1]]
    new, old = np.maximum(a, b), np.minimum(a, b)
    edge[new, width - (new - old)] = np.arange(len(edges))
    flip[new, width - (new - old)] = a > b  # stored (i, j) with i the newer position
    return Band(width, order, edge, flip)


def _min_fill_order(num_variables, edges):
    """A min-fill elimination order (ties: fewest neighbours, lowest index); scores are
    recomputed only around each eliminated variable, kept in a heap with lazy deletion."""
    neighbours = [set() for _ in range(num_variables)]
    for i, j in edges:
        neighbours[i].add(int(j))
        neighbours[j].add(int(i))

    def score(v):
        nb = list(neighbours[v])
        fill = sum(1 for a in range(len(nb)) for b in range(a + 1, len(nb))
                   if nb[b] not in neighbours[nb[a]])
        return (fill, len(nb), v)

    current = [score(v) for v in range(num_variables)]
    heap = list(current)
    heapq.heapify(heap)
    done = np.zeros(num_variables, bool)
    order = []
    while heap:
        entry = heapq.heappop(heap)
        v = entry[2]
        if done[v] or entry != current[v]:
            continue
        done[v] = True
        order.append(v)
        nb = neighbours[v]
        for u in nb:
            neighbours[u].discard(v)
            neighbours[u].update(nb - {u})
        touched = set(nb)
        for u in nb:
            touched.update(neighbours[u])
        for u in touched:
            if not done[u]:
                current[u] = score(u)
                heapq.heappush(heap, current[u])
    return order


def plan_elimination(num_variables: int, num_values: int, edges: np.ndarray, *,
                     max_table_size: int | None = MAX_TABLE_SIZE, owner: str = "exact",
                     names=None) -> EliminationPlan:
    """The elimination plan of a pairwise model over ``num_variables`` variables with
    ``num_values`` values each and interactions ``edges`` (pairs i < j).

    Parameters
    ----------
    max_table_size : int or None
        Refuse a plan whose largest clique table has more entries (None: no limit).
    owner : str
        Names the caller in the error.
    names : callable, optional
        ``variable -> str`` (e.g. ``"x[3, 4]"``), for the error.

    Raises
    ------
    ValueError
        If the largest table exceeds ``max_table_size``: names the width, the table's
        size and its variables.
    """
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    edges = edges[np.lexsort((edges[:, 1], edges[:, 0]))]
    order = _min_fill_order(num_variables, edges)
    position = np.empty(num_variables, np.int64)
    position[order] = np.arange(num_variables)
    holders = [[] for _ in range(num_variables)]  # unconsumed factors containing each v
    scopes = {}
    for e, (i, j) in enumerate(edges):
        scopes[e] = (int(i), int(j))
        holders[i].append(e)
        holders[j].append(e)
    steps, width, widest = [], 0, ()
    for v in order:
        factors = sorted(set(holders[v]))
        others = sorted({u for f in factors for u in scopes[f]} - {v}, key=position.__getitem__)
        clique = [v] + others
        axis = {u: a for a, u in enumerate(clique)}
        inputs = tuple((f, tuple(axis[u] for u in scopes[f])) for f in factors)
        t = len(edges) + len(steps)
        steps.append(Step(int(v), tuple(int(u) for u in others), inputs))
        scopes[t] = tuple(int(u) for u in others)
        for f in factors:
            for u in scopes[f]:
                if u != v:
                    holders[u] = [g for g in holders[u] if g != f]
        for u in others:
            holders[u].append(t)
        if len(others) > width:
            width, widest = len(others), tuple(clique)
    band = _band(num_variables, edges)
    if band is not None and (num_values ** band.width > BAND_SLACK * num_values ** width or (
            max_table_size is not None and num_values ** (band.width + 1) > max_table_size)):
        band = None
    forest = _forest(num_variables, edges) if band is None and width <= 1 else None
    table_size = int(num_values) ** ((width if band is None else band.width) + 1)
    if max_table_size is not None and table_size > max_table_size:
        shown = ", ".join(names(u) if names else str(u) for u in widest[:12])
        more = f" and {len(widest) - 12} more" if len(widest) > 12 else ""
        raise ValueError(
            f"{owner}: exact elimination needs a table over {width + 1} variables "
            f"({shown}{more}): treewidth {width} with {num_values} values per variable is "
            f"{num_values}^{width + 1} = {table_size:,} entries, above max_table_size="
            f"{max_table_size:,}; raise max_table_size (memory: 4 bytes an entry, per "
            f"example) or use a sampler and AIS")
    return EliminationPlan(int(num_variables), int(num_values), edges, tuple(steps), width,
                           table_size, band, forest)
