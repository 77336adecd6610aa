"""Dyad-independent ERGMs, exactly: for s(y) = Σ_d y_d x_d (x_d the change statistics of
dyad d), Z(θ) = Π_d (1 + exp(θ·x_d)), so the log-likelihood
(:func:`dyad_independent_log_likelihood`) and the MLE with exact standard errors
(:func:`dyad_independent_mle`, Newton; :func:`newton_mle` from sums over the dyads,
for designs too large to hold) need no sampling.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from jax.typing import ArrayLike
from scipy import special

from ...runtime.checks import check_count
from .samples import as_vector

__all__ = ["dyad_independent_log_likelihood", "dyad_independent_mle", "newton_mle", "as_design",
           "DyadIndependentMLE", "dyadic_reference"]


#: columns whose largest change statistic exceeds this are fitted rescaled
_HUGE = 1e6


def as_design(owner, change_statistics, k=None):
    """Change statistics as a checked float64 design (N, k)."""
    x = np.asarray(change_statistics, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{owner}: change_statistics must be an array (num_dyads, k) of "
                         f"per-dyad change statistics, got shape {x.shape}")
    if k is not None and x.shape[1] != k:
        raise ValueError(f"{owner}: change_statistics has {x.shape[1]} columns but there are "
                         f"{k} statistics")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{owner}: change_statistics holds non-finite values")
    return x


def dyad_independent_log_likelihood(theta: ArrayLike, change_statistics: ArrayLike,
                                    observed: ArrayLike) -> float:
    """Exact log-likelihood of a dyad-independent ERGM: θ·s_obs − Σ_d log(1 + exp(θ·x_d)).

    For a dyad-independent model s(y) = Σ_d y_d x_d with x_d the change statistics of dyad
    d, so Z(θ) = Π_d (1 + exp(θ·x_d)).

    Parameters
    ----------
    theta : array (k,)
    change_statistics : array (N, k)
        x_d of every dyad.
    observed : array (k,)
        s(y_obs) = Σ_d y_obs,d x_d.
    """
    owner = "dyad_independent_log_likelihood"
    observed = as_vector(owner, "observed", observed)
    theta = as_vector(owner, "theta", theta, observed.size)
    x = as_design(owner, change_statistics, observed.size)
    return float(theta @ observed - np.sum(np.logaddexp(0.0, x @ theta)))


class DyadIndependentMLE(NamedTuple):
    """Output of :func:`dyad_independent_mle`: ``theta`` (k,), ``cov`` (k, k) = the inverse
    of the exact Fisher information Σ_d p_d (1 − p_d) x_d x_dᵀ, ``stderr``,
    ``log_likelihood``, ``converged``, ``iterations``."""

    theta: np.ndarray
    cov: np.ndarray
    stderr: np.ndarray
    log_likelihood: float
    converged: bool
    iterations: int


def dyad_independent_mle(change_statistics: ArrayLike, observed: ArrayLike, *,
                         theta0: ArrayLike | None = None, max_iterations: int = 100,
                         tol: float = 1e-10, prior_scale: float | None = None,
                         weights: ArrayLike | None = None) -> DyadIndependentMLE:
    """Exact MLE of a dyad-independent ERGM (a logistic regression of the dyads on their
    change statistics, from the sufficient statistics alone) by damped Newton, with
    exact standard errors from the exact Hessian.

    Parameters
    ----------
    change_statistics : array (N, k)
        Per-dyad change statistics x_d.
    observed : array (k,)
        s(y_obs) = Σ_d y_obs,d x_d.
    theta0 : array (k,), optional
        Start (zeros).
    max_iterations : int
    tol : float
        Stop when the gradient's largest entry, relative to the scale of the
        statistics, is below ``tol``.
    prior_scale : float, optional
        With it, the maximum of the log-likelihood − θ·θ / (2 prior_scale²) (MAP under
        independent Normal(0, prior_scale) priors); ``log_likelihood`` stays the
        unpenalized one.
    weights : array (N,), optional
        Each row stands for ``weights[d]`` dyads (a case-control sample of dyads:
        ``observed`` is then the weighted Σ_d w_d y_d x_d); the log-likelihood, its
        gradient and the information are weighted sums.

    Returns
    -------
    DyadIndependentMLE
        With ``converged`` False when the MLE does not exist (s_obs on the boundary of the
        statistics' range, e.g. no edges).
    """
    owner = "dyad_independent_mle"
    observed = as_vector(owner, "observed", observed)
    k = observed.size
    x = as_design(owner, change_statistics, k)
    w = np.ones(len(x)) if weights is None else np.asarray(weights, np.float64)
    if w.shape != (len(x),) or not np.all(np.isfinite(w) & (w >= 0)):
        raise ValueError(f"{owner}: weights must be {len(x)} finite values >= 0, one per row "
                         f"of change_statistics, got shape {w.shape}")
    # columns of huge values (a covariate of 1e200) fitted in units of their largest
    # value, θ converted back: Newton's sums would overflow
    unit = np.max(np.abs(x), axis=0)
    unit = np.where(unit > _HUGE, unit, 1.0)
    x, observed = x / unit, observed / unit
    if theta0 is not None:
        theta0 = as_vector(owner, "theta0", theta0, k) * unit
    scale = np.maximum(w @ np.abs(x), 1.0)
    # dyads with the same change statistics (covariates with few levels) are one row
    # with their total weight: the same sums, a Newton step on a handful of rows
    where = _row_classes(x)
    w = np.bincount(where, weights=w)
    x = x[np.unique(where, return_index=True)[1]]

    def sums(t, full):
        eta = x @ t
        total = w @ np.logaddexp(0.0, eta)
        if not full:
            return total, None, None
        p = special.expit(eta)
        return total, (w * p) @ x, (x * (w * p * (1 - p))[:, None]).T @ x

    mle = newton_mle(sums, observed, scale, theta0=theta0, max_iterations=max_iterations,
                     tol=tol, prior_scale=prior_scale)
    if np.all(unit == 1.0):
        return mle
    cov = mle.cov / unit[:, None] / unit[None, :]  # 1e200² would overflow
    return mle._replace(theta=mle.theta / unit, cov=cov, stderr=mle.stderr / unit)


def _row_classes(x):
    """Labels 0 .. u − 1 of the distinct rows of ``x`` (N, k), in sorted order: column
    by column, the labels so far combined with the column's own (1-D uniques, far
    faster than ``np.unique(axis=0)``)."""
    labels = np.zeros(len(x), np.int64)
    for column in x.T:
        values, codes = np.unique(column, return_inverse=True)
        labels = np.unique(labels * len(values) + codes.ravel(), return_inverse=True)[1]
    return labels.ravel()


def newton_mle(sums: Callable, observed: ArrayLike, scale: ArrayLike, *,
               theta0: ArrayLike | None = None, max_iterations: int = 100,
               tol: float = 1e-10, prior_scale: float | None = None) -> DyadIndependentMLE:
    """The damped Newton of :func:`dyad_independent_mle` from sums over the dyads, for
    designs too large to hold (e.g. every dyad of a large network, summed in blocks).

    Parameters
    ----------
    sums : callable
        ``sums(theta, full)`` -> (Σ_d w_d log(1 + exp(θ·x_d)), and with ``full``
        Σ_d w_d p_d x_d and Σ_d w_d p_d (1 − p_d) x_d x_dᵀ, else None, None), p_d the
        logistic function of θ·x_d.
    observed : array (k,)
        Σ_d w_d y_d x_d.
    scale : array (k,)
        The statistics' scale for the tolerance (Σ_d w_d abs(x_d), at least 1).
    theta0, max_iterations, tol, prior_scale
        As in :func:`dyad_independent_mle`.
    """
    owner = "newton_mle"
    observed = as_vector(owner, "observed", observed)
    k = observed.size
    theta = np.zeros(k) if theta0 is None else as_vector(owner, "theta0", theta0, k)
    max_iterations = check_count(owner, "max_iterations", max_iterations)
    penalty = 0.0 if prior_scale is None else 1.0 / float(prior_scale) ** 2

    def value(t, total):
        return t @ observed - total - 0.5 * penalty * (t @ t)

    total, first, second = sums(theta, True)
    current = value(theta, total)
    converged = False
    iteration = 0
    for iteration in range(1, max_iterations + 1):
        gradient = observed - first - penalty * theta
        if np.max(np.abs(gradient) / scale) < tol:
            converged = True
            break
        hessian = second + penalty * np.eye(k)
        try:
            direction = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            direction = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        step = 1.0
        while step > 1e-12:
            candidate = theta + step * direction
            new = value(candidate, sums(candidate, False)[0])
            if np.isfinite(new) and new >= current - 1e-12 * abs(current):
                break
            step *= 0.5
        theta, current = candidate, new
        total, first, second = sums(theta, True)
    cov = np.linalg.pinv(second + penalty * np.eye(k), hermitian=True)
    return DyadIndependentMLE(theta, cov, np.sqrt(np.diag(cov)), float(theta @ observed - total),
                              converged, iteration)


def dyadic_reference(terms, X: np.ndarray, observed: np.ndarray) -> tuple | None:
    """(θ_ref, log Z(θ_ref)): the dyad-independent terms at their exact MLE (the other
    coefficients 0), where the bridge sampling of the log-likelihood starts, as ergm's;
    None when no term is dyad independent (the path then starts at θ = 0). ``X`` (N, k)
    the change statistics of every dyad."""
    columns = np.cumsum([0] + [t.size for t in terms])
    keep = np.concatenate([np.arange(columns[k], columns[k + 1]) for k, t in enumerate(terms)
                           if t.dependence == "dyadic"] or [np.zeros(0, int)])
    if keep.size == 0:
        return None
    X = X[:, keep]
    fit = dyad_independent_mle(X, observed[keep])
    theta = np.zeros(len(observed))
    theta[keep] = fit.theta
    return theta, float(np.sum(np.logaddexp(0.0, X @ fit.theta)))
