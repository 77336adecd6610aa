"""Persistent SMC (Xiong, Szedmak & Piater 2016): the particles of p(·; θ_{t−1}) are
carried to p(·; θ_t) through an adaptively tempered bridge.

Not blackjax's ``persistent_sampling_smc`` (Karamanis et al.'s persistent sampling),
which is a different algorithm.
"""

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from blackjax.smc.ess import ess

from ..conditionals import linear_combination
from .base import Particles, resample
from .tempering import TemperingEstimator, anneal_from_base, temper


class PSMCState(NamedTuple):
    """Weighted particles of p(·; θ_{t−1}), those parameters, log Z(θ_{t−1}) and the
    estimate's variance; with a tuned kernel (a gradient kernel), the ``step_size``
    tuned on p(·; θ_{t−1}), where the next bridge's moves start (None: the kernel's
    initial one)."""

    position: dict
    log_weights: jax.Array
    params: Any
    log_z: jax.Array
    log_z_var: jax.Array
    step_size: Any = None


class PSMCInfo(NamedTuple):
    """Diagnostics of one PSMC update.

    Attributes
    ----------
    ess : effective sample size of the final (merged) weights
    num_betas : tempering steps of the bridge from θ_{t−1} to θ_t
    acceptance : mean kernel acceptance over the bridge
    log_z : running estimate of log Z(θ_t)
    log_z_se : its approximate standard error (see
        :class:`~numpyro_ugm.estimators.tempering.TemperResult`)
    fresh_num_betas : tempering steps of the fresh particles' path from the uniform
        distribution (0 without one)
    fresh_share : the share of the merged weight the fresh particles carry (NaN without
        them); their normalizer estimate against the persistent one's
    final_acceptance : mean kernel acceptance of the bridge's last tempering step (see
        :class:`~numpyro_ugm.estimators.tempering.TemperingInfo`)
    """

    ess: jax.Array
    num_betas: jax.Array
    acceptance: jax.Array
    log_z: jax.Array
    log_z_se: jax.Array
    fresh_num_betas: jax.Array
    fresh_share: jax.Array
    final_acceptance: jax.Array


#: how :class:`PSMC` re-draws the particles it does not keep
REDRAWS = ("tempered", "uniform-heuristic")


