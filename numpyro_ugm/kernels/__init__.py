"""Samplers of the state, in blackjax's kernel style (see :mod:`.base`): block kernels
for finite sites and Gaussian real sites, tree blocks drawn exactly (:mod:`.tree_blocks`),
blackjax's gradient kernels for the other real
sites (:mod:`.gradient`), and tempered kernels."""

from .base import Kernel, KernelInfo, KernelSpec
from .block_gibbs import GibbsState, gibbs
from .gradient import GradientInfo, GradientState, hmc, langevin, mala, rwm
from .block_metropolis import MetropolisState, metropolis
from .tree_blocks import TreeGibbsState, tree_gibbs
from .tempered import (ParallelTemperingInfo, ParallelTemperingState,
                       TemperedTransitionsInfo, TemperedTransitionsState,
                       parallel_tempering, tempered_transitions)

__all__ = ["Kernel", "KernelInfo", "KernelSpec", "GibbsState", "gibbs", "MetropolisState",
           "metropolis", "mala", "hmc", "rwm", "langevin", "GradientState",
           "GradientInfo", "tempered_transitions", "TemperedTransitionsState",
           "TemperedTransitionsInfo", "parallel_tempering", "ParallelTemperingState",
           "ParallelTemperingInfo", "tree_gibbs", "TreeGibbsState"]
