"""Negative-phase estimators (see :mod:`.base` for the shared interface)."""

from .base import Estimator, Particles
from .cd import CD, CDInfo, CDState
from .mcmcmle import MCMCMLE, MCMCMLEInfo, MCMCMLEState
from .pcd import PCD, PCDInfo, PCDState
from .pf import PF, PFInfo, PFState
from .psmc import PSMC, PSMCInfo, PSMCState
from .smc import SMC, SMCInfo, SMCState
from .tempering import TemperingInfo

__all__ = ["Estimator", "Particles", "CD", "CDState", "CDInfo", "PCD", "PCDState",
           "PCDInfo", "MCMCMLE", "MCMCMLEState", "MCMCMLEInfo", "PF", "PFState", "PFInfo",
           "SMC", "SMCState", "SMCInfo", "PSMC", "PSMCState", "PSMCInfo", "TemperingInfo"]
