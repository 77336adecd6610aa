"""ERGM terms: what a term is (:class:`Term`), the network its covariates come from
(:class:`Network`), and how users write terms (:func:`term`, statnet formulas).

A **term** contributes k ≥ 1 statistics to s(y) and, for the samplers, their change
statistics Δs = s(y with the dyad on) − s(y with it off), read from a *dyad view* (the
quantities of :mod:`numpyro_ugm.network.terms.views`: degrees, shared partners, ...), so
the dense block-Gibbs path and the sparse Metropolis–Hastings path share one formula per
term. Its ``dependence`` says which dyads it couples, which fixes the Gibbs blocks:
``"dyadic"`` (none: covariate terms, edges), ``"node"`` (dyads that share a node: stars,
triangles, mutual, ...), ``"partners"`` (any two dyads: gwesp).

Users name terms as statnet does, in any of three forms, mixed freely:

* a statnet formula: ``"edges + nodematch('Grade') + gwesp(0.5, fixed=TRUE)"``;
* a name or a (name, argument) pair: ``"triangles"``, ``("gwesp", 0.25)``;
* :func:`term`: ``term("nodematch", "Grade", diff=True)``.

The terms themselves are built by :mod:`numpyro_ugm.network.terms.structural`
(structural) and :mod:`numpyro_ugm.network.terms.covariates` (node and dyad covariates),
each built-in term declared by one :class:`TermRow` of the table
:data:`~numpyro_ugm.network.terms.structural.TABLE`; its compiled change statistic is
named by an :class:`Op` (structural) or a covariate form (:data:`COVARIATE_FORMS`).
"""

import ast
import dataclasses
import enum
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Term", "TermSpec", "Network", "term", "parse_terms", "format_number",
           "as_network", "spec_arguments", "integer_argument", "Op", "CompiledOp", "COVARIATE_FORMS", "TermRow"]


class Op(enum.IntEnum):
    """The structural change statistics of the compiled kernel
    (:mod:`~numpyro_ugm.network.terms.compiled`), one branch each, named: the kernel
    tests ``op == Op.KSTAR``, never a position in a tuple."""

    KSTAR = 0
    TRIANGLE = 1
    ISOLATES = 2
    DEGREE = 3
    GWESP = 4
    GWDEGREE = 5
    MUTUAL = 6
    ISTAR = 7
    OSTAR = 8
    TTRIPLE = 9
    CTRIPLE = 10
    IDEGREE = 11
    ODEGREE = 12
    GWIDEGREE = 13
    GWODEGREE = 14
    ISOLATES_DIRECTED = 15
    GWESP_OTP = 16


class CompiledOp(NamedTuple):
    """A structural term as data for the compiled kernel: its operation, its integer
    parameters (``kstar``'s k, ``degree``'s d values) and its real one (the decay r of
    the geometrically weighted terms)."""

    op: Op
    ints: tuple = ()
    real: float = 0.0


#: the kinds of covariate forms, the compiled (and numpy) side of the covariate terms
#: (:func:`~numpyro_ugm.network.terms.covariates.covariate_of`)
COVARIATE_FORMS = ("add", "table", "absdiff", "matrix")


@dataclasses.dataclass(frozen=True, eq=False)
class Term:
    """One resolved ERGM term.

    Attributes
    ----------
    names : tuple of str
        Its coefficients' names, statnet's (``"nodematch.Grade"``, ``"gwesp.fixed.0.5"``).
    dependence : str
        ``"dyadic"``, ``"node"`` or ``"partners"`` (see the module docstring).
    statistic : callable
        ``statistic(y, A)`` -> (..., k): from the dyad variables (..., E) and the
        adjacency (..., n, n).
    change : callable
        ``change(view)`` -> (b, k): change statistics of the view's dyads.
    multilinear : bool
        Whether ``statistic`` is a sum of products of distinct dyad variables as written
        (then its gradient in y is its change statistics too).
    empty : tuple of float
        s of the empty graph (the start of the sparse sampler's running statistics).
    native : tuple, CompiledOp or None
        The term as data for the compiled sparse sampler
        (:mod:`~numpyro_ugm.network.terms.compiled`): a covariate form (``("add", U,
        V)``, ``("table", codes, T)``, ``("absdiff", a, p)``, ``("matrix", M)``) or a
        structural :class:`CompiledOp`; None for terms users build (the JAX sampler
        runs them).
    """

    names: tuple
    dependence: str
    statistic: Callable
    change: Callable
    multilinear: bool = True
    empty: tuple | None = None
    native: tuple | None = None

    @property
    def size(self) -> int:
        return len(self.names)

    def empty_value(self) -> np.ndarray:
        return np.zeros(self.size) if self.empty is None else np.asarray(self.empty, float)


