"""Moments of a sample of ERGM statistics (C chains, D draws, k statistics) with the chains'
autocorrelation, and what the simulator's adaptive sample size reads of them: the
multivariate effective sample size and a stationary start (ergm 4's
``MCMC.effectiveSize`` and adaptive burn-in). The estimators
(:mod:`~numpyro_ugm.network.estimation`) read the same moments.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpyro.diagnostics import effective_sample_size
from scipy import special, stats as scipy_stats

__all__ = ["Moments", "autocorrelation_inflation", "sample_moments",
           "multivariate_effective_size", "geweke_p_value", "stationary_start"]


class Moments(NamedTuple):
    """Moments of sampled statistics (:func:`sample_moments`)."""

    mean: np.ndarray          # (k,) weighted mean of the statistics
    cov: np.ndarray           # (k, k) weighted covariance (the Fisher information)
    mean_cov: np.ndarray      # (k, k) Monte Carlo covariance of the weighted mean
    effective_size: float     # tr(cov) / tr(mean_cov)


def autocorrelation_inflation(series):
    """n / ESS per column of a (C, D, k) series (>= 1): the autocorrelation inflation of
    the variance of its mean, from numpyro's ``effective_sample_size`` (Geyer's initial
    monotone sequence, between-chain variance included). The ESS is capped at n, so
    antithetic chains are not credited; columns without variance, and chains of fewer
    than 4 draws, get 1 (no adjustment)."""
    c, d, k = series.shape
    n = c * d
    out = np.ones(k)
    varying = np.std(series.reshape(n, k), axis=0) > 0
    if d < 4 or not varying.any():
        return out
    with np.errstate(invalid="ignore", divide="ignore"):
        ess = np.asarray(effective_sample_size(series[..., varying]), dtype=np.float64)
    ess = np.where(np.isfinite(ess) & (ess > 0), np.minimum(ess, n), n)
    out[varying] = n / ess
    return out


def sample_moments(stats, log_weights=None):
    """Moments of the statistics (C, D, k) under normalized weights ∝ exp(log_weights)
    (uniform when None): the self-normalized importance-sampling estimates at a θ other
    than the sampled one.

    The Monte Carlo covariance of the weighted mean ŝ is that of the mean of its
    influence series u_i = n w_i (s_i − ŝ), Σ_i w_i² (s_i − ŝ)(s_i − ŝ)ᵀ for independent
    draws, with the autocorrelation of the chains added along the principal axes Q of
    the weighted covariance: each axis's variance is inflated by n / ESS of the influence
    projected on it (``autocorrelation_inflation``). The axes are uncorrelated at lag 0, and Q also
    diagonalizes the inverse Fisher information, so the Monte Carlo covariance of θ̂,
    I⁻¹ V I⁻¹, gets each of its principal directions' own autocorrelation (what a
    per-statistic ESS would miss when, e.g., edges and triangles mix slowly together but
    their contrast mixes fast)."""
    c, d, k = stats.shape
    n = c * d
    flat = stats.reshape(n, k)
    if log_weights is None:
        w = np.full(n, 1.0 / n)
    else:
        lw = np.asarray(log_weights, np.float64).reshape(n)
        w = np.exp(lw - special.logsumexp(lw))
    mean = w @ flat
    centered = flat - mean
    cov = (centered * w[:, None]).T @ centered
    _, axes = np.linalg.eigh(cov)
    projected = (centered * (n * w)[:, None]) @ axes
    root = np.sqrt(autocorrelation_inflation(projected.reshape(c, d, k)))
    raw = (centered * (w ** 2)[:, None]).T @ centered
    inner = axes.T @ raw @ axes * root[:, None] * root[None, :]
    mean_cov = axes @ inner @ axes.T
    mean_cov = (mean_cov + mean_cov.T) / 2
    trace = np.trace(mean_cov)
    effective = float(np.trace(cov) / trace) if trace > 0 else float("inf")
    return Moments(mean, cov, mean_cov, effective)


def multivariate_effective_size(stats: np.ndarray) -> float:
    """Multivariate effective sample size of statistics (C, D, k) (Vats, Flegal & Jones
    2019, the measure of ergm's ``MCMC.effectiveSize``): n (det Σ / det(n Var ŝ))^{1/k},
    Var ŝ the autocorrelation-adjusted Monte Carlo covariance of the mean
    (:func:`sample_moments`), over the statistics that vary; the geometric mean of the
    effective sizes along the principal axes, so a slowly mixing direction does not hide
    the others."""
    c, d, k = stats.shape
    n = c * d
    varying = np.std(stats.reshape(n, k), axis=0) > 0
    if not varying.any():
        return float(n)
    moments = sample_moments(stats[..., varying])
    sign_cov, log_cov = np.linalg.slogdet(moments.cov)
    sign_mean, log_mean = np.linalg.slogdet(n * moments.mean_cov)
    if sign_cov <= 0 or sign_mean <= 0:  # linearly dependent statistics
        return moments.effective_size
    return float(n * np.exp((log_cov - log_mean) / int(varying.sum())))


def geweke_p_value(stats: np.ndarray, first: float = 0.1, last: float = 0.5) -> float:
    """Multivariate Geweke test that statistics (C, D, k) are stationary: the mean of the
    first ``first`` of every chain's draws (at least 4) against the mean of the last
    ``last``, T² = dᵀ (V₁ + V₂)⁻¹ d with V the autocorrelation-adjusted Monte Carlo
    covariances of the two means (:func:`sample_moments`), referred to χ²_k (over the
    statistics that vary). Chains of fewer than 8 draws, or statistics without variance:
    1 (nothing to test)."""
    c, d, k = stats.shape
    n_first, n_last = max(math.ceil(first * d), 4), max(math.ceil(last * d), 4)
    varying = np.std(stats.reshape(c * d, k), axis=0) > 0
    if d < 8 or n_first + n_last > d or not varying.any():
        return 1.0
    head, tail = stats[:, :n_first][..., varying], stats[:, d - n_last:][..., varying]
    start, end = sample_moments(head), sample_moments(tail)
    difference = start.mean - end.mean
    variance = start.mean_cov + end.mean_cov
    try:
        t2 = float(difference @ np.linalg.solve(variance, difference))
    except np.linalg.LinAlgError:
        return 1.0
    return float(scipy_stats.chi2.sf(t2, int(varying.sum())))


def stationary_start(stats: np.ndarray, p_value: float = 0.2,
                     fractions: Sequence[float] = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5)
                     ) -> int | None:
    """The first draw of a stationary-looking part of statistics (C, D, k), as ergm 4's
    adaptive burn-in (``MCMC.effectiveSize.burnin.pval = 0.2``, at most half the sample):
    the smallest cut, among ``fractions`` of D, after which :func:`geweke_p_value`
    exceeds ``p_value``; None when no cut passes (the chains are still moving: run
    them longer)."""
    d = stats.shape[1]
    for cut in sorted({int(f * d) for f in fractions}):
        if geweke_p_value(stats[:, cut:]) > p_value:
            return cut
    return None
