"""Adaptive tempering on blackjax's SMC: the engine of SMC, PSMC and of the weighted
estimators' initial draw.

A tempered path p_β(x) ∝ exp(g(x) + β l(x)), β: 0 → 1, is followed with
``blackjax.smc.tempered`` steps (resample, move with the kernel at the current β,
reweight by Δβ·l); each Δβ is the largest that keeps the ESS of the incremental weights
at ``target_ess``·S, found by ``blackjax.smc.ess.ess_solver`` (the bisection of the PSMC
paper's Algorithm 3). The log-normalizer increments are summed: they estimate
log Z_1 − log Z_0.
"""

import dataclasses
import logging
import warnings
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.smc import from_mcmc, solver, tempered
from blackjax.smc import resampling as bj_resampling
from blackjax.smc.ess import ess_solver

from ..conditionals import constant_log_density, linear_combination
from ..kernels.base import Kernel, KernelSpec
from ..runtime.sharding import shard_particles
from .base import Estimator


class TemperResult(NamedTuple):
    """Weighted particles at β = 1 and what the path cost.

    Attributes
    ----------
    position : dict of (S, ...) arrays
    log_weights : (S,) normalized log-weights
    log_z_increment : estimate of log Z_1 − log Z_0
    log_z_var : its approximate variance: the larger of the summed delta-method
        variances of the steps' normalizers, Σ_s w_s² − 1/S (w: a step's normalized
        incremental weights), and the genealogy estimate of
        :func:`genealogy_log_z_var`. Both understate the spread when the moves mix
        slowly (measured: ``benchmarks/results/running_log_z.md``).
    num_betas : number of tempering steps taken (β values after β_0 = 0)
    acceptance : mean kernel acceptance over the path
    betas : (max_betas,) array or None
        With ``record_path=True``: β after each step (NaN after the last, which is 1).
    ess : (max_betas,) array or None
        With ``record_path=True``: ESS fraction (ESS / S) of each step's incremental
        weights, on the particles that step moved (NaN after the last step).
    final_acceptance : scalar
        Mean kernel acceptance of the last tempering step (where a gradient kernel's
        step size, tuned along the path, has got to; within the margin of the
        warning, :data:`ACCEPTANCE_MARGIN`, of its target unless the path was too short
        or too abrupt for it).
    step_acceptance : (max_betas,) array or None
        With ``record_path=True``: mean kernel acceptance of each step (NaN after the
        last).
    step_size : scalar or None
        A tuned kernel's step size tuned on the last step's moves (at the last β's
        predecessor, the target the particles were moved at); None for other kernels.
    """

    position: dict
    log_weights: jax.Array
    log_z_increment: jax.Array
    log_z_var: jax.Array
    num_betas: jax.Array
    acceptance: jax.Array
    betas: Any = None
    ess: Any = None
    final_acceptance: Any = None
    step_acceptance: Any = None
    step_size: Any = None


#: :func:`temper` warns when a tuned kernel's acceptance at the last step is further
#: than this from its target acceptance.
ACCEPTANCE_MARGIN = 0.1


def warn_acceptance(final, target) -> None:
    """The warning of :func:`temper` (a host callback) when the last step's acceptance
    ``final`` is more than :data:`ACCEPTANCE_MARGIN` from the kernel's ``target``. A
    warning filter that turns it into an error cannot raise through the compiled run:
    the message then goes to this module's logger instead. The margin is checked here
    too: under ``vmap`` the compiled check runs the callback for every run (or with the
    whole batch), on target or not."""
    final, target = np.asarray(final, float), np.asarray(target, float)
    off = np.abs(final - target) > ACCEPTANCE_MARGIN
    if not np.any(off):
        return
    final, target = final[off].flat[0], np.broadcast_to(target, off.shape)[off].flat[0]
    message = (
        f"temper: the gradient kernel's acceptance at the last tempering step is "
        f"{float(final):.3g}, more than {ACCEPTANCE_MARGIN} from its target "
        f"{float(target):.3g}: its step size, tuned along the path, had too few steps to "
        "settle (give more steps per beta, a higher target_ess for more betas, or a "
        "step_size near the right one); the moves mix less than intended")
    try:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    except Warning:
        logging.getLogger(__name__).warning(message)


