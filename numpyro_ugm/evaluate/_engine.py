"""The enumeration engine: plans and chunked sums over the configurations of a target.

Every sum here runs over the configurations of a :class:`~numpyro_ugm.model.target.Target`'s
state sites without a Python loop over them: an integer index is decoded into mixed-radix
labels (one digit per enumerated variable), the labels into the model representation, and
the log-density is evaluated on a chunk of ``chunk_size`` configurations at a time inside
``lax.map`` / ``lax.scan``, so memory stays bounded by one chunk however many
configurations there are. Each chunk is rematerialized (``jax.checkpoint``) on the
backward pass, so gradients are bounded in memory too.

A :class:`Plan` says which variables are enumerated and which are summed out in closed
form (see :mod:`numpyro_ugm.evaluate._enumeration` for when); real sites are integrated
out in closed form given each configuration of the finite ones (Gaussian integrals,
:mod:`~numpyro_ugm.evaluate._gaussian`), so only finite variables are enumerated. Plans
and compiled programs are kept in :mod:`numpyro_ugm.runtime.compile_cache` under the target's
``cache_key``. This module is the engine of :mod:`~numpyro_ugm.evaluate._enumeration` and
:mod:`~numpyro_ugm.evaluate.exact`; its functions take a target and check nothing that
their callers check.
"""

import math
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..runtime.checks import check_count
from ..runtime.compile_cache import cached
from ..conditionals import scatter, sum_out
from ..model.target import Target
from ._gaussian import integrated_size, log_integral, not_gaussian_error, quadratic_terms
from ._size import check_work, work

__all__ = ["Plan", "DEFAULT_CHUNK_SIZE", "MIN_SUM_OUT_REDUCTION", "MAX_HESSIAN_FLOATS",
           "make_plan", "check_size", "check_enumeration", "enumeration_sizes",
           "sum_out_mode", "log_sum", "weighted_mean", "log_z", "log_prob_observed",
           "log_prob_per_input", "cached_jit",
           "fill", "configurations", "chunks", "chunk_states", "config_log_weight",
           "config_budget", "first_divergent", "index_dtype", "float_dtype"]

#: Default number of configurations evaluated together.
DEFAULT_CHUNK_SIZE = 2 ** 14
#: With ``sum_out="auto"``, sum out in closed form only when that divides the number of
#: enumerated configurations by at least this factor: each configuration then costs a
#: gradient of f as well as f (and its parameter gradient a second-order derivative), so
#: halving the enumeration (one spin of a fully connected model) does not pay.
MIN_SUM_OUT_REDUCTION = 4
#: With real sites integrated out, configurations evaluated together are capped so that
#: their Hessians (n × n each) hold at most this many floats.
MAX_HESSIAN_FLOATS = 2 ** 22


# --- planning: which variables to enumerate, which to sum out --------------------------


class Plan(NamedTuple):
    """Static description of one enumeration.

    Attributes
    ----------
    segments : tuple of (site, idx, count, K)
        Enumerated variables, site by site: flat indices ``idx`` (``None``: the whole
        site), their number and the number of values of each.
    summed : dict of str -> ndarray or None
        Variables summed out in closed form (flat indices per site; ``None``: all).
    radices : ndarray of int
        Number of values of each enumerated variable, in order.
    strides : ndarray of int
        Mixed-radix place value of each enumerated variable.
    num_configurations : int
        Number of enumerated configurations (1 when nothing is enumerated).
    integrated : tuple of str
        Real sites integrated out in closed form (Gaussian integrals,
        :mod:`~numpyro_ugm.evaluate._gaussian`), given each configuration.
    num_integrated : int
        Their number of variables n (each configuration costs an n × n Hessian).
    """

    segments: tuple
    summed: dict
    radices: np.ndarray
    strides: np.ndarray
    num_configurations: int
    integrated: tuple = ()
    num_integrated: int = 0


def index_dtype():
    """The integer dtype of configuration indices (int64 with x64 enabled)."""
    return jnp.result_type(int)


def float_dtype():
    """The default floating dtype (float64 with x64 enabled)."""
    return jnp.result_type(float)


