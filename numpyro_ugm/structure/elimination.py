"""Planning exact inference on an interaction graph: an elimination order chosen by the
min-fill heuristic, the cliques it creates, and the size of their tables — known, and
refused above a budget, before anything runs (:func:`plan_elimination`).

Eliminating variable v from a pairwise model sums (or maximizes) over v the tables of
every factor that contains it; the result is a message over v's remaining neighbours,
which become pairwise connected ("fill-in"). The largest clique, v with its neighbours at
its elimination, has K^(w+1) entries, w the width of the order (the graph's treewidth for
the best order): a chain or tree has width 1, an L × W strip width min(L, W), a complete
graph on n variables width n − 1. Min-fill (eliminate the variable whose neighbours lack
the fewest edges among them, ties to the fewest neighbours, then the lowest index) finds
the optimal order on chains, trees and strips.

A graph that is a path through the variables in index order (a linear-chain CRF) is
marked ``chain``: :mod:`~numpyro_ugm.structure.contraction` runs it as a scan (the
forward-backward recursions) instead of unrolling one step per variable.
"""

import heapq
from typing import NamedTuple

import numpy as np

__all__ = ["EliminationPlan", "Step", "plan_elimination", "is_chain", "MAX_TABLE_SIZE"]

#: the largest clique table (entries, per example) an elimination may build by default
MAX_TABLE_SIZE = 2 ** 22


class Step(NamedTuple):
    """One elimination: ``variable`` summed out of the tables ``inputs`` (each a factor
    id with the clique axes of its variables), leaving a message over ``scope``."""

    variable: int
    scope: tuple
    inputs: tuple


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
        Entries of the largest clique table, K^(width + 1).
    chain : bool
        Whether the graph is the path 0 − 1 − … − (n − 1).
    """

    num_variables: int
    num_values: int
    edges: np.ndarray
    steps: tuple
    width: int
    table_size: int
    chain: bool

    @property
    def order(self) -> tuple:
        return tuple(s.variable for s in self.steps)


def is_chain(num_variables: int, edges: np.ndarray) -> bool:
    """Whether ``edges`` are exactly the bonds (i, i + 1) of a path through the variables
    in index order."""
    edges = np.asarray(edges).reshape(-1, 2)
    return (num_variables >= 2 and len(edges) == num_variables - 1
            and np.array_equal(np.sort(edges, 1), np.stack(
                [np.arange(num_variables - 1), np.arange(1, num_variables)], 1)))


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
    table_size = int(num_values) ** (width + 1)
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
                           table_size, bool(is_chain(num_variables, edges)))
