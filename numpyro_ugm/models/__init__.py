"""Ready-made models: numpyro model functions only.

Import them from here (``ugm.models.rbm``). The modules are named by concept, never after
a function they hold, so no function hides a module:

* :mod:`~numpyro_ugm.models.boltzmann`: :func:`rbm`, :func:`vbm`, :func:`gaussian_rbm`;
* :mod:`~numpyro_ugm.models.crf`: :func:`grid_crf` (with :func:`grid_edges`,
  :func:`image_features`), :func:`multilabel_crf`;
* Gaussian MRFs (:mod:`~numpyro_ugm.models.gaussian`): :func:`sparse_gmrf` (the graphical
  lasso by MAP, :func:`glasso_objective`) and :func:`lattice_gmrf` (a CAR model on a
  torus, with its exact moments, likelihood, MLE and draws);
* :func:`ergm`, the exponential random graph model, re-exported from
  :mod:`numpyro_ugm.network`, where its terms, samplers, fits (:func:`~numpyro_ugm.network.fit_ergm`)
  and goodness of fit live.
"""

from .boltzmann import gaussian_rbm, rbm, vbm
from .crf import chain_crf, grid_crf, grid_edges, image_features, multilabel_crf
from .gaussian import (OffDiagonalLaplace, glasso_objective, lattice_draws, lattice_eigenvalues,
                       lattice_gmrf, lattice_log_likelihood, lattice_mle, lattice_moments,
                       sparse_gmrf)

__all__ = ["chain_crf", "grid_crf", "grid_edges", "image_features", "multilabel_crf", "rbm", "vbm", "gaussian_rbm",
           "ergm", "OffDiagonalLaplace", "sparse_gmrf", "glasso_objective", "lattice_gmrf",
           "lattice_eigenvalues", "lattice_moments", "lattice_log_likelihood", "lattice_mle",
           "lattice_draws"]


def __getattr__(name):
    """``models.ergm`` on first use (from :mod:`numpyro_ugm.network`, which needs the
    ``network`` extra), so that the other models import without it."""
    if name == "ergm":
        from ..network.model import ergm

        return ergm
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