def _independent_set(target, sites, max_colors=8, avoid=()):
    """Largest-weight set of mutually non-interacting variables of ``sites`` found by
    extending color classes greedily; weight of a variable = log(number of values).
    Variables that interact with a variable of the ``avoid`` sites (real sites integrated
    out) are left out.

    Returns dict site -> sorted local flat indices (possibly empty)."""
    st = target.structure
    if not st.multilinear or (avoid and st.edges is None):
        return {}
    domains = target.state_sites
    if st.edges is None:  # a declared coloring: its largest color class among sites
        colors = np.concatenate([st.colors[st.global_indices(s)] for s in sites])
        largest = np.bincount(colors).argmax() if colors.size else -1
        return {s: np.nonzero(st.colors[st.global_indices(s)] == largest)[0]
                for s in sites}
    num_variables = st.num_variables
    eligible = np.zeros(num_variables, bool)
    weight = np.zeros(num_variables)
    for s in sites:
        g = st.global_indices(s)
        eligible[g] = True
        weight[g] = math.log(domains[s].num_values)
    edges = np.asarray(st.edges, np.int64).reshape(-1, 2)
    if avoid:
        near = np.zeros(num_variables, bool)
        near[np.concatenate([st.global_indices(s) for s in avoid])] = True
        eligible[edges[near[edges[:, 0]], 1]] = False
        eligible[edges[near[edges[:, 1]], 0]] = False
    if not eligible.any():
        return {}
    both = np.concatenate([edges, edges[:, ::-1]])
    both = both[np.argsort(both[:, 0], kind="stable")]
    starts = np.searchsorted(both[:, 0], np.arange(num_variables + 1))
    targets = both[:, 1]
    colors = np.asarray(st.colors)
    candidates = np.unique(colors[eligible])
    sizes = np.array([weight[eligible & (colors == c)].sum() for c in candidates])
    candidates = candidates[np.argsort(-sizes, kind="stable")][:max_colors]
    order = np.nonzero(eligible)[0]
    order = order[np.argsort(-weight[order], kind="stable")]
    best, best_weight = None, -1.0
    for c in candidates:
        chosen = eligible & (colors == c)
        blocked = np.zeros(num_variables, bool)
        blocked[targets[chosen[both[:, 0]]]] = True
        for v in order:
            if not chosen[v] and not blocked[v]:
                chosen[v] = True
                blocked[targets[starts[v]:starts[v + 1]]] = True
        total = weight[chosen].sum()
        if total > best_weight:
            best, best_weight = chosen, total
    return {s: np.nonzero(best[st.global_indices(s)])[0] for s in sites}


def sum_out_mode(sum_out):
    """``"auto"``, True or False from the ``sum_out`` argument of the public functions."""
    if isinstance(sum_out, str):
        if sum_out != "auto":
            raise ValueError(f"sum_out must be True, False or 'auto', got {sum_out!r}")
        return "auto"
    return bool(sum_out)


def make_plan(target: Target, sites, sum_out: bool | str = "auto") -> Plan:
    """Plan the enumeration of the variables of ``sites`` (cached per target)."""
    sites = tuple(sites)
    mode = sum_out_mode(sum_out)
    return cached(target.cache_key, ("enumeration.plan", sites, mode),
                  lambda: _build_plan(target, sites, mode))


def _build_plan(target, sites, mode):
    domains = target.state_sites
    integrated = tuple(s for s in sites if not domains[s].finite)
    nonquadratic = [s for s in integrated if s in target.structure.moved]
    if nonquadratic:
        raise not_gaussian_error("exact evaluation", nonquadratic)
    sites = tuple(s for s in sites if domains[s].finite)
    chosen = (_independent_set(target, sites, avoid=integrated) if (mode and sites)
              else {})
    if mode == "auto":
        saved = sum(len(v) * math.log(domains[s].num_values) for s, v in chosen.items())
        if saved < math.log(MIN_SUM_OUT_REDUCTION) - 1e-9:
            chosen = {}
    summed, segments, radices = {}, [], []
    for s in sites:
        d = domains[s]
        n = d.num_variables
        sel = np.asarray(chosen.get(s, np.zeros(0, np.int64)), np.int64)
        if sel.size:
            summed[s] = None if sel.size == n else sel.astype(np.int32)
        rest = np.setdiff1d(np.arange(n), sel).astype(np.int32)
        if rest.size:
            segments.append((s, None if rest.size == n else rest, int(rest.size),
                             d.num_values))
            radices += [d.num_values] * int(rest.size)
    radices = np.asarray(radices, np.int64)
    strides = np.concatenate([[1], np.cumprod(radices[:-1])]).astype(np.int64) \
        if radices.size else np.zeros(0, np.int64)
    num = math.prod(int(r) for r in radices)
    return Plan(tuple(segments), summed, radices, strides, num, integrated,
                integrated_size(domains, integrated))


