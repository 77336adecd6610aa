"""Block Metropolis: for every variable of a block of conditionally independent
variables, propose a different value and accept it with probability min(1, p(x') / p(x)),
all in parallel, from the block's conditionals (local energy differences)."""

import dataclasses
from typing import NamedTuple

import jax.numpy as jnp

from .base import gaussian_from_normals
from .blocks import BlockKernelSpec


class MetropolisState(NamedTuple):
    """State of one Metropolis chain: the position (dict of site -> model values)."""

    position: dict


@dataclasses.dataclass(frozen=True)
class metropolis(BlockKernelSpec):
    """Metropolis sampler over the model's coloring (``target.blocks``), one block at a time.

    A block's variables are conditionally independent given the rest, so they are
    proposed and accepted in parallel: each variable gets a uniformly drawn *different*
    value (a flip for spins and binaries, another of the K labels for categoricals),
    accepted independently with probability min(1, exp(ℓ[new] − ℓ[current])), where ℓ
    are its conditional log-probabilities (the block's local energy differences: one
    gradient for multilinear potentials, evaluation at each value otherwise, or the
    log-density's own ``conditional_logits``). This is the product of exact
    Metropolis-Hastings kernels for the block's conditional, so p(x) is invariant.
    Real variables with Gaussian conditionals in a block are drawn from them (a proposal
    that is always accepted).
    ``info.acceptance_rate`` is the fraction of proposals accepted in the step.

    Parameters
    ----------
    scan, num_sweeps, max_unrolled, backward
        As in :class:`~numpyro_ugm.kernels.blocks.BlockKernelSpec` (``scan="systematic"``
        or ``"random"``; ``num_sweeps`` sweeps per step).
    """

    state = MetropolisState

    def num_uniforms(self, domain) -> int:
        """One uniform per variable (the acceptance) for two values, two (proposal and
        acceptance) for more."""
        return 1 if domain.two_valued or not domain.finite else 2

    def draw(self, uniforms, logits, domain, current):
        """Propose a different value for each variable; accept each with probability
        min(1, exp(logits[new] − logits[current]))."""
        if not domain.finite:  # an exact Gaussian draw (from standard normals)
            return gaussian_from_normals(uniforms[:, 0], logits).astype(current.dtype), None
        if domain.two_valued:  # a flip
            low, high = domain.values
            log_odds = logits[..., 1] - logits[..., 0]  # log p(high) / p(low)
            gain = jnp.where(current > low, -log_odds, log_odds)
            accepted = uniforms[:, 0] < jnp.exp(gain)
            return jnp.where(accepted, (low + high) - current, current), accepted
        num_values = logits.shape[-1]
        label = domain.labels(current)
        # a uniform shift in 1 .. K-1 from the first uniform
        shift = 1 + jnp.minimum((uniforms[:, 0] * (num_values - 1)).astype(label.dtype),
                                num_values - 2)
        proposal = (label + shift) % num_values
        gain = (jnp.take_along_axis(logits, proposal[..., None], -1)
                - jnp.take_along_axis(logits, label[..., None], -1))[..., 0]
        accepted = uniforms[:, 1] < jnp.exp(gain)
        label = jnp.where(accepted, proposal, label)
        return domain.label_to_model(label, current.dtype), accepted

