"""Covers of an interaction graph by induced forests: the blocks of the tree-block kernel
(:mod:`~numpyro_ugm.kernels.tree_blocks`), which draws each block exactly given the rest
(Hamze & de Freitas, "From fields to trees", UAI 2004).

A *block* is a set of variables whose induced subgraph is a forest; its components
are conditionally independent given the other variables, each a tree-structured model
(its own tables plus the pairwise tables of the edges leaving the block, evaluated at
the neighbours' current values). A *cover* is a sequence of blocks; the covers together
put every edge of the graph inside some block, so that no interaction is only ever
crossed by single-variable moves (:func:`forest_covers`):

* a graph that is a forest is one cover of one block: the whole graph, drawn exactly;
* otherwise the edges are split by their *stride* j − i (i < j): the edges of one stride
  form paths i, i + d, i + 2d, ... — the rows of a row-major grid (stride 1), its
  columns (stride W), a periodic grid's wrap-around bonds (W − 1 and (H − 1) W). Each
  stride is one cover: its paths, cut where another edge would close a cycle inside
  them (the next piece starts again at the cut edge, so no edge of the stride is lost),
  coloured so that pieces that share or neighbour a variable lie in different blocks:
  a grid's even rows, then its odd rows, then its even and odd columns.

:func:`block_groups` lays a block's components out for a vectorized update: components
of one shape (number of variables and edges in their own numbering: the 32 rows of a
block of a 64 × 64 grid) form one :class:`Group`, updated through one elimination plan
mapped over them. Path components are numbered along the path, so their plan is a chain.
Everything here runs on the host, once per model.
"""

from typing import NamedTuple

import numpy as np

__all__ = ["Group", "forest_covers", "block_groups", "has_triangle"]


def _neighbours(num_variables, edges):
    nbrs = [set() for _ in range(num_variables)]
    for i, j in edges:
        nbrs[i].add(int(j))
        nbrs[j].add(int(i))
    return nbrs


def _components(num_variables, nbrs):
    """Connected components (lists of variables), or None if the graph has a cycle."""
    seen = np.zeros(num_variables, bool)
    out, num_edges = [], 0
    for start in range(num_variables):
        if seen[start]:
            continue
        seen[start] = True
        comp, stack = [], [start]
        while stack:
            v = stack.pop()
            comp.append(v)
            num_edges += len(nbrs[v])
            for u in nbrs[v]:
                if not seen[u]:
                    seen[u] = True
                    stack.append(u)
        out.append(comp)
    return out if num_edges // 2 == num_variables - len(out) else None


def _path_order(comp, nbrs):
    """The variables of a tree component along its path (from the lower-indexed end),
    or sorted when the tree is not a path."""
    if len(comp) == 1 or any(len(nbrs[v]) > 2 for v in comp):
        return sorted(comp)
    v = min(u for u in comp if len(nbrs[u]) == 1)
    order, previous = [v], None
    while len(order) < len(comp):
        nxt = next(u for u in nbrs[v] if u != previous)
        previous, v = v, nxt
        order.append(v)
    return order


def _pieces(stride_edges, stride, nbrs):
    """The paths i, i + d, ... of one stride's edges, cut into pieces whose induced
    subgraph is the path itself: a variable with another neighbour in the piece starts a
    new piece at the edge that reaches it."""
    succ = set(int(i) for i in stride_edges[:, 0])
    heads = sorted(succ - set(int(j) for j in stride_edges[:, 1]))
    pieces = []
    for head in heads:
        path = [head]
        while path[-1] in succ:
            path.append(path[-1] + stride)
        piece, members = [path[0]], {path[0]}
        for previous, v in zip(path[:-1], path[1:]):
            if (nbrs[v] & members) - {previous}:
                pieces.append(piece)
                piece, members = [previous], {previous}
            piece.append(v)
            members.add(v)
        pieces.append(piece)
    return pieces


def _coloured(pieces, nbrs, num_variables):
    """Blocks of ``pieces``: greedy colours (longest pieces first) such that pieces of
    one colour share no variable and no edge."""
    occupied = [set() for _ in range(num_variables)]
    blocks = []
    for piece in sorted(pieces, key=lambda p: (-len(p), p[0])):
        near = set(piece).union(*(nbrs[v] for v in piece))
        taken = set().union(*(occupied[u] for u in near))
        colour = next(c for c in range(len(taken) + 1) if c not in taken)
        for v in piece:
            occupied[v].add(colour)
        if colour == len(blocks):
            blocks.append([])
        blocks[colour].append(np.asarray(piece, np.int64))
    return blocks


