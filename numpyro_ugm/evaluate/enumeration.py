"""The enumeration engine: exact sums over the configurations of a small model.

Every function here sums over the configurations of the state sites without a Python loop
over them: an integer index is decoded into mixed-radix labels (one digit per enumerated
variable), the labels into the model representation, and the log-potential is evaluated on
a chunk of ``chunk_size`` configurations at a time inside ``lax.map`` / ``lax.scan``, so
memory stays bounded by one chunk however many configurations there are (the 2**20
configurations of 20 spins take a few megabytes). Each chunk is rematerialized
(``jax.checkpoint``) on the backward pass, so gradients are bounded in memory too.

**Summing out in closed form.** When the log-potential f is multilinear in each variable
(see :mod:`numpyro_ugm.structure`), a set of variables that do not interact with each other
can be summed out exactly: f is then affine in them jointly and the sum factorizes
(:func:`numpyro_ugm.conditionals.sum_out`). The planner takes the largest such set it finds —
a color class of the model's coloring, greedily extended to a maximal independent set —
and enumerates only the remaining variables. For an RBM with 784 visible and 10 hidden
units that means 2**10 configurations of the hidden units, with the visibles summed out.
By default (``sum_out="auto"``) this is done only when it divides the enumeration by at
least ``MIN_SUM_OUT_REDUCTION``: a configuration with a closed-form sum costs a gradient
of f besides f, so summing out one spin of a fully connected model does not pay. A model
that is not multilinear is enumerated in full.

Public functions (also reached as ``ugm.exact.*``, :mod:`numpyro_ugm.evaluate.exact`):
:func:`log_partition`, :func:`log_likelihood`, :func:`log_prob`, :func:`expectation`,
:func:`marginals` and :func:`num_enumerated` accept traced parameters (they can be used
under ``jax.jit``, ``jax.grad`` and ``jax.vmap`` over parameters); data are checked on the
host and must be concrete arrays. Every function that takes parameters checks them with
:meth:`UGM.check_params <numpyro_ugm.model.UGM.check_params>` (names, with a suggestion for
a misspelled one; no site falls back to its ``numpyro.param`` init value; shapes; a floating
dtype; finite values, when concrete), as the samplers do. Plans and compiled functions are
kept in the model's compile cache (:meth:`UGM.cached <numpyro_ugm.model.UGM.cached>`).
"""

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_count, check_inputs
from ..conditionals import conditional_logits, scatter, site_variables, sum_out
from ..model import UGM
from ..validation import validate_data
from ..compile_cache import cached
from ..diagnose import non_finite_error

__all__ = ["log_partition", "log_likelihood", "log_prob", "expectation", "marginals",
           "num_enumerated", "DEFAULT_CHUNK_SIZE", "MIN_SUM_OUT_REDUCTION"]

#: Default number of configurations evaluated together.
DEFAULT_CHUNK_SIZE = 2 ** 14
#: With ``sum_out="auto"``, sum out in closed form only when that divides the number of
#: enumerated configurations by at least this factor: each configuration then costs a
#: gradient of f as well as f (and its parameter gradient a second-order derivative), so
#: halving the enumeration (one spin of a fully connected model) does not pay.
MIN_SUM_OUT_REDUCTION = 4


# --- planning: which variables to enumerate, which to sum out --------------------------


