"""Annealed importance sampling (Neal 2001) of log Z for models too large to enumerate,
as Salakhutdinov & Murray (2008) run it for RBMs, with the reverse direction that
brackets it (Burda, Grosse & Salakhutdinov 2015; Grosse, Ghahramani & Adams 2015).

The path p_k(x) ∝ q(x)^{1−β_k} exp(β_k f(x; θ)) goes from a base distribution q of
independent variables — fitted to the data marginals (the "base-rate" model) or uniform;
for real sites (``ugm.Real``) a Normal fitted to the data's per-variable mean and
variance, or the site's base Normal — to the model. Latent sites that do not interact
with each other are summed out in closed form in the weights (for an RBM: the hidden
units), so the importance weights are those of the visible marginal (lower variance);
each move at β_k first draws the summed sites from their conditionals at β_k, then
applies the kernel (block Gibbs by default), so that the moves leave the visible
marginal of p_k invariant. Real sites whose potential is
quadratic (a Gaussian–Bernoulli RBM's visible units, a Gaussian MRF) are drawn exactly
from their Gaussian conditionals along the whole path; the others are moved by the
kernel's gradient move (MALA by default), whose step size is adapted across the chains
as the path goes (adaptive, so the estimate is then consistent rather than exactly
unbiased).

**Forward AIS** starts from q and gives an unbiased estimate of Z, so its log is a
stochastic *lower* bound on log Z (too short a schedule understates log Z, and overstates
log-likelihoods, by any amount, with a small standard error). **Reverse AIS** starts from
states distributed as the model and anneals back to q: its weights estimate Z_q / Z
without bias, so its estimate of log Z is a stochastic *upper* bound when the starting
states are exact draws from the model (the bidirectional bracket of Grosse et al.; on
data simulated from the model). Started from the data cases themselves (RAISE, Burda et
al.) the reverse run estimates each case's likelihood under the "annealing model" from
below, a conservative estimate of the log-likelihood. A bracket wider than its tolerance
means that the schedule is too short for the model: :func:`log_partition` and
:func:`log_likelihood` then warn.
"""


from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..runtime import distributed
from ..runtime.checks import as_key, check_count
from ..runtime.compile_cache import cached
from ..conditionals import LogDensity, linear_combination, sum_out
from ..kernels.base import KernelSpec, draw_block, init_chains, refresh_chains, step_chains
from ..model.ugm import UGM
from ..runtime.sharding import shard_particles, use_mesh
from ..model.target import Target
from ..model.validation import check_normalizable
from ._ais_setup import (Setup, base_draws, base_log_prob, base_rate_log_probs, bracket,
                        check_tolerance, default_betas, log_mean_exp, refreshes,
                        reverse_kernel, schedule, setup, start_states, warn_if_degenerate,
                        warn_if_wide)
from ._padding import first, pad_examples, padded_length
from ._prepare import model_of, observed_problem

__all__ = ["log_partition", "log_likelihood", "AISResult", "AISLikelihoodResult",
           "default_betas", "base_rate_log_probs", "DEFAULT_TOLERANCE", "RAISE_CAVEAT",
           "REVERSE_CAVEAT"]

#: Width of the bracket (upper − lower estimate, in nats; per case for
#: :func:`log_likelihood`) above which the estimates warn.
DEFAULT_TOLERANCE = 1.0

#: The caveat of a reverse (RAISE) run from data cases, carried by its result.
RAISE_CAVEAT = (
    "RAISE (reverse AIS from the data cases) estimates each case's likelihood under the "
    "annealing model, not under the model: on real data it is not a guaranteed lower bound "
    "and can lie above the exact log-likelihood by many of its standard errors (seen 0.14-"
    "0.32 nats, 14-30 s.e., above on a GB-RBM 64 x 16); it bounds from below only for data "
    "drawn exactly from the model")

#: The caveat of a reverse run from given states, carried by its result.
REVERSE_CAVEAT = (
    "reverse AIS bounds log Z from above only when reverse_from are exact draws from the "
    "model; from a chain's states, or data, its end of the bracket is an estimate only")


