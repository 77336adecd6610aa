"""Samplers of the discrete state, in blackjax's kernel style (see :mod:`.base`)."""

from .base import Kernel, KernelInfo, KernelSpec
from .gibbs import GibbsState, gibbs
from .metropolis import MetropolisState, metropolis
from .tempered import (ParallelTemperingInfo, ParallelTemperingState,
                       TemperedTransitionsInfo, TemperedTransitionsState,
                       parallel_tempering, tempered_transitions)

__all__ = ["Kernel", "KernelInfo", "KernelSpec", "GibbsState", "gibbs", "MetropolisState",
           "metropolis", "tempered_transitions", "TemperedTransitionsState",
           "TemperedTransitionsInfo", "parallel_tempering", "ParallelTemperingState",
           "ParallelTemperingInfo"]