class _Plan(NamedTuple):
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
    """

    segments: tuple
    summed: dict
    radices: np.ndarray
    strides: np.ndarray
    num_configurations: int


def _index_dtype():
    return jnp.result_type(int)


def _float_dtype():
    return jnp.result_type(float)


def _independent_set(m, sites, max_colors=8):
    """Largest-weight set of mutually non-interacting variables of ``sites`` found by
    extending color classes greedily; weight of a variable = log(number of values).

    Returns dict site -> sorted local flat indices (possibly empty)."""
    st = m.structure
    if not st.multilinear:
        return {}
    domains = m.state_sites
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
    if not eligible.any():
        return {}
    edges = np.asarray(st.edges, np.int64).reshape(-1, 2)
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


def _sum_out_mode(sum_out):
    if isinstance(sum_out, str):
        if sum_out != "auto":
            raise ValueError(f"sum_out must be True, False or 'auto', got {sum_out!r}")
        return "auto"
    return bool(sum_out)


def _make_plan(m, sites, sum_out="auto"):
    """Plan the enumeration of the variables of ``sites`` (cached on the model)."""
    sites = tuple(sites)
    mode = _sum_out_mode(sum_out)
    return cached(m.cache_key, ("enumeration.plan", sites, mode), lambda: _build_plan(m, sites, mode))


def _build_plan(m, sites, mode):
    domains = m.state_sites
    chosen = _independent_set(m, sites) if (mode and sites) else {}
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
    return _Plan(tuple(segments), summed, radices, strides, num)


def _check_size(plan, chunk_size, what):
    limit = int(jnp.iinfo(_index_dtype()).max)
    chunk = min(check_count(what, "chunk_size", chunk_size), plan.num_configurations)
    if plan.num_configurations + chunk > limit:
        num_enum = int(plan.radices.size)
        summed = (f" after summing out {list(plan.summed)} in closed form"
                  if plan.summed else "")
        raise ValueError(
            f"{what}: exact enumeration would need {plan.num_configurations:.3e} "
            f"configurations of {num_enum} variables{summed}, more than this version can "
            f"index ({limit}); use annealed importance sampling for models this large")


def num_enumerated(m: UGM, *, sum_out: bool | str = "auto") -> tuple[int, dict]:
    """Number of configurations :func:`log_partition` enumerates for ``m``, and the
    variables it sums out in closed form.

    Parameters
    ----------
    m : UGM
    sum_out : {"auto", True, False}
        As in :func:`log_partition`.

    Returns
    -------
    num_configurations : int
    summed : dict of str -> ndarray or None
        Flat indices per site of the variables summed out (``None``: the whole site).
    """
    plan = _make_plan(m, tuple(m.state_sites), sum_out)
    return plan.num_configurations, dict(plan.summed)


# --- the enumeration engine -------------------------------------------------------------


def _fill(plan, domains, base, labels):
    """Write one configuration's labels (num_enumerated,) into the base state."""
    state = dict(base)
    pos = 0
    for s, idx, count, _ in plan.segments:
        d = domains[s]
        values = d.label_to_model(labels[pos:pos + count], base[s].dtype)
        state[s] = scatter(base[s], d, idx, values)
        pos += count
    return state


def _config_log_weight(m, params, plan):
    """Function state -> log Σ_{summed variables} exp f (just f when nothing is summed)."""
    f = m.logdensity_fn(params)
    if plan.summed:
        domains = m.state_sites
        return lambda x: sum_out(f, x, domains, plan.summed)
    return f


def _chunks(plan, chunk_size):
    n = plan.num_configurations
    chunk = max(1, min(int(chunk_size), n))
    return chunk, -(-n // chunk)


def _chunk_states(plan, domains, base, c, chunk):
    """States (batched, leading axis ``chunk``) of chunk ``c`` and their validity mask."""
    itype = _index_dtype()
    index = c.astype(itype) * chunk + jnp.arange(chunk, dtype=itype)
    strides = jnp.asarray(plan.strides, itype)
    radices = jnp.asarray(plan.radices, itype)
    labels = (index[:, None] // strides) % radices
    states = jax.vmap(lambda row: _fill(plan, domains, base, row))(labels)
    return states, index < plan.num_configurations


def _log_sum(m, params, plan, base, chunk_size):
    """log Σ over the planned configurations (enumerated × summed) of exp f, the other
    sites held at their values in ``base``."""
    log_weight = _config_log_weight(m, params, plan)
    if not plan.segments:
        return log_weight(base)
    domains = m.state_sites
    chunk, num_chunks = _chunks(plan, chunk_size)

    def one_chunk(c):
        states, valid = _chunk_states(plan, domains, base, c, chunk)
        values = jnp.where(valid, jax.vmap(log_weight)(states), -jnp.inf)
        return jax.nn.logsumexp(values)

    if num_chunks == 1:
        return one_chunk(jnp.zeros((), _index_dtype()))
    per_chunk = jax.lax.map(jax.checkpoint(one_chunk),
                            jnp.arange(num_chunks, dtype=_index_dtype()))
    return jax.nn.logsumexp(per_chunk)


def _weighted_mean(m, params, plan, base, g_fn, chunk_size):
    """Σ_c w_c g(x_c) / Σ_c w_c over the enumerated configurations, with log-weights
    log Σ_summed exp f; streamed over chunks with a running maximum."""
    log_weight = _config_log_weight(m, params, plan)
    domains = m.state_sites
    dtype = _float_dtype()
    if not plan.segments:
        return jax.tree.map(lambda v: jnp.asarray(v, jnp.result_type(v, dtype)), g_fn(base))
    chunk, num_chunks = _chunks(plan, chunk_size)
    shapes = jax.eval_shape(
        g_fn, _fill(plan, domains, base, jnp.zeros(plan.radices.size, _index_dtype())))
    acc0 = jax.tree.map(lambda s: jnp.zeros(s.shape, jnp.result_type(s.dtype, dtype)), shapes)

    def one_chunk(carry, c):
        top, total, acc = carry
        states, valid = _chunk_states(plan, domains, base, c, chunk)
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
                                                                dtype=_index_dtype()))
    return jax.tree.map(lambda a: a / total.astype(a.dtype), acc)


