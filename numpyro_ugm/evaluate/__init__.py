"""Evaluation of learned models: exact enumeration for small models (``exact``), annealed
importance sampling for large ones (``ais``), and the pseudo-likelihood and its
maximization for any size."""

from . import ais, exact
from .pseudo import PseudoFitResult, fit_pseudo_likelihood, pseudo_log_likelihood

__all__ = ["ais", "exact", "pseudo_log_likelihood", "fit_pseudo_likelihood",
           "PseudoFitResult"]
