"""Samplers of the discrete state, in blackjax's kernel style (see :mod:`.base`)."""

from .base import Kernel, KernelInfo, KernelSpec
from .gibbs import GibbsState, gibbs
from .metropolis import MetropolisState, metropolis

__all__ = ["Kernel", "KernelInfo", "KernelSpec", "GibbsState", "gibbs", "MetropolisState",
           "metropolis"]