class AISResult(NamedTuple):
    """What :func:`log_partition` returns: an AIS estimate of log Z, and the bracket of
    the reverse direction when it was run.

    Attributes
    ----------
    log_z : scalar
        The forward estimate of log Z.
    stderr : scalar
        Its delta-method standard error.
    log_weights : (num_chains,) array
        Final log importance weights of the forward run (for diagnostics: their spread).
    lower, upper : scalar or None
        The bracket's ends, sorted (``lower <= upper``): the forward estimate and the
        reverse one, the lower of the two first. When both directions are right the
        forward one is the lower; ``lower_from`` says which it was. ``None`` without a
        reverse run.
    lower_stderr, upper_stderr : scalar or None
        Their standard errors.
    lower_from, upper_from : {"forward", "reverse"} or None
        The direction each end came from (an inverted bracket has ``lower_from ==
        "reverse"``, and warns when the inversion exceeds the ends' errors).
    caveat : str or None
        What the bracket does not guarantee (with a reverse run).
    """

    log_z: jax.Array
    stderr: jax.Array
    log_weights: jax.Array
    lower: Any = None
    lower_stderr: Any = None
    upper: Any = None
    upper_stderr: Any = None
    lower_from: str | None = None
    upper_from: str | None = None
    caveat: str | None = None

    @property
    def width(self):
        """``upper − lower`` (``None`` without a reverse run)."""
        return None if self.upper is None else self.upper - self.lower


class AISLikelihoodResult(NamedTuple):
    """What :func:`log_likelihood` returns: an AIS estimate of the mean log-likelihood,
    the log Z it used, and the bracket of the reverse (RAISE) run when it was made.

    Attributes
    ----------
    log_likelihood : scalar
        The forward estimate of the mean log-likelihood per case (the data's free energy
        minus the forward estimate of log Z; a short schedule overstates it).
    stderr : scalar
        Its standard error: that of log Z (of the mean of the cases' log Z with
        ``inputs``); the free energies are exact.
    log_z : scalar, or (num_cases,) array with ``inputs``
        The forward estimate of log Z (of each case's log Z with ``inputs``).
    log_z_stderr : scalar, or (num_cases,) array with ``inputs``
        Its delta-method standard error.
    log_weights : (num_chains,) array, or (num_cases, num_chains) with ``inputs``
        Final log importance weights of the forward run.
    lower, upper : scalar or None
        The bracket's ends, sorted (``lower <= upper``): the reverse (RAISE) estimate of
        the mean log-likelihood and the forward one (``log_likelihood``), the lower of
        the two first. When both are right the reverse one is the lower; ``lower_from``
        says which it was. ``None`` without a reverse run.
    lower_stderr, upper_stderr : scalar or None
        Their standard errors.
    lower_from, upper_from : {"forward", "reverse"} or None
        The direction each end came from.
    caveat : str or None
        With a reverse run, :data:`RAISE_CAVEAT`: the reverse estimate from real data is
        not a guaranteed lower bound.
    """

    log_likelihood: jax.Array
    stderr: jax.Array
    log_z: jax.Array
    log_z_stderr: jax.Array
    log_weights: jax.Array
    lower: Any = None
    lower_stderr: Any = None
    upper: Any = None
    upper_stderr: Any = None
    lower_from: str | None = None
    upper_from: str | None = None
    caveat: str | None = None

    @property
    def width(self):
        """``upper − lower`` (``None`` without a reverse run)."""
        return None if self.upper is None else self.upper - self.lower