def check_size(plan: Plan, chunk_size: int, what: str,
               max_configurations: int | None = None, repeats: int = 1) -> None:
    """Raise when ``plan`` has more configurations than an index can count (or when
    ``chunk_size`` is not a positive integer), naming ``what``; with
    ``max_configurations`` (the host-side check of a public function, on every call),
    also when its work (``repeats`` enumerations: one per example) exceeds it, and warn
    when that is large (:func:`~numpyro_ugm.evaluate._size.check_work`)."""
    limit = int(jnp.iinfo(index_dtype()).max)
    chunk = min(check_count(what, "chunk_size", chunk_size), plan.num_configurations)
    if plan.num_configurations + chunk > limit:
        num_enum = int(plan.radices.size)
        summed = (f" after summing out {list(plan.summed)} in closed form"
                  if plan.summed else "")
        raise ValueError(
            f"{what}: exact enumeration would need {plan.num_configurations:.3e} "
            f"configurations of {num_enum} variables{summed}, more than this version can "
            f"index ({limit}); use annealed importance sampling for models this large")
    if max_configurations is not None:
        check_work(plan, what, max_configurations, repeats)


def enumeration_sizes(target: Target, num_examples: int | None = None,
                      per_example: bool = False,
                      sum_out: bool | str = "auto") -> tuple[float, float, int]:
    """The :func:`~numpyro_ugm.evaluate._size.work` of one enumeration of ``target`` (its
    log Z) and of every enumeration an exact call on it runs (as
    :func:`check_enumeration` counts them: its log Z, once or once per example with
    ``per_example``, and with ``num_examples`` its latent sites' per example), and how
    many examples an elimination would contract one by one instead (1 when the call
    needs one log Z)."""
    one = work(make_plan(target, tuple(target.state_sites), sum_out))
    examples = num_examples if per_example else 1
    every = one * examples
    if num_examples is not None and target.latent_sites:
        every += work(make_plan(target, target.latent_sites), num_examples)
        examples = num_examples
    return one, every, examples


def check_enumeration(target: Target, chunk_size: int, what: str, max_configurations: int,
                      num_examples: int | None = None, per_example: bool = False,
                      sum_out: bool | str = "auto") -> None:
    """:func:`check_size` of every enumeration an exact call on ``target`` runs: its log Z
    (once, or once per example with ``per_example``: a CRF's inputs) and, with
    ``num_examples``, its latent sites' per example."""
    repeats = num_examples if per_example else 1
    check_size(make_plan(target, tuple(target.state_sites), sum_out), chunk_size, what,
               max_configurations, repeats)
    if num_examples is not None and target.latent_sites:
        check_size(make_plan(target, target.latent_sites), chunk_size,
                   f"{what} (its latent sites)", max_configurations, num_examples)


# --- the sums ----------------------------------------------------------------------------


def fill(plan: Plan, domains, base: dict, labels) -> dict:
    """Write one configuration's labels (num_enumerated,) into the base state."""
    state = dict(base)
    pos = 0
    for s, idx, count, _ in plan.segments:
        d = domains[s]
        values = d.label_to_model(labels[pos:pos + count], base[s].dtype)
        state[s] = scatter(base[s], d, idx, values)
        pos += count
    return state


def _summed_fn(target, params, plan):
    """Function state -> log Σ_{summed variables} exp f (just f when nothing is summed)."""
    f = target.logdensity_fn(params)
    if plan.summed:
        domains = target.state_sites
        return lambda x: sum_out(f, x, domains, plan.summed)
    return f


def config_log_weight(target: Target, params: dict, plan: Plan) -> Callable:
    """Function state -> log ∫ Σ_{summed variables} exp f d(integrated real sites) (just f
    when nothing is summed or integrated)."""
    g = _summed_fn(target, params, plan)
    if plan.integrated:
        return lambda x: log_integral(g, x, target.state_sites, plan.integrated)
    return g


