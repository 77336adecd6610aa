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

import jax
import jax.numpy as jnp
import numpy as np

from .term import COVARIATE_FORMS, Term, TermRow, format_number, spec_arguments
from ..graphs import pair_tables

__all__ = ["COVARIATE_ROWS", "covariate_of", "covariate_design"]


def _dyadic(names, form, num_nodes, directed):
    """A dyad-independent :class:`Term` whose covariates x(i, j) (..., k) are given by
    ``form`` (also the term's ``native`` form for the compiled sampler), one of

    * ``("add", U, V)``: U[i] + V[j], U and V (n, k);
    * ``("table", codes, T)``: T[codes[i], codes[j]], codes (n,) and T (L, L, k);
    * ``("absdiff", a, p)``: abs(a[i] − a[j])^p, a (n,), k = 1;
    * ``("matrix", M)``: M[i, j], M (n, n), k = 1."""
    covariate = covariate_of(form)

    def statistic(y, A):
        _, i, j = pair_tables(num_nodes, directed)
        return y @ covariate(jnp.asarray(i), jnp.asarray(j)).astype(y.dtype)

    def change(view):
        return covariate(view.i, view.j).astype(view.value.dtype)

    return Term(tuple(names), "dyadic", statistic, change, native=form)


def covariate_of(form, xp=jnp):
    """``covariate(i, j) -> (..., k)`` of node index arrays, from a form of
    :func:`_dyadic`: in JAX (float32) by default, in numpy (float64) with ``xp=np``."""
    kind, *args = form
    dtype = np.float64 if xp is np else np.float32

    def array(x, dtype=dtype):  # converted on the host: no program to compile
        x = np.asarray(x, dtype)
        return x if xp is np else jax.device_put(x)

    if kind == "add":
        u, v = array(args[0]), array(args[1])
        return lambda i, j: u[i] + v[j]
    if kind == "table":
        code, table = array(args[0], np.int32), array(args[1])
        return lambda i, j: table[code[i], code[j]]
    if kind == "absdiff":
        a, power = array(args[0]), float(args[1])
        return lambda i, j: (xp.abs(a[i] - a[j]) ** power)[..., None]
    if kind == "matrix":
        matrix = array(args[0])
        return lambda i, j: matrix[i, j][..., None]
    raise ValueError(f"ergm: unknown covariate form {kind!r}")


def covariate_design(terms, num_nodes: int, directed: bool) -> np.ndarray | None:
    """The change statistics (N, k) float64 of every dyad (in the order of
    :func:`~numpyro_ugm.network.graphs.pair_tables`) of terms that are all covariate
    forms (dyad independent, built in), in numpy; None otherwise."""
    forms = [getattr(t, "native", None) for t in terms]
    if any(f is None or f[0] not in COVARIATE_FORMS for f in forms):
        return None
    _, i, j = pair_tables(num_nodes, directed)
    return np.concatenate([covariate_of(f, np)(i, j) for f in forms], axis=1)


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
        a = net.attribute(attr, spec.name, numeric=True)[:, None]
        zero = np.zeros_like(a)
        u, v = {"nodecov": (a, a), "nodeocov": (a, zero), "nodeicov": (zero, a)}[which]
        return _dyadic([f"{which}.{attr}"], ("add", u, v), net.num_nodes, net.directed)
    return build


def _nodefactor(which):
    def build(spec, net, decay):
        args = spec_arguments(spec, ("attr", "base"), {"base": 1})
        attr = args["attr"]
        levels, codes, _ = _levels(net.attribute(attr, spec.name), spec)
        keep = _drop(levels, args["base"], spec, f"levels of {attr!r}")
        if not keep:
            raise ValueError(f"ergm: {spec}: attribute {attr!r} has one level; nothing is "
                             "left after leaving out the base")
        hit = (codes[:, None] == np.asarray(keep)).astype(float)  # (n, levels kept)
        zero = np.zeros_like(hit)
        u, v = {"nodefactor": (hit, hit), "nodeofactor": (hit, zero),
                "nodeifactor": (zero, hit)}[which]
        names = [f"{which}.{attr}.{_label(levels[c])}" for c in keep]
        return _dyadic(names, ("add", u, v), net.num_nodes, net.directed)
    return build


