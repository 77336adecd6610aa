"""Helpers for estimating an ERGM (:func:`~numpyro_ugm.models.ergm`): the maximum
pseudo-likelihood estimate that starts MCMC maximum likelihood (:func:`mple`) and the
check that sampled graphs have not collapsed to an extreme graph (:func:`check_degeneracy`).

:func:`mple` is a logistic regression on the change statistics, by Newton's method in
float64 (the generic :func:`~numpyro_ugm.evaluate.pseudo.fit_pseudo_likelihood` works
for any model but stops at float32's gradient floor); it returns the same
:class:`~numpyro_ugm.evaluate.pseudo.PseudoFitResult`.
"""

import warnings
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..learn.pseudo import PseudoFitResult
from .ergm_dyad_independent import dyad_independent_mle
from .graph_statistics import DEFAULT_DECAY, change_statistics
from .graph_terms import Network, as_network
from .graphs import _is_networkx, as_edge_data, num_nodes_of

__all__ = ["mple", "check_degeneracy", "DegeneracyWarning"]


def mple(data: Any, statistics=("edges", "triangles"), *, network: Any = None,
         decay: float = DEFAULT_DECAY, prior_scale: float | None = None,
         num_steps: int = 100, tol: float = 1e-10) -> PseudoFitResult:
    """Maximum pseudo-likelihood estimate of θ (Strauss & Ikeda 1990).

    The pseudo-likelihood Π_e p(y_e | y_−e; θ) of an ERGM is a logistic regression of each
    y_e on its change statistics Δ_e s(y) (:func:`~numpyro_ugm.models.change_statistics`),
    fitted here by Newton's method in float64 (as R's ``glm``), to its stated tolerance.
    For dyad-independent terms it is the exact MLE. The MPLE can be far from the MLE of
    one network with strong dependence; it is the usual start of Monte Carlo maximum
    likelihood (:func:`~numpyro_ugm.models.fit_ergm`, or ``init_params=mple(...).params``
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
        below ``tol`` (:func:`~numpyro_ugm.models.ergm_dyad_independent.dyad_independent_mle`).

    Returns
    -------
    PseudoFitResult
        ``params`` (``{"theta": array}``), ``pseudo_log_likelihood`` (per network),
        ``objective``, ``grad_norm``, ``num_steps``, ``converged``. When the
        pseudo-likelihood has no maximum (a term whose change statistics separate the
        observed ties from the non-ties), ``converged`` is False and θ diverges.
    """
    if network is None and _is_networkx(data):
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
    theta = fit.theta
    num_networks = max(1, len(as_edge_data(data, directed)["y"]))
    penalty = 0.0 if prior_scale is None else 0.5 * float(theta @ theta) / prior_scale ** 2
    p = 1.0 / (1.0 + np.exp(-(X @ theta)))
    grad = X.T @ (y - p) - (0.0 if prior_scale is None else theta / prior_scale ** 2)
    return PseudoFitResult({"theta": jnp.asarray(theta, jnp.result_type(float))},
                           jnp.asarray(fit.log_likelihood / num_networks),
                           jnp.asarray((fit.log_likelihood - penalty) / num_networks),
                           jnp.asarray(np.linalg.norm(grad)), fit.iterations, fit.converged)


class DegeneracyWarning(RuntimeWarning):
    """Sampled graphs collapsed to the empty or the complete graph (ERGM degeneracy)."""


def _edge_particles(obj):
    """(S, E) edge values from samples, particles or learner/estimator states."""
    for attr in ("state", "estimator_state", "kernel_state"):  # RunResult, LearnState, PCD
        if hasattr(obj, attr) and not isinstance(obj, dict):
            inner = getattr(obj, attr)
            if inner is not None and not isinstance(inner, (np.ndarray, jax.Array)):
                try:
                    return _edge_particles(inner)
                except TypeError:
                    pass
    if hasattr(obj, "position") and not isinstance(obj, dict):
        return _edge_particles(obj.position)
    if isinstance(obj, dict):
        if "y" not in obj:
            raise KeyError(f"check_degeneracy: no site 'y' among {list(obj)}")
        obj = obj["y"]
    if isinstance(obj, (np.ndarray, jax.Array, list)):
        y = np.asarray(obj)
        return y.reshape((-1, y.shape[-1]))
    raise TypeError(f"check_degeneracy: cannot find edge particles in {type(obj).__name__}")


def check_degeneracy(particles: Any, *, data: Any = None, threshold: float = 0.9,
                     warn: bool = True) -> dict:
    """Warn when sampled graphs collapse to the empty or the complete graph.

    Near a degenerate θ an ERGM puts almost all its mass on the empty or the full
    graph (Handcock 2003): the particles of a learner then sit there, the negative
    phase is a point mass, and learning or simulation is meaningless. This checks the
    fraction of particles that are empty or complete graphs.

    Parameters
    ----------
    particles : array (S, E), dict with ``"y"``, or a learner result / state
        Edge particles: samples (``ugm.sample`` output), ``Particles``, an estimator
        state, a :class:`~numpyro_ugm.learn.LearnState` or a
        :class:`~numpyro_ugm.learn.RunResult` (its estimator's particles).
    data : dict or array, optional
        Observed graphs: if given, no warning is issued when the data are themselves that
        extreme.
    threshold : float
        Warn when at least this fraction of particles is empty, or complete.
    warn : bool
        Issue the :class:`DegeneracyWarning` (else only report).

    Returns
    -------
    dict
        ``fraction_empty``, ``fraction_full``, ``mean_density`` (of the particles),
        ``degenerate`` (bool).
    """
    y = _edge_particles(particles).astype(np.float64)
    density = y.mean(axis=-1)
    summary = {"fraction_empty": float(np.mean(density == 0.0)),
               "fraction_full": float(np.mean(density == 1.0)),
               "mean_density": float(np.mean(density))}
    data_extreme = {"empty": False, "full": False}
    if data is not None:
        d = as_edge_data(data)["y"].astype(np.float64).mean(-1)
        data_extreme = {"empty": np.mean(d == 0.0) >= threshold,
                        "full": np.mean(d == 1.0) >= threshold}
    problems = []
    if summary["fraction_empty"] >= threshold and not data_extreme["empty"]:
        problems.append(f"{summary['fraction_empty']:.0%} of the {len(y)} particles are the "
                        "empty graph")
    if summary["fraction_full"] >= threshold and not data_extreme["full"]:
        problems.append(f"{summary['fraction_full']:.0%} of the {len(y)} particles are the "
                        "complete graph")
    summary["degenerate"] = bool(problems)
    if problems and warn:
        warnings.warn(
            "ERGM degeneracy: " + " and ".join(problems) + " (mean density "
            f"{summary['mean_density']:.3f}). The parameters are in or near a degenerate "
            "region where the model puts nearly all its mass on an extreme graph; the "
            "negative phase is then a point mass. Start from the MPLE "
            "(ugm.models.mple(...).params), lower the learning rate, or use curved "
            "statistics such as gwesp.",
            DegeneracyWarning, stacklevel=2)
    return summary
