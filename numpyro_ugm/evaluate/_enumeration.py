"""Exact sums over the configurations of a small model: log Z, log-probabilities of data,
expectations and marginals.

The sums run on the enumeration engine (:mod:`numpyro_ugm.evaluate._engine`): chunk by
chunk, without a Python loop over configurations, memory bounded by one chunk (the 2**20
configurations of 20 spins take a few megabytes), gradients too.

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

**Real sites** (``ugm.Real``) are integrated out in closed form when the potential is
quadratic in them jointly given the finite sites (a Gaussian MRF; the visibles of a
Gaussian–Bernoulli RBM given its hiddens): each configuration h of the finite sites then
contributes the Gaussian integral log ∫ exp f(x, h) dx = f(x*_h, h) + ½ log det(2π P_h⁻¹),
with P_h = −∇²ₓf and x*_h its maximizer (:mod:`~numpyro_ugm.evaluate._gaussian`), and only
the finite variables are enumerated. A precision P_h that is not positive definite (a
potential that is not normalizable at the parameters) is an error naming the real sites;
so is a potential that is not quadratic in them (estimate those with AIS). Their moments
come from :func:`moments`.

Public functions (also reached as ``ugm.exact.*``, :mod:`numpyro_ugm.evaluate.exact`):
:func:`log_partition`, :func:`log_likelihood`, :func:`log_prob`, :func:`expectation`,
:func:`marginals`, :func:`moments` and :func:`num_enumerated` take a model and accept
traced parameters (they can be used under ``jax.jit``, ``jax.grad`` and ``jax.vmap`` over
parameters); data are checked on the host and must be concrete arrays. Every function
that takes parameters checks them with :meth:`ParamSpace.check
<numpyro_ugm.model.params.ParamSpace.check>` (names, with a suggestion for a misspelled one;
shapes; a floating dtype; finite values inside the support, when concrete), as the
samplers do. The sums themselves take the model's :class:`~numpyro_ugm.model.target.Target`.
Plans and compiled functions are kept in :mod:`numpyro_ugm.runtime.compile_cache`; the example
axis of data is padded to a power of two (:mod:`~numpyro_ugm.evaluate._padding`), so data
of any length up to it reuse one program.
"""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..runtime.checks import check_count
from ..conditionals import conditional_logits, site_variables
from ..model.diagnose import non_finite_error
from ..model.ugm import UGM
from ..model.validation import to_data
from ._engine import (DEFAULT_CHUNK_SIZE, MIN_SUM_OUT_REDUCTION, cached_jit, check_size,
                     check_enumeration, configurations, enumeration_sizes, first_divergent,
                     float_dtype, log_prob_observed, log_prob_per_input, log_z, make_plan,
                     sum_out_mode, weighted_mean)
from ._gaussian import normalizability_error
from ._padding import first, mean_of_first, pad_examples, padded_length
from ._prepare import model_of, observed_problem
from ._size import MAX_CONFIGURATIONS
from . import elimination as eliminating
from .elimination import MAX_TABLE_SIZE

