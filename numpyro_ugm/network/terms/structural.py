"""Structural ERGM terms, the table of every term (:data:`TABLE`: one
:class:`~numpyro_ugm.network.terms.term.TermRow` per built-in term, structural rows here
and the covariate rows of :mod:`numpyro_ugm.network.terms.covariates`), and the
statistics s(y) and change statistics Δs of a list of terms.

Each structural term is a statistic of the adjacency A (written **multilinearly** where
it can be — a sum of products of distinct dyad variables, so its gradient is its change
statistics too) and a change statistic read from a dyad view
(:mod:`numpyro_ugm.network.terms.views`). Undirected: ``edges``, ``kstar(k)``
(``twostars``, ``threestars``), ``triangle``, ``isolates``, ``degree(d)``,
``gwesp(α)``, ``gwdegree(α)``. Directed: ``edges``, ``mutual``, ``istar(k)``,
``ostar(k)``, ``ttriple``, ``ctriple``, ``isolates``, ``idegree(d)``, ``odegree(d)``,
``gwesp(α)`` (on outgoing two-paths, statnet's ``dgwesp(type="OTP")``),
``gwidegree(α)``, ``gwodegree(α)``. Covariate terms:
:mod:`numpyro_ugm.network.terms.covariates`.

Costs (dense path): O(n) per dyad for every term but gwesp, whose partner terms gather
the rows of the dyad's c common neighbours, O(n·(c + 1)); every dyad at once
(:func:`change_statistics`, the MPLE) from matrix products, O(n³) work, O(n²) memory.
"""

import collections
import hashlib
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .covariates import COVARIATE_ROWS
from .term import (CompiledOp, Network, Op, Term, TermRow, TermSpec, as_network,
                   format_number, integer_argument, parse_terms, spec_arguments)
from .views import all_dyads_view, block_view
from ..graphs import adjacency, graph_to_edges, is_networkx, num_nodes_of

__all__ = ["STATISTICS", "TERMS", "TABLE", "DEFAULT_DECAY", "ergm_statistics", "change_statistics",
           "resolve_terms", "statistics_of", "change_statistics_of", "term_names",
           "is_multilinear", "parse_statistics"]

#: default decay α of the geometrically weighted statistics (statnet's ``fixed=TRUE``)
DEFAULT_DECAY = 0.5


def _binomial(x, k):
    """C(x, k) for real x ≥ 0 (0 where x < k)."""
    x = jnp.asarray(x)
    safe = jnp.maximum(x, k - 1)
    value = jnp.exp(jax.scipy.special.gammaln(safe + 1) - jax.scipy.special.gammaln(safe - k + 1)
                    - math.lgamma(k + 1))
    return jnp.where(x >= k, jnp.round(value), 0.0)


def _ones(view):
    return jnp.ones_like(view.value)


def _stack(*columns):
    return jnp.stack(columns, axis=-1)


# --- undirected ----------------------------------------------------------------------


def _edges(spec, net, decay):
    spec_arguments(spec, (), {})
    half = np.full((net.num_nodes, 1), 0.5)  # 1 = 1/2 + 1/2 as a covariate form
    return Term(("edges",), "dyadic", lambda y, A: _stack(jnp.sum(y, -1)),
                lambda v: _stack(_ones(v)), native=("add", half, half))


def _kstar(spec, net, decay, k=None):
    k = integer_argument(spec, "k", spec_arguments(
        spec, ("k",), {} if k is None else {"k": k})["k"], 1)

    def statistic(y, A):
        if k == 2:  # ((Σ_j A_ij)² − Σ_j A_ij²)/2 per node: multilinear as written
            d = jnp.sum(A, -1)
            return _stack(jnp.sum(d * d - jnp.sum(A * A, -1), -1) / 2)
        if k == 3:  # the elementary symmetric polynomial e3 = (p1³ − 3 p1 p2 + 2 p3)/6
            p1, p2, p3 = (jnp.sum(A ** q, -1) for q in (1, 2, 3))
            return _stack(jnp.sum(p1 ** 3 - 3 * p1 * p2 + 2 * p3, -1) / 6)
        return _stack(jnp.sum(_binomial(jnp.sum(A, -1), k), -1))

    return Term((f"kstar{k}",), "dyadic" if k == 1 else "node", statistic,
                lambda v: _stack(_binomial(v.degree_i, k - 1) + _binomial(v.degree_j, k - 1)),
                multilinear=k <= 3, native=CompiledOp(Op.KSTAR, (k,)))


