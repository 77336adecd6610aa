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

from .._deprecation import renamed_arguments
from ..conditionals import linear_combination
from .base import Particles, resample
from .tempering import TemperingEstimator, TemperingInfo, anneal_from_uniform, temper


class PSMCState(NamedTuple):
    """Weighted particles of p(·; θ_{t−1}), those parameters, log Z(θ_{t−1}) and the
    estimate's variance."""

    position: dict
    log_weights: jax.Array
    params: Any
    log_z: jax.Array
    log_z_var: jax.Array


#: diagnostics of one PSMC update (``log_z`` is the running estimate of log Z(θ_t))
PSMCInfo = TemperingInfo


@renamed_arguments({"ess_threshold": "target_ess", "steps": "num_mcmc_steps"},
                   ("num_particles", "target_ess", "keep_fraction", "kernel",
                    "num_mcmc_steps", "resampling", "max_betas"))
@dataclasses.dataclass(frozen=True)
class PSMC(TemperingEstimator):
    """PSMC: at each update the bridge p_β ∝ p(·; θ_{t−1})^{1−β} p(·; θ_t)^β, β: 0 → 1,
    with each Δβ the largest that keeps the ESS of the incremental weights
    Δβ·(f(x; θ_t) − f(x; θ_{t−1})) at ``target_ess``·S (the paper's eqs. 27–31 and
    Algorithms 3–4, with ``blackjax.smc``'s solver); resample and move at each β.

    As in the paper, only ``keep_fraction`` of the particles are carried over; the rest
    are re-drawn uniformly at the start of each update, to keep exploring modes. That
    mixture start is a heuristic: with ``keep_fraction < 1`` the running ``log_z`` (the
    sum of the bridges' normalizer increments) is biased; with ``keep_fraction=1`` it is
    the standard SMC estimate. The initial particles and log Z(θ_0) come from tempering
    uniform draws to p(·; θ_0).

    Parameters
    ----------
    num_particles : int
    target_ess : float in (0, 1)
        σ*, the ESS fraction each bridge step keeps (formerly ``ess_threshold``).
    keep_fraction : float in (0, 1]
        Fraction of particles carried over (the paper: one half), rounded to a number of
        particles (:attr:`num_keep`), which must be at least one.
    num_mcmc_steps : int
        Keyword only. Kernel steps per β (formerly ``steps``).
    resampling : {"systematic", "stratified", "multinomial", "residual"}
        Keyword only.
    max_betas : int
        Keyword only. Cap on the number of β per update (the last step then jumps to 1).
    kernel : KernelSpec, optional
        Keyword only. Move at each β (default: systematic-scan block Gibbs).
    """

    keep_fraction: float = 0.5

    def __post_init__(self):
        super().__post_init__()
        self._check_fraction("keep_fraction", high_open=False)
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

    def init(self, rng_key, m, params, batch) -> PSMCState:
        result = anneal_from_uniform(m, self.build_kernel(m), rng_key, params,
                                     self.num_particles, **self.tempering())
        return PSMCState(result.position, result.log_weights, params,
                         result.log_z_increment, result.log_z_var)

    def update(self, rng_key, state, m, params, batch
               ) -> tuple[PSMCState, Particles, TemperingInfo]:
        kernel = self.build_kernel(m)
        resample_key, fresh_key, pick_key, bridge_key = jax.random.split(rng_key, 4)
        num = self.num_particles
        position = resample(resample_key, state.position, state.log_weights,
                            self.resampling)
        num_keep = self.num_keep
        if num_keep < num:
            fresh = m.random_state(fresh_key, (num,))
            redraw = jax.random.permutation(pick_key, num) >= num_keep
            position = jax.tree.map(
                lambda new, old: jnp.where(redraw.reshape((-1,) + (1,) * (old.ndim - 1)),
                                           new, old), fresh, position)
        dtype = state.log_weights.dtype
        before, after = m.logdensity_fn(state.params), m.logdensity_fn(params)
        result = temper(
            kernel, bridge_key, position, jnp.full((num,), 1.0 / num, dtype), before,
            linear_combination((1.0, after), (-1.0, before)), **self.tempering())
        log_z = state.log_z + result.log_z_increment
        log_z_var = state.log_z_var + result.log_z_var
        info = TemperingInfo(ess(result.log_weights), result.num_betas, result.acceptance,
                             log_z, jnp.sqrt(log_z_var))
        new_state = PSMCState(result.position, result.log_weights, params, log_z, log_z_var)
        return new_state, Particles(result.position, result.log_weights), info