def config_budget(plan: Plan, chunk_size: int) -> int:
    """The most configurations evaluated together: ``chunk_size``, capped when real sites
    are integrated out (:data:`MAX_HESSIAN_FLOATS`)."""
    if plan.integrated:
        return max(1, min(int(chunk_size), MAX_HESSIAN_FLOATS // plan.num_integrated ** 2))
    return int(chunk_size)


def first_divergent(target: Target, params: dict, plan: Plan, chunk_size: int):
    """The first configuration (index; −1: none) at which the integral over the real
    sites of ``plan`` does not exist, with the smallest eigenvalue of the precision there
    and whether the potential is quadratic there (a diagnosis, run when a sum is not
    finite; compiled, chunk by chunk)."""
    domains, base = target.state_sites, target.reference_state()
    g = _summed_fn(target, params, plan)
    itype = index_dtype()

    def check(state):
        _, _, precision, quadratic = quadratic_terms(g, state, domains, plan.integrated)
        smallest = jnp.linalg.eigvalsh(precision)[0]
        return smallest, quadratic, ~(smallest > 0) | ~quadratic

    if not plan.segments:
        smallest, quadratic, bad = check(base)
        return jnp.where(bad, 0, -1).astype(itype), smallest, quadratic
    chunk, num_chunks = chunks(plan, chunk_size)

    def one_chunk(carry, c):
        states, valid = chunk_states(plan, domains, base, c, chunk)
        smallest, quadratic, bad = jax.vmap(check)(states)
        bad = bad & valid
        i = jnp.argmax(bad)
        found = (carry[0] < 0) & jnp.any(bad)
        here = (c.astype(itype) * chunk + i, smallest[i], quadratic[i])
        return jax.tree.map(lambda new, old: jnp.where(found, new, old), here, carry), None

    init = (-jnp.ones((), itype), jnp.zeros((), float_dtype()), jnp.ones((), bool))
    return jax.lax.scan(one_chunk, init, jnp.arange(num_chunks, dtype=itype))[0]


def chunks(plan: Plan, chunk_size: int) -> tuple[int, int]:
    """The configurations per chunk and the number of chunks."""
    n = plan.num_configurations
    chunk = max(1, min(config_budget(plan, chunk_size), n))
    return chunk, -(-n // chunk)


def configurations(plan: Plan, domains, base: dict, index) -> dict:
    """States (batched) of the configurations ``index`` (flattened): each decoded into
    mixed-radix labels and written into the base state; with nothing enumerated there is
    one configuration, of no labels."""
    itype = index_dtype()
    labels = (jnp.reshape(index, (-1, 1)).astype(itype) // jnp.asarray(plan.strides, itype)
              ) % jnp.asarray(plan.radices, itype)
    return jax.vmap(lambda row: fill(plan, domains, base, row))(labels)


def chunk_states(plan: Plan, domains, base: dict, c, chunk: int):
    """States (batched, leading axis ``chunk``) of chunk ``c`` and their validity mask."""
    itype = index_dtype()
    index = c.astype(itype) * chunk + jnp.arange(chunk, dtype=itype)
    return configurations(plan, domains, base, index), index < plan.num_configurations


def log_sum(target: Target, params: dict, plan: Plan, base: dict,
            chunk_size: int) -> jax.Array:
    """log Σ over the planned configurations (enumerated × summed) of exp f, the other
    sites held at their values in ``base``."""
    log_weight = config_log_weight(target, params, plan)
    if not plan.segments:
        return log_weight(base)
    domains = target.state_sites
    chunk, num_chunks = chunks(plan, chunk_size)

    def one_chunk(c):
        states, valid = chunk_states(plan, domains, base, c, chunk)
        values = jnp.where(valid, jax.vmap(log_weight)(states), -jnp.inf)
        return jax.nn.logsumexp(values)

    if num_chunks == 1:
        return one_chunk(jnp.zeros((), index_dtype()))
    per_chunk = jax.lax.map(jax.checkpoint(one_chunk),
                            jnp.arange(num_chunks, dtype=index_dtype()))
    return jax.nn.logsumexp(per_chunk)


def weighted_mean(target: Target, params: dict, plan: Plan, base: dict,
                  g_fn: Callable[[dict], Any], chunk_size: int) -> Any:
    """Σ_c w_c g(x_c) / Σ_c w_c over the enumerated configurations, with log-weights
    log Σ_summed exp f; streamed over chunks with a running maximum."""
    log_weight = config_log_weight(target, params, plan)
    domains = target.state_sites
    dtype = float_dtype()
    if not plan.segments:
        return jax.tree.map(lambda v: jnp.asarray(v, jnp.result_type(v, dtype)), g_fn(base))
    chunk, num_chunks = chunks(plan, chunk_size)
    shapes = jax.eval_shape(
        g_fn, fill(plan, domains, base, jnp.zeros(plan.radices.size, index_dtype())))
    acc0 = jax.tree.map(lambda s: jnp.zeros(s.shape, jnp.result_type(s.dtype, dtype)), shapes)

    def one_chunk(carry, c):
        top, total, acc = carry
        states, valid = chunk_states(plan, domains, base, c, chunk)
        logw = jnp.where(valid, jax.vmap(log_weight)(states), -jnp.inf)
        values = jax.vmap(g_fn)(states)
        new_top = jnp.maximum(top, jnp.max(logw))
        safe_top = jnp.where(jnp.isfinite(new_top), new_top, 0.0)
        scale = jnp.where(jnp.isfinite(top), jnp.exp(top - safe_top), 0.0)
        w = jnp.exp(logw - safe_top)

        def update(a, v):
            v = jnp.where(valid.reshape((-1,) + (1,) * (v.ndim - 1)), v, 0).astype(a.dtype)
            return a * scale + jnp.tensordot(w.astype(a.dtype), v, axes=1)

        return (new_top, total * scale + jnp.sum(w), jax.tree.map(update, acc, values)), None

    carry0 = (jnp.asarray(-jnp.inf, dtype), jnp.zeros((), dtype), acc0)
    body = jax.checkpoint(one_chunk)
    (_, total, acc), _ = jax.lax.scan(body, carry0, jnp.arange(num_chunks,
                                                                dtype=index_dtype()))
    return jax.tree.map(lambda a: a / total.astype(a.dtype), acc)


def log_z(target: Target, params: dict, chunk_size: int,
          sum_out: bool | str = "auto") -> jax.Array:
    """log Z(θ) of ``target``: every state site enumerated or summed out."""
    plan = make_plan(target, tuple(target.state_sites), sum_out)
    check_size(plan, chunk_size, "log_partition")
    return log_sum(target, params, plan, target.reference_state(), chunk_size)


def log_prob_observed(target: Target, params: dict, x: dict, chunk_size: int) -> jax.Array:
    """Per example log Σ_latent exp f(x_n, latent) for model-representation data ``x``
    (leading example axis; ``target.latent_sites`` are summed out)."""
    latent = target.latent_sites
    num_examples = int(jax.tree.leaves(x)[0].shape[0])
    if not latent:
        per = target.logdensity_fn(params)
        batch = chunk_size
    else:
        plan = make_plan(target, latent)
        check_size(plan, chunk_size, "log_likelihood (latent sites)")
        domains = target.state_sites

        def per(xn):
            base = {**xn, **{s: domains[s].reference(domains[s].batch_shape,
                                                     float_dtype()) for s in latent}}
            return log_sum(target, params, plan, base, chunk_size)

        batch = max(1, config_budget(plan, chunk_size) // chunks(plan, chunk_size)[0])
    return jax.lax.map(per, x, batch_size=max(1, min(int(batch), num_examples)))


def log_prob_per_input(target: Target, params: dict, x: dict, inputs: dict, chunk_size: int,
                       num: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """Per example log p(x_n; θ, inputs_n) and log Z(θ, inputs_n): one enumeration per
    example (its inputs change the potential), examples one after another (memory of one
    enumeration); ``target``'s structure holds for every example's inputs. With ``num``
    (which may be traced) only the first ``num`` rows are computed: the rows after them
    (padding) are skipped and hold zeros."""
    def one(example):
        xn, un = example
        bound = target.bind(**un)
        lz = log_z(bound, params, chunk_size)
        lp = log_prob_observed(bound, params, jax.tree.map(lambda v: v[None], xn), chunk_size)
        return lp[0] - lz, lz

    if num is None:
        return jax.lax.map(one, (x, inputs))
    shapes = jax.eval_shape(one, jax.tree.map(lambda v: v[0], (x, inputs)))
    zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

    def step(i, example):
        return i + 1, jax.lax.cond(i < num, one, lambda _: zeros, example)

    return jax.lax.scan(step, jnp.zeros((), jnp.asarray(num).dtype), (x, inputs))[1]


def cached_jit(target: Target, key: tuple, build: Callable[[], Callable]) -> Callable:
    """``jax.jit(build())``, kept in the compile cache under the target's key."""
    return cached(target.cache_key, ("enumeration.jit",) + key, lambda: jax.jit(build()))