def _triangle(spec, net, decay):
    spec_arguments(spec, (), {})
    # trace(A³)/6: with a zero diagonal each term is a product of three distinct pairs
    return Term(("triangle",), "node", lambda y, A: _stack(jnp.sum((A @ A) * A, (-2, -1)) / 6),
                lambda v: _stack(v.shared), native=CompiledOp(Op.TRIANGLE))


def _isolates(spec, net, decay):
    spec_arguments(spec, (), {})
    if net.directed:
        def statistic(y, A):
            return _stack(jnp.sum(jnp.prod(1 - A, -1) * jnp.prod(1 - A, -2), -1))

        def change(v):
            return _stack(-(((v.out_i + v.in_i) == 0).astype(v.value.dtype)
                            + ((v.out_j + v.in_j) == 0)))
    else:
        def statistic(y, A):  # Π_j (1 − A_ij): a product of distinct pairs
            return _stack(jnp.sum(jnp.prod(1 - A, -1), -1))

        def change(v):
            return _stack(-((v.degree_i == 0).astype(v.value.dtype) + (v.degree_j == 0)))
    return Term(("isolates",), "node", statistic, change, empty=(net.num_nodes,),
                native=CompiledOp(Op.ISOLATES_DIRECTED if net.directed else Op.ISOLATES))


def _degree_counts(kind):
    """degree(d) / idegree(d) / odegree(d): the number of nodes of degree d, one
    statistic per d."""
    def build(spec, net, decay):
        d = spec_arguments(spec, ("d",), {})["d"]
        ds = tuple(integer_argument(spec, "d", x, 0)
                   for x in (d if isinstance(d, (tuple, list, np.ndarray)) else (d,)))
        if not ds:
            raise ValueError(f"ergm: term {spec}: give at least one degree d")
        names = tuple(f"{kind}{x}" for x in ds)
        values = jnp.asarray(ds)

        def degrees(A):
            return {"degree": jnp.sum(A, -1), "odegree": jnp.sum(A, -1),
                    "idegree": jnp.sum(A, -2)}[kind]

        def statistic(y, A):
            return jnp.sum(degrees(A)[..., None] == values, -2).astype(y.dtype)

        def gain(deg):  # a node of degree deg (without the dyad) moves to deg + 1
            deg = deg[..., None]
            return ((deg + 1 == values).astype(deg.dtype) - (deg == values))

        def change(v):
            if kind == "degree":
                return gain(v.degree_i) + gain(v.degree_j)
            return gain(v.out_i if kind == "odegree" else v.in_j)

        empty = tuple(float(net.num_nodes) if x == 0 else 0.0 for x in ds)
        return Term(names, "node", statistic, change, multilinear=False, empty=empty,
                    native=CompiledOp(Op[kind.upper()], ds))
    return build


def _decay_of(spec, decay):
    if spec.statnet and "fixed" not in dict(spec.kwargs):
        raise ValueError(f"ergm: {spec}: statnet reads {spec.name} without fixed= as the "
                         "curved term, which this package does not implement; write "
                         f"{spec.name}(α, fixed=TRUE) for the fixed decay α")
    args = spec_arguments(spec, ("decay", "fixed"), {"decay": decay, "fixed": True})
    alpha = float(args["decay"])
    if not args["fixed"]:
        raise ValueError(f"ergm: {spec}: only fixed decays are supported (fixed=TRUE); "
                         "curved ERGMs (fixed=FALSE) are not")
    if not alpha > 0:
        raise ValueError(f"ergm: the decay of {spec.name} must be > 0, got {alpha}")
    return alpha


