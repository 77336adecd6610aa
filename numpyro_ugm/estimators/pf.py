"""Particle-filtered MCMC-MLE (Asuncion, Liu, Ihler & Smyth 2010, Algorithm 2)."""

import dataclasses
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
from blackjax.smc.ess import ess

from ..kernels.base import KernelSpec
from .base import Particles, uniform_log_weights
from .reweighting import Draw, ReweightingEstimator


class PFState(NamedTuple):
    """Weighted particles, their free energies F(x; θ) at the parameters the weights
    refer to, the running estimate of log Z(θ), updates since the last rejuvenation,
    (for the estimate's variance) that variance at the last rejuvenation and the
    weights the particles had then, and the current forced-rejuvenation interval."""

    position: dict
    log_weights: jax.Array
    free_energy: jax.Array
    log_z: jax.Array
    since_rejuvenation: jax.Array
    log_z_var: jax.Array
    segment_log_weights: jax.Array
    interval: jax.Array


class PFInfo(NamedTuple):
    """Diagnostics of one PF update.

    Attributes
    ----------
    ess : effective sample size of the reweighted particles (before any resampling)
    resampled : 1.0 if the particles were resampled (on a low ESS), else 0.0
    rejuvenated : 1.0 if the kernel moved them (after any resampling), else 0.0
    acceptance : mean kernel acceptance of the rejuvenation (NaN when none ran)
    log_z : running estimate of log Z(θ_t)
    log_z_se : its approximate standard error (also that of the running
        log-likelihood; see :func:`~numpyro_ugm.estimators.reweighting.reweight`)
    equilibrium_z : the rejuvenation's equilibrium check (see :func:`equilibrium_z`;
        NaN when none ran)
    interval : updates after which a rejuvenation is forced, as it stands after this one
    reannealed : 1.0 if the running log Z was impossible and the particles and log Z
        were drawn afresh by tempering from the uniform distribution, else 0.0
    """

    ess: jax.Array
    resampled: jax.Array
    rejuvenated: jax.Array
    acceptance: jax.Array
    log_z: jax.Array
    log_z_se: jax.Array
    equilibrium_z: jax.Array
    interval: jax.Array
    reannealed: jax.Array


def statistics(target, params: dict, position: dict) -> jax.Array:
    """∇θ F(x_s; θ) of every particle, flattened: (S, number of parameter entries)."""
    grads = jax.vmap(jax.grad(lambda p, x: target.free_energy(p, x)), (None, 0))(params,
                                                                            position)
    leaves = jax.tree.leaves(grads)
    return jnp.concatenate([leaf.reshape(leaf.shape[0], -1) for leaf in leaves], axis=1)


def equilibrium_z(log_weights: jax.Array, before: jax.Array, after: jax.Array,
                  after_log_weights: Optional[jax.Array] = None) -> jax.Array:
    """How far the kernel moved the particles' negative phase, as a mean squared z-score.

    ``before``: ∇θ F(x_s; θ_t) of the weighted particles (:func:`statistics`);
    ``after``: the same of the particles moved by the kernel at θ_t (resampled from
    them first, or keeping their weights ``after_log_weights``; ``None``: uniform). If
    the weighted particles represented p(·; θ_t), the kernel (which leaves it invariant)
    would move each component of their weighted mean by noise only, and the mean of the
    squared z-scores would be about 1 (less: the moved set is correlated with the
    first). A large value shows they did not — typically because no particle holds mass
    the parameters have moved to, which the ESS cannot see. Each set counts as its ESS
    of independent draws; the standard error is floored at that of one particle
    changing a statistic by one unit.
    """
    if after_log_weights is None:
        after_log_weights = uniform_log_weights(after.shape[0]).astype(after.dtype)

    def moments(log_w, values):
        w = jnp.exp(log_w)
        mean = w @ values
        return mean, (w @ (values - mean) ** 2) / ess(log_w)

    mean_before, var_before = moments(log_weights, before)
    mean_after, var_after = moments(after_log_weights, after)
    se = jnp.maximum(jnp.sqrt(var_before + var_after), 1.0 / before.shape[0])
    return jnp.mean(((mean_after - mean_before) / se) ** 2)