def log_partition(m: UGM, params: dict, rng_key: jax.Array, num_chains: int = 100,
                  betas: int | np.ndarray | None = None, *, data: dict | None = None,
                  base_log_probs: dict | None = None,
                  sum_out_sites: Sequence[str] | None = None, kernel: Any = None,
                  mesh: jax.sharding.Mesh | None = None, reverse_from: dict | None = None,
                  tolerance: float = DEFAULT_TOLERANCE) -> AISResult:
    """AIS estimate of log Z(θ) with a standard error; with ``reverse_from``, the
    bidirectional bracket.

    Parameters
    ----------
    m : UGM
    params : dict
        Parameters (constrained space).
    rng_key : PRNGKey
    num_chains : int
        Independent annealing runs C.
    betas : int or array, optional
        Schedule from exactly 0 to exactly 1, finite and never decreasing (an int: that
        many βs spaced uniformly); default :func:`default_betas` (14,500 βs).
    data : dict, optional
        Observed sites (data representation): the base distribution is fitted to their
        marginals (a real site's: to their mean and variance); without it, and for sites
        it lacks, the base is uniform (a real site's: its domain's base Normal).
    base_log_probs : dict, optional
        Explicit base per site, finite, for every site not summed out, e.g. from
        :func:`base_rate_log_probs`: log-probabilities (num_variables, K) of a finite
        site; the natural parameters (η, λ) (num_variables, 2), λ > 0, of a real site's
        Normal N(η/λ, 1/λ).
    sum_out_sites : sequence of str, optional
        Sites summed out in closed form in the weights (default: the target's ``latent_sites`` when
        they do not interact with each other).
    kernel : KernelSpec, optional
        Transition at each β (default: systematic-scan block Gibbs, summed sites first).
    mesh : jax.sharding.Mesh, optional
        Split the chains over the mesh's first axis (multi-device); same estimate.
    reverse_from : dict, optional
        Exact draws from the model (data representation, every site not summed out; one
        reverse chain per draw), e.g. from :func:`~numpyro_ugm.evaluate.exact.sample`:
        reverse AIS from them gives a stochastic upper bound on log Z, and the result the
        bracket forward ≤ log Z ≤ reverse, its ends sorted into ``lower`` ≤ ``upper`` with
        ``lower_from``/``upper_from`` naming their directions (an inversion beyond the
        ends' errors warns). Draws that are not exact (a chain's states) make the reverse
        end an estimate only (``caveat``).
    tolerance : float
        Warn when ``upper − lower`` exceeds this many nats.

    Returns
    -------
    AISResult

    Raises
    ------
    ValueError
        If ``betas`` are not finite, do not run from 0 to 1 or decrease somewhere (the
        message names the first β at fault), or a count is not an integer >= 2.
    """
    betas = schedule(betas)
    num_chains = check_count("ais", "num_chains", num_chains, 2)
    rng_key = as_key(rng_key, "ais")
    tolerance = check_tolerance(tolerance)
    m = model_of("ais.log_partition", m)
    m.param_space.check(params)
    target = m.target()
    check_normalizable(target, params, "ais.log_partition")
    prepared = setup(target, data, base_log_probs, sum_out_sites, kernel)
    forward_key, reverse_key = jax.random.split(rng_key)
    log_w = _anneal(target, prepared, params, forward_key, betas, num_chains, mesh)
    warn_if_degenerate("ais.log_partition", log_w)
    log_z, stderr = log_mean_exp(log_w)
    log_z = prepared.log_z_base + log_z
    if reverse_from is None:
        return AISResult(log_z, stderr, log_w)
    start = start_states(target, prepared.summed, reverse_from, "reverse_from")
    num_reverse = jax.tree.leaves(start)[0].shape[0]
    check_count("ais", "reverse_from (number of draws)", num_reverse, 2)
    log_w_reverse = _anneal(target, prepared, params, reverse_key, betas[::-1].copy(),
                            num_reverse, mesh, start)
    log_ratio, upper_stderr = log_mean_exp(log_w_reverse)  # estimates log(Z_q / Z)
    result = AISResult(log_z, stderr, log_w, caveat=REVERSE_CAVEAT, **bracket(
        log_z, stderr, prepared.log_z_base - log_ratio, upper_stderr, "forward"))
    warn_if_wide("ais.log_partition", result, tolerance, "log Z", "forward")
    return result


