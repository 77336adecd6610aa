"""Persistent SMC (Xiong, Szedmak & Piater 2016): the particles of p(·; θ_{t−1}) are
carried to p(·; θ_t) through an adaptively tempered bridge.

Not blackjax's ``persistent_sampling_smc`` (Karamanis et al.'s persistent sampling),
which is a different algorithm.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .base import Particles, check_fraction, ess, resample
from .tempering import TemperingEstimator, anneal_from_uniform, temper


class PSMCState(NamedTuple):
    """Weighted particles of p(·; θ_{t−1}), those parameters, and log Z(θ_{t−1})."""

    position: dict
    log_weights: jax.Array
    params: Any
    log_z: jax.Array


class PSMC(TemperingEstimator):
    """PSMC: at each update the bridge p_β ∝ p(·; θ_{t−1})^{1−β} p(·; θ_t)^β, β: 0 → 1,
    with each Δβ the largest that keeps the ESS of the incremental weights
    Δβ·(f(x; θ_t) − f(x; θ_{t−1})) at ``ess_threshold``·S (the paper's eqs. 27–31 and
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
    ess_threshold : float in (0, 1)
        σ*, the ESS fraction each bridge step keeps.
    keep_fraction : float in (0, 1]
        Fraction of particles carried over (the paper: one half).
    kernel : KernelSpec, optional
        Move at each β (default: systematic-scan block Gibbs).
    steps : int
        Kernel steps per β.
    resampling : {"systematic", "stratified", "multinomial", "residual"}
    max_betas : int
        Cap on the number of β per update (the last step then jumps to 1).
    """

    def __init__(self, num_particles, ess_threshold=0.9, keep_fraction=0.5, kernel=None,
                 steps=1, resampling="systematic", max_betas=1000):
        super().__init__(num_particles, ess_threshold, kernel, steps, resampling, max_betas)
        self.keep_fraction = check_fraction("PSMC", "keep_fraction", keep_fraction,
                                            high_open=False)

    def init(self, rng_key, m, params, batch):
        result = anneal_from_uniform(m, self.build_kernel(m), rng_key, params,
                                     self.num_particles, **self.tempering())
        return PSMCState(result.position, result.log_weights, params,
                         result.log_z_increment)

    def update(self, rng_key, state, m, params, batch):
        kernel = self.build_kernel(m)
        resample_key, fresh_key, pick_key, bridge_key = jax.random.split(rng_key, 4)
        num = self.num_particles
        position = resample(resample_key, state.position, state.log_weights,
                            self.resampling)
        num_keep = int(round(self.keep_fraction * num))
        if num_keep < num:
            fresh = m.random_state(fresh_key, (num,))
            redraw = jax.random.permutation(pick_key, num) >= num_keep
            position = jax.tree.map(
                lambda new, old: jnp.where(redraw.reshape((-1,) + (1,) * (old.ndim - 1)),
                                           new, old), fresh, position)
        previous = state.params
        dtype = state.log_weights.dtype
        result = temper(
            kernel, bridge_key, position, jnp.full((num,), 1.0 / num, dtype),
            lambda x: m.log_potential(previous, x).astype(dtype),
            lambda x: (m.log_potential(params, x) - m.log_potential(previous, x)
                       ).astype(dtype),
            **self.tempering())
        log_z = state.log_z + result.log_z_increment
        info = {"ess": ess(result.log_weights), "resampled": 1.0, "rejuvenated": 1.0,
                "num_betas": result.num_betas, "acceptance": result.acceptance,
                "log_z": log_z}
        new_state = PSMCState(result.position, result.log_weights, params, log_z)
        return new_state, Particles(result.position, result.log_weights), info

    def __repr__(self):
        return (f"PSMC(num_particles={self.num_particles}, ess_threshold="
                f"{self.ess_threshold}, keep_fraction={self.keep_fraction}, "
                f"kernel={self.kernel!r}, steps={self.steps})")