def _cached_jit(m, key, build):
    """A jitted function in the model's compile cache (shared with its observed copies)."""
    return cached(m.cache_key, ("enumeration.jit",) + key, lambda: jax.jit(build()))


# --- public API ---------------------------------------------------------------------------


def _finite(owner, value, params, allow_minus_inf=False):
    """``value`` (a pytree), after checking that it is finite when it is concrete (under
    a user's ``jit`` or ``grad`` it is traced, and returned unchecked); ``-inf`` passes
    with ``allow_minus_inf`` (a configuration of probability zero)."""
    leaves = jax.tree.leaves(value)
    if any(isinstance(v, jax.core.Tracer) for v in leaves):
        return value
    for v in map(np.asarray, leaves):
        bad = ~np.isfinite(v) & ~(allow_minus_inf & (v == -np.inf))
        if np.any(bad):
            first = np.ravel(v)[np.flatnonzero(bad)[0]]
            raise non_finite_error(owner, f"the result is {first}", params)
    return value


def _with_log_z(log_unnormalized, m, params, chunk_size):
    """``(log_unnormalized − log Z, log Z)``."""
    log_z = _log_partition(m, params, chunk_size)
    return log_unnormalized - log_z, log_z


def _checked_with_log_z(owner, result, params):
    """The log-probabilities of ``result = (values, log Z)``, after checking that log Z
    is finite and the values are finite or −inf (data of probability zero)."""
    values, log_z = result
    _finite(owner + " (its log Z)", log_z, params)
    return _finite(owner, values, params, allow_minus_inf=True)


def _log_partition(m, params, chunk_size, sum_out="auto"):
    plan = _make_plan(m, tuple(m.state_sites), sum_out)
    _check_size(plan, chunk_size, "log_partition")
    return _log_sum(m, params, plan, m.target().reference_state(), chunk_size)


def log_partition(m: UGM, params: dict, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                  sum_out: bool | str = "auto") -> jax.Array:
    """Exact log-partition function log Z(θ) = log Σ_x exp f(x; θ).

    Enumerates the configurations of the state sites chunk by chunk (memory bounded by
    one chunk), after summing out in closed form the largest set of mutually
    non-interacting variables it finds when the model is multilinear (see the module
    docstring). Differentiable in ``params``: ``jax.grad`` gives E_p[∇θ f], the negative
    phase of the log-likelihood gradient, exactly.

    Parameters
    ----------
    m : UGM
    params : dict
        Parameters (constrained space); may be traced.
    chunk_size : int
        Number of configurations evaluated together (need not divide their number).
    sum_out : {"auto", True, False}
        ``True``: sum out in closed form the largest set of non-interacting variables
        found (multilinear models); ``"auto"`` (default): do so only when it divides the
        enumeration by at least ``MIN_SUM_OUT_REDUCTION`` (4); ``False``: enumerate every
        variable.

    Returns
    -------
    scalar
        log Z, in the floating dtype of the model representation (float32 by default).

    Raises
    ------
    KeyError, ValueError, TypeError, FloatingPointError
        Parameters that are not the model's (see
        :meth:`UGM.check_params <numpyro_ugm.model.UGM.check_params>`).
    ValueError
        If the enumeration is too large to index.

    Examples
    --------
    >>> m = ugm.UGM(ugm.models.rbm, 784, 10)
    >>> exact.log_partition(m, m.init_params(jax.random.PRNGKey(0)))  # 2**10 terms
    """
    m.param_space.check(params)
    plan = _make_plan(m, tuple(m.state_sites), sum_out)
    _check_size(plan, chunk_size, "log_partition")
    fn = _cached_jit(m, ("log_partition", int(chunk_size), _sum_out_mode(sum_out)),
                     lambda: lambda p: _log_partition(m, p, chunk_size, sum_out))
    return _finite("log_partition", fn(params), params)


