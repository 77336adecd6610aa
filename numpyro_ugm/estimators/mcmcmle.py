"""MCMC-MLE (Geyer & Thompson 1992) as a negative-phase estimator, in rounds as in the
PF paper's Algorithm 1 and statnet."""

import dataclasses
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from ..kernels.base import KernelSpec
from .base import Particles, move, resample, uniform_log_weights
from .reweighting import Draw, ReweightingEstimator


class MCMCMLEState(NamedTuple):
    """The sample drawn at the anchor θ_0 of the current round, its free energies
    F(x; θ_0), the running estimate of log Z(θ_0), updates since the draw, the
    estimate's variance, the mean absolute gradient of the last update, and the
    sample's normalized log-weights at θ_0 (uniform but where a round carried them)."""

    position: dict
    anchor_free_energy: jax.Array
    anchor_log_z: jax.Array
    since_reset: jax.Array
    anchor_log_z_var: jax.Array
    gradient: jax.Array
    anchor_log_weights: jax.Array


class MCMCMLEInfo(NamedTuple):
    """Diagnostics of one MCMC-MLE update.

    Attributes
    ----------
    ess : effective sample size of the importance weights (before a new round)
    rejuvenated : 1.0 if the update started a new round (redrew the sample), else 0.0
    log_z : running estimate of log Z(θ_t)
    log_z_se : its approximate standard error (also that of the running
        log-likelihood; see :func:`~numpyro_ugm.estimators.reweighting.reweight`)
    reannealed : 1.0 if the running log Z was impossible and the new round's sample and
        log Z came afresh from tempering uniform draws, else 0.0
    """

    ess: jax.Array
    rejuvenated: jax.Array
    log_z: jax.Array
    log_z_se: jax.Array
    reannealed: jax.Array


