"""Standard SMC negative phase (the PSMC paper's baseline): fresh uniform particles at
every update, tempered adaptively to p(·; θ_t)."""

import dataclasses
from typing import NamedTuple

import jax.numpy as jnp
from blackjax.smc.ess import ess

from .base import Particles
from .tempering import TemperingEstimator, TemperingInfo, anneal_from_base


class SMCState(NamedTuple):
    """SMC keeps nothing between updates."""


#: diagnostics of one SMC update (``log_z`` estimates log Z(θ_t) afresh)
SMCInfo = TemperingInfo


@dataclasses.dataclass(frozen=True)
class SMC(TemperingEstimator):
    """SMC: each update draws ``num_particles`` uniform configurations and follows
    β f(·; θ_t), β: 0 → 1, with Δβ chosen so the ESS stays at ``target_ess``·S
    (``blackjax.smc``), resampling and moving the particles at each β.

    Its normalizer increments estimate log Z(θ_t) directly (reported as ``log_z``).

    Parameters
    ----------
    num_particles : int
    target_ess : float in (0, 1)
        Keyword only. Target ESS fraction of each tempering step.
    num_mcmc_steps : int
        Keyword only. Kernel steps per β.
    resampling : {"systematic", "stratified", "multinomial", "residual"}
        Keyword only.
    max_betas : int
        Keyword only. Cap on the number of β per update (the last step then jumps to 1).
    kernel : KernelSpec, optional
        Keyword only. Move at each β (default: systematic-scan block Gibbs).
    """

    def init(self, rng_key, target, params, batch) -> SMCState:
        self.build_kernel(target)
        return SMCState()

    def update(self, rng_key, state, target, params, batch
               ) -> tuple[SMCState, Particles, TemperingInfo]:
        result = anneal_from_base(target, self.build_kernel(target), rng_key, params,
                                     self.num_particles, **self.tempering())
        info = TemperingInfo(ess(result.log_weights), result.num_betas, result.acceptance,
                             result.log_z_increment, jnp.sqrt(result.log_z_var),
                             result.final_acceptance)
        return state, Particles(result.position, result.log_weights), info