def log_likelihood(m: UGM, params: dict, data: dict, rng_key: jax.Array,
                   num_chains: int = 100, betas: int | np.ndarray | None = None, *,
                   inputs: dict | None = None, reverse: bool = False,
                   num_reverse: int | None = None, tolerance: float = DEFAULT_TOLERANCE,
                   base_log_probs: dict | None = None,
                   sum_out_sites: Sequence[str] | None = None, kernel: Any = None,
                   mesh: jax.sharding.Mesh | None = None) -> AISLikelihoodResult:
    """Mean log-likelihood of ``data`` (latent sites summed out) with log Z from AIS;
    with ``reverse=True``, the bracket of a conservative (RAISE) estimate.

    The base distribution is fitted to ``data`` unless ``base_log_probs`` is given (use
    the training data's base for test sets, as Salakhutdinov & Murray do).

    The free energies of the data are computed with the cases padded to a power of
    two (one compiled program for any number of cases up to it); the annealing runs of
    ``inputs`` are compiled per number of cases, kept in the bounded compile cache.

    Parameters
    ----------
    m, params, data, rng_key, num_chains, betas
        As in :func:`log_partition`; ``data`` holds the observed sites.
    inputs : dict of str -> array, optional
        A CRF's per-example inputs (model keyword arguments with a leading example axis,
        as in learning): each example gets its own log Z, from ``num_chains`` chains.
    reverse : bool
        Also run reverse AIS from the data cases (Burda, Grosse & Salakhutdinov's RAISE;
        one chain per case, the same schedule): each gives a stochastic lower bound on
        the case's log-likelihood under the annealing model, so their mean is a
        conservative estimate of the mean log-likelihood (a stochastic lower bound when
        ``data`` are exact draws from the model), to set against the forward estimate,
        which a short schedule overstates. The latent sites must be summed out.
    num_reverse : int, optional
        Run the reverse chains from this many cases drawn at random (default all).
    tolerance : float
        Warn when the bracket is wider than this many nats per case.
    base_log_probs, sum_out_sites, kernel, mesh
        As in :func:`log_partition` (``mesh`` not with ``inputs``).

    Returns
    -------
    AISLikelihoodResult
        ``log_likelihood`` holds the forward estimate of the mean log-likelihood,
        ``stderr`` its standard error (that of log Z; of the mean log Z with ``inputs``),
        ``log_z`` the forward estimate of log Z (per case with ``inputs``); with
        ``reverse``, the reverse estimate (its standard error from the spread of the
        reverse weights, which with ``inputs`` also holds the spread of log Z over the
        examples) and the forward one, sorted into ``lower`` ≤ ``upper`` with
        ``lower_from``/``upper_from`` naming their directions (the reverse one is the
        lower when both are right; an inversion beyond their errors warns), and
        ``caveat`` holding :data:`RAISE_CAVEAT`.

    Raises
    ------
    ValueError
        As :func:`log_partition` for ``betas`` and the counts; for ``reverse`` without
        the latent sites summed out, or ``mesh`` with ``inputs``.
    """
    betas = schedule(betas)
    num_chains = check_count("ais", "num_chains", num_chains, 2)
    rng_key = as_key(rng_key, "ais")
    tolerance = check_tolerance(tolerance)
    if num_reverse is not None:
        num_reverse = check_count("ais", "num_reverse", num_reverse, 2)
    if inputs is not None and mesh is not None:
        raise ValueError("ais.log_likelihood: a mesh is not supported with inputs")
    problem = observed_problem("ais.log_likelihood", m, params, data, inputs)
    target, model_data, inputs, num_cases = (problem.target, problem.data,
                                             problem.inputs, problem.num_examples)
    if inputs is None:
        check_normalizable(target, params, "ais.log_likelihood")
    prepared = setup(target, data if base_log_probs is None else None, base_log_probs,
                     sum_out_sites, kernel)
    forward_key, reverse_key, pick_key = jax.random.split(rng_key, 3)
    log_w = _anneal(target, prepared, params, forward_key, betas, num_chains, mesh,
                    inputs=inputs)
    warn_if_degenerate("ais.log_likelihood", log_w)
    log_ratio, log_z_stderr = (log_mean_exp(log_w) if inputs is None
                               else jax.vmap(log_mean_exp)(log_w))
    positive = _free_energies(target, params, model_data, inputs, num_cases)
    forward = jnp.mean(positive - log_ratio) - prepared.log_z_base
    stderr = (log_z_stderr if inputs is None
              else jnp.sqrt(jnp.sum(log_z_stderr ** 2)) / num_cases)
    log_z = prepared.log_z_base + log_ratio
    if not reverse:
        return AISLikelihoodResult(forward, stderr, log_z, log_z_stderr, log_w)
    if set(prepared.summed) != set(target.latent_sites):
        raise ValueError("ais.log_likelihood: reverse AIS from the data needs the latent "
                         f"sites {list(target.latent_sites)} summed out in closed form")
    if num_reverse is not None and num_reverse < num_cases:
        pick = jax.random.choice(pick_key, num_cases, (num_reverse,), replace=False)
        model_data = jax.tree.map(lambda v: v[pick], model_data)
        inputs = None if inputs is None else jax.tree.map(lambda v: v[pick], inputs)
        positive = positive[pick]
    start = start_states(target, prepared.summed, model_data, None)
    num_start = jax.tree.leaves(start)[0].shape[0]
    if inputs is None:
        log_w_reverse = _anneal(target, prepared, params, reverse_key, betas[::-1].copy(),
                                num_start, mesh, start)
    else:  # one chain per example, each under its inputs
        start = jax.tree.map(lambda v: v[:, None], start)
        log_w_reverse = _anneal(target, prepared, params, reverse_key, betas[::-1].copy(),
                                1, None, start, inputs)[:, 0]
    # per case: log p̂(v) = F(v) − log Z_q + log ŵ(v), ŵ estimating Z_q / Z
    lower = jnp.mean(positive + log_w_reverse) - prepared.log_z_base
    # the spread of the weights, not of the cases' likelihoods: with a perfect schedule
    # every reverse weight is Z_q / Z (the forward standard error, too, is that of log Z)
    lower_stderr = jnp.std(log_w_reverse) / jnp.sqrt(num_start)
    out = AISLikelihoodResult(forward, stderr, log_z, log_z_stderr, log_w,
                              caveat=RAISE_CAVEAT, **bracket(forward, stderr, lower,
                                                             lower_stderr, "reverse"))
    warn_if_wide("ais.log_likelihood", out, tolerance, "the mean log-likelihood", "reverse")
    return out


