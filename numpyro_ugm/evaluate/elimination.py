"""Exact inference by variable elimination on a model's interaction graph: what
``ugm.exact`` runs for finite models too large to enumerate whose graph is thin (chains,
trees, strips, small grids, linear-chain CRFs).

The potential is tabulated from the model itself (:mod:`~numpyro_ugm.structure.tables`:
unary and pairwise tables over the graph the structure analysis found; declared Gibbs
colourings are analysed afresh, since a colouring is not a graph), checked against the
model at random states (a potential with terms over three or more variables at once is an
error naming its sites), and contracted along a min-fill elimination order
(:mod:`~numpyro_ugm.structure.elimination`, :mod:`~numpyro_ugm.structure.contraction`):
log Z, the log-probability of data with latent sites summed out (clamping the observed
variables), marginals of every variable and every interacting pair, the MAP state and
exact independent draws. A CRF's examples are tabulated and contracted in one batch
(``vmap``), each under its own inputs. Everything is traceable in the parameters.

:func:`prepare` decides, before anything runs, whether elimination applies and how large
its largest table is; :func:`choose` is the rule of ``method="auto"`` in ``ugm.exact``.
"""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..model.analysis import probe_params
from ..model.target import Target
from ..model.ugm import UGM
from ..runtime.compile_cache import cached
from ..structure import contraction
from ..structure.elimination import MAX_TABLE_SIZE, EliminationPlan, plan_elimination
from ..structure.graph import unique_pairs
from ..structure.tables import (decomposition_error, labels_to_state, num_values_of,
                                state_to_labels, tabulate)

__all__ = ["Elimination", "prepare", "choose", "tables", "log_z", "log_probs",
           "marginals", "map_labels", "score", "sample_labels", "check_decomposes",
           "variable_name", "table_work",
           "to_labels", "to_state", "run_log_z", "run_log_probs", "run_marginals",
           "ENUMERATION_PREFERRED", "MAX_TABLE_SIZE", "METHODS"]

#: ``method="auto"`` enumerates when a call's enumerations add up to at most this many
#: configurations (after closed-form sums; a CRF's log Z counts once per example, as do
#: latent sites): one small program, often compiled already. Counting per call matters:
#: 300 sentences of 8 words with 9 labels enumerate 9**4 configurations each, 2.0e6 in
#: all, which took 1.5 s where the forward algorithm took 2 ms.
ENUMERATION_PREFERRED = 2 ** 16

METHODS = ("auto", "enumerate", "eliminate")

#: relative error above which a potential does not decompose into its tables
DECOMPOSITION_TOLERANCE = 1e-4


class Elimination(NamedTuple):
    """A model's elimination set-up: its target, the plan over its variables (sites in
    order) and whether the tables come from derivatives (multilinear) or differences."""

    target: Target
    plan: EliminationPlan
    multilinear: bool

    @property
    def domains(self):
        return self.target.state_sites


def variable_name(domains):
    """``variable -> "site[i, j]"``: the name of a global variable index (sites in order,
    each flattened)."""
    offsets = np.cumsum([0] + [d.num_variables for d in domains.values()])
    names = list(domains)

    def name(v):
        k = int(np.searchsorted(offsets, v, side="right") - 1)
        d = domains[names[k]]
        index = np.unravel_index(v - offsets[k], d.batch_shape) if d.batch_shape else ()
        inside = ", ".join(str(int(i)) for i in index)
        return f"{names[k]}[{inside}]" if d.batch_shape else names[k]

    return name


