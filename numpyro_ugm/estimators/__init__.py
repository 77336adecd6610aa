"""Negative-phase estimators (see :mod:`.base` for the shared interface)."""

from .base import INFO_KEYS, Estimator, Particles
from .cd import CD, CDState
from .pcd import PCD, PCDState

__all__ = ["INFO_KEYS", "Estimator", "Particles", "CD", "CDState", "PCD", "PCDState"]