def _free_energies(target: Target, params: dict, x: dict, inputs: dict | None,
                   num: int) -> jax.Array:
    """F(x_n; θ) of each case (under its inputs), latent sites summed out; the cases are
    padded to a power of two, so one program serves every number of cases up to it."""
    fn = cached(target.cache_key, ("ais.free_energies",), lambda: jax.jit(jax.vmap(
        lambda p, y, u: (target.bind(**u) if u else target).free_energy(p, y),
        (None, 0, 0))))
    length = padded_length(num)
    padded_inputs = {} if inputs is None else pad_examples(inputs, length)
    return first(fn(params, pad_examples(x, length), padded_inputs), num)


def _anneal(target: Target, prepared: Setup, params: dict, rng_key: jax.Array,
            betas: np.ndarray, num_chains: int, mesh: jax.sharding.Mesh | None,
            start: dict | None = None, inputs: dict | None = None) -> jax.Array:
    """Final log-weights of ``num_chains`` runs along ``betas`` (from ``start``, or from
    the base when it is None); with ``inputs``, ``num_chains`` runs per example (leading
    axis of the result and of ``start``), each under its inputs."""
    spec = (prepared.spec if start is None
            else reverse_kernel(target, prepared.spec, prepared.summed))
    shape = (len(betas), None if inputs is None else int(jax.tree.leaves(inputs)[0].shape[0]))
    run = _cached_run(target, spec, prepared.summed, num_chains, mesh, start is not None,
                      None if inputs is None else tuple(sorted(inputs)), shape)
    args = (params, prepared.logq, rng_key, jnp.asarray(betas, jnp.result_type(float)),
            start, inputs)
    with use_mesh(mesh):
        log_w = run(*args)
    if log_w.is_fully_addressable:
        return log_w
    # chains on several processes (jax.distributed): every process gets all the weights
    return jnp.asarray(distributed.to_host(log_w))