def prepare(m: UGM, owner: str, max_table_size: int | None = MAX_TABLE_SIZE,
            target: Target | None = None) -> Elimination:
    """The :class:`Elimination` of ``m`` (on ``target``, e.g. the target observing a
    data set's sites; default ``m.target()``).

    Raises
    ------
    ValueError
        If the model has real sites, or its largest table is above ``max_table_size``
        (naming the treewidth and the table's variables).
    """
    target = m.target() if target is None else target
    if target.real_sites:
        raise ValueError(f"{owner}: exact elimination is for finite sites; "
                         f"{list(target.real_sites)} are real (use enumeration, which "
                         "integrates Gaussian sites, or AIS)")
    structure = target.interaction_graph()
    domains = target.state_sites
    edges = unique_pairs(structure.edges) if len(structure.edges) else np.zeros((0, 2), np.int64)
    k = int(num_values_of(domains).max())
    key = ("elimination.plan", max_table_size)
    plan = cached(target.cache_key, key, lambda: plan_elimination(
        structure.num_variables, k, edges, max_table_size=max_table_size, owner=owner,
        names=variable_name(domains)))
    return Elimination(target, plan, bool(structure.multilinear))


def choose(m: UGM, owner: str, method: str, sizes: Callable[[], tuple[float, float, int]],
           check_enumeration: Callable[[], None],
           max_table_size: int | None = MAX_TABLE_SIZE, target: Target | None = None, *,
           params: dict | None = None, inputs: dict | None = None) -> Elimination | None:
    """The rule of ``method``: "enumerate" → None (enumerate; ``check_enumeration``
    raises if it cannot); "eliminate" → :func:`prepare`; "auto" → enumeration for a
    model with real sites, or whose enumeration has at most
    :data:`ENUMERATION_PREFERRED` configurations, unless, counting every example, it
    has more and elimination runs as one scan (a chain, strip or tree) with fewer
    table entries than the enumeration's configurations times variables; else
    elimination when its tables fit ``max_table_size``, else enumeration; a model fit
    for neither is an error naming both limits. ``sizes()``: one enumeration's
    configurations, all of a call's, and the examples an elimination would contract
    (:func:`~numpyro_ugm.evaluate._engine.enumeration_sizes`).

    With ``params`` (and one example's ``inputs``), an elimination returned is checked
    (:func:`check_decomposes`): a potential that does not decompose is an error, or,
    under "auto" with a small enumeration, enumerated instead."""
    if method not in METHODS:
        raise ValueError(f"{owner}: method must be one of {METHODS}, got {method!r}")
    t = m.target() if target is None else target
    if method == "eliminate":
        return _checked(prepare(m, owner, max_table_size, t), m, params, owner, inputs)
    one, every, examples = (None,) * 3 if method == "enumerate" or t.real_sites else sizes()
    if one is None or every <= ENUMERATION_PREFERRED:
        check_enumeration()
        return None
    small = one <= ENUMERATION_PREFERRED
    try:
        el = prepare(m, owner, max_table_size, t)
        scan = el.plan.band is not None or el.plan.forest is not None
        if small and (not scan or
                      examples * table_work(el.plan) >= every * el.plan.num_variables):
            el = None  # the small enumeration beats this elimination, example by example
        elif small:
            el = _checked(el, m, params, owner, inputs)
    except ValueError as error:
        try:
            check_enumeration()
        except ValueError as other:
            raise ValueError(f"{error}; and {other}") from None
        return None
    if el is None:
        check_enumeration()
        return None
    return el if small else _checked(el, m, params, owner, inputs)


def table_work(plan: EliminationPlan) -> int:
    """The table entries one run of ``plan`` fills: n K^(b+1) on a band of width b,
    n K² on a forest, the sum of its clique tables otherwise."""
    n, k = plan.num_variables, plan.num_values
    if plan.band is not None:
        return n * k ** (plan.band.width + 1)
    if plan.forest is not None:
        return n * k ** 2
    return sum(k ** (1 + len(step.scope)) for step in plan.steps)


def _checked(el, m, params, owner, inputs):
    """``el`` once :func:`check_decomposes` passes at ``params`` (unchecked without)."""
    if params is not None:
        check_decomposes(el, m, params, owner, inputs)
    return el


