"""Persistent contrastive divergence (Younes 1989; Tieleman 2008), also called
stochastic maximum likelihood or SAP."""

from typing import Any, NamedTuple

import jax

from .base import Estimator, Particles, move_states, uniform_log_weights


class PCDState(NamedTuple):
    """The persistent chains' kernel states (leading axis S): the particles and whatever
    the kernel carries between steps (parallel tempering's replicas, ...)."""

    kernel_state: Any

    @property
    def position(self):
        """Persistent particles (model representation, leading axis S)."""
        return self.kernel_state.position


class PCD(Estimator):
    """PCD-k: ``num_particles`` persistent chains, ``k`` kernel steps under θ_t per
    update, uniform weights (the PF paper's Algorithm 3: PF with unit weights).

    Parameters
    ----------
    num_particles : int
        Number of persistent chains S.
    k : int
        Kernel steps (sweeps) per update.
    kernel : KernelSpec, optional
        Default: systematic-scan block Gibbs; e.g. ``ugm.kernels.metropolis()``.
    """

    def __init__(self, num_particles, k=1, kernel=None):
        if int(num_particles) < 1:
            raise ValueError(f"PCD: num_particles must be >= 1, got {num_particles}")
        if int(k) < 1:
            raise ValueError(f"PCD: k must be >= 1, got {k}")
        self.num_particles, self.k, self.kernel = int(num_particles), int(k), kernel

    def init(self, rng_key, m, params, batch):
        kernel = self.build_kernel(m)
        position = m.random_state(rng_key, (self.num_particles,))
        logdensity = m.logdensity_fn(params)
        return PCDState(jax.vmap(lambda x: kernel.init(x, logdensity))(position))

    def update(self, rng_key, state, m, params, batch):
        kernel = self.build_kernel(m)
        logdensity = m.logdensity_fn(params)
        states, acceptance = move_states(kernel, rng_key, state.kernel_state, logdensity,
                                         self.k)
        return PCDState(states), Particles(states.position, uniform_log_weights(
            self.num_particles)), {"ess": float(self.num_particles), "acceptance": acceptance}

    def __repr__(self):
        return f"PCD(num_particles={self.num_particles}, k={self.k}, kernel={self.kernel!r})"