@dataclasses.dataclass(frozen=True)
class TermRow:
    """One built-in term of the table
    (:data:`~numpyro_ugm.network.terms.structural.TABLE`): its statistic and both of its
    change statistics, so that adding a term is one row (and its test is the row's
    ``examples``).

    Attributes
    ----------
    name : str
        statnet's name.
    networks : str
        ``"both"``, ``"undirected"`` or ``"directed"``.
    build : callable
        ``build(spec, network, decay) -> Term``: the statistic s(y) and the JAX change
        statistic of a dyad view (dense Gibbs, :mod:`~numpyro_ugm.network.sampling.tnt`).
    compiled : tuple
        Its compiled change statistics: the :class:`Op` s (branches of the numba kernel)
        or covariate forms (:data:`COVARIATE_FORMS`) that its terms' ``native`` may hold.
    examples : tuple of str
        Formulas of the term, checked on every network kind of ``networks`` by the
        every-dyad test (compiled against dense change statistics) with the node
        attributes ``x`` (numbers), ``g`` (labels) and the dyadic covariate ``w``.
    aliases : tuple of str
        Other names users may write.
    """

    name: str
    networks: str
    build: Callable
    compiled: tuple
    examples: tuple
    aliases: tuple = ()

    def __post_init__(self):
        if self.networks not in ("both", "undirected", "directed"):
            raise ValueError(f"term row {self.name}: networks must be 'both', "
                             f"'undirected' or 'directed', got {self.networks!r}")
        if not self.examples or not self.compiled:
            raise ValueError(f"term row {self.name}: give its compiled form(s) and at least "
                             "one example (the every-dyad test checks it with them)")
        for form in self.compiled:
            if not isinstance(form, Op) and form not in COVARIATE_FORMS:
                raise ValueError(f"term row {self.name}: {form!r} is neither an Op nor a "
                                 f"covariate form {COVARIATE_FORMS}")

    def accepts(self, directed: bool) -> bool:
        """Whether the term is defined on directed (or undirected) networks."""
        return self.networks == "both" or (self.networks == "directed") == bool(directed)


@dataclasses.dataclass(frozen=True)
class TermSpec:
    """A term as a user names it (resolved against a :class:`Network` later)."""

    name: str
    args: tuple = ()
    kwargs: tuple = ()  # sorted (key, value) pairs
    #: written as statnet's call syntax (a formula or :func:`term`), whose ``gwesp(α)``
    #: without ``fixed=`` means the curved term
    statnet: bool = dataclasses.field(default=False, compare=False)

    def __str__(self):
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        return f"{self.name}({', '.join(parts)})" if parts else self.name


def term(name: str, *args: Any, **kwargs: Any) -> TermSpec:
    """An ERGM term by its statnet name and arguments, e.g. ``term("nodematch", "Grade",
    diff=True)``, ``term("gwesp", 0.5)``, ``term("edgecov", matrix, name="friends")``."""
    if not isinstance(name, str):
        raise TypeError(f"ergm: a term name is a string, got {name!r}")
    return TermSpec(name, tuple(args), tuple(sorted(kwargs.items())), statnet=True)


_R_CONSTANTS = {"TRUE": True, "T": True, "FALSE": False, "F": False, "NULL": None,
                "Inf": math.inf}


