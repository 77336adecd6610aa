"""The :class:`Structure` of a model — its interaction graph, the colouring of its
variables into blocks of conditionally independent ones, and whether its potential is
multilinear — and the greedy colouring that turns a graph (found by
:mod:`~numpyro_ugm.structure.discovery`, or declared by a factor) into blocks."""

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

__all__ = ["Structure", "greedy_coloring", "colored", "from_colors", "unique_pairs",
           "with_blocks"]


class Structure(NamedTuple):
    """What :func:`~numpyro_ugm.structure.analyze` finds (or a factor declares).

    Attributes
    ----------
    sites : tuple of str
        State sites, in the order their variables are numbered.
    offsets : ndarray
        Global index of each site's first variable.
    edges : ndarray (E, 2) or None
        Interacting pairs of variables (global indices, i < j); ``None`` when the graph
        is unknown and treated as complete.
    colors : ndarray (num_variables,)
        Color of each variable; variables of one color are conditionally independent.
    blocks : list of dict of str -> ndarray
        Per color, the flat indices of its variables in each site it touches.
    multilinear : bool
        Whether conditionals may be read off the gradient (finite variables; a real
        variable in a block has a potential quadratic in it, hence a Gaussian
        conditional).
    moved : tuple of str
        Real sites whose potential is not quadratic in their variables: in no block
        (colour -1), moved jointly by a gradient kernel
        (:mod:`numpyro_ugm.kernels.gradient`).
    declared : bool
        Whether the model's factors declared ``edges`` (their graph holds for every
        example of a CRF: no covering check).
    """

    sites: tuple
    offsets: np.ndarray
    edges: np.ndarray
    colors: np.ndarray
    blocks: list
    multilinear: bool
    moved: tuple = ()
    declared: bool = False

    @property
    def num_variables(self):
        return int(self.colors.shape[0])

    def global_indices(self, site, idx=None):
        """Global variable indices of variables ``idx`` (None: all) of ``site``."""
        k = self.sites.index(site)
        n = int(self.offsets[k + 1] - self.offsets[k])
        local = np.arange(n) if idx is None else np.asarray(idx)
        return self.offsets[k] + local

    def independent(self, sites):
        """Whether the variables of ``sites`` have no interactions among themselves."""
        members = np.zeros(self.num_variables, bool)
        for s in sites:
            members[self.global_indices(s)] = True
        if self.edges is None:  # graph unknown: one colour's variables are independent
            return bool(np.unique(self.colors[members]).size <= 1)
        return not np.any(members[self.edges[:, 0]] & members[self.edges[:, 1]])


def unique_pairs(pairs):
    """Sorted unique (i < j) rows of an (E, 2) array of variable pairs, self-pairs dropped."""
    pairs = np.sort(pairs.reshape(-1, 2).astype(np.int64), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    width = int(pairs.max()) + 1 if len(pairs) else 1
    keys = np.unique(pairs[:, 0] * width + pairs[:, 1])
    return np.stack([keys // width, keys % width], axis=1)


def greedy_coloring(num_variables, edges):
    """Color variables in index order with the smallest color unused by neighbours
    (RBM -> visible/hidden, even periodic grid -> checkerboard, complete graph ->
    one variable per color)."""
    both = np.concatenate([edges, edges[:, ::-1]]) if len(edges) else np.zeros((0, 2), int)
    order = np.argsort(both[:, 0], kind="stable")
    targets = both[order, 1]
    starts = np.searchsorted(both[order, 0], np.arange(num_variables + 1))
    colors = np.full(num_variables, -1, np.int64)
    for v in range(num_variables):
        used = colors[targets[starts[v]:starts[v + 1]]]
        used = np.unique(used[used >= 0])
        free = np.nonzero(used != np.arange(len(used)))[0]
        colors[v] = free[0] if len(free) else len(used)
    return colors


def colored(domains, offsets, edges, multilinear):
    """The :class:`Structure` of the graph ``edges`` (``None``: complete): its greedy
    coloring and the blocks of each color."""
    num_variables = int(offsets[-1])
    if edges is None:  # unknown graph: treat as complete
        colors = np.arange(num_variables)
    else:
        colors = greedy_coloring(num_variables, edges)
    return with_blocks(domains, offsets, edges, colors, multilinear)


def with_blocks(domains, offsets, edges, colors, multilinear, moved=()):
    """The :class:`Structure` of a coloring (colors 0..C−1; −1: in no block, the
    ``moved`` sites): the blocks of each color, grouped with one sort (linear in the
    number of variables and colors)."""
    num_colors = int(colors.max()) + 1 if len(colors) else 0
    per_site = []
    for k in range(len(domains)):
        local = colors[offsets[k]:offsets[k + 1]]
        order = np.argsort(local, kind="stable")
        bounds = np.searchsorted(local[order], np.arange(num_colors + 1))
        per_site.append((order, bounds, len(local)))
    blocks = []
    for c in range(num_colors):
        block = {}
        for s, (order, bounds, size) in zip(domains, per_site):
            local = order[bounds[c]:bounds[c + 1]]
            if local.size:
                block[s] = None if local.size == size else local
        blocks.append(block)
    return Structure(tuple(domains), offsets, edges, colors, blocks, multilinear, moved)


def from_colors(domains: Mapping, colors: Mapping, multilinear: bool,
                edges: Mapping | None = None) -> Structure:
    """The :class:`Structure` of a coloring the model declares (see
    :func:`numpyro_ugm.factor`): per site, a color for each variable (flat order).
    Its interaction graph is unknown (``edges`` is ``None``, so
    :meth:`Structure.independent` answers conservatively) unless there is one color
    (no interactions) or the factors declared their ``edges`` (per site, pairs of flat
    indices: then the graph, ``declared``)."""
    sizes = [d.num_variables for d in domains.values()]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    flat = []
    for s, d in domains.items():
        c = np.asarray(colors[s], np.int64).reshape(-1)
        if c.shape != (d.num_variables,) or (c.size and c.min() < 0):
            raise ValueError(f"declared colors of site {s!r}: expected {d.num_variables} "
                             f"non-negative integers, got shape {c.shape}")
        flat.append(c)
    _, dense = np.unique(np.concatenate(flat), return_inverse=True)  # colors 0..C−1
    # one color: every variable independent of the others, so the graph is known (empty)
    if edges is not None:
        starts = dict(zip(domains, offsets[:-1]))
        pairs = [np.asarray(e, np.int64).reshape(-1, 2) + starts[s] for s, e in edges.items()]
        graph = unique_pairs(np.concatenate(pairs)) if pairs else np.zeros((0, 2), np.int64)
        return with_blocks(domains, offsets, graph, dense.astype(np.int64),
                           multilinear)._replace(declared=True)
    edges = np.zeros((0, 2), np.int64) if dense.size and dense.max() == 0 else None
    return with_blocks(domains, offsets, edges, dense.astype(np.int64), multilinear)