__all__ = ["log_partition", "log_likelihood", "log_prob", "expectation", "marginals",
           "num_enumerated", "finite_result", "DEFAULT_CHUNK_SIZE",
           "MIN_SUM_OUT_REDUCTION", "MAX_CONFIGURATIONS"]


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
        Flat indices per site of the variables summed out (``None``: the whole site; a
        real site is always integrated out whole).
    """
    target = model_of("exact.num_enumerated", m).target()
    plan = make_plan(target, tuple(target.state_sites), sum_out)
    return plan.num_configurations, {**plan.summed, **dict.fromkeys(plan.integrated)}


def finite_result(owner, value, params, allow_minus_inf=False, target=None, chunk_size=None):
    """``value`` (a pytree), after checking that it is finite when it is concrete (under
    a user's ``jit`` or ``grad`` it is traced, and returned unchecked); ``-inf`` passes
    with ``allow_minus_inf`` (a configuration of probability zero). When it is not and
    ``target`` integrates real sites, a precision that is not positive definite is
    reported first (:func:`check_integrals`)."""
    leaves = jax.tree.leaves(value)
    if any(isinstance(v, jax.core.Tracer) for v in leaves):
        return value
    for v in map(np.asarray, leaves):
        bad = ~np.isfinite(v) & ~(allow_minus_inf & (v == -np.inf))
        if np.any(bad):
            if target is not None:
                check_integrals(owner, target, params, chunk_size)
            first_bad = np.ravel(v)[np.flatnonzero(bad)[0]]
            raise non_finite_error(owner, f"the result is {first_bad}", params)
    return value


def check_integrals(owner, target, params, chunk_size):
    """Raise the error of :func:`~numpyro_ugm.evaluate._gaussian.normalizability_error`
    at the first configuration of the finite sites where the integral over the real
    sites does not exist; return if there is none (or no real site)."""
    plan = make_plan(target, tuple(target.state_sites))
    if not plan.integrated:
        return
    fn = cached_jit(target, ("first_divergent", int(chunk_size)),
                    lambda: lambda p: first_divergent(target, p, plan, chunk_size))
    index, smallest, quadratic = (np.asarray(v) for v in fn(params))
    if index < 0:
        return
    where = ""
    if plan.segments:
        state = configurations(plan, target.state_sites, target.reference_state(), index)
        shown = to_data(target.state_sites, {s: state[s][0] for s, *_ in plan.segments})
        where = (f" at configuration {int(index)} of the finite sites ("
                 + ", ".join(f"{s} = {np.asarray(v).tolist()}" for s, v in shown.items())
                 + ")")
    raise normalizability_error(owner, plan.integrated, params, float(smallest),
                                bool(quadratic), where)


def _route(owner, m, target, method, max_table_size, chunk_size, max_configurations,
           params, num=None, inputs=None, sum_out="auto"):
    """The elimination set-up when ``method`` picks it (:func:`~numpyro_ugm.evaluate.
    elimination.choose`, checked at ``params`` under the first example of ``inputs``),
    else None once enumeration is checked."""
    per_example = inputs is not None
    return eliminating.choose(
        m, f"exact.{owner}", method,
        lambda: enumeration_sizes(target, num, per_example, sum_out),
        lambda: check_enumeration(target, chunk_size, owner, max_configurations, num,
                                  per_example, sum_out), max_table_size, target,
        params=params, inputs=None if inputs is None else jax.tree.map(lambda v: v[0], inputs))


def _checked(owner, values, log_zs, params, target, chunk_size):
    """``values`` (log-probabilities), after checking that log Z is finite and the
    values finite or −inf (data of probability zero)."""
    finite_result(owner + " (its log Z)", log_zs, params, target=target, chunk_size=chunk_size)
    return finite_result(owner, values, params, allow_minus_inf=True)


def _log_partition(target, params, chunk_size, sum_out="auto",
                   max_configurations=MAX_CONFIGURATIONS):
    """The checked log Z of ``target``, by its compiled enumeration."""
    plan = make_plan(target, tuple(target.state_sites), sum_out)
    check_size(plan, chunk_size, "log_partition", max_configurations)
    fn = cached_jit(target, ("log_partition", int(chunk_size), sum_out_mode(sum_out)),
                    lambda: lambda p: log_z(target, p, chunk_size, sum_out))
    return finite_result("log_partition", fn(params), params, target=target,
                   chunk_size=chunk_size)


def log_partition(m: UGM, params: dict, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                  sum_out: bool | str = "auto",
                  max_configurations: int | None = MAX_CONFIGURATIONS, method: str = "auto",
                  max_table_size: int | None = MAX_TABLE_SIZE) -> jax.Array:
    """Exact log-partition function log Z(θ) = log Σ_x exp f(x; θ).

    A finite model with more than 65,536 configurations whose interaction graph is thin
    (a chain, tree, strip or small grid) is summed by variable elimination on that graph
    (:mod:`~numpyro_ugm.evaluate.elimination`: tables of size K^(treewidth + 1)); other
    models are enumerated: the configurations of the state sites chunk by chunk (memory
    bounded by one chunk), after summing out in closed form the largest set of mutually
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
    max_configurations : int or None
        The largest enumeration allowed, in configurations (default
        ``MAX_CONFIGURATIONS``, 2**26: seconds to a minute on a CPU; ``None``: no
        limit). It runs as one computation that Ctrl-C cannot interrupt, so a larger
        one is an error naming its size (and more than 2**24 warns); a configuration
        with n > 16 real variables integrated out counts (n / 16)² times (their Hessian).
    method : {"auto", "enumerate", "eliminate"}
        ``"auto"``: enumeration up to 65,536 configurations (in all: a CRF's log Z and
        latent sites count once per example), elimination above when its tables fit
        ``max_table_size``, else enumeration within ``max_configurations``.
    max_table_size : int or None
        The largest clique table elimination may build, in entries per example
        (default 2**22); above it elimination is refused, naming the treewidth.

    Returns
    -------
    scalar
        log Z, in the floating dtype of the model representation (float32 by default).

    Raises
    ------
    KeyError, ValueError, TypeError, FloatingPointError
        Parameters that are not the model's (see
        :meth:`ParamSpace.check <numpyro_ugm.model.params.ParamSpace.check>`).
    ValueError
        If the enumeration is larger than ``max_configurations`` or too large to index.

    Examples
    --------
    >>> m = ugm.UGM(ugm.models.rbm, 784, 10)
    >>> exact.log_partition(m, m.init_params(jax.random.PRNGKey(0)))  # 2**10 terms
    """
    chunk_size = check_count("log_partition", "chunk_size", chunk_size)
    m = model_of("exact.log_partition", m)
    m.param_space.check(params)
    el = _route("log_partition", m, m.target(), method, max_table_size, chunk_size,
                max_configurations, params, sum_out=sum_out)
    if el is not None:
        return finite_result("log_partition", eliminating.run_log_z(el, params), params)
    return _log_partition(m.target(), params, chunk_size, sum_out, max_configurations)


def _log_probs(target, params, x, inputs, num, chunk_size):
    """Per-example log-probabilities of ``x`` (padded to a power of two), their mean over
    the ``num`` real examples, and log Z (per example with ``inputs``): one compiled
    program per target, chunk size and power of two."""
    length = padded_length(num)
    x = pad_examples(x, length)
    count = jnp.asarray(num, jnp.int32)
    if inputs is None:
        def build():
            def run(p, xs, n):
                values = log_prob_observed(target, p, xs, chunk_size)
                lz = log_z(target, p, chunk_size)
                return values - lz, mean_of_first(values, n) - lz, lz
            return run

        fn = cached_jit(target, ("log_prob", target.observed_sites, int(chunk_size)), build)
        return fn(params, x, count)

    def build_inputs():
        def run(p, xs, us, n):
            values, lzs = log_prob_per_input(target, p, xs, us, chunk_size, n)
            return values, mean_of_first(values, n), lzs
        return run

    fn = cached_jit(target, ("log_prob_inputs", target.observed_sites,
                             tuple(sorted(inputs)), int(chunk_size)), build_inputs)
    return fn(params, x, pad_examples(inputs, length), count)


def _per_example(owner, m, params, data, inputs, chunk_size, max_configurations, method,
                 max_table_size):
    """(per-example log-probabilities, their mean, log Z's, number of examples, target)
    by enumeration or elimination (see :func:`log_prob`)."""
    chunk_size = check_count(owner, "chunk_size", chunk_size)
    problem = observed_problem(f"exact.{owner}", m, params, data, inputs)
    target, x, inputs, num = (problem.target, problem.data,
                              problem.inputs, problem.num_examples)
    el = _route(owner, problem.model, target, method, max_table_size, chunk_size,
                max_configurations, params, num, inputs)
    if el is None:
        return _log_probs(target, params, x, inputs, num, chunk_size) + (num, target)
    values, log_zs = eliminating.run_log_probs(el, params, x, inputs)
    return values, jnp.mean(values), log_zs, num, target


def log_prob(m: UGM, params: dict, data: dict, *, inputs: dict | None = None,
             chunk_size: int = DEFAULT_CHUNK_SIZE,
             max_configurations: int | None = MAX_CONFIGURATIONS, method: str = "auto",
             max_table_size: int | None = MAX_TABLE_SIZE) -> jax.Array:
    """Per-example log p(x_n; θ), latent sites (state sites absent from ``data``)
    summed out.

    Parameters
    ----------
    m, params
        As in :func:`log_partition`.
    data : dict of str -> array
        Observed sites in the data representation (±1, 0/1, integer labels), each with a
        leading example axis; checked with :func:`~numpyro_ugm.model.validation.validate_data`.
    inputs : dict of str -> array, optional
        A CRF's per-example inputs (model keyword arguments with a leading example axis,
        as in learning and :func:`~numpyro_ugm.predict`): log p(x_n; θ, inputs_n), each
        example with its own log Z.
    chunk_size, max_configurations, method, max_table_size
        As in :func:`log_partition`; latent sites are enumerated once per example (and
        a CRF's log Z), which counts that many times; elimination clamps the observed
        variables and sums out the others.

    Returns
    -------
    array (num_examples,)
    """
    values, _, log_zs, num, target = _per_example(
        "log_prob", m, params, data, inputs, chunk_size, max_configurations, method,
        max_table_size)
    return first(_checked("log_prob", values, log_zs, params, target, chunk_size), num)


def log_likelihood(m: UGM, params: dict, data: dict, *, inputs: dict | None = None,
                   chunk_size: int = DEFAULT_CHUNK_SIZE,
                   max_configurations: int | None = MAX_CONFIGURATIONS, method: str = "auto",
                   max_table_size: int | None = MAX_TABLE_SIZE) -> jax.Array:
    """Mean over examples of log p(x_n; θ), latent sites summed out.

    Latent sites (state sites absent from ``data``) are summed out in closed form when
    they do not interact with each other and the model is multilinear (an RBM's hidden
    units); otherwise they are enumerated for each example, still summing out in closed
    form any non-interacting subset. Data of any number of examples up to a power of two
    share one compiled program (the example axis is padded, the padding masked out).

    Parameters
    ----------
    m, params
        As in :func:`log_partition`.
    data : dict of str -> array
        Observed sites in the data representation, leading example axis.
    inputs : dict of str -> array, optional
        A CRF's per-example inputs: the mean of log p(x_n; θ, inputs_n) (see
        :func:`log_prob`).
    chunk_size, max_configurations, method, max_table_size
        As in :func:`log_prob`.

    Returns
    -------
    scalar
    """
    values, mean, log_zs, num, target = _per_example(
        "log_likelihood", m, params, data, inputs, chunk_size, max_configurations, method,
        max_table_size)
    if inputs is not None:  # every example's log-probability, and its own log Z
        _checked("log_likelihood", values, log_zs, params, target, chunk_size)
    return _checked("log_likelihood", mean, log_zs, params, target, chunk_size)


def expectation(m: UGM, params: dict, fn: Callable[[dict], Any], *,
                chunk_size: int = DEFAULT_CHUNK_SIZE,
                max_configurations: int | None = MAX_CONFIGURATIONS) -> Any:
    """Exact expectation E_p[fn(x)] under the model.

    Every state variable is enumerated (an arbitrary ``fn`` cannot be summed in closed
    form), in chunks; the normalization is streamed with a running maximum, so no
    separate log Z is needed.

    Parameters
    ----------
    m, params
        As in :func:`log_partition`.
    fn : callable
        State dict (model representation, one configuration) -> pytree of arrays.
    chunk_size, max_configurations
        As in :func:`log_partition` (every variable is enumerated here).

    Returns
    -------
    pytree
        Same structure as ``fn``'s output, floating point.

    Raises
    ------
    ValueError
        If the model has real sites (an arbitrary ``fn`` has no closed-form integral
        over them: see :func:`moments`, or average ``fn`` over :func:`exact.sample
        <numpyro_ugm.evaluate.exact.sample>` draws).
    """
    m = model_of("exact.expectation", m)
    m.param_space.check(params)
    target = m.target()
    if target.real_sites:
        raise ValueError(
            f"expectation: the model has real sites {list(target.real_sites)}, over which "
            "an arbitrary fn has no closed-form integral; exact.moments gives their means "
            "and covariance, exact.marginals the finite sites' marginals, and averages of "
            "fn over exact.sample draws estimate any other expectation")
    plan = make_plan(target, tuple(target.state_sites), False)
    check_size(plan, chunk_size, "expectation", max_configurations)
    return finite_result("expectation", jax.jit(lambda p: weighted_mean(
        target, p, plan, target.reference_state(), fn, chunk_size))(params), params)


def _marginals(target, params, chunk_size):
    plan = make_plan(target, tuple(target.state_sites))
    check_size(plan, chunk_size, "marginals")
    domains = target.state_sites
    f = target.logdensity_fn(params)

    def probs(state):
        logits = conditional_logits(f, state, domains, plan.summed) if plan.summed else {}
        out = {}
        for s, d in domains.items():
            if not d.finite:  # real sites: see moments
                continue
            p = jax.nn.one_hot(d.labels(site_variables(state[s], d)), d.num_values,
                               dtype=float_dtype())
            if s in logits:
                q = jax.nn.softmax(logits[s], axis=-1).astype(p.dtype)
                idx = plan.summed[s]
                p = q if idx is None else p.at[idx].set(q)
            out[s] = p
        return out

    flat = weighted_mean(target, params, plan, target.reference_state(), probs, chunk_size)
    return {s: flat[s].reshape(tuple(d.shape_) + (d.num_values,)) for s, d in domains.items()
            if d.finite}


def marginals(m: UGM, params: dict, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
              max_configurations: int | None = MAX_CONFIGURATIONS, method: str = "auto",
              max_table_size: int | None = MAX_TABLE_SIZE) -> dict:
    """Exact one-variable marginals p(x_i = k; θ).

    Uses the same closed-form summation as :func:`log_partition`: a variable summed out
    contributes its conditional probabilities given the enumerated ones.

    Parameters
    ----------
    m, params, chunk_size, max_configurations, method, max_table_size
        As in :func:`log_partition` (elimination: the gradient of log Z with respect to
        the model's tables; pairs: :func:`~numpyro_ugm.evaluate.exact.pair_marginals`).

    Returns
    -------
    dict of str -> array ``(*site_shape, K)``
        For each finite state site, the probability of each of its K values, in the
        order of the domain's values (Spin: -1, +1; Binary: 0, 1; Categorical: labels
        0..K-1). Real sites (integrated out) are left out: see :func:`moments`.
    """
    chunk_size = check_count("marginals", "chunk_size", chunk_size)
    m = model_of("exact.marginals", m)
    m.param_space.check(params)
    target = m.target()
    el = _route("marginals", m, target, method, max_table_size, chunk_size,
                max_configurations, params)
    if el is not None:
        return finite_result("marginals", eliminating.run_marginals(el, params), params)
    fn = cached_jit(target, ("marginals", chunk_size),
                    lambda: lambda p: _marginals(target, p, chunk_size))
    return finite_result("marginals", fn(params), params, target=target, chunk_size=chunk_size)
