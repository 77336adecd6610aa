"""Evaluation of learned models: exact enumeration for small models (``exact``), annealed
importance sampling for large ones (``ais``), quadrature for models of one or two real
numbers (``quadrature``), and the pseudo-likelihood and its
maximization for any size."""

from . import ais, exact, quadrature
from .pseudo import PseudoFitResult, fit_pseudo_likelihood, pseudo_log_likelihood

__all__ = ["ais", "exact", "quadrature", "pseudo_log_likelihood", "fit_pseudo_likelihood",
           "PseudoFitResult"]