def _gwesp(spec, net, decay):
    alpha = _decay_of(spec, decay)
    r = -math.expm1(-alpha)
    scale = math.exp(alpha)
    if net.directed:
        # e^α Σ_{i≠j} y_ij (1 − r^{tp_ij}), tp = outgoing two-paths (A @ A)
        def statistic(y, A):
            return _stack(scale * jnp.sum(A * (1 - r ** (A @ A)), (-2, -1)))

        def change(v):
            return _stack(scale * (1 - r ** v.two_paths) + v.otp_partner_terms(r))
        name = f"gwesp.OTP.fixed.{format_number(alpha)}"
    else:
        # e^α Σ_{i<j} y_ij (1 − r^{sp_ij}), sp = shared partners; a common neighbour k
        # gives the pairs (i, k), (j, k) one more partner: e^α (r^s − r^{s+1}) = r^s each
        def statistic(y, A):
            return _stack(scale * jnp.sum(A * (1 - r ** (A @ A)), (-2, -1)) / 2)

        def change(v):
            return _stack(scale * (1 - r ** v.shared) + v.partner_terms(r))
        name = f"gwesp.fixed.{format_number(alpha)}"
    return Term((name,), "partners", statistic, change, multilinear=False,
                native=CompiledOp(Op.GWESP_OTP if net.directed else Op.GWESP, (), r))


def _gwdegree(kind):
    """gwdegree / gwidegree / gwodegree: e^α Σ_i (1 − r^{d_i}); a node of degree d
    (without the dyad) gains e^α (r^d − r^{d+1}) = r^d."""
    def build(spec, net, decay):
        alpha = _decay_of(spec, decay)
        r = -math.expm1(-alpha)
        scale = math.exp(alpha)
        axis = -2 if kind == "gwidegree" else -1

        def statistic(y, A):
            return _stack(scale * jnp.sum(1 - r ** jnp.sum(A, axis), -1))

        def change(v):
            if kind == "gwdegree":
                return _stack(r ** v.degree_i + r ** v.degree_j)
            return _stack(r ** (v.in_j if kind == "gwidegree" else v.out_i))
        short = {"gwdegree": "gwdeg", "gwidegree": "gwideg", "gwodegree": "gwodeg"}[kind]
        return Term((f"{short}.fixed.{format_number(alpha)}",), "node", statistic, change,
                    multilinear=False, native=CompiledOp(Op[kind.upper()], (), r))
    return build


# --- directed ------------------------------------------------------------------------


def _mutual(spec, net, decay):
    spec_arguments(spec, (), {})
    return Term(("mutual",), "node",
                lambda y, A: _stack(jnp.sum(A * jnp.swapaxes(A, -1, -2), (-2, -1)) / 2),
                lambda v: _stack(v.reverse), native=CompiledOp(Op.MUTUAL))


def _directed_star(kind):
    """istar(k) = Σ_j C(in_j, k); ostar(k) = Σ_i C(out_i, k)."""
    def build(spec, net, decay):
        k = integer_argument(spec, "k", spec_arguments(spec, ("k",), {})["k"], 1)
        axis = -2 if kind == "istar" else -1

        def statistic(y, A):
            if k == 2:
                d = jnp.sum(A, axis)
                return _stack(jnp.sum(d * d - jnp.sum(A * A, axis), -1) / 2)
            return _stack(jnp.sum(_binomial(jnp.sum(A, axis), k), -1))

        def change(v):
            return _stack(_binomial(v.in_j if kind == "istar" else v.out_i, k - 1))
        return Term((f"{kind}{k}",), "dyadic" if k == 1 else "node", statistic, change,
                    multilinear=k <= 2, native=CompiledOp(Op[kind.upper()], (k,)))
    return build


def _ttriple(spec, net, decay):
    spec_arguments(spec, (), {})
    # Σ_{i,j,k} y_ij y_jk y_ik; toggling a → b changes the triples where it is i→j, j→k
    # or i→k: |out(a)∩out(b)| + |in(a)∩in(b)| + |out(a)∩in(b)|
    return Term(("ttriple",), "node", lambda y, A: _stack(jnp.sum((A @ A) * A, (-2, -1))),
                lambda v: _stack(v.shared_out + v.shared_in + v.two_paths),
                native=CompiledOp(Op.TTRIPLE))