def forest_covers(num_variables: int, edges: np.ndarray) -> list:
    """Covers of the graph (``edges`` (E, 2), i < j) by induced forests, as described
    in the module docstring: a list of covers, each a list of blocks, each a list of
    components (arrays of variables, in path order for a path). Every variable lies in
    some block (a variable without edges joins the first block)."""
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    nbrs = _neighbours(num_variables, edges)
    forest = _components(num_variables, nbrs)
    if forest is not None:
        return [[[np.asarray(_path_order(c, nbrs), np.int64) for c in forest]]]
    strides = edges[:, 1] - edges[:, 0]
    values, counts = np.unique(strides, return_counts=True)
    covers = []
    for _, stride in sorted(zip(-counts, values)):
        pieces = _pieces(edges[strides == stride], int(stride), nbrs)
        covers.append(_coloured(pieces, nbrs, num_variables))
    alone = [np.asarray([v], np.int64) for v in range(num_variables) if not nbrs[v]]
    covers[0][0].extend(alone)
    return covers


def has_triangle(num_variables: int, edges: np.ndarray) -> bool:
    """Whether the graph has three pairwise adjacent variables. A graph found from a
    potential without triangles proves the potential pairwise (a term over three or more
    variables makes all of them interact)."""
    nbrs = _neighbours(num_variables, np.asarray(edges, np.int64).reshape(-1, 2))
    return any(nbrs[i] & nbrs[j] for i, j in np.asarray(edges).reshape(-1, 2))


class Group(NamedTuple):
    """Components of one shape in a block, laid out for one vectorized update.

    Attributes
    ----------
    variables : ndarray (G, m)
        The G components' variables, in their own numbering 0 .. m − 1.
    edges : ndarray (F, 2)
        The shared edges in that numbering (a < b).
    inner : ndarray (G, F)
        Per component edge, the graph's edge id e, plus E when the table is to be
        transposed (the graph's first variable of e is the component's b).
    boundary : ndarray (G, m, D)
        Per variable, the edges that leave the block: edge id e when the variable is
        e's first, e + E when its second, 2E for padding.
    others : ndarray (G, m, D)
        The variable at the other end of each such edge (0 for padding).
    merge : ndarray (n,)
        Gathers the new values into all variables' values: entry v is v outside the
        group and n + k for its k-th variable (``concat([old, new.ravel()])[merge]``).
    """

    variables: np.ndarray
    edges: np.ndarray
    inner: np.ndarray
    boundary: np.ndarray
    others: np.ndarray
    merge: np.ndarray


def block_groups(num_variables: int, edges: np.ndarray, components: list) -> list:
    """The :class:`Group` s of one block (its ``components``, disjoint and pairwise
    non-adjacent induced trees of the graph ``edges``)."""
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    num_edges = len(edges)
    ids = {(int(i), int(j)): e for e, (i, j) in enumerate(edges)}
    nbrs = _neighbours(num_variables, edges)
    member = np.full(num_variables, -1, np.int64)
    for c, comp in enumerate(components):
        member[comp] = c
    shapes = {}
    for c, comp in enumerate(components):
        position = {int(v): k for k, v in enumerate(comp)}
        local, inner, boundary = [], [], []
        for a, v in enumerate(comp):
            v = int(v)
            out = []
            for u in sorted(nbrs[v]):
                if member[u] == c:
                    b = position[u]
                    if a < b:
                        e = ids[(min(u, v), max(u, v))]
                        local.append((a, b))
                        inner.append(e + num_edges * (u < v))
                elif member[u] >= 0:
                    raise ValueError(f"block_groups: components {c} and {member[u]} of a "
                                     f"block are adjacent (variables {v} and {u})")
                else:
                    out.append((ids[(min(u, v), max(u, v))] + num_edges * (u < v), u))
            boundary.append(out)
        order = sorted(range(len(local)), key=local.__getitem__)
        key = (len(comp), tuple(local[k] for k in order))
        shapes.setdefault(key, []).append((np.asarray(comp), [inner[k] for k in order],
                                           boundary))
    groups = []
    for (size, local), members in shapes.items():
        width = max(1, max(len(b) for _, _, bs in members for b in bs))
        bnd = np.full((len(members), size, width), 2 * num_edges, np.int64)
        oth = np.zeros((len(members), size, width), np.int64)
        for g, (_, _, bs) in enumerate(members):
            for a, out in enumerate(bs):
                for d, (e, u) in enumerate(out):
                    bnd[g, a, d], oth[g, a, d] = e, u
        variables = np.stack([m[0] for m in members])
        merge = np.arange(num_variables)
        merge[variables.reshape(-1)] = num_variables + np.arange(variables.size)
        groups.append(Group(variables, np.asarray(local, np.int64).reshape(-1, 2),
                            np.asarray([m[1] for m in members], np.int64).reshape(
                                len(members), len(local)), bnd, oth, merge))
    return groups
