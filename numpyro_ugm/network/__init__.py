"""Network analysis as statnet does it: exponential random graph models (ERGMs) of
observed networks.

The subpackage's folders show its parts, in the order a fit uses them:

* :mod:`~numpyro_ugm.network.graphs`: networks as data (networkx graphs, adjacency
  arrays, edge lists, the dyad order of the model's state);
* :mod:`~numpyro_ugm.network.terms`: the formula, the terms and their statistics and
  change statistics (structural, covariate, compiled);
* :mod:`~numpyro_ugm.network.model`: the ERGM as a numpyro model function
  (:func:`ergm`, re-exported by :mod:`numpyro_ugm.models`);
* :mod:`~numpyro_ugm.network.sampling`: chains of networks, the tie / no-tie
  Metropolis–Hastings step (JAX and compiled) and the simulator behind every fit;
* :mod:`~numpyro_ugm.network.estimation`: MPLE, the Monte Carlo MLE loop, its step,
  termination rules and trust region, standard errors, the log-likelihood, and the
  paths for large sparse networks;
* :mod:`~numpyro_ugm.network.diagnostics`: goodness of fit, network distributions,
  MCMC diagnostics and degeneracy;
* :mod:`~numpyro_ugm.network.control`: every setting of a fit in one checked
  :class:`ErgmControl` (statnet's ``control.ergm()``);
* :mod:`~numpyro_ugm.network.fit` and :mod:`~numpyro_ugm.network.summary`:
  :func:`fit_ergm` in one call and its :class:`ErgmFit`.
"""

from .control import ErgmControl, MCMLEControl, SamplingControl
from .diagnostics.degeneracy import (DegeneracyWarning, ErgmDegeneracyError,
                                     check_fit_degeneracy, check_particle_degeneracy)
from .diagnostics.goodness_of_fit import GoodnessOfFit, goodness_of_fit
from .diagnostics.mcmc import mcmc_diagnostics
from .estimation.mple import mple
from .fit import fit_ergm, gof_ergm
from .graphs import (edges_to_adjacency, edges_to_graph, graph_to_edges, num_dyads, num_nodes_of,
                     num_pairs)
from .model import ergm
from .summary import ErgmFit
from .terms.structural import STATISTICS, TERMS, change_statistics, ergm_statistics, term_names
from .terms.term import Network, term

__all__ = ["ergm", "STATISTICS", "TERMS", "term", "term_names", "Network", "ergm_statistics",
           "change_statistics", "graph_to_edges", "edges_to_adjacency", "edges_to_graph",
           "num_pairs", "num_dyads", "num_nodes_of", "mple", "fit_ergm", "gof_ergm", "ErgmFit",
           "ErgmDegeneracyError", "GoodnessOfFit", "goodness_of_fit", "mcmc_diagnostics",
           "check_particle_degeneracy", "check_fit_degeneracy", "DegeneracyWarning",
           "ErgmControl", "SamplingControl", "MCMLEControl"]