def _ctriple(spec, net, decay):
    spec_arguments(spec, (), {})
    # Σ y_ij y_jk y_ki / 3 = trace(A³)/3; toggling a → b closes #(out(b) ∩ in(a)) cycles
    return Term(("ctriple",), "node",
                lambda y, A: _stack(jnp.sum((A @ A) * jnp.swapaxes(A, -1, -2), (-2, -1)) / 3),
                lambda v: _stack(v.cycles), native=CompiledOp(Op.CTRIPLE))


# --- the table of terms --------------------------------------------------------------


def _star(k):
    return lambda spec, net, decay: _kstar(TermSpec(spec.name), net, decay, k)


_GW = "(0.4, fixed=TRUE)"
#: every built-in term, one row each (:class:`~numpyro_ugm.network.terms.term.TermRow`):
#: its statistic and JAX change statistic (``build``), its compiled operations
#: (``compiled``) and the formulas of its every-dyad test (``examples``)
TABLE = (
    TermRow("edges", "both", _edges, ("add",), ("edges",), ("edge",)),
    TermRow("kstar", "undirected", _kstar, (Op.KSTAR,), ("kstar(1)", "kstar(2)", "kstar(4)")),
    TermRow("twostars", "undirected", _star(2), (Op.KSTAR,), ("twostars",),
            ("kstar2", "2-stars", "2stars")),
    TermRow("threestars", "undirected", _star(3), (Op.KSTAR,), ("threestars",),
            ("kstar3", "3-stars")),
    TermRow("triangle", "undirected", _triangle, (Op.TRIANGLE,), ("triangle",),
            ("triangles",)),
    TermRow("isolates", "both", _isolates, (Op.ISOLATES, Op.ISOLATES_DIRECTED),
            ("isolates",), ("isolate",)),
    TermRow("degree", "undirected", _degree_counts("degree"), (Op.DEGREE,),
            ("degree(c(0, 1, 3))",)),
    TermRow("gwesp", "both", _gwesp, (Op.GWESP, Op.GWESP_OTP), ("gwesp(0.7, fixed=TRUE)",)),
    TermRow("gwdegree", "undirected", _gwdegree("gwdegree"), (Op.GWDEGREE,), ("gwdegree" + _GW,)),
    TermRow("mutual", "directed", _mutual, (Op.MUTUAL,), ("mutual",)),
    TermRow("istar", "directed", _directed_star("istar"), (Op.ISTAR,), ("istar(2)", "istar(3)")),
    TermRow("ostar", "directed", _directed_star("ostar"), (Op.OSTAR,), ("ostar(2)", "ostar(3)")),
    TermRow("ttriple", "directed", _ttriple, (Op.TTRIPLE,), ("ttriple",)),
    TermRow("ctriple", "directed", _ctriple, (Op.CTRIPLE,), ("ctriple",)),
    TermRow("idegree", "directed", _degree_counts("idegree"), (Op.IDEGREE,),
            ("idegree(c(0, 2))",)),
    TermRow("odegree", "directed", _degree_counts("odegree"), (Op.ODEGREE,), ("odegree(1)",)),
    TermRow("gwidegree", "directed", _gwdegree("gwidegree"), (Op.GWIDEGREE,),
            ("gwidegree(0.3, fixed=TRUE)",)),
    TermRow("gwodegree", "directed", _gwdegree("gwodegree"), (Op.GWODEGREE,),
            ("gwodegree(0.6, fixed=TRUE)",)),
) + COVARIATE_ROWS

_ROWS = {name: row for row in TABLE for name in (row.name, *row.aliases)}

#: Names of every term :func:`~numpyro_ugm.models.ergm` knows (aliases: ``triangles``,
#: ``kstar2``, ``kstar3``, ``edge``, ``isolate``); undirected-only and directed-only
#: terms are refused on the other kind of network.
STATISTICS = ("edges", "twostars", "threestars", "triangles", "isolates", "gwesp",
              "gwdegree")
TERMS = tuple(sorted(row.name for row in TABLE))


