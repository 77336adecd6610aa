"""Persistent contrastive divergence (Younes 1989; Tieleman 2008), also called
stochastic maximum likelihood or SAP."""

import dataclasses
from typing import Any, ClassVar, NamedTuple, Optional

import jax.numpy as jnp

from ..kernels.base import KernelSpec, init_chains
from .base import ChainInfo, Estimator, Particles, move_states, uniform_log_weights


class PCDState(NamedTuple):
    """The persistent chains' kernel states (leading axis S): the particles and whatever
    the kernel carries between steps (parallel tempering's replicas, ...)."""

    kernel_state: Any

    @property
    def position(self):
        """Persistent particles (model representation, leading axis S)."""
        return self.kernel_state.position


PCDInfo = ChainInfo


@dataclasses.dataclass(frozen=True)
class PCD(Estimator):
    """PCD-k: ``num_particles`` persistent chains, ``num_mcmc_steps`` kernel steps under
    θ_t per update, uniform weights (the PF paper's Algorithm 3: PF with unit weights).

    Parameters
    ----------
    num_particles : int
        Number of persistent chains S.
    num_mcmc_steps : int
        Keyword only. Kernel steps per update, the k of PCD-k (sweeps, with a kernel of
        one sweep per step).
    kernel : KernelSpec, optional
        Keyword only. Default: systematic-scan block Gibbs; e.g.
        ``ugm.kernels.metropolis()``.
    """

    num_particles: int
    _: dataclasses.KW_ONLY
    num_mcmc_steps: int = 1
    kernel: Optional[KernelSpec] = None
    importance_weighted: ClassVar[bool] = False

    def __post_init__(self):
        self._check_count("num_particles")
        self._check_count("num_mcmc_steps")
        self._check_kernel()

    def init(self, rng_key, target, params, batch) -> PCDState:
        kernel = self.build_kernel(target)
        position = target.random_state(rng_key, (self.num_particles,))
        logdensity = target.logdensity_fn(params)
        return PCDState(init_chains(kernel, position, logdensity))

    def update(self, rng_key, state, target, params, batch
               ) -> tuple[PCDState, Particles, PCDInfo]:
        kernel = self.build_kernel(target)
        logdensity = target.logdensity_fn(params)
        states, acceptance = move_states(kernel, rng_key, state.kernel_state, logdensity,
                                         self.num_mcmc_steps)
        return PCDState(states), Particles(states.position, uniform_log_weights(
            self.num_particles)), PCDInfo(jnp.asarray(float(self.num_particles)),
                                          acceptance)