def _log_prob_observed(m, params, x, chunk_size):
    """Per example log Σ_latent exp f(x_n, latent) for model-representation data ``x``
    (``m.latent_sites`` are summed out)."""
    latent = m.latent_sites
    num_examples = int(jax.tree.leaves(x)[0].shape[0])
    if not latent:
        per = m.logdensity_fn(params)
        batch = chunk_size
    else:
        plan = _make_plan(m, latent)
        _check_size(plan, chunk_size, "log_likelihood (latent sites)")
        domains = m.state_sites

        def per(xn):
            base = {**xn, **{s: domains[s].reference(domains[s].batch_shape,
                                                     _float_dtype()) for s in latent}}
            return _log_sum(m, params, plan, base, chunk_size)

        batch = max(1, int(chunk_size) // max(1, min(int(chunk_size),
                                                      plan.num_configurations)))
    return jax.lax.map(per, x, batch_size=max(1, min(int(batch), num_examples)))


def _validated(m, params, data):
    """Check ``params`` and ``data``; the model observing the data's sites and the data
    in the model representation."""
    m.param_space.check(params)
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict of site name -> array, got "
                        f"{type(data).__name__}")
    mo = m.observe(data.keys())
    return mo, validate_data(m.state_sites, data)


def _log_prob_per_input(m, params, x, inputs, chunk_size):
    """Per example log p(x_n; θ, inputs_n) and log Z(θ, inputs_n): one enumeration per
    example (its inputs change the potential), examples one after another (memory of one
    enumeration); ``m`` holds for every example's inputs (:meth:`UGM.for_inputs`)."""
    def one(example):
        xn, un = example
        mb = m.bind(**un)
        log_z = _log_partition(mb, params, chunk_size)
        lp = _log_prob_observed(mb, params, jax.tree.map(lambda v: v[None], xn), chunk_size)
        return lp[0] - log_z, log_z

    return jax.lax.map(one, (x, inputs))


def _log_probs(owner, m, params, data, inputs, chunk_size):
    """Per-example log-probabilities of ``data`` (and log Z, or per example with
    ``inputs``), checked: the body of :func:`log_prob` and :func:`log_likelihood`."""
    mo, x = _validated(m, params, data)
    if inputs is None:
        fn = _cached_jit(mo, ("log_prob", mo.observed_sites, int(chunk_size)),
                         lambda: lambda p, xs: _with_log_z(
                             _log_prob_observed(mo, p, xs, chunk_size), m, p, chunk_size))
        return _checked_with_log_z(owner, fn(params, x), params)
    inputs, _ = check_inputs(inputs, m.kwargs, int(jax.tree.leaves(x)[0].shape[0]))
    mi = mo.for_inputs(inputs)
    fn = _cached_jit(mi, ("log_prob_inputs", mi.observed_sites, tuple(sorted(inputs)),
                          int(chunk_size)),
                     lambda: lambda p, xs, us: _log_prob_per_input(mi, p, xs, us, chunk_size))
    return _checked_with_log_z(owner, fn(params, x, inputs), params)


def log_prob(m: UGM, params: dict, data: dict, *, inputs: dict | None = None,
             chunk_size: int = DEFAULT_CHUNK_SIZE) -> jax.Array:
    """Per-example log p(x_n; θ), latent sites (state sites absent from ``data``)
    summed out.

    Parameters
    ----------
    m : UGM
    params : dict
        Parameters (constrained space); may be traced.
    data : dict of str -> array
        Observed sites in the data representation (±1, 0/1, integer labels), each with a
        leading example axis; checked with :meth:`UGM.validate_data`.
    inputs : dict of str -> array, optional
        A CRF's per-example inputs (model keyword arguments with a leading example axis,
        as in learning and :func:`~numpyro_ugm.predict`): log p(x_n; θ, inputs_n), each
        example with its own log Z.
    chunk_size : int

    Returns
    -------
    array (num_examples,)
    """
    return _log_probs("log_prob", m, params, data, inputs, chunk_size)


