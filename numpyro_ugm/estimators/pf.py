"""Particle-filtered MCMC-MLE (Asuncion, Liu, Ihler & Smyth 2010, Algorithm 2)."""

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .base import (Estimator, Particles, check_count, check_resampling, ess,
                   free_energies, move, normalize, resample, uniform_log_weights)
from .tempering import anneal_from_uniform


class PFState(NamedTuple):
    """Weighted particles, their free energies F(x; θ) at the parameters the weights
    refer to, the running estimate of log Z(θ), and updates since the last
    rejuvenation."""

    position: dict
    log_weights: jax.Array
    free_energy: jax.Array
    log_z: jax.Array
    since_rejuvenation: jax.Array


class PF(Estimator):
    """PF: importance weights carried recursively along the optimizer's path,
    w_s ← w_s · [p(x_s; θ_t) / p(x_s; θ_{t−1})]^{1/T} (eqs. 10 and 14); when the ESS falls
    below ``ess_threshold``·S, resample and rejuvenate with ``rejuvenation_steps``
    kernel steps at θ_t. Updates whose ESS stays high skip the kernel entirely.

    Latent sites are summed out in the weights (Rao-Blackwellized: F instead of f).
    The initial particles and log Z(θ_0) come from tempering uniform draws to p(·; θ_0);
    each update adds log Σ_s w_s exp(F(x_s; θ_t) − F(x_s; θ_{t−1})) to the running
    ``log_z`` (exact in expectation at T = 1; with T ≠ 1 the weights are a heuristic
    and so is the estimate).

    With ``ess_threshold > 1`` every update resamples and rejuvenates: the paper's
    "PCD with a sampling-importance-resampling step" (its Sec. 3.2); with unit weights
    too (``temperature=inf``) it is exactly PCD-n.

    Parameters
    ----------
    num_particles : int
    ess_threshold : float > 0
        Fraction of S below which the ESS triggers resampling (> 1: always).
    rejuvenation_steps : int
        Kernel steps n after each resampling.
    temperature : float > 0
        Weight temperature T (``inf``: unit weights).
    resampling : {"systematic", "stratified", "multinomial", "residual"}
    kernel : KernelSpec, optional
        Default: systematic-scan block Gibbs.
    rejuvenate_every : int, optional
        Also resample and rejuvenate after this many updates without one (the paper's
        VBM study: every 100 epochs).
    """

    def __init__(self, num_particles, ess_threshold=0.9, rejuvenation_steps=1,
                 temperature=1.0, resampling="systematic", kernel=None,
                 rejuvenate_every=None):
        self.num_particles = check_count("PF", "num_particles", num_particles)
        if not float(ess_threshold) > 0:
            raise ValueError(f"PF: ess_threshold must be > 0 (a fraction of "
                             f"num_particles), got {ess_threshold}")
        self.ess_threshold = float(ess_threshold)
        self.rejuvenation_steps = check_count("PF", "rejuvenation_steps",
                                              rejuvenation_steps)
        if not float(temperature) > 0:
            raise ValueError(f"PF: temperature must be > 0, got {temperature}")
        self.temperature = float(temperature)
        self.resampling = check_resampling("PF", resampling)
        self.rejuvenate_every = (None if rejuvenate_every is None else
                                 check_count("PF", "rejuvenate_every", rejuvenate_every))
        self.kernel = kernel

    def init(self, rng_key, m, params, batch):
        result = anneal_from_uniform(m, self.build_kernel(m), rng_key, params,
                                     self.num_particles)
        return PFState(result.position, result.log_weights,
                       free_energies(m, params, result.position), result.log_z_increment,
                       jnp.zeros((), jnp.int32))

    def update(self, rng_key, state, m, params, batch):
        kernel = self.build_kernel(m)
        num = self.num_particles
        current = free_energies(m, params, state.position)
        delta = current - state.free_energy
        log_z = state.log_z + jax.nn.logsumexp(state.log_weights + delta)
        scaled = delta if self.temperature == 1.0 else (
            jnp.zeros_like(delta) if math.isinf(self.temperature)
            else delta / self.temperature)
        log_weights = normalize(state.log_weights + scaled)
        ess_value = ess(log_weights)
        since = state.since_rejuvenation + 1
        rejuvenate = ess_value < self.ess_threshold * num
        if self.rejuvenate_every is not None:
            rejuvenate = rejuvenate | (since >= self.rejuvenate_every)

        def rejuvenated(_):
            position = resample(jax.random.fold_in(rng_key, 1), state.position,
                                log_weights, self.resampling)
            position, acceptance = move(kernel, rng_key, position,
                                        m.logdensity_fn(params),
                                        self.rejuvenation_steps)
            return (position, uniform_log_weights(num).astype(log_weights.dtype),
                    free_energies(m, params, position), acceptance.astype(delta.dtype))

        def kept(_):
            return state.position, log_weights, current, jnp.full((), jnp.nan, delta.dtype)

        position, log_weights, energy, acceptance = jax.lax.cond(
            rejuvenate, rejuvenated, kept, None)
        new_state = PFState(position, log_weights, energy, log_z,
                            jnp.where(rejuvenate, 0, since).astype(jnp.int32))
        flag = rejuvenate.astype(delta.dtype)
        info = {"ess": ess_value, "resampled": flag, "rejuvenated": flag,
                "acceptance": acceptance, "log_z": log_z}
        return new_state, Particles(position, log_weights), info

    def __repr__(self):
        return (f"PF(num_particles={self.num_particles}, ess_threshold="
                f"{self.ess_threshold}, rejuvenation_steps={self.rejuvenation_steps}, "
                f"temperature={self.temperature}, resampling={self.resampling!r}, "
                f"kernel={self.kernel!r}, rejuvenate_every={self.rejuvenate_every})")
