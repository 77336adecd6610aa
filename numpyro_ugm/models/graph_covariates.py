"""Covariate ERGM terms: statistics Σ_{dyads} y_ij x(i, j) for a covariate vector x of
the dyad built from node attributes (or a dyadic matrix), statnet's names and
conventions:

* ``nodecov(attr)``: a_i + a_j (directed too); ``nodeocov`` a_i, ``nodeicov`` a_j
  (directed: sender, receiver);
* ``nodefactor(attr, base=1)``: per level l, [a_i = l] + [a_j = l], the levels sorted and
  the ``base``-th (1-based; 0 keeps all) left out; ``nodeofactor`` / ``nodeifactor``;
* ``nodematch(attr, diff=False, levels=None)``: [a_i = a_j], or per level
  [a_i = a_j = l] with ``diff=True``;
* ``absdiff(attr, pow=1)``: abs(a_i − a_j)^pow;
* ``nodemix(attr, base=1)``: one statistic per mixing cell (unordered level pairs for
  undirected networks, ordered for directed), ordered as statnet's, the ``base``-th cell
  left out;
* ``edgecov(x)``: x_ij for an (n, n) matrix, or the name of one of the network's
  dyadic covariates.

They are dyad independent, so each change statistic is x(i, j) itself, gathered per dyad
from node arrays: O(1) per dyad and no O(n²) table.
"""

import jax.numpy as jnp
import numpy as np

from .graph_terms import Term, format_number, spec_arguments
from .graphs import pair_tables

__all__ = ["COVARIATE_TERMS"]


def _dyadic(names, covariate, num_nodes, directed):
    """A dyad-independent :class:`Term` with covariates ``covariate(i, j)`` -> (..., k)
    of node index arrays."""
    def statistic(y, A):
        _, i, j = pair_tables(num_nodes, directed)
        return y @ covariate(jnp.asarray(i), jnp.asarray(j)).astype(y.dtype)

    def change(view):
        return covariate(view.i, view.j).astype(view.value.dtype)

    return Term(tuple(names), "dyadic", statistic, change)


def _label(value) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return format_number(value)
    return str(value.item() if hasattr(value, "item") else value)


def _levels(values, spec, chosen=None):
    """Sorted distinct levels of a node attribute and the level index of each node."""
    levels, codes = np.unique(values, return_inverse=True)
    if chosen is not None:
        chosen = list(np.atleast_1d(chosen))
        unknown = [c for c in chosen if c not in set(levels.tolist())]
        if unknown:
            raise ValueError(f"ergm: {spec}: levels {[_label(x) for x in unknown]} do not "
                             f"occur; the levels are {[_label(x) for x in levels]}")
    return levels, codes.astype(np.int32), chosen


def _drop(cells, base, spec, what):
    """``cells`` without the ``base``-th (1-based; 0 or None keeps all)."""
    if base in (None, 0):
        return list(range(len(cells)))
    base = int(base)
    if not 1 <= base <= len(cells):
        raise ValueError(f"ergm: {spec}: base={base} is not one of the {len(cells)} {what}")
    return [c for c in range(len(cells)) if c != base - 1]


def _nodecov(which):
    def build(spec, net, decay):
        attr = spec_arguments(spec, ("attr",), {})["attr"]
        if which != "nodecov" and not net.directed:
            raise ValueError(f"ergm: term {which} is for directed networks; use nodecov")
        a = jnp.asarray(net.attribute(attr, spec.name, numeric=True))
        pick = {"nodecov": lambda i, j: a[i] + a[j], "nodeocov": lambda i, j: a[i],
                "nodeicov": lambda i, j: a[j]}[which]
        return _dyadic([f"{which}.{attr}"], lambda i, j: pick(i, j)[..., None],
                       net.num_nodes, net.directed)
    return build


def _nodefactor(which):
    def build(spec, net, decay):
        args = spec_arguments(spec, ("attr", "base"), {"base": 1})
        attr = args["attr"]
        if which != "nodefactor" and not net.directed:
            raise ValueError(f"ergm: term {which} is for directed networks; use nodefactor")
        levels, codes, _ = _levels(net.attribute(attr, spec.name), spec)
        keep = _drop(levels, args["base"], spec, f"levels of {attr!r}")
        if not keep:
            raise ValueError(f"ergm: {spec}: attribute {attr!r} has one level; nothing is "
                             "left after leaving out the base")
        code, kept = jnp.asarray(codes), jnp.asarray(keep)

        def covariate(i, j):
            hit_i = (code[i][..., None] == kept).astype(jnp.float32)
            hit_j = (code[j][..., None] == kept).astype(jnp.float32)
            return {"nodefactor": hit_i + hit_j, "nodeofactor": hit_i,
                    "nodeifactor": hit_j}[which]

        names = [f"{which}.{attr}.{_label(levels[c])}" for c in keep]
        return _dyadic(names, covariate, net.num_nodes, net.directed)
    return build


