"""Contrastive divergence (Hinton 2002): particles restart from the data batch."""

import dataclasses
from typing import ClassVar, NamedTuple, Optional

import jax
import jax.numpy as jnp

from ..kernels.base import KernelSpec
from .base import (ChainInfo, Estimator, Particles, move, sample_latent, uniform_log_weights,
                   with_latent)


class CDState(NamedTuple):
    """CD keeps nothing between updates."""


CDInfo = ChainInfo


@dataclasses.dataclass(frozen=True)
class CD(Estimator):
    """CD-k: start one chain at each example of the batch (latent sites drawn from
    p(latent | data)), run ``num_mcmc_steps`` kernel steps under θ_t, weight uniformly.

    Parameters
    ----------
    num_mcmc_steps : int
        Keyword only. Kernel steps per update, the k of CD-k (sweeps, with a kernel of
        one sweep per step).
    kernel : KernelSpec, optional
        Keyword only. Default: systematic-scan block Gibbs.
    """

    _: dataclasses.KW_ONLY
    num_mcmc_steps: int = 1
    kernel: Optional[KernelSpec] = None
    importance_weighted: ClassVar[bool] = False

    def __post_init__(self):
        self._check_count("num_mcmc_steps")
        self._check_kernel()

    def init(self, rng_key, target, params, batch) -> CDState:
        self.build_kernel(target)  # fail early on a kernel the model cannot use
        return CDState()

    def update(self, rng_key, state, target, params, batch) -> tuple[CDState, Particles, CDInfo]:
        kernel = self.build_kernel(target)
        latent_key, init_key, move_key = jax.random.split(rng_key, 3)
        position = sample_latent(target, params, latent_key, with_latent(target, init_key, batch))
        logdensity = target.logdensity_fn(params)
        position, acceptance = move(kernel, move_key, position, logdensity,
                                    self.num_mcmc_steps)
        num = jax.tree.leaves(position)[0].shape[0]
        return state, Particles(position, uniform_log_weights(num)), CDInfo(
            jnp.asarray(float(num)), acceptance)