def _fn(el, params, inputs):
    target = el.target if inputs is None else el.target.bind(**inputs)
    return target.logdensity_fn(params)


def tables(el: Elimination, params: dict, inputs: dict | None = None):
    """The model's :class:`~numpyro_ugm.structure.tables.Tables` at ``params`` (under one
    example's ``inputs``)."""
    return tabulate(_fn(el, params, inputs), el.domains, el.plan.edges, el.multilinear,
                    el.plan.num_values)


def _clamped(unary, labels, observed):
    """``unary`` with every observed variable (mask ``observed``) held at ``labels``."""
    k = jnp.arange(unary.shape[-1])
    keep = ~observed[:, None] | (k[None] == labels[:, None])
    return jnp.where(keep, unary, -jnp.inf)


def log_z(el: Elimination, params: dict, inputs: dict | None = None) -> jax.Array:
    """log Z(θ) (under one example's inputs)."""
    t = tables(el, params, inputs)
    return t.constant + contraction.log_partition(el.plan, t.unary, t.pairwise)


def log_probs(el: Elimination, params: dict, labels: jax.Array, observed: np.ndarray,
              inputs: dict | None = None) -> tuple[jax.Array, jax.Array]:
    """log p(x_obs) per example (labels (N, n), the observed variables' mask (n,); the
    other variables summed out) and log Z (per example with ``inputs``, a leading axis)."""
    every = bool(np.all(observed))
    observed = np.asarray(observed)

    def one(t, x):
        lz = contraction.log_partition(el.plan, t.unary, t.pairwise)
        if every:  # the data term through the same tables: one backward pass through them
            return contraction.score(el.plan, t.unary, t.pairwise, x) - lz, t.constant + lz
        clamped = contraction.log_partition(el.plan, _clamped(t.unary, x, observed),
                                            t.pairwise)
        return clamped - lz, t.constant + lz

    if inputs is None:
        t = tables(el, params)
        values, lz = jax.vmap(lambda x: one(t, x))(labels)
        return values, lz[0]
    return jax.vmap(lambda x, u: one(tables(el, params, u), x))(labels, inputs)


def _site_arrays(el, flat):
    """Per-variable rows ``(n, ...)`` as a dict of site arrays ``(*site_shape, ...)``."""
    out, start = {}, 0
    for s, d in el.domains.items():
        part = flat[..., start:start + d.num_variables, :d.num_values]
        out[s] = part.reshape(part.shape[:-2] + tuple(d.batch_shape) + (d.num_values,))
        start += d.num_variables
    return out


def marginals(el: Elimination, params: dict, inputs: dict | None = None):
    """(log Z, site marginals dict of ``(*site_shape, K)``, pair marginals (E, K, K) in the
    order of ``el.plan.edges``) under one example's inputs."""
    t = tables(el, params, inputs)
    value, mu, mu2 = contraction.marginals(el.plan, t.unary, t.pairwise)
    return t.constant + value, _site_arrays(el, mu), mu2


def score(el: Elimination, t, labels: jax.Array) -> jax.Array:
    """f at flat ``labels`` (n,) from the tables ``t``: constant + Σ unary + Σ pairwise."""
    return t.constant + contraction.score(el.plan, t.unary, t.pairwise, labels)


def map_labels(el: Elimination, params: dict, inputs: dict | None = None):
    """(max_x f(x), the flat labels attaining it) under one example's inputs."""
    t = tables(el, params, inputs)
    best, labels = contraction.map_labels(el.plan, t.unary, t.pairwise)
    return t.constant + best, labels


def sample_labels(el: Elimination, params: dict, rng_key, num_samples: int,
                  inputs: dict | None = None):
    """``num_samples`` exact draws, flat labels (num_samples, n)."""
    t = tables(el, params, inputs)
    return contraction.sample_labels(el.plan, t.unary, t.pairwise, rng_key, num_samples)


