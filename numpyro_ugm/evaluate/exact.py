"""Exact evaluation and sampling of small models by enumeration.

This is ``ugm.exact``. The sums themselves — :func:`log_partition`, :func:`log_likelihood`,
:func:`log_prob`, :func:`expectation`, :func:`marginals`, :func:`moments`,
:func:`num_enumerated` — are those of :mod:`numpyro_ugm.evaluate._enumeration` (chunked
enumeration with closed-form sum-out of an independent set of variables and Gaussian
integrals over real sites, :mod:`~numpyro_ugm.evaluate._engine`), re-exported here. This
module adds the draws built on them: :func:`sample` (exact independent draws), which
checks its parameters on the host, and :func:`sampler`, its pure draw. Like the sums,
they take a model at their entry point and run on its
:class:`~numpyro_ugm.model.target.Target`. Exact maximum likelihood on these sums is a
learner, :func:`numpyro_ugm.learn.fit_exact`, whose objective is
:func:`target_log_likelihood`.
"""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..runtime.checks import as_key, check_count
from ..runtime.compile_cache import cached
from ..model.diagnose import check_finite
from ..kernels.base import draw_block
from ..model.ugm import UGM
from ..model.target import Target
from ..model.validation import to_data
from ._engine import (DEFAULT_CHUNK_SIZE, MIN_SUM_OUT_REDUCTION, check_enumeration,
                     check_size, chunk_states, chunks, config_budget, config_log_weight,
                     configurations, enumeration_sizes, float_dtype, index_dtype,
                     log_prob_observed, log_prob_per_input, log_z, make_plan)
from ._enumeration import (check_integrals, expectation, finite_result, log_likelihood,
                          log_partition, log_prob, marginals, num_enumerated)
from ._moments import Moments, moments
from ._gaussian import draw as gaussian_draw
from ._prepare import model_of
from ._size import MAX_CONFIGURATIONS, WARN_CONFIGURATIONS
from . import elimination as eliminating
from .elimination import MAX_TABLE_SIZE

__all__ = ["log_partition", "log_likelihood", "log_prob", "expectation", "marginals",
           "moments", "Moments", "num_enumerated", "target_log_likelihood",
           "check_enumerable", "sample", "sampler", "map_state", "pair_marginals",
           "PairMarginals", "objective", "mean_log_partition", "DEFAULT_CHUNK_SIZE",
           "MIN_SUM_OUT_REDUCTION", "MAX_CONFIGURATIONS", "WARN_CONFIGURATIONS",
           "MAX_TABLE_SIZE"]


# --- on a target, for the learners -------------------------------------------------------


def target_log_likelihood(target: Target, params: dict, xs: dict, inputs: dict | None = None,
                          chunk_size: int = DEFAULT_CHUNK_SIZE) -> jax.Array:
    """Mean exact log p(x_n; θ) of data ``xs`` (model representation, leading example
    axis; ``target`` observes its sites), each example under its own ``inputs`` (a CRF's)
    when given: traceable in the parameters and the data (the objective of
    :func:`numpyro_ugm.learn.fit_exact`)."""
    if inputs is None:
        return (jnp.mean(log_prob_observed(target, params, xs, chunk_size))
                - log_z(target, params, chunk_size))
    return jnp.mean(log_prob_per_input(target, params, xs, inputs, chunk_size)[0])


def objective(model: UGM, target: Target, owner: str, method: str = "auto", *,
              chunk_size: int = DEFAULT_CHUNK_SIZE,
              max_configurations: int | None = MAX_CONFIGURATIONS,
              max_table_size: int | None = MAX_TABLE_SIZE, num_examples: int | None = None,
              per_example: bool = False, params: dict | None = None,
              inputs: dict | None = None) -> Callable:
    """The exact mean log-likelihood ``(params, xs, inputs) -> scalar`` of a learner
    (:func:`target_log_likelihood`), by enumeration or, where ``method`` picks it (as in
    :func:`log_partition`), by elimination; checked before it runs (sizes; with
    ``params``, that the potential decomposes, under the first example of ``inputs``)."""
    el = _choose(model, target, owner, method, chunk_size, max_configurations,
                 max_table_size, num_examples, per_example, params, inputs)
    if el is None:
        return lambda p, xs, us: target_log_likelihood(target, p, xs, us, chunk_size)

    def run(p, xs, us):
        labels, observed = eliminating.to_labels(el, xs)
        return jnp.mean(eliminating.log_probs(el, p, labels, observed, us)[0])

    return run


