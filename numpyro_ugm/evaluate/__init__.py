"""Evaluation of learned models: exact enumeration for small models, annealed importance
sampling for large ones."""

from . import ais, exact
from .pseudo import pseudo_log_likelihood

__all__ = ["ais", "exact", "pseudo_log_likelihood"]
