"""The sampled statistics that the Monte Carlo estimators of an ERGM work from: checks of
their arguments, the ``simulate`` callback, and moments with the chains' autocorrelation
(the degeneracy check is :mod:`~numpyro_ugm.network.diagnostics.degeneracy`'s).

The model is p(y; θ) = exp(θ·s(y)) / Z(θ) over the graphs y with N dyads. Its Monte Carlo
estimators (:mod:`~numpyro_ugm.network.estimation.mcmle`,
:mod:`~numpyro_ugm.network.estimation.standard_errors`,
:mod:`~numpyro_ugm.network.estimation.log_likelihood`, :mod:`~numpyro_ugm.network.summary`)
work from sampled statistics, never from graphs, and take the sampler as a callback::

    simulate(theta, rng_key) -> stats   # array (num_chains, num_samples, k), draws in chain order

The callback keeps its own chain state between calls (persistent chains; its burn-in after
θ moves is its own business). Two calls at the same θ continue the same chains, so a larger
sample is made by calling it again and joining the draws along the draw axis
(:func:`sample_statistics`).

The arithmetic is numpy float64 on the host, vectorized over the draws: the sums of
exp(Δθ·s) over draws with statistics in the thousands need the double precision that JAX
does not use by default here, and the loops are over iterations (each a callback, a linear
program and a small Newton solve), not over draws or chains.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import jax
import numpy as np
from numpyro.diagnostics import effective_sample_size
from scipy import special, stats as scipy_stats

__all__ = ["multivariate_effective_size", "geweke_p_value", "stationary_start", "as_vector",
           "as_names", "as_statistics", "check_simulate", "check_fraction", "Moments",
           "sample_moments", "autocorrelation_inflation", "split_keys", "sample_statistics"]


# --- argument checks -------------------------------------------------------------------


def as_vector(owner, name, value, k=None):
    """A finite float64 vector (k,)."""
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{owner}: {name} must be a numeric vector, got "
                        f"{type(value).__name__}") from error
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"{owner}: {name} must be a non-empty vector (k,), got shape "
                         f"{v.shape}")
    if k is not None and v.shape != (k,):
        raise ValueError(f"{owner}: {name} must have shape ({k},) (one value per statistic), "
                         f"got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{owner}: {name} holds non-finite values {v.tolist()}")
    return v


def as_names(owner, names, k):
    """``names`` as a list of k strings (``theta[i]`` when None)."""
    if names is None:
        return [f"theta[{i}]" for i in range(k)]
    if isinstance(names, str):
        raise TypeError(f"{owner}: names must be a sequence of {k} strings, got one string "
                        f"{names!r}")
    names = list(names)
    if len(names) != k or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{owner}: names must be {k} strings (one per statistic), got "
                         f"{names!r}")
    return names


def as_statistics(owner, value, k, name="simulate(theta, rng_key)"):
    """Sampled statistics as float64 (num_chains, num_samples, k)."""
    try:
        s = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{owner}: {name} must return a numeric array (num_chains, "
                        f"num_samples, k), got {type(value).__name__}") from error
    if s.ndim != 3 or s.shape[2] != k:
        raise ValueError(f"{owner}: {name} must return an array (num_chains, num_samples, {k}) "
                         f"(draws in chain order; num_chains may be 1), got shape {s.shape}")
    if s.shape[0] < 1 or s.shape[1] < 2:
        raise ValueError(f"{owner}: {name} must return at least one chain of at least 2 "
                         f"draws, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{owner}: {name} returned non-finite statistics")
    return s


def check_simulate(owner, simulate):
    """Refuse a ``simulate`` that is not callable."""
    if not callable(simulate):
        raise TypeError(f"{owner}: simulate must be a callable simulate(theta, rng_key) -> "
                        f"stats (num_chains, num_samples, k), got {type(simulate).__name__}")


def check_fraction(owner, name, value, low=0.0, high=1.0, open_low=True, open_high=True):
    """``value`` as a float inside the interval (low, high) (ends closed on request)."""
    try:
        v = float(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{owner}: {name} must be a number, got {value!r}") from error
    below = v <= low if open_low else v < low
    above = v >= high if open_high else v > high
    if not math.isfinite(v) or below or above:
        lo, hi = ("(" if open_low else "["), (")" if open_high else "]")
        raise ValueError(f"{owner}: {name} must lie in {lo}{low}, {high}{hi}, got {value!r}")
    return v


# --- moments of (importance-weighted) sampled statistics --------------------------------


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


def split_keys(rng_key, num):
    """``num`` keys from ``rng_key`` by successive two-way splits: one compiled split for
    any ``num`` (``jax.random.split(rng_key, num)`` compiles once per ``num``)."""
    keys = []
    for _ in range(num):
        rng_key, subkey = jax.random.split(rng_key)
        keys.append(subkey)
    return keys


def sample_statistics(simulate, theta, rng_key, repeats, k, owner, stop=None):
    """``repeats`` calls at θ, joined along the draw axis (persistent chains); with
    ``stop`` (a test of the draws so far), each call gets it as a keyword and the calls
    end as soon as it is true."""
    keys = split_keys(rng_key, repeats)
    parts = []
    for i in range(repeats):
        extra = {} if stop is None else {"stop": stop}
        parts.append(as_statistics(owner, simulate(np.asarray(theta), keys[i], **extra), k))
        if len({p.shape[0] for p in parts}) != 1:
            raise ValueError(f"{owner}: simulate returned different numbers of chains "
                             f"across calls ({[p.shape[0] for p in parts]})")
        if stop is not None and i + 1 < repeats and stop(np.concatenate(parts, axis=1)):
            break
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