def temper(kernel: Kernel, rng_key: jax.Array, position: dict, weights: jax.Array,
           logprior_fn: Callable, loglikelihood_fn: Callable, *, target_ess: float,
           num_mcmc_steps: int = 1, resampling: str = "systematic", max_betas: int = 1000,
           record_path: bool = False, step_size: Any = None) -> TemperResult:
    """Follow p_β ∝ exp(logprior + β loglikelihood) from β = 0 to 1 adaptively.

    A kernel with a :class:`~numpyro_ugm.kernels.base.Tuning` (the gradient kernels)
    moves the whole population one sweep at a time at a shared step size, tuned after
    each sweep towards the kernel's target acceptance
    (:meth:`~numpyro_ugm.kernels.base.Tuning.rescaled`, from the population's mean
    acceptance) and carried to the next β (moved on by its trend along the path,
    :func:`_next_step_size`), as blackjax's ``inner_kernel_tuning`` sets the next
    step's kernel parameters from the previous step's.

    Parameters
    ----------
    kernel : Kernel
        A bound kernel (blackjax contract), moved at each β.
    rng_key : PRNGKey
    position : dict of (S, ...) arrays
        Particles distributed (with ``weights``) as p_0.
    weights : (S,) array
        Their normalized weights (not log).
    logprior_fn, loglikelihood_fn : callables of one configuration
    target_ess : float in (0, 1)
        ESS fraction each Δβ keeps.
    num_mcmc_steps : int
        Kernel steps per β.
    resampling : str
        A ``blackjax.smc.resampling`` scheme.
    max_betas : int
        At most this many steps: the last one jumps to β = 1.
    record_path : bool
        Also return each step's β, ESS fraction and mean acceptance
        (``TemperResult.betas``, ``.ess`` and ``.step_acceptance``, fixed-size buffers of
        ``max_betas`` entries, NaN-padded); for diagnostics and tests.
    step_size : scalar, optional
        A tuned kernel's step size at the first β (default: the tuning's initial one),
        e.g. ``TemperResult.step_size`` of a path that ended at p_0.

    Warns
    -----
    RuntimeWarning
        When the kernel is tuned (a gradient kernel) and its mean acceptance at the last
        step is more than :data:`ACCEPTANCE_MARGIN` from its target acceptance (checked
        on the host through ``jax.debug.callback``, also inside a compiled learner).
    """
    step = tempered.build_kernel(logprior_fn, loglikelihood_fn, kernel.step, kernel.init,
                                 getattr(bj_resampling, resampling),
                                 update_particles_fn=_moves(kernel, logprior_fn,
                                                            loglikelihood_fn, resampling))
    batched_loglikelihood = jax.vmap(loglikelihood_fn)
    dtype, num = weights.dtype, weights.shape[0]

    def next_beta(state, count):
        remaining = 1.0 - state.tempering_param
        delta = ess_solver(batched_loglikelihood, state.particles, target_ess, remaining,
                           solver.dichotomy)
        delta = jnp.where(jnp.isfinite(delta) & (delta > 0), delta, remaining)
        last = (count + 1 >= max_betas) | (delta >= remaining)
        return jnp.where(last, 1.0, state.tempering_param + delta).astype(dtype)

    def cond(carry):
        return carry[1].tempering_param < 1.0

    tuning = kernel.tuning

    def body(carry):
        key, state, log_z, (eve, step_var), count, (acceptance, _), path, step_size = carry
        key, step_key = jax.random.split(key)
        parameters = {} if tuning is None else {"step_size": step_size[0][None]}
        moved_at = state.tempering_param
        state, info = step(step_key, state, num_mcmc_steps, next_beta(state, count),
                           parameters)
        rate = jnp.mean(info.update_info.acceptance_rate)
        if tuning is not None:  # the next β's moves start at the step size tuned on these
            step_size = _next_step_size(step_size, info.update_info, moved_at,
                                        state.tempering_param)
        eve = eve[info.ancestors]
        step_var = step_var + jnp.maximum(jnp.sum(state.weights ** 2) - 1.0 / num, 0.0)
        if record_path:
            ess_fraction = 1.0 / (num * jnp.sum(state.weights ** 2))
            path = (path[0].at[count].set(state.tempering_param),
                    path[1].at[count].set(ess_fraction.astype(dtype)),
                    path[2].at[count].set(rate.astype(dtype)))
        return (key, state, log_z + info.log_likelihood_increment, (eve, step_var), count + 1,
                (acceptance + rate, rate.astype(dtype)), path, step_size)

    init = tempered.TemperedSMCState(position, weights, jnp.zeros((), dtype))
    zero = jnp.zeros((), dtype)
    path = ((jnp.full((max_betas,), jnp.nan, dtype),) * 3 if record_path else None)
    if step_size is None:
        step_size = 1.0 if tuning is None else tuning.step_size
    step_size = jnp.asarray(step_size, dtype)
    step_size = (step_size, jnp.log(step_size), jnp.zeros((), dtype), jnp.zeros((), bool))
    _, state, log_z, (eve, step_var), count, (acceptance, final), path, tuned = jax.lax.while_loop(
        cond, body, (rng_key, init, zero, (jnp.arange(num), zero), jnp.zeros((), jnp.int32),
                     (zero, jnp.full((), jnp.nan, dtype)), path, step_size))
    if tuning is not None:
        goal = jnp.asarray(tuning.target_acceptance, dtype)
        jax.lax.cond(jnp.abs(final - goal) > ACCEPTANCE_MARGIN,
                     lambda: jax.debug.callback(warn_acceptance, final, goal),
                     lambda: None)
    log_z_var = jnp.maximum(genealogy_log_z_var(state.weights, eve, count), step_var)
    betas, ess_path, steps = path if record_path else (None, None, None)
    return TemperResult(state.particles, jnp.log(state.weights), log_z, log_z_var, count,
                        acceptance / jnp.maximum(count, 1), betas, ess_path, final, steps,
                        None if tuning is None else jnp.exp(tuned[1]))