def _nodematch(spec, net, decay):
    args = spec_arguments(spec, ("attr", "diff"), {"diff": False, "levels": None})
    attr = args["attr"]
    levels, codes, chosen = _levels(net.attribute(attr, spec.name), spec, args["levels"])
    code = jnp.asarray(codes)
    if not args["diff"]:
        if chosen is not None:
            kept = jnp.asarray([int(np.flatnonzero(levels == c)[0]) for c in chosen])
            return _dyadic([f"nodematch.{attr}"],
                           lambda i, j: ((code[i] == code[j]) & jnp.any(
                               code[i][..., None] == kept, -1))[..., None].astype(jnp.float32),
                           net.num_nodes, net.directed)
        return _dyadic([f"nodematch.{attr}"],
                       lambda i, j: (code[i] == code[j])[..., None].astype(jnp.float32),
                       net.num_nodes, net.directed)
    keep = (list(range(len(levels))) if chosen is None
            else [int(np.flatnonzero(levels == c)[0]) for c in chosen])
    kept = jnp.asarray(keep)

    def covariate(i, j):
        same = (code[i] == code[j])[..., None]
        return (same & (code[i][..., None] == kept)).astype(jnp.float32)

    names = [f"nodematch.{attr}.{_label(levels[c])}" for c in keep]
    return _dyadic(names, covariate, net.num_nodes, net.directed)


def _absdiff(spec, net, decay):
    args = spec_arguments(spec, ("attr", "pow"), {"pow": 1})
    attr, power = args["attr"], float(args["pow"])
    a = jnp.asarray(net.attribute(attr, spec.name, numeric=True))
    name = f"absdiff.{attr}" if power == 1 else f"absdiff{format_number(power)}.{attr}"
    return _dyadic([name], lambda i, j: (jnp.abs(a[i] - a[j]) ** power)[..., None],
                   net.num_nodes, net.directed)


def _nodemix(spec, net, decay):
    args = spec_arguments(spec, ("attr", "base"), {"base": 1})
    attr = args["attr"]
    levels, codes, _ = _levels(net.attribute(attr, spec.name), spec)
    L = len(levels)
    # statnet's order: the first level varying fastest; undirected keeps a ≤ b
    cells = [(a, b) for b in range(L) for a in range(L) if net.directed or a <= b]
    keep = [cells[c] for c in _drop(cells, args["base"], spec, "mixing cells")]
    cell_index = np.full((L, L), len(keep), np.int32)
    for k, (a, b) in enumerate(keep):
        cell_index[a, b] = k
        if not net.directed:
            cell_index[b, a] = k
    code, table = jnp.asarray(codes), jnp.asarray(cell_index)

    def covariate(i, j):
        cell = table[code[i], code[j]]
        return (cell[..., None] == jnp.arange(len(keep))).astype(jnp.float32)

    names = [f"mix.{attr}.{_label(levels[a])}.{_label(levels[b])}" for a, b in keep]
    return _dyadic(names, covariate, net.num_nodes, net.directed)


def _edgecov(spec, net, decay):
    args = spec_arguments(spec, ("x",), {"name": None})
    x = args["x"]
    if isinstance(x, str):
        if x not in net.dyad_covariates:
            raise KeyError(f"ergm: edgecov({x!r}) needs the dyadic covariate {x!r}; the "
                           f"network has {sorted(net.dyad_covariates) or 'none'}")
        name, x = x, net.dyad_covariates[x]
    else:
        name = args["name"]
    x = np.asarray(x, float)
    n = net.num_nodes
    if x.shape != (n, n):
        raise ValueError(f"ergm: edgecov needs an ({n}, {n}) matrix, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        bad = np.argwhere(~np.isfinite(x))[0]
        raise ValueError(f"ergm: edgecov{'.' + name if name else ''} is not finite at dyad "
                         f"{tuple(int(v) for v in bad)}")
    matrix = jnp.asarray(x, jnp.float32)
    return _dyadic([f"edgecov.{name}" if name else "edgecov"],
                   lambda i, j: matrix[i, j][..., None], n, net.directed)


#: the covariate terms by name
COVARIATE_TERMS = {
    "nodecov": _nodecov("nodecov"), "nodeocov": _nodecov("nodeocov"),
    "nodeicov": _nodecov("nodeicov"), "nodefactor": _nodefactor("nodefactor"),
    "nodeofactor": _nodefactor("nodeofactor"), "nodeifactor": _nodefactor("nodeifactor"),
    "nodematch": _nodematch, "absdiff": _absdiff, "nodemix": _nodemix, "edgecov": _edgecov,
}
