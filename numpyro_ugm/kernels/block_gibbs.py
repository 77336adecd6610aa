"""Block Gibbs sampling with blocks found from the model (no hand-written conditionals)."""

import dataclasses
from typing import NamedTuple

from .base import gaussian_from_normals, values_from_uniforms
from .blocks import BlockKernelSpec


class GibbsState(NamedTuple):
    """State of one Gibbs chain: the position (dict of site -> model values)."""

    position: dict


@dataclasses.dataclass(frozen=True)
class gibbs(BlockKernelSpec):
    """Block Gibbs sampler over the model's coloring (``target.blocks``).

    Each block holds conditionally independent variables, updated together from their
    exact conditionals: read off one gradient for multilinear potentials, or computed by
    evaluating the log-density at each value otherwise. One uniform is drawn per updated
    variable, for a whole sweep at once (and, with systematic scan, for all chains at
    once: ``Kernel.batch_step``); the new values are merged into the site by one gather
    through a precomputed table (cheaper than a scatter). ``info.acceptance_rate`` is 1.

    Parameters
    ----------
    scan, num_sweeps, max_unrolled, backward
        As in :class:`~numpyro_ugm.kernels.blocks.BlockKernelSpec` (``scan="systematic"``
        or ``"random"``; ``num_sweeps`` sweeps per step).
    """

    state = GibbsState

    def draw(self, uniforms, logits, domain, current):
        """Draw each variable from its conditional (every draw is kept)."""
        if not domain.finite:  # standard normals (see BlockKernelSpec.draw)
            return gaussian_from_normals(uniforms[:, 0], logits).astype(current.dtype), None
        return values_from_uniforms(uniforms[:, 0], logits, domain, current.dtype), None