def to_labels(el: Elimination, state: dict) -> tuple[jax.Array, np.ndarray]:
    """Flat labels (N, n) of model-representation data with a leading example axis (sites
    absent: latent, label 0) and the mask of the observed variables (n,)."""
    parts, mask = [], []
    num = next(iter(state.values())).shape[0]
    for s, d in el.domains.items():
        if s in state:
            parts.append(state_to_labels({s: d}, {s: state[s]}))
        else:
            parts.append(jnp.zeros((num, d.num_variables), jnp.int32))
        mask.append(np.full(d.num_variables, s in state))
    return jnp.concatenate(parts, -1), np.concatenate(mask)


def to_state(el: Elimination, labels: jax.Array) -> dict:
    """Data-representation sites of flat labels (..., n)."""
    state = labels_to_state(el.domains, labels, jnp.result_type(float))
    return {s: d.from_model(state[s]) for s, d in el.domains.items()}


def check_decomposes(el: Elimination, m: UGM, params: dict, owner: str,
                     inputs: dict | None = None, num_states: int = 8) -> None:
    """Raise ``ValueError`` (naming ``owner`` and the sites) if the tables of the
    potential do not reproduce it at random states, at ``params`` and at random
    parameters (under ``inputs``, one example's, when given)."""
    fn = cached(el.target.cache_key, ("elimination.decomposition",
                                      None if inputs is None else tuple(sorted(inputs))),
                lambda: jax.jit(lambda p, x, u: decomposition_error(
                    _fn(el, p, u), tables(el, p, u), el.domains, el.plan.edges, x)))

    def worst(p):
        err, scale = (np.asarray(v) for v in fn(p, states, inputs))
        return float(np.max(err / (1.0 + scale)))

    rng = np.random.default_rng(0)
    k = num_values_of(el.domains)
    states = jnp.asarray((rng.random((num_states, len(k))) * k).astype(np.int32))
    probe = probe_params(m, jax.random.PRNGKey(1), rng)
    for p in (params, probe):
        if any(isinstance(v, jax.core.Tracer) for v in jax.tree.leaves(p)):
            continue
        error = worst(p)
        if not error <= DECOMPOSITION_TOLERANCE:
            raise ValueError(
                f"{owner}: the log-potential over sites {list(el.domains)} is not a sum of "
                f"one- and two-variable terms over its interaction graph (at a random "
                f"state its tables miss it by {error:.2e} of its size): it has terms over "
                f"three or more variables at once, which exact elimination does not "
                f"handle; use method='enumerate' for a small model, or a sampler and AIS")


# --- compiled entry points of ugm.exact ----------------------------------------------------


def _compiled(el: Elimination, name: str, build: Callable) -> Callable:
    """``jax.jit(build())`` kept in the compile cache under the target's key."""
    return cached(el.target.cache_key, ("elimination", name), lambda: jax.jit(build()))


def run_log_z(el: Elimination, params: dict) -> jax.Array:
    """log Z(θ), compiled once per model."""
    return _compiled(el, "log_z", lambda: lambda p: log_z(el, p))(params)


def run_log_probs(el: Elimination, params: dict, data: dict, inputs: dict | None = None):
    """Per-example log p(x_obs) of model-representation ``data`` (leading example axis)
    and log Z (per example with ``inputs``), compiled once per model and observed sites."""
    labels, observed = to_labels(el, data)
    key = ("log_probs", tuple(sorted(data)), None if inputs is None else tuple(sorted(inputs)))
    fn = cached(el.target.cache_key, ("elimination",) + key, lambda: jax.jit(
        lambda p, x, u: log_probs(el, p, x, observed, u)))
    return fn(params, labels, inputs)


def run_marginals(el: Elimination, params: dict) -> dict:
    """Site marginals (dict of ``(*site_shape, K)``), compiled once per model."""
    return _compiled(el, "marginals", lambda: lambda p: marginals(el, p)[1])(params)
