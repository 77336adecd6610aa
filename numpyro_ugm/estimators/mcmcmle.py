"""MCMC-MLE (Geyer & Thompson 1992) as a negative-phase estimator, in rounds as in the
PF paper's Algorithm 1 and statnet."""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .base import (Estimator, Particles, check_count, ess, free_energies, move,
                   normalize, resample, uniform_log_weights)
from .tempering import anneal_from_uniform


class MCMCMLEState(NamedTuple):
    """The sample drawn at the anchor θ_0 of the current round, its free energies
    F(x; θ_0), the running estimate of log Z(θ_0), and updates since the draw."""

    position: dict
    anchor_free_energy: jax.Array
    anchor_log_z: jax.Array
    since_reset: jax.Array


class MCMCMLE(Estimator):
    """MCMC-MLE: a fixed sample x_s from p(·; θ_0) and importance log-weights
    F(x_s; θ_t) − F(x_s; θ_0) (eq. 6). A new round starts — the chains, persisted,
    run ``burn_in`` kernel steps at the current θ, which becomes θ_0 — every
    ``reset_every`` updates or when the ESS falls below ``ess_threshold``·S.

    The first sample comes from tempering uniform draws to p(·; θ_0) (which also gives
    log Z(θ_0)) followed by ``burn_in`` steps; ``log_z`` is then carried from round to
    round by the importance-sampling estimate of log Z(θ_t) − log Z(θ_0).

    Parameters
    ----------
    num_particles : int
    burn_in : int
        Kernel steps (sweeps) per redraw.
    reset_every : int
        Round length L in updates.
    kernel : KernelSpec, optional
        Default: systematic-scan block Gibbs.
    ess_threshold : float in [0, 1)
        Start a new round early when the ESS falls below this fraction of S.
    """

    def __init__(self, num_particles, burn_in=10, reset_every=100, kernel=None,
                 ess_threshold=0.1):
        self.num_particles = check_count("MCMCMLE", "num_particles", num_particles)
        self.burn_in = check_count("MCMCMLE", "burn_in", burn_in)
        self.reset_every = check_count("MCMCMLE", "reset_every", reset_every)
        if not 0.0 <= float(ess_threshold) < 1.0:
            raise ValueError(f"MCMCMLE: ess_threshold must be in [0, 1), got "
                             f"{ess_threshold}")
        self.ess_threshold = float(ess_threshold)
        self.kernel = kernel

    def _draw(self, kernel, rng_key, m, params, position):
        position, _ = move(kernel, rng_key, position, m.logdensity_fn(params),
                           self.burn_in)
        return position, free_energies(m, params, position)

    def init(self, rng_key, m, params, batch):
        kernel = self.build_kernel(m)
        anneal_key, resample_key, key = jax.random.split(rng_key, 3)
        result = anneal_from_uniform(m, kernel, anneal_key, params, self.num_particles)
        position = resample(resample_key, result.position, result.log_weights)
        position, energy = self._draw(kernel, key, m, params, position)
        return MCMCMLEState(position, energy, result.log_z_increment,
                            jnp.zeros((), jnp.int32))

    def update(self, rng_key, state, m, params, batch):
        kernel = self.build_kernel(m)
        num = self.num_particles
        raw = free_energies(m, params, state.position) - state.anchor_free_energy
        log_z = (state.anchor_log_z + jax.nn.logsumexp(raw)
                 - jnp.log(jnp.asarray(num, raw.dtype)))
        log_weights = normalize(raw)
        ess_value = ess(log_weights)
        reset = (state.since_reset + 1 >= self.reset_every) | (
            ess_value < self.ess_threshold * num)

        def redraw(_):
            position, energy = self._draw(kernel, rng_key, m, params, state.position)
            return (MCMCMLEState(position, energy, log_z, jnp.zeros((), jnp.int32)),
                    uniform_log_weights(num).astype(raw.dtype))

        def keep(_):
            return state._replace(since_reset=state.since_reset + 1), log_weights

        new_state, weights = jax.lax.cond(reset, redraw, keep, None)
        flag = reset.astype(raw.dtype)
        info = {"ess": ess_value, "resampled": jnp.zeros_like(flag), "rejuvenated": flag,
                "log_z": log_z}
        return new_state, Particles(new_state.position, weights), info

    def __repr__(self):
        return (f"MCMCMLE(num_particles={self.num_particles}, burn_in={self.burn_in}, "
                f"reset_every={self.reset_every}, kernel={self.kernel!r}, "
                f"ess_threshold={self.ess_threshold})")
