"""Standard SMC negative phase (the PSMC paper's baseline): fresh uniform particles at
every update, tempered adaptively to p(·; θ_t)."""

from typing import NamedTuple

from .base import Particles, ess
from .tempering import TemperingEstimator, anneal_from_uniform


class SMCState(NamedTuple):
    """SMC keeps nothing between updates."""


class SMC(TemperingEstimator):
    """SMC: each update draws ``num_particles`` uniform configurations and follows
    β f(·; θ_t), β: 0 → 1, with Δβ chosen so the ESS stays at ``ess_threshold``·S
    (``blackjax.smc``), resampling and moving the particles at each β.

    Its normalizer increments estimate log Z(θ_t) directly (reported as ``log_z``).

    Parameters
    ----------
    num_particles : int
    ess_threshold : float in (0, 1)
        Target ESS fraction of each tempering step.
    kernel : KernelSpec, optional
        Move at each β (default: systematic-scan block Gibbs).
    steps : int
        Kernel steps per β.
    resampling : {"systematic", "stratified", "multinomial", "residual"}
    max_betas : int
        Cap on the number of β per update (the last step then jumps to 1).
    """

    def __init__(self, num_particles, ess_threshold=0.9, kernel=None, steps=1,
                 resampling="systematic", max_betas=1000):
        super().__init__(num_particles, ess_threshold, kernel, steps, resampling, max_betas)

    def init(self, rng_key, m, params, batch):
        self.build_kernel(m)
        return SMCState()

    def update(self, rng_key, state, m, params, batch):
        result = anneal_from_uniform(m, self.build_kernel(m), rng_key, params,
                                     self.num_particles, **self.tempering())
        info = {"ess": ess(result.log_weights), "resampled": 1.0, "rejuvenated": 1.0,
                "num_betas": result.num_betas, "acceptance": result.acceptance,
                "log_z": result.log_z_increment}
        return state, Particles(result.position, result.log_weights), info

    def __repr__(self):
        return (f"SMC(num_particles={self.num_particles}, ess_threshold="
                f"{self.ess_threshold}, kernel={self.kernel!r}, steps={self.steps})")