def log_likelihood(m: UGM, params: dict, data: dict, *, inputs: dict | None = None,
                   chunk_size: int = DEFAULT_CHUNK_SIZE) -> jax.Array:
    """Mean over examples of log p(x_n; θ), latent sites summed out.

    Latent sites (state sites absent from ``data``) are summed out in closed form when
    they do not interact with each other and the model is multilinear (an RBM's hidden
    units); otherwise they are enumerated for each example, still summing out in closed
    form any non-interacting subset.

    Parameters
    ----------
    m : UGM
    params : dict
        Parameters (constrained space); may be traced.
    data : dict of str -> array
        Observed sites in the data representation, leading example axis.
    inputs : dict of str -> array, optional
        A CRF's per-example inputs: the mean of log p(x_n; θ, inputs_n) (see
        :func:`log_prob`).
    chunk_size : int

    Returns
    -------
    scalar
    """
    if inputs is None:  # one jitted program, the mean inside it (no per-example output)
        mo, x = _validated(m, params, data)
        fn = _cached_jit(mo, ("log_likelihood", mo.observed_sites, int(chunk_size)),
                         lambda: lambda p, xs: _with_log_z(
                             jnp.mean(_log_prob_observed(mo, p, xs, chunk_size)), m, p,
                             chunk_size))
        return _checked_with_log_z("log_likelihood", fn(params, x), params)
    return jnp.mean(_log_probs("log_likelihood", m, params, data, inputs, chunk_size))


def expectation(m: UGM, params: dict, fn: Callable[[dict], Any], *,
                chunk_size: int = DEFAULT_CHUNK_SIZE) -> Any:
    """Exact expectation E_p[fn(x)] under the model.

    Every state variable is enumerated (an arbitrary ``fn`` cannot be summed in closed
    form), in chunks; the normalization is streamed with a running maximum, so no
    separate log Z is needed.

    Parameters
    ----------
    m : UGM
    params : dict
        Parameters (constrained space); may be traced.
    fn : callable
        State dict (model representation, one configuration) -> pytree of arrays.
    chunk_size : int

    Returns
    -------
    pytree
        Same structure as ``fn``'s output, floating point.
    """
    m.param_space.check(params)
    plan = _make_plan(m, tuple(m.state_sites), False)
    _check_size(plan, chunk_size, "expectation")
    return _finite("expectation", jax.jit(lambda p: _weighted_mean(
        m, p, plan, m.target().reference_state(), fn, chunk_size))(params), params)


def _marginals(m, params, chunk_size):
    plan = _make_plan(m, tuple(m.state_sites))
    _check_size(plan, chunk_size, "marginals")
    domains = m.state_sites
    f = m.logdensity_fn(params)

    def probs(state):
        logits = conditional_logits(f, state, domains, plan.summed) if plan.summed else {}
        out = {}
        for s, d in domains.items():
            p = jax.nn.one_hot(d.labels(site_variables(state[s], d)), d.num_values,
                               dtype=_float_dtype())
            if s in logits:
                q = jax.nn.softmax(logits[s], axis=-1).astype(p.dtype)
                idx = plan.summed[s]
                p = q if idx is None else p.at[idx].set(q)
            out[s] = p
        return out

    flat = _weighted_mean(m, params, plan, m.target().reference_state(), probs, chunk_size)
    return {s: flat[s].reshape(tuple(d.shape_) + (d.num_values,)) for s, d in domains.items()}


def marginals(m: UGM, params: dict, *, chunk_size: int = DEFAULT_CHUNK_SIZE) -> dict:
    """Exact one-variable marginals p(x_i = k; θ).

    Uses the same closed-form summation as :func:`log_partition`: a variable summed out
    contributes its conditional probabilities given the enumerated ones.

    Parameters
    ----------
    m : UGM
    params : dict
        Parameters (constrained space); may be traced.
    chunk_size : int

    Returns
    -------
    dict of str -> array ``(*site_shape, K)``
        For each state site, the probability of each of its K values, in the order of
        the domain's values (Spin: -1, +1; Binary: 0, 1; Categorical: labels 0..K-1).
    """
    m.param_space.check(params)
    fn = _cached_jit(m, ("marginals", int(chunk_size)),
                     lambda: lambda p: _marginals(m, p, chunk_size))
    return _finite("marginals", fn(params), params)