class TunedMoves(NamedTuple):
    """What the moves of one β report when the kernel is tuned: ``acceptance_rate``
    ``(num_mcmc_steps, S)`` and the ``step_size`` tuned on them, for the next β."""

    acceptance_rate: jax.Array
    step_size: jax.Array


#: acceptances between which a sweep's mean acceptance says how far its step size is
#: from the target (outside, :meth:`~numpyro_ugm.kernels.base.Tuning.rescaled` clips)
INFORMATIVE = (0.1, 0.9)


def _next_step_size(carry: tuple, moves: TunedMoves, moved_at, beta) -> tuple:
    """The step size the next β's moves start at, from ``moves`` (this step's, made at
    β = ``moved_at`` before the reweighting to ``beta``, where the next moves are made).

    ``moves.step_size`` is the step size that this step's last sweep says hits the
    target at ``moved_at``; as β grows the target sharpens (or widens) steadily, so the
    next moves start at that value moved on by its change since the previous step's,
    in proportion to the β increments (never more than that change, and by a factor e
    at most), where both were measured at an informative acceptance
    (:data:`INFORMATIVE`). ``carry``: (next step size, the previous step's tuned log
    step size, its β, whether it was informative)."""
    _, previous, previous_at, informative = carry
    tuned = jnp.log(moves.step_size)
    last = jnp.mean(moves.acceptance_rate[-1])
    now = (last > INFORMATIVE[0]) & (last < INFORMATIVE[1])
    ahead = jnp.clip((beta - moved_at) / jnp.maximum(moved_at - previous_at, 1e-12), 0.0, 1.0)
    trend = jnp.where(now & informative, ahead * jnp.clip(tuned - previous, -1.0, 1.0), 0.0)
    return (jnp.exp(tuned + trend).astype(moves.step_size.dtype), tuned, moved_at, now)


def _moves(kernel: Kernel, logprior_fn: Callable, loglikelihood_fn: Callable,
           resampling: str) -> Callable:
    """blackjax's ``update_particles_fn`` of a tempered step: resample, move each
    particle ``num_mcmc_steps`` times with ``kernel`` at the current β, reweight.

    A tuned kernel (``kernel.tuning``) moves the whole population one sweep at a time
    at a shared step size (``parameters["step_size"]``, one entry), which after each
    sweep moves to the one that hits the target according to the population's mean
    acceptance (:meth:`~numpyro_ugm.kernels.base.Tuning.rescaled`; one ε from the mean
    acceptance of all chains, as a gradient kernel's ``batch_step`` tunes persistent
    chains by :meth:`~numpyro_ugm.kernels.base.Tuning.adapted`); the step size reached
    is returned in :class:`TunedMoves` for the next β. Untuned kernels run blackjax's
    own moves (the same keys per particle and sweep)."""
    resample_fn, tuning = getattr(bj_resampling, resampling), kernel.tuning

    def tuned_strategy(step_size):
        def strategy(init_fn, target, unused_step, num_mcmc_steps, n_particles):
            def update(keys, particles, unused_parameters):
                states = jax.vmap(lambda x: init_fn(x, target))(particles)
                sweep_keys = jax.vmap(lambda k: jax.random.split(k, num_mcmc_steps))(keys)

                def sweep(carry, keys):
                    states, eps = carry
                    states, info = jax.vmap(
                        lambda k, s: kernel.step(k, s, target, step_size=eps))(keys, states)
                    eps = tuning.rescaled(eps, jnp.mean(info.acceptance_rate)).astype(eps.dtype)
                    return (states, eps), info.acceptance_rate

                (states, eps), accepted = jax.lax.scan(sweep, (states, step_size),
                                                       jnp.swapaxes(sweep_keys, 0, 1))
                return states.position, TunedMoves(accepted, eps)

            return update, n_particles

        return strategy

    def move_at_beta(rng_key, state, num_steps, parameters, unused_target, log_weights_fn):
        # the kernel targets logprior + β loglikelihood as a linear combination, which
        # keeps the log-densities' own conditionals (blackjax's closure would not)
        target = linear_combination((1.0, logprior_fn),
                                    (state.tempering_param, loglikelihood_fn))
        if tuning is None:
            move = from_mcmc.build_kernel(kernel.step, kernel.init, resample_fn)
            return move(rng_key, state, num_steps, parameters, target, log_weights_fn)
        move = from_mcmc.build_kernel(kernel.step, kernel.init, resample_fn,
                                      tuned_strategy(parameters["step_size"][0]))
        return move(rng_key, state, num_steps, {}, target, log_weights_fn)

    return move_at_beta