def mean_log_partition(model: UGM | None, target: Target, owner: str, method: str = "auto",
                       *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                       max_configurations: int | None = MAX_CONFIGURATIONS,
                       max_table_size: int | None = MAX_TABLE_SIZE,
                       num_examples: int | None = None, params: dict | None = None,
                       inputs: dict | None = None) -> Callable:
    """log Z(θ) as a traceable ``(params, inputs) -> scalar`` (with inputs, a leading
    example axis: the mean of the examples' log Z's), by enumeration or elimination as
    ``method`` picks for ``num_examples`` examples (:func:`log_partition`); checked
    before it runs (sizes; with ``params`` and ``model``, that the potential decomposes,
    under the first example of ``inputs``). The negative phase of an exact learner."""
    per_example = inputs is not None
    el = _choose(model, target, owner, method, chunk_size, max_configurations,
                 max_table_size, num_examples if per_example else None, per_example,
                 params, inputs)

    def one(p, us):
        if el is not None:
            return eliminating.log_z(el, p, us)
        return log_z(target if us is None else target.bind(**us), p, chunk_size)

    def run(p, us=None):
        if us is None:
            return one(p, None)
        if el is not None:
            return jnp.mean(jax.vmap(lambda u: one(p, u))(us))
        return jnp.mean(jax.lax.map(lambda u: one(p, u), us))

    return run


def _choose(model, target, owner, method, chunk_size, max_configurations, max_table_size,
            num_examples, per_example, params, inputs):
    """:func:`~numpyro_ugm.evaluate.elimination.choose` for a learner's sums over
    ``num_examples`` examples (each under its own inputs with ``per_example``), the
    decomposition checked under the first example of ``inputs``."""
    return eliminating.choose(
        model, owner, method, lambda: enumeration_sizes(target, num_examples, per_example),
        lambda: check_enumerable(target, chunk_size, owner, max_configurations,
                                 num_examples, per_example), max_table_size, target,
        params=params, inputs=None if inputs is None else jax.tree.map(lambda v: v[0], inputs))


def check_enumerable(target: Target, chunk_size: int, owner: str,
                     max_configurations: int | None = MAX_CONFIGURATIONS,
                     num_examples: int | None = None, per_example: bool = False) -> None:
    """Raise ``ValueError`` (naming ``owner``) if ``target`` is too large to enumerate
    in chunks of ``chunk_size``, or its enumeration larger than ``max_configurations``
    (its log Z's, once or, with ``per_example``, once per example; with
    ``num_examples``, its latent sites' per example too); warn when it is large."""
    check_enumeration(target, chunk_size, owner, max_configurations, num_examples,
                      per_example)


# --- exact sampling -----------------------------------------------------------------------


def sample(m: UGM, params: dict, rng_key: jax.Array, num_samples: int, *,
           chunk_size: int = DEFAULT_CHUNK_SIZE,
           max_configurations: int | None = MAX_CONFIGURATIONS, method: str = "auto",
           max_table_size: int | None = MAX_TABLE_SIZE) -> dict:
    """Independent exact draws of every state site, by enumeration or, for a larger
    finite model with a thin graph (``method``, as in :func:`log_partition`), by
    elimination: forward filtering along the elimination order, then each variable drawn
    backwards from its clique table given the variables drawn before it.

    When the enumerated configurations fit in one chunk, draws come from their inverse
    cumulative distribution; otherwise each draw is the Gumbel-max over the
    configurations, streamed chunk by chunk, so memory stays bounded by
    ``num_samples × chunk``. Variables that the
    enumeration sums out in closed form (an RBM's larger layer, see
    :func:`num_enumerated`) are weighted by their sum and then drawn from their exact
    conditionals given the drawn configuration: an RBM 784×20 takes 2**20 configurations.
    Real sites (a model Gaussian in them given the finite sites) are integrated out the
    same way and drawn jointly from their Gaussian conditional.

    Parameters
    ----------
    m, params, rng_key
        As in :func:`~numpyro_ugm.sampling.sample`.
    num_samples : int
        Number of independent draws.
    chunk_size : int
        Largest number of configurations scored together (reduced for many samples).
    max_configurations : int or None
        The largest enumeration allowed (:func:`log_partition`'s).
    method, max_table_size
        As in :func:`log_partition`.

    Returns
    -------
    dict of str -> array ``(num_samples, *site_shape)``, data representation

    Raises
    ------
    FloatingPointError
        If the log-potential is NaN or +inf at a configuration (e.g. parameters that
        overflow), or −inf at all of them; or if it is not normalizable in the real
        sites (a precision that is not positive definite).
    """
    num_samples = check_count("exact.sample", "num_samples", num_samples)
    rng_key = as_key(rng_key, "exact.sample")
    m = model_of("exact.sample", m)
    m.param_space.check(params)
    target = m.target()
    el = eliminating.choose(
        m, "exact.sample", method,
        lambda: enumeration_sizes(target),
        lambda: check_size(make_plan(target, tuple(target.state_sites)), chunk_size,
                           "exact.sample", max_configurations), max_table_size, target,
        params=params)
    if el is not None:
        draw = cached(target.cache_key, ("elimination.sample", num_samples), lambda: jax.jit(
            lambda p, k: eliminating.sample_labels(el, p, k, num_samples)))
        return eliminating.to_state(el, draw(params, rng_key))
    run, configuration = _cached_sampler("exact.sample", target, num_samples, chunk_size,
                                         max_configurations)
    draws, bad, impossible = run(params, rng_key)
    if int(bad) >= 0:
        check_integrals("exact.sample", target, params, chunk_size)
        check_finite(target, "exact.sample", params, np.zeros(1, bool),
                     configuration(bad[None]), lambda i: f"configuration {int(bad)}")
    if bool(impossible):
        raise FloatingPointError("exact.sample: every configuration has log-potential -inf "
                                 "under the given params (Z = 0): there is nothing to draw")
    return to_data(target.state_sites, draws)


