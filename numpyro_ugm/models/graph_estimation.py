"""Helpers for estimating an ERGM (:func:`~numpyro_ugm.models.ergm`): the maximum
pseudo-likelihood estimate that starts MCMC maximum likelihood (:func:`mple`) and the
check that sampled graphs have not collapsed to an extreme graph (:func:`check_degeneracy`).

This module sits above :mod:`numpyro_ugm.evaluate`: :func:`mple` is the generic
:func:`~numpyro_ugm.evaluate.pseudo.fit_pseudo_likelihood` applied to the ready-made
model, kept here, beside the model, where a user of ERGMs looks for it. The model
functions of :mod:`numpyro_ugm.models` themselves import nothing above the model layer,
and nothing in ``evaluate`` imports ``models``.
"""

import warnings
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..evaluate.pseudo import PseudoFitResult, fit_pseudo_likelihood
from ..model import UGM
from .exponential_random_graph import ergm
from .graph_statistics import DEFAULT_DECAY
from .graphs import as_edge_data, num_nodes_of

__all__ = ["mple", "check_degeneracy", "DegeneracyWarning"]


def mple(data: Any, statistics: Sequence = ("edges", "triangles"), *,
         decay: float = DEFAULT_DECAY, prior_scale: float | None = None,
         num_steps: int = 200, tol: float = 1e-6) -> PseudoFitResult:
    """Maximum pseudo-likelihood estimate of θ (Strauss & Ikeda 1990).

    The pseudo-likelihood Π_e p(y_e | y_−e; θ) of an ERGM is a logistic regression of each
    y_e on its change statistics Δ_e s(y)
    (:func:`~numpyro_ugm.models.change_statistics`). It is maximized here through the
    generic :func:`~numpyro_ugm.evaluate.pseudo.fit_pseudo_likelihood` (L-BFGS on
    :func:`~numpyro_ugm.evaluate.pseudo.pseudo_log_likelihood`), whose conditionals come
    from one gradient of the potential. The MPLE is consistent for many graphs but can be
    far from the MLE for one graph with strong dependence; it is the usual starting point
    of MCMC maximum likelihood (``init_params=mple(...).params`` of
    :meth:`~numpyro_ugm.learn.MLE.run`).

    Parameters
    ----------
    data : dict, array or networkx graph(s)
        ``{"y": (N, E)}``, edge data ``(E,)`` / ``(N, E)``, or networkx graph(s).
    statistics, decay, prior_scale
        As in :func:`~numpyro_ugm.models.ergm` (with ``prior_scale``: maximum penalized
        pseudo-likelihood).
    num_steps : int
        Maximum L-BFGS steps.
    tol : float
        Stop when the gradient norm reaches ``tol``.

    Returns
    -------
    PseudoFitResult
        The fit: ``params`` (``{"theta": array}``), ``pseudo_log_likelihood``,
        ``converged``, ... When the pseudo-likelihood has no maximum (e.g. a statistic
        whose change statistics separate the observed edges from the non-edges),
        ``converged`` is False and the parameters diverge.
    """
    data = as_edge_data(data)
    n = num_nodes_of(data["y"].shape[-1])
    m = UGM(ergm, n, statistics, decay=decay, prior_scale=prior_scale)
    params = m.init_params(jax.random.PRNGKey(0))
    params = {"theta": jnp.zeros_like(params["theta"])}
    return fit_pseudo_likelihood(m, data, params=params, num_steps=num_steps, tol=tol)


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