def _resolve(spec, net, decay):
    row = _ROWS.get(spec.name.lower())
    if row is None:
        raise ValueError(f"ergm: unknown term {spec.name!r}; known: {list(TERMS)}")
    if not row.accepts(net.directed):
        kind, hint = (("undirected", "istar/ostar, ttriple/ctriple, gwidegree/gwodegree")
                      if net.directed else ("directed", "kstar, triangle, gwdegree"))
        raise ValueError(f"ergm: term {spec.name!r} is for {kind} networks and this one "
                         f"is {'directed' if net.directed else 'undirected'}; "
                         f"its terms include {hint}")
    return row.build(spec, net, decay)


def resolve_terms(statistics, network, decay: float = DEFAULT_DECAY) -> tuple[Term, ...]:
    """The :class:`~numpyro_ugm.network.terms.term.Term` s of ``statistics`` (any form
    of :func:`~numpyro_ugm.network.terms.term.parse_terms`) on ``network`` (a node
    count, :class:`~numpyro_ugm.network.terms.term.Network` or networkx graph); a
    repeated coefficient name is an error."""
    net = as_network(network)
    terms = tuple(_resolve(spec, net, decay) for spec in parse_terms(statistics))
    names = term_names(terms)
    if len(set(names)) < len(names):
        repeated = sorted(x for x, count in collections.Counter(names).items() if count > 1)
        raise ValueError(f"ergm: the coefficient(s) {repeated} appear twice among the terms "
                         f"{[str(s) for s in parse_terms(statistics)]}")
    return terms


def parse_statistics(statistics, decay: float = DEFAULT_DECAY, num_nodes: int = 3,
                     directed: bool = False) -> tuple[Term, ...]:
    """:func:`resolve_terms` on a plain network of ``num_nodes`` nodes (no attributes)."""
    return resolve_terms(statistics, Network(num_nodes, directed), decay)


def term_names(terms, network=None, decay: float = DEFAULT_DECAY) -> list[str]:
    """The coefficient names of ``terms``, in order: resolved
    :class:`~numpyro_ugm.network.terms.term.Term` s, or statistics in any form of
    :func:`resolve_terms` (names, a statnet formula, ...), resolved on ``network``
    (default a plain undirected network of 3 nodes; covariate terms need the network
    that holds their attributes)."""
    if isinstance(terms, str) or not all(isinstance(t, Term) for t in terms):
        terms = resolve_terms(terms, Network(3, False) if network is None else network,
                              decay)
    return [name for t in terms for name in t.names]


def is_multilinear(terms: Sequence[Term]) -> bool:
    """Whether every term's statistic is multilinear as written."""
    return all(t.multilinear for t in terms)


def statistics_of(y: jax.Array, net: Network, terms: Sequence[Term]) -> jax.Array:
    """s(y) (..., k) from dyad variables (..., E)."""
    A = adjacency(y, net.num_nodes, net.directed)
    return jnp.concatenate([t.statistic(y, A) for t in terms], axis=-1)


def change_statistics_of(y: jax.Array, net: Network, terms: Sequence[Term],
                         idx: jax.Array | None = None) -> jax.Array:
    """Δs (b, k) of the dyads ``idx`` (every dyad if None) of one graph ``y`` (E,)."""
    n, directed = net.num_nodes, net.directed
    view = all_dyads_view(y, n, directed) if idx is None else block_view(y, n, idx, directed)
    return jnp.concatenate([t.change(view) for t in terms], axis=-1)


def _edge_array(edges, network, directed):
    """(y (..., E) floating, its Network): a networkx graph (or a list of them) converted
    by :func:`~numpyro_ugm.network.graph_to_edges`, and the network of its attributes
    when ``network`` is not given."""
    graphs = is_networkx(edges) or (isinstance(edges, (list, tuple)) and len(edges) > 0
                                    and is_networkx(edges[0]))
    if network is None and graphs:
        network = edges if is_networkx(edges) else edges[0]
    net = as_network(network) if network is not None else None
    directed = net.directed if net else directed
    y = jnp.asarray(graph_to_edges(edges, directed=directed) if graphs else edges)
    if not jnp.issubdtype(y.dtype, jnp.floating):
        y = y.astype(jnp.result_type(float))
    return y, net or Network(num_nodes_of(y.shape[-1], directed), directed)


