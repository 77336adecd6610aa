"""Evaluation of learned models: exact enumeration for small models (``exact``), annealed
importance sampling for large ones (``ais``), quadrature for models of one or two real
numbers (``quadrature``), and the pseudo-likelihood for any size. The learners built on
these sums (exact maximum likelihood, MPLE) are in :mod:`numpyro_ugm.learn`."""

from . import ais, exact, quadrature
from .pseudo import pseudo_log_likelihood

__all__ = ["ais", "exact", "quadrature", "pseudo_log_likelihood"]
