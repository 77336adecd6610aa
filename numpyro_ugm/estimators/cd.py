"""Contrastive divergence (Hinton 2002): particles restart from the data batch."""

from typing import NamedTuple

import jax

from .base import Estimator, Particles, move, sample_latent, uniform_log_weights, with_latent


class CDState(NamedTuple):
    """CD keeps nothing between updates."""


class CD(Estimator):
    """CD-k: start one chain at each example of the batch (latent sites drawn from
    p(latent | data)), run ``k`` kernel steps under θ_t, weight uniformly.

    Parameters
    ----------
    k : int
        Kernel steps (sweeps) per update.
    kernel : KernelSpec, optional
        Default: systematic-scan block Gibbs.
    """

    def __init__(self, k=1, kernel=None):
        if int(k) < 1:
            raise ValueError(f"CD: k must be >= 1, got {k}")
        self.k, self.kernel = int(k), kernel

    def init(self, rng_key, m, params, batch):
        self.build_kernel(m)  # fail early on a bad kernel
        return CDState()

    def update(self, rng_key, state, m, params, batch):
        kernel = self.build_kernel(m)
        latent_key, init_key, move_key = jax.random.split(rng_key, 3)
        position = sample_latent(m, params, latent_key, with_latent(m, init_key, batch))
        logdensity = m.logdensity_fn(params)
        position, acceptance = move(kernel, move_key, position, logdensity, self.k)
        num = jax.tree.leaves(position)[0].shape[0]
        return state, Particles(position, uniform_log_weights(num)), {
            "ess": float(num), "acceptance": acceptance}

    def __repr__(self):
        return f"CD(k={self.k}, kernel={self.kernel!r})"