@dataclasses.dataclass(frozen=True)
class PSMC(TemperingEstimator):
    """PSMC: at each update the bridge p_β ∝ p(·; θ_{t−1})^{1−β} p(·; θ_t)^β, β: 0 → 1,
    with each Δβ the largest that keeps the ESS of the incremental weights
    Δβ·(f(x; θ_t) − f(x; θ_{t−1})) at ``target_ess``·S (the paper's eqs. 27–31 and
    Algorithms 3–4, with ``blackjax.smc``'s solver); resample and move at each β.

    As in the paper, only ``keep_fraction`` of the particles are carried over by the
    bridge; the rest are drawn afresh to keep exploring modes that the persistent ones
    may have lost. By default (``redraw="tempered"``) the fresh particles reach
    p(·; θ_t) through their own tempered path from the uniform distribution (as
    :class:`~numpyro_ugm.SMC` does), with their own estimate of Z(θ_t); the two sets are
    merged with weights in proportion to their sizes times their normalizer estimates,
    so that the merged set is properly weighted and the running Z estimate,
    (n_keep Ẑ_bridge + n_fresh Ẑ_fresh) / S, stays unbiased. A set that lost mass
    (persistent particles that cannot see a new mode) has a lower Ẑ and yields weight
    to the other.

    ``redraw="uniform-heuristic"`` is the paper's scheme: uniform draws join the kept
    particles at the start of the bridge as if they were distributed as p(·; θ_{t−1}).
    It biases the negative phase toward the uniform distribution and the running
    ``log_z`` (measured: ``benchmarks/results/estimator_map.md``); with
    ``keep_fraction=1`` both schemes are the plain SMC bridge. The initial particles
    and log Z(θ_0) come from tempering uniform draws to p(·; θ_0).

    Parameters
    ----------
    num_particles : int
    target_ess : float in (0, 1)
        Keyword only. σ*, the ESS fraction each bridge step keeps.
    keep_fraction : float in (0, 1]
        Keyword only. Fraction of particles carried over (the paper: one half),
        rounded to a number of particles (:attr:`num_keep`), which must be at least one.
    num_mcmc_steps, resampling, max_betas, kernel
        Keyword only. As in :class:`~numpyro_ugm.estimators.smc.SMC`.
    redraw : {"tempered", "uniform-heuristic"}
        Keyword only. How the particles not kept are re-drawn (see above).
    """

    keep_fraction: float = dataclasses.field(default=0.5, kw_only=True)
    redraw: str = dataclasses.field(default="tempered", kw_only=True)

    def __post_init__(self):
        super().__post_init__()
        self._check_fraction("keep_fraction", high_open=False)
        if self.redraw not in REDRAWS:
            raise ValueError(f"PSMC: redraw must be one of {REDRAWS}, got {self.redraw!r}")
        if self.num_keep < 1:
            raise ValueError(
                f"PSMC: keep_fraction={self.keep_fraction} of num_particles="
                f"{self.num_particles} keeps round({self.keep_fraction * self.num_particles:g})"
                f" = 0 particles; it must keep at least one (raise keep_fraction or "
                f"num_particles)")

    @property
    def num_keep(self) -> int:
        """Particles carried over at each update: ``keep_fraction`` of them, rounded."""
        return int(round(self.keep_fraction * self.num_particles))

    def init(self, rng_key, target, params, batch) -> PSMCState:
        result = anneal_from_base(target, self.build_kernel(target), rng_key, params,
                                     self.num_particles, **self.tempering())
        return PSMCState(result.position, result.log_weights, params,
                         result.log_z_increment, result.log_z_var, result.step_size)

    def update(self, rng_key, state, target, params, batch
               ) -> tuple[PSMCState, Particles, PSMCInfo]:
        kernel = self.build_kernel(target)
        resample_key, fresh_key, pick_key, bridge_key = jax.random.split(rng_key, 4)
        num, num_keep = self.num_particles, self.num_keep
        dtype = state.log_weights.dtype
        tempered_redraw = self.redraw == "tempered" and num_keep < num
        bridged = num_keep if tempered_redraw else num
        position = resample(resample_key, state.position, state.log_weights,
                            self.resampling, bridged)
        if self.redraw == "uniform-heuristic" and num_keep < num:
            fresh = target.random_state(fresh_key, (num,))
            redraw = jax.random.permutation(pick_key, num) >= num_keep
            position = jax.tree.map(
                lambda new, old: jnp.where(redraw.reshape((-1,) + (1,) * (old.ndim - 1)),
                                           new, old), fresh, position)
        before, after = target.logdensity_fn(state.params), target.logdensity_fn(params)
        bridge = temper(
            kernel, bridge_key, position, jnp.full((bridged,), 1.0 / bridged, dtype),
            before, linear_combination((1.0, after), (-1.0, before)),
            step_size=state.step_size, **self.tempering())
        log_z = state.log_z + bridge.log_z_increment
        log_z_var = state.log_z_var + bridge.log_z_var
        position, log_weights = bridge.position, bridge.log_weights
        fresh_betas, fresh_share = jnp.zeros((), jnp.int32), jnp.full((), jnp.nan, dtype)
        if tempered_redraw:
            fresh = anneal_from_base(target, kernel, fresh_key, params, num - num_keep,
                                        **self.tempering())
            merged = merge((position, log_weights, log_z, log_z_var),
                           (fresh.position, fresh.log_weights, fresh.log_z_increment,
                            fresh.log_z_var))
            position, log_weights, log_z, log_z_var, fresh_share = merged
            fresh_betas = fresh.num_betas
        info = PSMCInfo(ess(log_weights), bridge.num_betas, bridge.acceptance, log_z,
                        jnp.sqrt(log_z_var), fresh_betas, fresh_share, bridge.final_acceptance)
        new_state = PSMCState(position, log_weights, params, log_z, log_z_var,
                              bridge.step_size)
        return new_state, Particles(position, log_weights), info


def merge(first: tuple, second: tuple) -> tuple:
    """Merge two independent weighted particle sets of the same target, each given as
    ``(position, log_weights, log_z, log_z_var)`` with normalized log-weights and its own
    estimate of log Z.

    Set k of n_k particles gets the share n_k Ẑ_k / Σ_j n_j Ẑ_j of the weight: the union
    is properly weighted and log((n_1 Ẑ_1 + n_2 Ẑ_2) / (n_1 + n_2)), returned as the
    merged log Z, is the log of an unbiased estimate when each Ẑ_k is. Its variance
    (delta method) is Σ_k share_k² var_k.

    Returns
    -------
    position, log_weights, log_z, log_z_var, share of the second set
    """
    sizes = jnp.array([first[1].shape[0], second[1].shape[0]], first[1].dtype)
    log_mass = jnp.log(sizes / jnp.sum(sizes)) + jnp.stack([first[2], second[2]])
    log_z = jax.nn.logsumexp(log_mass)
    share = jnp.exp(log_mass - log_z)
    position = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), first[0], second[0])
    log_weights = jnp.concatenate([first[1] + jnp.log(share[0]),
                                   second[1] + jnp.log(share[1])])
    log_z_var = share[0] ** 2 * first[3] + share[1] ** 2 * second[3]
    return position, log_weights, log_z, log_z_var, share[1]