@dataclasses.dataclass(frozen=True)
class PF(ReweightingEstimator):
    """PF: importance weights carried recursively along the optimizer's path,
    w_s ← w_s · [p(x_s; θ_t) / p(x_s; θ_{t−1})]^{1/T} (eqs. 10 and 14); when the ESS falls
    below ``resample_threshold``·S, resample and rejuvenate with ``num_mcmc_steps``
    kernel steps at θ_t.

    Latent sites are summed out in the weights (Rao-Blackwellized: F instead of f).
    The initial particles and log Z(θ_0) come from tempering uniform draws to p(·; θ_0);
    each update adds log Σ_s w_s exp(F(x_s; θ_t) − F(x_s; θ_{t−1})) to the running
    ``log_z`` (exact in expectation at T = 1; with T ≠ 1 the weights are a heuristic
    and so is the estimate).

    With ``resample_threshold > 1`` every update resamples and rejuvenates: the paper's
    "PCD with a sampling-importance-resampling step" (its Sec. 3.2); with unit weights
    too (``temperature=inf``) it is exactly PCD-n.

    The ESS cannot see mass that moved to configurations no particle holds: weights that
    stay even while the parameters travel leave PF estimating the negative phase from a
    few stale configurations, and learning drifts or diverges without a sign in the ESS
    (measured: ``benchmarks/results/estimator_map.md``). PF guards against it twice:

    * it moves its particles after every update by default (``rejuvenate_every=1``),
      resampling them only when the ESS is low: a move keeps the weights, which stay
      valid since the kernel leaves p(·; θ_t) invariant (resampling even weights would
      only add noise). A longer ``rejuvenate_every`` lets it skip moves, as
      the paper intends, and is then adaptive (``adaptive=True``): the forced interval
      starts at 1 and doubles up to ``rejuvenate_every`` after each move whose check
      (:func:`equilibrium_z`) finds the particles at equilibrium, and falls back to 1
      when one does not. ``rejuvenate_every=None`` is the paper's PF: move on a low ESS
      only;
    * it re-anneals (draws particles and log Z afresh by tempering from the uniform
      distribution, as at its start) when the running log Z falls below a lower bound
      that the training cases and particles give
      (:func:`~numpyro_ugm.estimators.reweighting.log_z_below_bound`). This is what turns the
      paper's PF from diverging into learning, and what keeps its running
      log-likelihood from rising while the exact one falls.

    Parameters
    ----------
    num_particles : int
    resample_threshold : float > 0
        Keyword only. Fraction of S below which the ESS triggers resampling (> 1:
        always).
    num_mcmc_steps : int
        Keyword only. Kernel steps n at each move.
    temperature : float > 0
        Keyword only. Weight temperature T (``inf``: unit weights).
    resampling : {"systematic", "stratified", "multinomial", "residual"}
        Keyword only.
    kernel : KernelSpec, optional
        Keyword only. Default: systematic-scan block Gibbs.
    rejuvenate_every : int or None
        Keyword only. Also move the particles (keeping their weights) after this many
        updates without a move (default 1: every update; the paper's VBM study: every
        100 epochs; None: on a low ESS only). With ``adaptive``, the longest forced
        interval.
    adaptive : bool
        Keyword only. Adapt the forced interval by the equilibrium check (when
        ``rejuvenate_every > 1``). False: a fixed interval.
    equilibrium_threshold : float > 0
        Keyword only. z above which the check finds the particles off equilibrium.
    check_log_z : bool
        Keyword only. As in :class:`~numpyro_ugm.estimators.mcmcmle.MCMCMLE`.
    """

    num_particles: int
    _: dataclasses.KW_ONLY
    resample_threshold: float = 0.9
    num_mcmc_steps: int = 1
    temperature: float = 1.0
    resampling: str = "systematic"
    kernel: Optional[KernelSpec] = None
    rejuvenate_every: Optional[int] = 1
    adaptive: bool = True
    equilibrium_threshold: float = 2.0
    check_log_z: bool = True

    def __post_init__(self):
        positive = lambda v: v > 0  # noqa: E731
        self._check_count("num_particles")
        self._check_number("resample_threshold", positive, "> 0 (a fraction of num_particles)")
        self._check_count("num_mcmc_steps")
        self._check_number("temperature", positive, "> 0")
        self._check_resampling()
        if self.rejuvenate_every is not None:
            self._check_count("rejuvenate_every")
        self._set("adaptive", bool(self.adaptive))
        self._check_number("equilibrium_threshold", positive, "> 0")
        self._set("check_log_z", bool(self.check_log_z))
        self._check_kernel()

    @property
    def checking(self) -> bool:
        """Whether the forced interval adapts by the equilibrium check."""
        return self.adaptive and (self.rejuvenate_every or 1) > 1

    def _first_interval(self) -> int:
        return 1 if self.checking else (self.rejuvenate_every or 0)

    def init(self, rng_key, target, params, batch) -> PFState:
        draw = self._fresh(self.build_kernel(target), rng_key, target, params)
        return PFState(draw.position, draw.log_weights, draw.free_energy, draw.log_z,
                       jnp.zeros((), jnp.int32), draw.log_z_var, draw.log_weights,
                       jnp.asarray(self._first_interval(), jnp.int32))

    def update(self, rng_key, state, target, params, batch) -> tuple[PFState, Particles, PFInfo]:
        since = state.since_rejuvenation + 1
        nan = lambda new: jnp.full((), jnp.nan, new.free_energy.dtype)  # noqa: E731

        def kept(new):  # the reference moves to θ_t
            return Draw(state.position, new.log_weights, new.free_energy, new.log_z,
                        new.log_z_var, nan(new)), nan(new)

        def rejuvenated(new, draw):  # resampled on a low ESS only: a move keeps weights
            z = (equilibrium_z(new.log_weights, statistics(target, params, state.position),
                               statistics(target, params, draw.position), draw.log_weights)
                 if self.checking else nan(new))
            return draw, z.astype(new.free_energy.dtype)

        done = self.reweight_or_renew(
            rng_key, target, params, batch, state.position, state.free_energy, state.log_z,
            keep=kept, renew=rejuvenated, reanneal=lambda new, draw: (draw, nan(new)),
            threshold=self.resample_threshold, count=since,
            every=None if self.rejuvenate_every is None else state.interval,
            log_weights=state.log_weights, temperature=self.temperature,
            log_z_var=state.log_z_var, segment_log_weights=state.segment_log_weights)
        new, renewing, impossible = done.reweighted, done.renewed, done.reannealed
        draw, z = done.outcome
        renewed = lambda now, then: jnp.where(renewing, now, then)  # noqa: E731
        interval = state.interval
        if self.checking:
            longer = jnp.minimum(2 * interval, self.rejuvenate_every)
            interval = renewed(jnp.where(z > self.equilibrium_threshold, 1, longer),
                               interval).astype(jnp.int32)
        new_state = PFState(draw.position, draw.log_weights, draw.free_energy, draw.log_z,
                            renewed(0, since).astype(jnp.int32),
                            renewed(draw.log_z_var, state.log_z_var),
                            renewed(draw.log_weights, state.segment_log_weights), interval)
        dtype = new.free_energy.dtype
        info = PFInfo(new.ess, (new.triggered & done.low_ess & ~impossible).astype(dtype),
                      renewing.astype(dtype), draw.acceptance, draw.log_z,
                      jnp.sqrt(draw.log_z_var), z, interval.astype(dtype),
                      impossible.astype(dtype))
        return new_state, Particles(draw.position, draw.log_weights), info
