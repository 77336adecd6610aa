"""Helpers for estimating an ERGM (:func:`~numpyro_ugm.models.ergm`): the maximum
pseudo-likelihood estimate that starts MCMC maximum likelihood (:func:`mple`).

:func:`mple` is a logistic regression on the change statistics, by Newton's method in
float64 (the generic :func:`~numpyro_ugm.evaluate.pseudo.fit_pseudo_likelihood` works
for any model but stops at float32's gradient floor); it returns the same
:class:`~numpyro_ugm.learn.pseudo_fit.PseudoFitResult`.
"""

import warnings
from typing import Any

import jax.numpy as jnp
import numpy as np

from ...learn.pseudo_fit import PseudoFitResult
from .dyad_independent import dyad_independent_mle
from .identifiability import find_separation, separation_message
from ..terms.structural import DEFAULT_DECAY, change_statistics, term_names
from ..terms.term import Network, as_network
from ..graphs import as_edge_data, is_networkx, num_nodes_of

__all__ = ["mple"]


def mple(data: Any, statistics=("edges", "triangles"), *, network: Any = None,
         decay: float = DEFAULT_DECAY, prior_scale: float | None = None,
         num_steps: int = 100, tol: float = 1e-10) -> PseudoFitResult:
    """Maximum pseudo-likelihood estimate of θ (Strauss & Ikeda 1990).

    The pseudo-likelihood Π_e p(y_e | y_−e; θ) of an ERGM is a logistic regression of each
    y_e on its change statistics Δ_e s(y) (:func:`~numpyro_ugm.network.change_statistics`),
    fitted here by Newton's method in float64 (as R's ``glm``), to its stated tolerance.
    For dyad-independent terms it is the exact MLE. The MPLE can be far from the MLE of
    one network with strong dependence; it is the usual start of Monte Carlo maximum
    likelihood (:func:`~numpyro_ugm.network.fit_ergm`, or ``init_params=mple(...).params``
    of :meth:`~numpyro_ugm.learn.MLE.run`).

    Parameters
    ----------
    data : dict, array or networkx graph(s)
        ``{"y": (N, E)}``, edge data ``(E,)`` / ``(N, E)``, or networkx graph(s).
    statistics, decay, prior_scale
        As in :func:`~numpyro_ugm.models.ergm` (with ``prior_scale``: maximum penalized
        pseudo-likelihood).
    network : Network or networkx graph, optional
        Node attributes for covariate terms, and whether ties are directed (default:
        ``data`` itself when it is a networkx graph).
    num_steps : int
        Maximum Newton steps.
    tol : float
        Stop when the gradient's largest entry, relative to the statistics' scale, is
        below ``tol``
        (:func:`~numpyro_ugm.network.estimation.dyad_independent.dyad_independent_mle`).

    Returns
    -------
    PseudoFitResult
        ``params`` (``{"theta": array}``), ``pseudo_log_likelihood`` (per network),
        ``objective``, ``grad_norm``, ``num_steps``, ``converged``. When the
        pseudo-likelihood has no maximum (without ``prior_scale``: the change statistics
        separate the observed ties from the non-ties, found by a linear program,
        :func:`~numpyro_ugm.network.estimation.identifiability.find_separation`),
        ``converged`` is False, θ diverges and a RuntimeWarning names the terms.
    """
    if network is None and is_networkx(data):
        network = data
    net = as_network(network) if network is not None else None
    directed = net.directed if net is not None else None
    y = as_edge_data(data, directed)["y"].astype(np.float64)
    n = num_nodes_of(y.shape[-1], bool(directed))
    net = net if net is not None else Network(n, False)
    if net.num_nodes != n:
        raise ValueError(f"mple: the data have {n} nodes, the network {net.num_nodes}")
    X = np.asarray(change_statistics(y, statistics, decay=decay, network=net), np.float64)
    X, y = X.reshape(-1, X.shape[-1]), y.reshape(-1)
    # the logistic regression of y on X is the dyad-independent MLE with s_obs = Xᵀy
    fit = dyad_independent_mle(X, X.T @ y, max_iterations=num_steps, tol=tol,
                               prior_scale=prior_scale)
    theta, converged = fit.theta, fit.converged
    # a penalized maximum always exists
    direction = find_separation(X, y) if prior_scale is None else None
    if direction is not None:
        converged = False
        names = term_names(statistics, net, decay)
        warnings.warn(f"mple: {separation_message(direction, names)}", RuntimeWarning,
                      stacklevel=2)
    num_networks = max(1, len(as_edge_data(data, directed)["y"]))
    penalty = 0.0 if prior_scale is None else 0.5 * float(theta @ theta) / prior_scale ** 2
    p = 1.0 / (1.0 + np.exp(-(X @ theta)))
    grad = X.T @ (y - p) - (0.0 if prior_scale is None else theta / prior_scale ** 2)
    return PseudoFitResult({"theta": jnp.asarray(theta, jnp.result_type(float))},
                           jnp.asarray(fit.log_likelihood / num_networks),
                           jnp.asarray((fit.log_likelihood - penalty) / num_networks),
                           jnp.asarray(np.linalg.norm(grad)), fit.iterations, converged)
