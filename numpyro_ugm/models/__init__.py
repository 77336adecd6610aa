"""Ready-made models (numpyro model functions) and their helpers.

Import them from here (``ugm.models.rbm``, ``from numpyro_ugm.models import ergm, mple``).
The modules are named by concept, never after a function they hold, so no function hides
a module:

* :mod:`~numpyro_ugm.models.boltzmann`: :func:`rbm`, :func:`vbm`, :func:`gaussian_rbm`;
* :mod:`~numpyro_ugm.models.crf`: :func:`grid_crf` (with :func:`grid_edges`,
  :func:`image_features`), :func:`multilabel_crf`;
* exponential random graph models: :func:`ergm`
  (:mod:`~numpyro_ugm.models.exponential_random_graph`), its terms
  (:mod:`~numpyro_ugm.models.graph_terms`: :func:`term`, :class:`Network`;
  :mod:`~numpyro_ugm.models.graph_statistics`: :func:`ergm_statistics`,
  :func:`change_statistics`, :func:`term_names`, :data:`TERMS`;
  :mod:`~numpyro_ugm.models.graph_covariates`), graphs as data
  (:mod:`~numpyro_ugm.models.graphs`: :func:`graph_to_edges`, :func:`edges_to_adjacency`,
  :func:`edges_to_graph`) and estimation helpers
  (:mod:`~numpyro_ugm.models.graph_estimation`: :func:`mple`, :func:`check_degeneracy`);
  statnet's analysis in one call: :func:`fit_ergm` (:mod:`~numpyro_ugm.models.ergm_fit`,
  on the Monte Carlo MLE of :mod:`~numpyro_ugm.models.ergm_mcmle` with
  :mod:`~numpyro_ugm.models.ergm_standard_errors`,
  :mod:`~numpyro_ugm.models.ergm_log_likelihood`,
  :mod:`~numpyro_ugm.models.ergm_dyad_independent` and the summary of
  :mod:`~numpyro_ugm.models.ergm_summary`; large sparse networks through
  :mod:`~numpyro_ugm.models.ergm_sampled_mple` and
  :mod:`~numpyro_ugm.models.network_sparse_statistics`, and the samplers of
  :mod:`~numpyro_ugm.models.network_simulation` /
  :mod:`~numpyro_ugm.models.network_sampler`) and :func:`gof_ergm`
  (:mod:`~numpyro_ugm.models.network_goodness_of_fit`, on the distributions of
  :mod:`~numpyro_ugm.models.network_distributions`; MCMC diagnostics in
  :mod:`~numpyro_ugm.models.network_diagnostics`);
* Gaussian MRFs (:mod:`~numpyro_ugm.models.gaussian`): :func:`sparse_gmrf` (the graphical
  lasso by MAP, :func:`glasso_objective`) and :func:`lattice_gmrf` (a CAR model on a
  torus, with its exact moments, likelihood, MLE and draws).
"""

from .boltzmann import gaussian_rbm, rbm, vbm
from .crf import grid_crf, grid_edges, image_features, multilabel_crf
from .exponential_random_graph import ergm
from .gaussian import (OffDiagonalLaplace, glasso_objective, lattice_draws, lattice_eigenvalues,
                       lattice_gmrf, lattice_log_likelihood, lattice_mle, lattice_moments,
                       sparse_gmrf)
from .ergm_fit import fit_ergm, gof_ergm
from .ergm_sampled_statistics import ErgmDegeneracyError
from .ergm_summary import ErgmFit
from .network_diagnostics import mcmc_diagnostics
from .network_goodness_of_fit import GoodnessOfFit, goodness_of_fit
from .graph_estimation import DegeneracyWarning, check_degeneracy, mple
from .graph_statistics import STATISTICS, TERMS, change_statistics, ergm_statistics, term_names
from .graph_terms import Network, term
from .graphs import (edges_to_adjacency, edges_to_graph, graph_to_edges, num_dyads, num_nodes_of,
                     num_pairs)

__all__ = ["grid_crf", "grid_edges", "image_features", "multilabel_crf", "rbm", "vbm", "gaussian_rbm",
           "ergm", "STATISTICS", "TERMS", "term", "term_names", "Network", "ergm_statistics",
           "change_statistics", "graph_to_edges", "edges_to_adjacency", "edges_to_graph",
           "num_pairs", "num_dyads", "num_nodes_of", "mple", "fit_ergm", "gof_ergm", "ErgmFit",
           "ErgmDegeneracyError", "GoodnessOfFit", "goodness_of_fit", "mcmc_diagnostics",
           "check_degeneracy", "DegeneracyWarning", "OffDiagonalLaplace", "sparse_gmrf",
           "glasso_objective", "lattice_gmrf", "lattice_eigenvalues", "lattice_moments",
           "lattice_log_likelihood", "lattice_mle", "lattice_draws"]