def genealogy_log_z_var(weights: jax.Array, eve: jax.Array, num_resamplings) -> jax.Array:
    """Approximate variance of an SMC estimate of log Z from its genealogy (after Lee &
    Whiteley's estimator of the normalizer's relative variance): particles that descend
    from the same initial particle ("Eve") count as one draw.

    Parameters
    ----------
    weights : (S,) normalized final weights
    eve : (S,) int array, the initial particle each descends from
    num_resamplings : number of resampling stages on the path
    """
    num = weights.shape[0]
    by_eve = jax.ops.segment_sum(weights, eve, num_segments=num)
    distinct_pairs = 1.0 - jnp.sum(by_eve ** 2)
    factor = (num / (num - 1.0)) ** num_resamplings
    relative = jnp.maximum(1.0 - factor * distinct_pairs, 0.0)
    return jnp.log1p(relative).astype(weights.dtype)


def anneal_from_base(target, kernel: Kernel, rng_key: jax.Array, params: dict,
                     num_particles: int, *, target_ess: float = 0.9,
                     num_mcmc_steps: int = 1, resampling: str = "systematic",
                     max_betas: int = 1000) -> TemperResult:
    """Weighted particles from p(·; θ) by tempering draws of the base distribution
    (uniform on finite sites, the base Normal of real ones) along
    :meth:`~numpyro_ugm.model.target.Target.tempered_fn`, β: 0 → 1.

    Returns
    -------
    TemperResult
        ``log_z_increment`` is here the estimate of log Z(θ) itself (the log of the
        base measure's mass, the number of finite configurations, is added).
    """
    init_key, key = jax.random.split(rng_key)
    position = shard_particles(target.random_state(init_key, (num_particles,)))
    dtype = jnp.result_type(float)
    weights = jnp.full((num_particles,), 1.0 / num_particles, dtype)
    f = target.logdensity_fn(params)
    prior = (target.base_logdensity_fn() if target.real_sites
             else constant_log_density(jnp.zeros((), dtype)))
    result = temper(kernel, key, position, weights, prior, target.excess(f),
                    target_ess=target_ess, num_mcmc_steps=num_mcmc_steps,
                    resampling=resampling, max_betas=max_betas)
    return result._replace(log_z_increment=result.log_z_increment + target.log_num_states)


class TemperingInfo(NamedTuple):
    """Diagnostics of one SMC or PSMC update.

    Attributes
    ----------
    ess : effective sample size of the final weights
    num_betas : number of tempering steps the update took
    acceptance : mean kernel acceptance over the path
    log_z : estimate of log Z(θ_t) (SMC: fresh; PSMC: running)
    log_z_se : its approximate standard error (also that of the running
        log-likelihood; see :class:`TemperResult`)
    final_acceptance : mean kernel acceptance of the path's last tempering step (a
        gradient kernel's, tuned along the path, to set against its target; a warning
        when more than :data:`ACCEPTANCE_MARGIN` away)
    """

    ess: jax.Array
    num_betas: jax.Array
    acceptance: jax.Array
    log_z: jax.Array
    log_z_se: jax.Array
    final_acceptance: jax.Array


@dataclasses.dataclass(frozen=True)
class TemperingEstimator(Estimator):
    """Settings shared by the estimators that temper adaptively (SMC, PSMC); see those
    for the parameters."""

    num_particles: int
    _: dataclasses.KW_ONLY
    target_ess: float = 0.9
    num_mcmc_steps: int = 1
    resampling: str = "systematic"
    max_betas: int = 1000
    kernel: Optional[KernelSpec] = None

    def __post_init__(self):
        self._check_count("num_particles")
        self._check_fraction("target_ess")
        self._check_count("num_mcmc_steps")
        self._check_count("max_betas")
        self._check_resampling()
        self._check_kernel()

    def tempering(self) -> dict:
        """Keyword arguments of :func:`temper` / :func:`anneal_from_base`."""
        return dict(target_ess=self.target_ess, num_mcmc_steps=self.num_mcmc_steps,
                    resampling=self.resampling, max_betas=self.max_betas)