def _literal(node, text):
    if isinstance(node, ast.Name) and node.id in _R_CONSTANTS:
        return _R_CONSTANTS[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "c":
        return tuple(_literal(a, text) for a in node.args)
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ValueError(f"ergm: in the formula {text!r}, the argument "
                         f"{ast.unparse(node)!r} is not a literal (numbers, strings, "
                         "TRUE/FALSE, c(...))") from None


def _split_sum(body: str) -> list[str]:
    """The summands of ``a + b(1, 'x+y') + c``: split at the ``+`` outside brackets and
    quotes (Python's parser nests a sum one level per term, so very long formulas are
    split here, not parsed whole)."""
    parts, depth, quote, start = [], 0, None, 0
    for k, c in enumerate(body):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "+" and depth == 0:
            parts.append(body[start:k])
            start = k + 1
    return parts + [body[start:]]


def _formula_term(node, text: str) -> TermSpec:
    if isinstance(node, ast.Name):
        return TermSpec(node.id, statnet=True)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        args = tuple(_literal(a, text) for a in node.args)
        kwargs = tuple(sorted((k.arg, _literal(k.value, text)) for k in node.keywords))
        return TermSpec(node.func.id, args, kwargs, statnet=True)
    raise ValueError(f"ergm: cannot read {ast.unparse(node)!r} in the formula "
                     f"{text!r} as a term (terms are names or calls joined by +)")


def _formula_terms(text: str) -> list[TermSpec]:
    """The terms of a statnet formula ``"a + b(1) + c('x', diff=TRUE)"`` (an optional
    ``net ~`` left side is dropped)."""
    body = text.split("~", 1)[1] if "~" in text else text
    parts = []
    for summand in _split_sum(body):
        try:
            node = ast.parse(summand.strip(), mode="eval").body
        except SyntaxError as err:
            raise ValueError(f"ergm: cannot read the formula {text!r}: {err.msg}") from None
        parts.append(_formula_term(node, text))
    return parts


def parse_terms(terms: Any) -> tuple[TermSpec, ...]:
    """Normalize terms as users write them (see the module docstring) to
    :class:`TermSpec` s; errors name the entry at fault."""
    if isinstance(terms, (str, TermSpec)):
        terms = (terms,)
    elif not isinstance(terms, (list, tuple)):
        raise TypeError(f"ergm: the terms are a formula string (\"edges + triangle\"), a "
                        f"term or a list of them; got {type(terms).__name__} {terms!r}")
    out = []
    for entry in terms:
        if isinstance(entry, TermSpec):
            out.append(entry)
        elif isinstance(entry, str):
            if any(c in entry for c in "+(~"):
                out.extend(_formula_terms(entry))
            else:
                out.append(TermSpec(entry))
        elif isinstance(entry, (tuple, list)) and entry and isinstance(entry[0], str):
            out.append(TermSpec(entry[0], tuple(entry[1:])))
        else:
            raise TypeError(f"ergm: cannot read {entry!r} as a term: give a name "
                            "('edges'), a (name, argument) pair (('gwesp', 0.5)), "
                            "ugm.network.term(...) or a formula string")
    if not out:
        raise ValueError("ergm: give at least one term")
    return tuple(out)


def format_number(x: float) -> str:
    """A number as statnet prints it in coefficient names (0.5, 0.25, 7)."""
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:g}"


class Network:
    """The nodes an ERGM's terms refer to: their number, whether ties are directed, and
    their attributes (covariates).

    Parameters
    ----------
    num_nodes : int
    directed : bool
    attributes : dict of str -> array (n,), optional
        Node attributes (numbers or labels) for the covariate terms.
    dyad_covariates : dict of str -> array (n, n), optional
        Named dyadic covariates for ``edgecov("name")``.
    """

    def __init__(self, num_nodes: int, directed: bool = False,
                 attributes: Mapping | None = None, dyad_covariates: Mapping | None = None):
        self.num_nodes = int(num_nodes)
        self.directed = bool(directed)
        self.attributes = {}
        for name, values in (attributes or {}).items():
            if not isinstance(values, np.ndarray) or values.dtype == object:
                _check_one_kind(name, list(values))
            values = np.asarray(values)
            if values.shape != (self.num_nodes,):
                raise ValueError(f"ergm: node attribute {name!r} has shape {values.shape}; "
                                 f"expected ({self.num_nodes},), one value per node")
            self.attributes[str(name)] = values
        self.dyad_covariates = {str(k): np.asarray(v, float)
                                for k, v in (dyad_covariates or {}).items()}

    def attribute(self, name: str, term_name: str, numeric: bool = False) -> np.ndarray:
        """Node attribute ``name`` for the term ``term_name``: errors name both when it
        is missing, has a missing value (None / NaN) or, with ``numeric``, is not a
        number."""
        if name not in self.attributes:
            known = sorted(self.attributes) or "none"
            raise KeyError(f"ergm: term {term_name}({name!r}) needs the node attribute "
                           f"{name!r}; the network has {known}")
        values = self.attributes[name]
        if values.dtype == object:
            bad = [k for k, v in enumerate(values) if v is None
                   or (isinstance(v, float) and math.isnan(v))]
        elif np.issubdtype(values.dtype, np.number):
            bad = np.flatnonzero(~np.isfinite(values.astype(float))).tolist()
        else:
            bad = []
        if bad:
            raise ValueError(f"ergm: node attribute {name!r} (term {term_name}) is missing "
                             f"or not finite at {len(bad)} node(s), e.g. node {bad[0]}; "
                             "ERGM terms need a value at every node")
        if numeric:
            if values.dtype.kind in "USO" and any(isinstance(v, (str, bytes))
                                                  for v in values):
                raise TypeError(f"ergm: term {term_name}({name!r}) needs a numeric "
                                f"attribute; {name!r} holds strings such as "
                                f"{values[0]!r} (convert them to numbers first)")
            try:
                return values.astype(float)
            except (TypeError, ValueError):
                raise TypeError(f"ergm: term {term_name}({name!r}) needs a numeric "
                                f"attribute; {name!r} holds {values.dtype} values such as "
                                f"{values[0]!r}") from None
        return values

    def key(self) -> tuple:
        return (self.num_nodes, self.directed, tuple(sorted(self.attributes)))

    def __repr__(self):
        kind = "directed" if self.directed else "undirected"
        return (f"Network({self.num_nodes} nodes, {kind}, attributes="
                f"{sorted(self.attributes)})")