def _cached_run(target: Target, spec: KernelSpec, summed: tuple, num_chains: int,
                mesh: jax.sharding.Mesh | None, started: bool, input_names: tuple | None,
                shape: tuple):
    """The jitted annealing run, in the bounded compile cache per kernel spec, summed
    sites, number of chains, mesh, whether it is given its starting states, the names of
    its inputs and ``shape`` (the number of βs and of examples): one program per entry,
    so that schedules and data sets of many lengths do not pile programs up (an
    unhashable spec: built at each call). Parameters, base, schedule, starting states and
    inputs are its arguments, so repeated estimates (e.g. along a learning curve) compile
    once."""
    key = ("ais", spec, summed, num_chains, mesh, started, input_names, shape)
    return cached(target.cache_key, key, lambda: _build_run(target, spec, summed, num_chains))


def _adapted_like(states, previous):
    """Fresh kernel ``states`` that keep the step size adapted so far in ``previous``
    (a gradient kernel's; other states are returned as they are)."""
    if hasattr(previous, "step_size"):
        return states._replace(step_size=previous.step_size, adapting=previous.adapting)
    return states


def _build_run(target, spec, summed, num_chains):
    domains = target.state_sites
    kernel, refresh = spec.build(target), refreshes(target, spec, summed)
    block = {s: None for s in summed}

    def anneal(f, logq, rng_key, betas, start):
        """Final log-weights of the chains, annealing from the base ``logq`` to ``f``."""
        def base_value(x):
            return sum(base_log_prob(domains[s], x[s], logq[s]) for s in domains)

        def base_conditionals(x, unused_domains, block):  # independent variables
            return {s: logq[s] if idx is None else logq[s][idx] for s, idx in block.items()}

        base = LogDensity(base_value, base_conditionals)

        def tempered(beta):
            return linear_combination((1.0 - beta, base), (beta, f))

        def marginal(beta, x):
            """log Σ_summed exp(tempered(beta)) — the weight's log-density at β."""
            if not summed:
                return tempered(beta)(x)
            return sum_out(tempered(beta), x, domains, block)

        init_key, run_key = jax.random.split(rng_key)
        if start is None:
            x = base_draws(domains, logq, init_key, num_chains, betas.dtype)
        else:
            x = {s: v.astype(betas.dtype) for s, v in start.items()}
        x = shard_particles(x)
        states = init_chains(kernel, x, tempered(betas[0]))

        def increment(position, previous, beta):
            return (jax.vmap(lambda y: marginal(beta, y))(position)
                    - jax.vmap(lambda y: marginal(previous, y))(position))

        def move(rng_key, states, beta):
            target = tempered(beta)
            if refresh:
                rng_key, refresh_key = jax.random.split(rng_key)
                keys = jax.random.split(refresh_key, num_chains)
                position = jax.vmap(lambda k, y: draw_block(k, target, y, domains, block))(
                    keys, states.position)
                states = _adapted_like(init_chains(kernel, position, target), states)
            else:  # the state at the new β (a gradient kernel's cached log-density)
                states = refresh_chains(kernel, states, target)
            return step_chains(kernel, rng_key, states, target)[0]

        # Step k weights the chains from β_k to β_{k+1}, then moves them at β_{k+1}: the
        # weight and the move's first block update see the same state (XLA computes their
        # shared products once, e.g. an RBM's v·W), and no move is made at the last β
        # (its result would never be used)
        def body(carry, xs):
            states, log_w = carry
            key, previous, beta = xs
            log_w = log_w + increment(states.position, previous, beta)
            return (move(key, states, beta), log_w), None

        steps = (jax.random.split(run_key, betas.shape[0] - 2), betas[:-2], betas[1:-1])
        log_w = jnp.zeros(num_chains, betas.dtype)
        (states, log_w), _ = jax.lax.scan(body, (states, log_w), steps)
        return log_w + increment(states.position, betas[-2], betas[-1])

    @jax.jit
    def run(params, logq, rng_key, betas, start, inputs):
        if inputs is None:
            return anneal(target.logdensity_fn(params), logq, rng_key, betas, start)
        keys = jax.random.split(rng_key, jax.tree.leaves(inputs)[0].shape[0])
        return jax.vmap(lambda k, u, s: anneal(target.bind(**u).logdensity_fn(params), logq,
                                               k, betas, s))(keys, inputs, start)

    return run