def sampler(m: UGM | Target, num_samples: int, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
            max_configurations: int | None = MAX_CONFIGURATIONS
            ) -> Callable[[dict, jax.Array], dict]:
    """The draw of :func:`sample` as a pure function, for use inside a jitted program
    (e.g. the auxiliary draw of the exchange algorithm): ``draw(params, rng_key)`` returns
    ``num_samples`` exact draws of every state site in the **model** representation,
    without :func:`sample`'s host checks of the parameters and the potential. ``m``
    is a model or its target (e.g. one CRF example's, ``target.bind(**inputs)``).

    Raises
    ------
    ValueError
        If the model is too large to enumerate (or larger than ``max_configurations``,
        as in :func:`sample`).
    """
    target = m if isinstance(m, Target) else model_of("exact.sampler", m).target()
    run = _cached_sampler("exact.sampler", target,
                          check_count("exact.sampler", "num_samples", num_samples),
                          chunk_size, max_configurations)[0]
    return lambda params, rng_key: run(params, rng_key)[0]


def _cached_sampler(owner: str, target: Target, num_samples: int, chunk_size: int,
                    max_configurations: int | None):
    """The compiled sampler of ``target`` for ``num_samples`` draws, built once per target
    and kept in the bounded compile cache (a program per sample count)."""
    plan = make_plan(target, tuple(target.state_sites))
    chunk_size = check_count(owner, "chunk_size", chunk_size)
    if plan.num_configurations > chunk_size:  # Gumbel-max scores samples × chunk at once
        chunk_size = max(1, min(chunk_size, 2 ** 24 // num_samples))
    check_size(plan, chunk_size, owner, max_configurations)
    key = ("exact.sample", num_samples, chunk_size, index_dtype())
    return cached(target.cache_key, key,
                  lambda: _sampler(target, plan, num_samples, chunk_size))


def _sampler(target, plan, num_samples, chunk_size):
    """The compiled draw of :func:`sample` (``run(params, key)``: inverse CDF over a
    single chunk, Gumbel-max over several) and the map from configuration indices to
    states (summed variables at their reference values), built once per model, sample
    count and chunk."""
    domains, base = target.state_sites, target.reference_state()
    chunk, num_chunks = chunks(plan, chunk_size)
    itype = index_dtype()

    def configuration(index):
        return configurations(plan, domains, base, index)

    def chunk_weights(log_weight, c):
        """Log-weights of chunk ``c``'s configurations (−inf for padding) and the index
        of the first whose weight is NaN or +inf (−1: none; −inf is probability zero)."""
        states, valid = chunk_states(plan, domains, base, c, chunk)
        weights = jnp.where(valid, log_weight(states), -jnp.inf)
        wrong = jnp.isnan(weights) | (weights == jnp.inf)
        return weights, jnp.where(jnp.any(wrong), c.astype(itype) * chunk + jnp.argmax(wrong),
                                  -1).astype(itype)

    def draw_summed(params, key, draws):
        """The integrated real sites (from their Gaussian given the enumerated variables,
        ``config_budget`` draws at a time: each costs a Hessian), then the summed-out
        variables (from their conditionals given the rest), given ``draws``."""
        f = target.logdensity_fn(params)
        if plan.integrated:
            keys = jax.random.split(jax.random.fold_in(key, num_chunks + 1), num_samples)
            draws = jax.lax.map(
                lambda a: gaussian_draw(a[0], f, a[1], domains, plan.integrated),
                (keys, draws), batch_size=min(num_samples, config_budget(plan, chunk_size)))
        if not plan.summed:
            return draws
        keys = jax.random.split(jax.random.fold_in(key, num_chunks), num_samples)
        return jax.vmap(lambda k, x: draw_block(k, f, x, domains, plan.summed))(keys, draws)

    @jax.jit
    def run_one_chunk(params, key):
        """Everything in one chunk: inverse CDF, O(configurations + samples)."""
        weights, bad = chunk_weights(jax.vmap(config_log_weight(target, params, plan)),
                                     jnp.zeros((), itype))
        cdf = jnp.cumsum(jnp.exp(weights - jnp.max(weights)))
        u = jax.random.uniform(key, (num_samples,), cdf.dtype) * cdf[-1]
        index = jnp.minimum(jnp.searchsorted(cdf, u, side="right"), chunk - 1).astype(itype)
        draws = draw_summed(params, key, configuration(index))
        return draws, bad, jnp.all(weights == -jnp.inf)

    @jax.jit
    def run(params, key):
        log_weight = jax.vmap(config_log_weight(target, params, plan))

        def one_chunk(carry, c):
            best, best_index, bad = carry
            weights, wrong_at = chunk_weights(log_weight, c)
            scores = weights + jax.random.gumbel(jax.random.fold_in(key, c),
                                                 (num_samples, chunk))
            i = jnp.argmax(scores, axis=1)
            top = jnp.take_along_axis(scores, i[:, None], axis=1)[:, 0]
            better = top > best
            bad = jnp.where(bad < 0, wrong_at, bad)
            return (jnp.where(better, top, best),
                    jnp.where(better, c.astype(itype) * chunk + i, best_index), bad), None

        init = (jnp.full(num_samples, -jnp.inf, float_dtype()),
                jnp.zeros(num_samples, itype), -jnp.ones((), itype))
        (best, index, bad), _ = jax.lax.scan(one_chunk, init,
                                             jnp.arange(num_chunks, dtype=itype))
        return draw_summed(params, key, configuration(index)), bad, jnp.all(best == -jnp.inf)

    return (run_one_chunk if num_chunks == 1 else run), configuration


# --- the MAP state and pair marginals (elimination) ---------------------------------------


class PairMarginals(NamedTuple):
    """What :func:`pair_marginals` returns.

    Attributes
    ----------
    pairs : list of (str, str)
        The interacting pairs of variables, named ``site[index]``.
    edges : ndarray (E, 2)
        The same pairs as global variable indices (sites in order, each flattened).
    probs : array (E, K, K)
        p(x_i = a, x_j = b; θ) (values in the domains' order; K the largest number of
        values, rows beyond a variable's own are zero).
    log_partition : scalar
    """

    pairs: list
    edges: np.ndarray
    probs: jax.Array
    log_partition: jax.Array


def _eliminated(owner, m, params, max_table_size, inputs=None):
    """The checked elimination set-up of ``m`` (under one example's ``inputs``)."""
    m = model_of(owner, m)
    m.param_space.check(params)
    el = eliminating.prepare(m, owner, max_table_size)
    eliminating.check_decomposes(el, m, params, owner, inputs)
    return m, el


def pair_marginals(m: UGM, params: dict, *,
                   max_table_size: int | None = MAX_TABLE_SIZE) -> PairMarginals:
    """Exact marginals of every interacting pair of variables, by elimination (the
    gradient of log Z with respect to the pairwise tables).

    Raises
    ------
    ValueError
        If the model has real sites, its largest elimination table is above
        ``max_table_size`` (naming the treewidth), or its potential is not a sum of one-
        and two-variable terms.
    """
    m, el = _eliminated("exact.pair_marginals", m, params, max_table_size)
    fn = cached(el.target.cache_key, ("elimination.pairs",), lambda: jax.jit(
        lambda p: eliminating.marginals(el, p)))
    log_z_value, _, probs = finite_result("exact.pair_marginals", fn(params), params)
    name = eliminating.variable_name(el.domains)
    pairs = [(name(int(i)), name(int(j))) for i, j in el.plan.edges]
    return PairMarginals(pairs, el.plan.edges, probs, log_z_value)


def map_state(m: UGM, params: dict, *, max_table_size: int | None = MAX_TABLE_SIZE
              ) -> tuple[dict, jax.Array]:
    """The most probable state argmax_x f(x; θ), exactly: max-product elimination and
    back-pointers (Viterbi on a chain); ties go to the lowest label.

    Returns
    -------
    state : dict of str -> array ``site_shape``
        Data representation.
    log_potential : scalar
        f at that state (the largest log-potential).

    Raises
    ------
    ValueError
        As :func:`pair_marginals`.
    """
    m, el = _eliminated("exact.map_state", m, params, max_table_size)
    fn = cached(el.target.cache_key, ("elimination.map",), lambda: jax.jit(
        lambda p: eliminating.map_labels(el, p)))
    best, labels = fn(params)
    finite_result("exact.map_state", best, params)
    return eliminating.to_state(el, labels), best