def ergm_statistics(edges: ArrayLike, statistics=("edges", "triangles"), *,
                    decay: float = DEFAULT_DECAY, network=None,
                    directed: bool = False) -> jax.Array:
    """Graph statistics s(y) of edge data.

    Parameters
    ----------
    edges : array (..., E), or networkx graph(s)
        Dyad indicators (0/1), as :func:`~numpyro_ugm.network.graph_to_edges` gives them,
        any leading axes; or graphs, converted by it (and, without ``network``, the
        first graph gives the node attributes and whether ties are directed).
    statistics : terms
        As in :func:`~numpyro_ugm.models.ergm` (names, (name, argument) pairs,
        :func:`~numpyro_ugm.network.term` or a statnet formula).
    decay : float
        Default decay α of the geometrically weighted terms.
    network : Network or networkx graph, optional
        Where covariate terms find their node attributes (and whether ties are directed).
    directed : bool
        Whether the dyads are ordered pairs (when ``network`` is not given).

    Returns
    -------
    jax.Array (..., k)
        One column per coefficient (floating point).
    """
    y, net = _edge_array(edges, network, directed)
    return _compiled("statistics", statistics, decay, net)(y)


def change_statistics(edges: ArrayLike, statistics=("edges", "triangles"), *,
                      decay: float = DEFAULT_DECAY, network=None,
                      directed: bool = False) -> jax.Array:
    """Change statistics Δ_e s(y) = s(y with e on) − s(y with e off), for every dyad e.

    The conditional log-odds of dyad e given the rest is θ·Δ_e s(y), so the MPLE is the
    logistic regression of the observed y_e on these rows
    (:func:`~numpyro_ugm.network.mple`). Computed as the samplers compute them (O(n³) work
    and O(n²) memory per graph, from matrix products of the adjacency).

    Parameters
    ----------
    edges : array (..., E), or networkx graph(s)
        Dyad indicators (0/1), or graphs (as in :func:`ergm_statistics`).
    statistics, decay, network, directed
        As in :func:`ergm_statistics`.

    Returns
    -------
    jax.Array (..., E, k)
    """
    y, net = _edge_array(edges, network, directed)
    flat = y.reshape((-1, y.shape[-1]))
    out = _compiled("change", statistics, decay, net)(flat)
    return out.reshape(y.shape + (out.shape[-1],))


#: compiled statistics / change statistics by the fingerprint of (terms, decay, network)
_COMPILED: dict = {}


def _fingerprint(obj):
    """A hashable stand-in for terms and networks: arrays by shape, dtype and a digest of
    their bytes (an array's repr elides entries), containers element by element."""
    if isinstance(obj, (np.ndarray, jax.Array)):
        a = np.asarray(obj)
        return ("array", a.shape, str(a.dtype), hashlib.sha1(a.tobytes()).hexdigest())
    if isinstance(obj, (tuple, list)):
        return tuple(_fingerprint(x) for x in obj)
    if isinstance(obj, dict):
        return tuple((k, _fingerprint(v)) for k, v in sorted(obj.items()))
    if isinstance(obj, TermSpec):
        return (obj.name, _fingerprint(obj.args), _fingerprint(obj.kwargs), obj.statnet)
    if isinstance(obj, Network):
        return (obj.num_nodes, obj.directed, _fingerprint(obj.attributes),
                _fingerprint(obj.dyad_covariates))
    return obj


def _compiled(kind, statistics, decay, net):
    """One jitted ``y -> s(y)`` (``"statistics"``) or ``(N, E) -> Δs`` (``"change"``) per
    terms, decay and network, so repeated calls compile once (eager dispatch of the
    many small operations cost seconds on a first call)."""
    key = (kind, _fingerprint(parse_terms(statistics)), float(decay), _fingerprint(net))
    if key not in _COMPILED:
        terms = resolve_terms(statistics, net, decay)
        if kind == "statistics":
            _COMPILED[key] = jax.jit(lambda g: statistics_of(g, net, terms))
        else:
            _COMPILED[key] = jax.jit(jax.vmap(lambda g: change_statistics_of(g, net, terms)))
        if len(_COMPILED) > 64:
            _COMPILED.pop(next(iter(_COMPILED)))
    return _COMPILED[key]