def _check_one_kind(name, values):
    """Refuse an attribute mixing strings and numbers: numpy would make 1 and "1" one
    level."""
    kinds = {isinstance(v, (str, bytes)) for v in values if v is not None}
    if len(kinds) > 1:
        example = (next(v for v in values if isinstance(v, (str, bytes))),
                   next(v for v in values if v is not None and not isinstance(v, (str, bytes))))
        raise TypeError(f"ergm: node attribute {name!r} mixes strings and numbers (e.g. "
                        f"{example[0]!r} and {example[1]!r}), which would be read as one "
                        "kind and could merge levels such as 1 and '1'; give every node "
                        "a value of one type")


def as_network(network: Any, directed: bool | None = None) -> Network:
    """A :class:`Network` from a node count, a :class:`Network` or a networkx graph (its
    node attributes, in ``list(graph.nodes)`` order)."""
    if isinstance(network, Network):
        if directed is not None and bool(directed) != network.directed:
            raise ValueError(f"ergm: directed={directed} but the network is "
                             f"{'directed' if network.directed else 'undirected'}")
        return network
    if hasattr(network, "nodes") and hasattr(network, "adj"):
        nodes = list(network.nodes)
        names = sorted({k for v in nodes for k in network.nodes[v]})
        attributes = {}
        for k in names:  # a node without the attribute holds None (an error when used)
            raw = [network.nodes[v].get(k) for v in nodes]
            _check_one_kind(k, raw)
            attributes[k] = (np.asarray(raw, dtype=object) if any(x is None for x in raw)
                             else np.asarray(raw))
        is_directed = network.is_directed()
        if directed is not None and bool(directed) != is_directed:
            raise ValueError(f"ergm: directed={directed} but the graph is a networkx "
                             f"{type(network).__name__}")
        return Network(len(nodes), is_directed, attributes)
    if isinstance(network, (int, np.integer)):
        return Network(int(network), bool(directed))
    raise TypeError(f"ergm: expected a number of nodes, a Network or a networkx graph, "
                    f"got {type(network).__name__}")


def spec_arguments(spec: TermSpec, signature: Sequence[str], defaults: Mapping) -> dict:
    """The arguments of ``spec`` by name, R style (positional in ``signature`` order,
    then keywords), with ``defaults``; errors name the term."""
    values = dict(defaults)
    if len(spec.args) > len(signature):
        raise TypeError(f"ergm: term {spec} takes at most {len(signature)} positional "
                        f"argument(s) ({', '.join(signature) or 'none'})")
    values.update(zip(signature, spec.args))
    for key, value in spec.kwargs:
        if key not in signature and key not in defaults:
            raise TypeError(f"ergm: term {spec.name} has no argument {key!r}; it takes "
                            f"{list(signature) or 'none'}")
        values[key] = value
    missing = [k for k in signature if k not in values]
    if missing:
        raise TypeError(f"ergm: term {spec.name} needs the argument(s) {missing}")
    return values


def integer_argument(spec: TermSpec, name: str, value: Any, minimum: int) -> int:
    """``value`` as the integer argument ``name`` of the term ``spec``: an integral
    number ≥ ``minimum`` (2.0 is 2; 2.7, True, "2" or 1 below the minimum are errors
    naming the term)."""
    ok = (isinstance(value, (int, float, np.integer, np.floating))
          and not isinstance(value, (bool, np.bool_)) and math.isfinite(value)
          and float(value).is_integer())
    if not ok or int(value) < minimum:
        raise ValueError(f"ergm: term {spec}: {name} must be an integer ≥ {minimum}, "
                         f"got {value!r}")
    return int(value)