@dataclasses.dataclass(frozen=True)
class MCMCMLE(ReweightingEstimator):
    """MCMC-MLE: a fixed sample x_s from p(·; θ_0) and importance log-weights
    F(x_s; θ_t) − F(x_s; θ_0) (eq. 6), added to those the sample carried into the round
    (below). A new round starts — the chains run
    ``num_mcmc_steps`` kernel steps at the current θ, which becomes θ_0 — by the PF
    paper's criteria: when the optimizer has reached the importance-sampled
    approximation's maximizer (the mean absolute gradient fell below
    ``gradient_tol``), when the ESS falls below ``restart_threshold``·S (the sample no
    longer represents p(·; θ_t)), or after ``reset_every`` updates.

    The paper's rounds persist the chains and give them equal weights again. By default
    a round keeps the weights instead (the kernel leaves the weighted sample's target
    p(·; θ_t) unchanged), resampling first when their ESS is below
    ``resample_threshold``·S. Where the chains cannot mix, equal weights would lose the
    mass the weights had moved between the chains' modes, and resampling at every
    round would pile the sample onto copies that the steps do not separate (measured:
    ``benchmarks/results/estimator_map.md``, "Under Adam").

    The first sample comes from tempering uniform draws to p(·; θ_0) (which also gives
    log Z(θ_0)) followed by ``num_mcmc_steps`` steps; ``log_z`` is then carried from
    round to round by the importance-sampling estimate of log Z(θ_t) − log Z(θ_0). When
    that estimate becomes impossible (:func:`~.reweighting.log_z_below_bound`: mass that no
    chain holds), the new round's sample and log Z are drawn afresh the same way.

    Parameters
    ----------
    num_particles : int
    num_mcmc_steps : int
        Keyword only. Kernel steps per redraw.
    reset_every : int
        Keyword only. Round length L in updates: at most this many updates per sample (default 10,
        about PCD-1's cost with 10 sweeps per round). The ESS cannot see mass that moved
        to configurations no particle holds, and the gradient test is not met while the
        importance-sampled objective keeps rising, so at large learning rates the cap
        ends most rounds, and a long one (the paper's 100) lets learning run far from
        the sample (measured: ``benchmarks/results/estimator_map.md``).
    restart_threshold : float in [0, 1)
        Keyword only. Start a new round early when the ESS falls below this fraction
        of S.
    gradient_tol : float >= 0
        Keyword only. Start a new round when the mean absolute value of the last
        update's gradient (over all parameter entries) is below it (0: never).
    kernel : KernelSpec, optional
        Keyword only. Default: systematic-scan block Gibbs.
    resample_threshold : float in [0, 1], optional
        Keyword only. A new round carries the weights, resampling the sample by them
        first when their ESS is below this fraction of S (default 0.9, as PF's);
        ``None``: the paper's rounds, which reset the weights to equal.
    check_log_z : bool
        Keyword only. Re-anneal when the running log Z is impossible (default True; off
        under a conditional model's
        :class:`~numpyro_ugm.estimators.per_example.PerExample`).
    """

    num_particles: int
    _: dataclasses.KW_ONLY
    num_mcmc_steps: int = 10
    reset_every: int = 10
    restart_threshold: float = 0.5
    gradient_tol: float = 0.01
    kernel: Optional[KernelSpec] = None
    resample_threshold: Optional[float] = 0.9
    check_log_z: bool = True

    def __post_init__(self):
        self._check_count("num_particles")
        self._check_count("num_mcmc_steps")
        self._check_count("reset_every")
        self._check_number("restart_threshold", lambda v: 0.0 <= v < 1.0, "in [0, 1)")
        self._check_number("gradient_tol", lambda v: v >= 0, ">= 0")
        if self.resample_threshold is not None:
            self._check_number("resample_threshold", lambda v: 0.0 <= v <= 1.0,
                               "in [0, 1] or None")
        self._set("check_log_z", bool(self.check_log_z))
        self._check_kernel()

    def _fresh(self, kernel, rng_key, target, params) -> Draw:
        """A sample and log Z(θ) drawn afresh: tempering uniform draws to p(·; θ),
        resampling, then ``num_mcmc_steps`` steps."""
        anneal_key, resample_key, key = jax.random.split(rng_key, 3)
        draw = super()._fresh(kernel, anneal_key, target, params)
        position = resample(resample_key, draw.position, draw.log_weights)
        position, acceptance = move(kernel, key, position, target.logdensity_fn(params),
                                    self.num_mcmc_steps)
        energy = target.free_energies(params, position)
        return Draw(position, uniform_log_weights(self.num_particles).astype(energy.dtype),
                    energy, draw.log_z, draw.log_z_var, acceptance)

    def init(self, rng_key, target, params, batch) -> MCMCMLEState:
        draw = self._fresh(self.build_kernel(target), rng_key, target, params)
        dtype = draw.free_energy.dtype
        return MCMCMLEState(draw.position, draw.free_energy, draw.log_z,
                            jnp.zeros((), jnp.int32), draw.log_z_var,
                            jnp.full((), jnp.finfo(dtype).max, dtype), draw.log_weights)

    def update(self, rng_key, state, target, params, batch
               ) -> tuple[MCMCMLEState, Particles, MCMCMLEInfo]:
        def keep(new):  # the round goes on: its anchor θ_0 stays
            return state._replace(since_reset=state.since_reset + 1), new.log_weights

        def new_round(new, draw):  # anchored at θ_t
            return (MCMCMLEState(draw.position, draw.free_energy, draw.log_z,
                                 jnp.zeros((), jnp.int32), draw.log_z_var, state.gradient,
                                 draw.log_weights), draw.log_weights)

        # the paper's rounds: an unweighted sample at θ_0
        carried = None if self.resample_threshold is None else state.anchor_log_weights
        done = self.reweight_or_renew(
            rng_key, target, params, batch, state.position, state.anchor_free_energy,
            state.anchor_log_z, keep=keep, renew=new_round, reanneal=new_round,
            also_renew=state.gradient < self.gradient_tol,
            threshold=self.restart_threshold, count=state.since_reset + 1,
            every=self.reset_every, log_z_var=state.anchor_log_z_var, log_weights=carried,
            segment_log_weights=carried)
        new, impossible = done.reweighted, done.reannealed
        new_state, weights = done.outcome
        dtype = new.log_weights.dtype
        log_z = jnp.where(impossible, new_state.anchor_log_z, new.log_z)
        log_z_var = jnp.where(impossible, new_state.anchor_log_z_var, new.log_z_var)
        info = MCMCMLEInfo(new.ess, done.renewed.astype(dtype), log_z, jnp.sqrt(log_z_var),
                           impossible.astype(dtype))
        return new_state, Particles(new_state.position, weights), info

    def record_gradients(self, state: MCMCMLEState, grads: dict) -> MCMCMLEState:
        """Keep the mean absolute value of the update's gradient (``gradient_tol``)."""
        leaves = jax.tree.leaves(grads)
        size = sum(leaf.size for leaf in leaves)
        mean_abs = sum(jnp.sum(jnp.abs(leaf)) for leaf in leaves) / max(size, 1)
        return state._replace(gradient=mean_abs.astype(state.gradient.dtype))