def _nodematch(spec, net, decay):
    args = spec_arguments(spec, ("attr", "diff"), {"diff": False, "levels": None})
    attr = args["attr"]
    levels, codes, chosen = _levels(net.attribute(attr, spec.name), spec, args["levels"])
    keep = (list(range(len(levels))) if chosen is None
            else [int(np.flatnonzero(levels == c)[0]) for c in chosen])
    same = np.eye(len(levels), dtype=bool)  # (L, L): a_i = a_j
    kept = np.isin(np.arange(len(levels)), keep)
    if not args["diff"]:  # [a_i = a_j, a kept level]
        table = (same & kept[:, None])[..., None]
        names = [f"nodematch.{attr}"]
    else:  # per kept level l: [a_i = a_j = l]
        table = same[..., None] & (np.arange(len(levels))[:, None, None] == keep)
        names = [f"nodematch.{attr}.{_label(levels[c])}" for c in keep]
    return _dyadic(names, ("table", codes, table.astype(float)), net.num_nodes,
                   net.directed)


def _absdiff(spec, net, decay):
    args = spec_arguments(spec, ("attr", "pow"), {"pow": 1})
    attr, power = args["attr"], float(args["pow"])
    a = net.attribute(attr, spec.name, numeric=True)
    name = f"absdiff.{attr}" if power == 1 else f"absdiff{format_number(power)}.{attr}"
    return _dyadic([name], ("absdiff", a, power), net.num_nodes, net.directed)


def _nodemix(spec, net, decay):
    args = spec_arguments(spec, ("attr", "base"), {"base": 1})
    attr = args["attr"]
    levels, codes, _ = _levels(net.attribute(attr, spec.name), spec)
    L = len(levels)
    # statnet's order: the first level varying fastest; undirected keeps a ≤ b
    cells = [(a, b) for b in range(L) for a in range(L) if net.directed or a <= b]
    keep = [cells[c] for c in _drop(cells, args["base"], spec, "mixing cells")]
    table = np.zeros((L, L, len(keep)))  # one column per kept cell
    for k, (a, b) in enumerate(keep):
        table[a, b, k] = 1.0
        if not net.directed:
            table[b, a, k] = 1.0
    names = [f"mix.{attr}.{_label(levels[a])}.{_label(levels[b])}" for a, b in keep]
    return _dyadic(names, ("table", codes, table), net.num_nodes, net.directed)


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
    if not net.directed:  # x_ij of i < j, read whichever way round the pair comes
        x = np.triu(x, 1) + np.triu(x, 1).T
    return _dyadic([f"edgecov.{name}" if name else "edgecov"], ("matrix", x), n,
                   net.directed)


#: the covariate terms' rows of the table of terms
#: (:data:`~numpyro_ugm.network.terms.structural.TABLE`)
COVARIATE_ROWS = (
    TermRow("nodecov", "both", _nodecov("nodecov"), ("add",), ("nodecov('x')",)),
    TermRow("nodeocov", "directed", _nodecov("nodeocov"), ("add",), ("nodeocov('x')",)),
    TermRow("nodeicov", "directed", _nodecov("nodeicov"), ("add",), ("nodeicov('x')",)),
    TermRow("nodefactor", "both", _nodefactor("nodefactor"), ("add",),
            ("nodefactor('g')", "nodefactor('g', base=0)")),
    TermRow("nodeofactor", "directed", _nodefactor("nodeofactor"), ("add",),
            ("nodeofactor('g')",)),
    TermRow("nodeifactor", "directed", _nodefactor("nodeifactor"), ("add",),
            ("nodeifactor('g')",)),
    TermRow("nodematch", "both", _nodematch, ("table",),
            ("nodematch('g')", "nodematch('g', diff=TRUE)")),
    TermRow("absdiff", "both", _absdiff, ("absdiff",), ("absdiff('x')", "absdiff('x', pow=2)")),
    TermRow("nodemix", "both", _nodemix, ("table",), ("nodemix('g')",)),
    TermRow("edgecov", "both", _edgecov, ("matrix",), ("edgecov('w')",)),
)
