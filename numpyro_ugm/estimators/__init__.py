"""Negative-phase estimators (see :mod:`.base` for the shared interface)."""

from .base import INFO_KEYS, Estimator, Particles
from .cd import CD, CDState
from .mcmcmle import MCMCMLE, MCMCMLEState
from .pcd import PCD, PCDState
from .pf import PF, PFState
from .psmc import PSMC, PSMCState
from .smc import SMC, SMCState

__all__ = ["INFO_KEYS", "Estimator", "Particles", "CD", "CDState", "PCD", "PCDState",
           "MCMCMLE", "MCMCMLEState", "PF", "PFState", "SMC", "SMCState", "PSMC",
           "PSMCState"]
