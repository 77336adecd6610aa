"""Monte Carlo maximum likelihood for ERGMs at the level of the sufficient statistics:
statnet's ``ergm()`` estimate, standard errors, log-likelihood and summary.

The model is p(y; θ) = exp(θ·s(y)) / Z(θ) over the graphs y with N dyads. Everything here
works from sampled statistics, never from graphs, and takes the sampler as a callback::

    simulate(theta, key) -> stats   # array (num_chains, num_draws, k), draws in chain order

The callback keeps its own chain state between calls (persistent chains; its burn-in after
θ moves is its own business). Two calls at the same θ continue the same chains, so this
module makes a larger sample by calling it again and joining the draws along the draw axis.

* :func:`mcmle`: statnet's MCMLE loop (Hummel, Hunter & Handcock 2012): simulate at θ_t,
  find the Hummel step length (:func:`hummel_step_length`), step to the maximum of the
  Geyer–Thompson importance-sampling approximation of the log-likelihood with the target
  moved that far towards s_obs, and stop by ergm 4's default ``"confidence"`` criterion
  (or ergm's ``"Hotelling"`` one). Degenerate samples stop it with
  :class:`ErgmDegeneracyError`, naming the terms.
* :func:`mcmle_standard_errors`: from a final sample at the estimate, the inverse Fisher
  information and the Monte Carlo covariance of θ̂, their sum, ergm's ``MCMC %``, z and
  p-values.
* :func:`log_likelihood_bridge`: log L(θ) = θ·s_obs − log Z(θ) by bridge sampling along
  tθ, t ∈ [0, 1], from log Z(0) = N log 2, with its Monte Carlo standard error.
* Dyad-independent models, exactly: :func:`dyad_independent_log_likelihood`,
  :func:`dyad_independent_mle` (Newton), :func:`dyad_independent_fit`.
* :func:`mcmle_fit`: all of it in one call (:func:`fit_at`: the last part, at a given
  estimate), returning an :class:`ErgmFit` whose
  :meth:`~ErgmFit.summary` prints like R's ``summary(ergm)``.

The arithmetic is numpy float64 on the host, vectorized over the draws: the sums of
exp(Δθ·s) over draws with statistics in the thousands need the double precision that JAX
does not use by default here, and the loop is over iterations (each a callback, a linear
program and a small Newton solve), not over draws or chains.

Definitions (checked against R's ergm 4 sources):

* ``MCMC %`` = round(100 (se_total − se_model) / se_total) with se_total² = se_model² +
  se_MC², the share of the total standard error due to Monte Carlo estimation
  (``summary.ergm``). (ergmx prints 100 se_MC² / se_total² instead.)
* z = θ̂ / se_total and Pr(>|z|) = 2 Φ(−|z|) (normal, as ergm 4).
* AIC = −2 l + 2 k, BIC = −2 l + k log N with N the number of dyads (ergm's ``nobs``);
  null deviance 2 N log 2 on N degrees of freedom, residual deviance −2 l on N − k.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import numpy as np
from jax.typing import ArrayLike
from numpyro.diagnostics import effective_sample_size
from scipy import optimize, special, stats as scipy_stats

from .._checks import as_key, check_count

__all__ = ["mcmle", "MCMLEResult", "hummel_step_length", "mcmle_standard_errors",
           "StandardErrors", "log_likelihood_bridge", "BridgeLogLikelihood",
           "dyad_independent_log_likelihood", "dyad_independent_mle", "DyadIndependentMLE",
           "dyad_independent_fit", "mcmle_fit", "fit_at", "ErgmFit", "ErgmDegeneracyError"]

_TERMINATIONS = ("confidence", "hotelling", "none")


class ErgmDegeneracyError(RuntimeError):
    """The sampled statistics cannot move θ: a term with zero variance, linearly
    dependent terms, or observed statistics outside the sampled convex hull with a step
    length of about 0 for several iterations.

    Attributes
    ----------
    terms : list of str
        The offending terms.
    record : MCMLEResult or None
        The iterations up to the stop (when raised by :func:`mcmle`).
    """

    def __init__(self, message: str, terms: Sequence[str], record: Any = None):
        super().__init__(message)
        self.terms = list(terms)
        self.record = record


# --- argument checks -------------------------------------------------------------------


def _as_vector(owner, name, value, k=None):
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


def _as_names(owner, names, k):
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


def _as_statistics(owner, value, k, name="simulate(theta, key)"):
    """Sampled statistics as float64 (num_chains, num_draws, k)."""
    try:
        s = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{owner}: {name} must return a numeric array (num_chains, "
                        f"num_draws, k), got {type(value).__name__}") from error
    if s.ndim != 3 or s.shape[2] != k:
        raise ValueError(f"{owner}: {name} must return an array (num_chains, num_draws, {k}) "
                         f"(draws in chain order; num_chains may be 1), got shape {s.shape}")
    if s.shape[0] < 1 or s.shape[1] < 2:
        raise ValueError(f"{owner}: {name} must return at least one chain of at least 2 "
                         f"draws, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{owner}: {name} returned non-finite statistics")
    return s


def _check_simulate(owner, simulate):
    if not callable(simulate):
        raise TypeError(f"{owner}: simulate must be a callable simulate(theta, key) -> "
                        f"stats (num_chains, num_draws, k), got {type(simulate).__name__}")


def _check_fraction(owner, name, value, low=0.0, high=1.0, open_low=True, open_high=True):
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


class _Moments(NamedTuple):
    mean: np.ndarray          # (k,) weighted mean of the statistics
    cov: np.ndarray           # (k, k) weighted covariance (the Fisher information)
    mean_cov: np.ndarray      # (k, k) Monte Carlo covariance of the weighted mean
    effective_size: float     # tr(cov) / tr(mean_cov)


def _inflation(series):
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


def _moments(stats, log_weights=None):
    """Moments of the statistics (C, D, k) under normalized weights ∝ exp(log_weights)
    (uniform when None): the self-normalized importance-sampling estimates at a θ other
    than the sampled one.

    The Monte Carlo covariance of the weighted mean ŝ is that of the mean of its
    influence series u_i = n w_i (s_i − ŝ), Σ_i w_i² (s_i − ŝ)(s_i − ŝ)ᵀ for independent
    draws, with the autocorrelation of the chains added along the principal axes Q of
    the weighted covariance: each axis's variance is inflated by n / ESS of the influence
    projected on it (``_inflation``). The axes are uncorrelated at lag 0, and Q also
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
    root = np.sqrt(_inflation(projected.reshape(c, d, k)))
    raw = (centered * (w ** 2)[:, None]).T @ centered
    inner = axes.T @ raw @ axes * root[:, None] * root[None, :]
    mean_cov = axes @ inner @ axes.T
    mean_cov = (mean_cov + mean_cov.T) / 2
    trace = np.trace(mean_cov)
    effective = float(np.trace(cov) / trace) if trace > 0 else float("inf")
    return _Moments(mean, cov, mean_cov, effective)


def _check_degenerate(owner, stats, names, observed, theta):
    """Raise :class:`ErgmDegeneracyError` for terms without variance or linearly
    dependent terms in the sample."""
    k = stats.shape[2]
    flat = stats.reshape(-1, k)
    sd = flat.std(axis=0)
    scale = np.maximum(np.abs(flat).max(axis=0), 1.0)
    constant = np.flatnonzero(sd <= 1e-12 * scale)
    if constant.size:
        bad = [names[i] for i in constant]
        detail = ", ".join(f"{names[i]} = {flat[0, i]:g} in every draw (observed "
                           f"{observed[i]:g})" for i in constant)
        raise ErgmDegeneracyError(
            f"{owner}: the sampled statistics of {bad} have zero variance at theta = "
            f"{np.round(theta, 4).tolist()} ({detail}): the sampler did not mix, or the "
            f"model is degenerate there (nearly all mass on one graph), or the observed "
            f"value is the term's smallest or largest possible one (then its MLE does not "
            f"exist: the coefficient is -inf or +inf); theta cannot be estimated from this "
            f"sample. Start closer (e.g. the MPLE), simulate longer, or drop the term.", bad)
    if k > 1:
        corr = np.corrcoef(flat, rowvar=False)
        values, vectors = np.linalg.eigh(corr)
        if values[0] < 1e-10:
            loading = np.abs(vectors[:, 0])
            involved = [names[i] for i in np.flatnonzero(loading > 0.1)]
            raise ErgmDegeneracyError(
                f"{owner}: the sampled statistics of {involved} are linearly dependent "
                f"(their correlation matrix is singular, smallest eigenvalue "
                f"{values[0]:.2e}) at theta = {np.round(theta, 4).tolist()}: the model is "
                f"not identifiable from this sample; drop one of these terms.", involved)


# --- the Hummel step length and the Geyer–Thompson step --------------------------------


def _standardize(stats, observed):
    """Statistics and observed values centred at the sample mean and scaled by the
    sample standard deviations: (n, k) draws, (k,) observed, (k,) scale."""
    k = stats.shape[-1]
    flat = stats.reshape(-1, k)
    mean = flat.mean(axis=0)
    sd = flat.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return (flat - mean) / sd, (observed - mean) / sd, sd


def hummel_step_length(stats: ArrayLike, observed: ArrayLike, *, margin: float = 0.05,
                       max_step: float = 1.0) -> float:
    """Hummel et al. (2012)'s step length: the largest γ ∈ [0, max_step] for which the
    point s̄ + (1 + margin) γ (s_obs − s̄) lies in the convex hull of the sampled
    statistics (s̄ their mean), as ergm's ``.Hummel.steplength`` defines it.

    Found by one linear program (scipy's HiGHS) in the variables γ and the convex
    weights λ of the distinct sampled points: maximize γ subject to
    Σ λ_i z_i = (1 + margin) γ z_obs, Σ λ_i = 1, λ ≥ 0 (z: standardized statistics).
    The Geyer–Thompson approximation of the log-likelihood with the target
    s̄ + γ (s_obs − s̄) then has a maximum, at most 1/(1 + margin) of the way to the hull's
    boundary.

    Parameters
    ----------
    stats : array (num_chains, num_draws, k) or (num_draws, k)
        Sampled statistics.
    observed : array (k,)
        Observed statistics s_obs.
    margin : float
        ergm's ``MCMLE.steplength.margin`` (>= 0).
    max_step : float
        ergm's ``MCMLE.steplength`` (in (0, 1]).

    Returns
    -------
    float
        γ; ``max_step`` when the margin-inflated s_obs itself is in the hull, 0 when s_obs
        lies on the hull's boundary or outside it in a direction the sample does not span.
    """
    owner = "hummel_step_length"
    observed = _as_vector(owner, "observed", observed)
    k = observed.size
    s = np.asarray(stats, dtype=np.float64)
    if s.ndim == 2:
        s = s[None]
    s = _as_statistics(owner, s, k, name="stats")
    margin = float(margin)
    if not math.isfinite(margin) or margin < 0:
        raise ValueError(f"{owner}: margin must be a finite number >= 0, got {margin!r}")
    max_step = _check_fraction(owner, "max_step", max_step, open_high=False)
    return _hummel(s, observed, margin, max_step)


def _hummel(stats, observed, margin, max_step):
    z, z_obs, _ = _standardize(stats, observed)
    points = np.unique(z, axis=0)
    m, k = points.shape
    direction = (1.0 + margin) * z_obs
    if not np.any(direction):
        return max_step
    # variables: λ (m), γ; minimize −γ
    cost = np.zeros(m + 1)
    cost[-1] = -1.0
    a_eq = np.zeros((k + 1, m + 1))
    a_eq[:k, :m] = points.T
    a_eq[:k, -1] = -direction
    a_eq[k, :m] = 1.0
    b_eq = np.zeros(k + 1)
    b_eq[k] = 1.0
    bounds = [(0.0, None)] * m + [(0.0, max_step)]
    result = optimize.linprog(cost, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if result.status != 0:
        return 0.0
    return float(np.clip(result.x[-1], 0.0, max_step))


def _geyer_thompson_step(stats, target, max_newton=200, tol=1e-10):
    """Δθ maximizing Δθ·target − log mean exp(Δθ·s_i): the importance-sampling
    (Geyer–Thompson) approximation of l(θ + Δθ) − l(θ) with s_obs replaced by ``target``.
    Damped Newton in standardized coordinates. Returns (Δθ, converged)."""
    z, z_target, sd = _standardize(stats, target)
    eta = np.zeros(z.shape[1])

    def objective(e):
        return e @ z_target - special.logsumexp(z @ e)

    value = objective(eta)
    converged = False
    for _ in range(max_newton):
        lw = z @ eta
        w = np.exp(lw - special.logsumexp(lw))
        mu = w @ z
        gradient = z_target - mu
        if np.max(np.abs(gradient)) < tol:
            converged = True
            break
        centered = z - mu
        hessian = (centered * w[:, None]).T @ centered
        try:
            direction = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            direction = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        step = 1.0
        slope = gradient @ direction
        while step > 1e-12:
            candidate = eta + step * direction
            new_value = objective(candidate)
            if np.isfinite(new_value) and new_value >= value + 1e-4 * step * slope:
                break
            step *= 0.5
        else:
            break
        eta, value = candidate, new_value
    return eta / sd, converged


# --- Hotelling's T² ---------------------------------------------------------------------


def _tsq_sf(t2, dim, df):
    """P(T² > t2) for Hotelling's T² with ``dim`` variables and ``df`` degrees of freedom
    (F(dim, df − dim + 1) scaled); NaN when df <= dim."""
    if not df > dim:
        return float("nan")
    scale = (df - dim + 1) / (dim * df)
    return float(scipy_stats.f.sf(t2 * scale, dim, df - dim + 1))


def _tsq_quantile(q, dim, df):
    scale = (df - dim + 1) / (dim * df)
    return float(scipy_stats.f.ppf(q, dim, df - dim + 1) / scale)


def _hotelling(difference, mean_cov):
    """T² = dᵀ V⁻¹ d (pseudo-inverse)."""
    return float(difference @ np.linalg.pinv(mean_cov, hermitian=True) @ difference)


def _distance_to_ellipsoid_boundary(point, cov, shape_inverse):
    """min over x with xᵀ A x = 1 of (x − point)ᵀ cov⁻¹ (x − point), A = ``shape_inverse``,
    for ``point`` inside the ellipsoid: the squared Mahalanobis distance (metric ``cov``)
    from the point to the boundary of the tolerance region (ergm's
    ``.ellipsoid_mahalanobis``). Both matrices are simultaneously diagonalized; the
    Lagrange condition z_i = g_i / (1 − μ b_i) is solved for μ ∈ (0, 1/b_max)."""
    chol = np.linalg.cholesky(cov)
    b_matrix = chol.T @ shape_inverse @ chol
    b, q = np.linalg.eigh((b_matrix + b_matrix.T) / 2)
    g = q.T @ np.linalg.solve(chol, point)
    b_max = b[-1]
    if b_max <= 0:
        return float("inf")

    def excess(mu):
        return np.sum(b * g ** 2 / (1.0 - mu * b) ** 2) - 1.0

    upper = (1.0 - 1e-12) / b_max
    if excess(upper) < 0:  # the point lies on the axis of least cov-scaled extent
        below = b < b_max
        z = np.zeros_like(g)
        z[below] = g[below] / (1.0 - b[below] / b_max)
        rest = max(1.0 - np.sum(b * z ** 2), 0.0)
        top = b == b_max
        z[top] = np.sqrt(rest / (b_max * top.sum()))
        return float(np.sum((z - g) ** 2))
    mu = optimize.brentq(excess, 0.0, upper, xtol=1e-14, rtol=1e-12)
    z = g / (1.0 - mu * b)
    return float(np.sum((z - g) ** 2))


# --- MCMLE ---------------------------------------------------------------------------


@dataclasses.dataclass
class MCMLEResult:
    """The record of :func:`mcmle`.

    Attributes
    ----------
    theta : array (k,)
        The estimate: the last update.
    converged : bool
        Whether the termination criterion was met.
    iterations : int
        Number of iterations (simulations + updates).
    termination : str
        The criterion (``"confidence"``, ``"hotelling"`` or ``"none"``).
    message : str
        How it ended.
    theta_history : array (iterations + 1, k)
        θ_0 (the start), θ_1, ..., θ_T; iteration t sampled at ``theta_history[t]``.
    step_lengths : array (iterations,)
        Hummel step length γ of each iteration.
    hotelling_statistics, hotelling_p_values : arrays (iterations,)
        Hotelling's T² test of E_θt[s] = s_obs with the autocorrelation-adjusted
        covariance of the sample mean (ergm's ``approx.hotelling.diff.test``): a small
        p-value says θ_t is not the MLE.
    tolerance_distances : arrays (iterations,)
        d² = (s_obs − s̄)ᵀ (precision Cov s)⁻¹ (s_obs − s̄): the distance of s_obs from the
        sample mean on the scale of ergm's tolerance region (< 2 starts the
        ``"confidence"`` test).
    convergence_p_values : array (iterations,)
        The ``"confidence"`` criterion's p-value (equivalence test; converged when below
        1 − confidence); NaN where it was not computed.
    predicted_differences : array (iterations, k)
        s_obs − Ê_{θ_{t+1}}[s], the importance-sampling estimate from iteration t's sample
        of how far the update's expected statistics miss s_obs (0 up to the solver's
        tolerance after a full step).
    num_draws : array (iterations,)
        Draws (all chains) in each iteration's sample.
    effective_sizes : array (iterations,)
        tr(Cov s) / tr(Cov s̄): the effective number of independent draws.
    last_statistics : array (num_chains, num_draws, k)
        The last iteration's sample, drawn at ``theta_history[-2]``.
    """

    theta: np.ndarray
    converged: bool
    iterations: int
    termination: str
    message: str
    theta_history: np.ndarray
    step_lengths: np.ndarray
    hotelling_statistics: np.ndarray
    hotelling_p_values: np.ndarray
    tolerance_distances: np.ndarray
    convergence_p_values: np.ndarray
    predicted_differences: np.ndarray
    num_draws: np.ndarray
    effective_sizes: np.ndarray
    last_statistics: np.ndarray | None
    repeats: int = 1


def _split(key, num):
    """``num`` keys from ``key`` by successive two-way splits: one compiled split for any
    ``num`` (``jax.random.split(key, num)`` compiles once per ``num``)."""
    keys = []
    for _ in range(num):
        key, subkey = jax.random.split(key)
        keys.append(subkey)
    return keys


def _simulate(simulate, theta, key, repeats, k, owner):
    """``repeats`` calls at θ, joined along the draw axis (persistent chains)."""
    keys = _split(key, repeats)
    parts = [_as_statistics(owner, simulate(np.asarray(theta), keys[i]), k)
             for i in range(repeats)]
    if len({p.shape[0] for p in parts}) != 1:
        raise ValueError(f"{owner}: simulate returned different numbers of chains across "
                         f"calls ({[p.shape[0] for p in parts]})")
    return parts[0] if repeats == 1 else np.concatenate(parts, axis=1)


def _outside_terms(stats, observed, names):
    """Terms whose observed value is at or beyond the sampled range; else those farthest
    from the sample mean (in standard deviations)."""
    flat = stats.reshape(-1, stats.shape[-1])
    low, high = flat.min(axis=0), flat.max(axis=0)
    outside = np.flatnonzero((observed <= low) | (observed >= high))
    if outside.size:
        return [names[i] for i in outside], [
            f"{names[i]}: observed {observed[i]:g}, sampled range [{low[i]:g}, {high[i]:g}]"
            for i in outside]
    z = np.abs(observed - flat.mean(axis=0)) / flat.std(axis=0)
    order = np.argsort(-z)[:max(1, min(2, len(names)))]
    return [names[i] for i in order], [
        f"{names[i]}: observed {observed[i]:g} is {z[i]:.1f} sd from the sampled mean "
        f"{flat[:, i].mean():g}" for i in order]


def mcmle(simulate: Callable, observed: ArrayLike, theta0: ArrayLike, *, key: Any,
          names: Sequence[str] | None = None, max_iterations: int = 60,
          termination: str = "confidence", confidence: float = 0.99,
          precision: float = 0.1, steplength_margin: float = 0.05,
          max_step: float = 1.0, min_step_length: float = 1e-4,
          stall_iterations: int = 3, max_repeats: int = 8,
          hotelling_min_p_value: float = 0.5, verbose: bool = False) -> MCMLEResult:
    """Monte Carlo maximum likelihood (statnet's MCMLE: Hummel, Hunter & Handcock 2012).

    Iteration t: draw s_1..s_n at θ_t (``simulate``); take the Hummel step length γ
    (:func:`hummel_step_length`, margin ``steplength_margin``); set θ_{t+1} = θ_t + Δθ with
    Δθ maximizing the Geyer–Thompson approximation Δθ·ξ − log mean_i exp(Δθ·s_i) of
    l(θ_t + Δθ) − l(θ_t) with the target ξ = s̄ + γ (s_obs − s̄) (s_obs when γ = 1).

    Termination (``termination``):

    * ``"confidence"`` (ergm 4's default, ``MCMLE.termination="confidence"``): the
      tolerance region is {δ : δᵀ (precision · Cov s)⁻¹ δ < 1} around s_obs. When the sample
      mean is near it (d² < 2), the update's expected statistics E_{θ_{t+1}}[s] are
      estimated by importance weights, with their Monte Carlo covariance V
      (autocorrelation-adjusted, inflated by the weights); if they lie inside the region,
      T² = the squared V-Mahalanobis distance from them to the region's boundary is
      referred to Hotelling's T² (k, n_eff − 1): converged when P(T²_{k,n_eff−1} > T²) <
      1 − confidence, i.e. E_θ̂[s] is within tolerance of s_obs with that confidence.
      Unlike ergm, the test also needs the full step length γ = ``max_step``: s_obs on
      the boundary of the sampled hull (γ = 1/(1 + margin)), e.g. an observed statistic
      at its smallest possible value, whose MLE does not exist, never converges (the
      coefficient runs off until the term stops varying: :class:`ErgmDegeneracyError`).
      Otherwise the sample grows (more ``simulate`` calls per iteration, up to
      ``max_repeats``) by min(critical value / T², 2), as ergm's
      ``MCMLE.confidence.boost``; it also doubles when d² failed to decrease in more than
      1 of the last 4 iterations.
    * ``"hotelling"`` (ergm's ``"Hotelling"``): converged when γ = ``max_step`` and the
      Hotelling test of E_θt[s] = s_obs gives p >= 1 − √(1 − hotelling_min_p_value)
      twice in a row (the sample grows 4 times after the first).
    * ``"none"``: run ``max_iterations`` iterations.

    Every iteration records the Hotelling nonconvergence p-value, d², γ, the update's
    predicted miss s_obs − Ê_{θ_{t+1}}[s] and (where computed) the ``"confidence"``
    p-value (:class:`MCMLEResult`).

    Parameters
    ----------
    simulate : callable
        ``simulate(theta, key) -> stats`` (num_chains, num_draws, k), draws in chain order;
        persistent chains (two calls at the same θ continue them).
    observed : array (k,)
        Observed statistics s(y_obs).
    theta0 : array (k,)
        Start (ergm starts at the MPLE).
    key : jax PRNG key
        Split into one key per ``simulate`` call.
    names : sequence of k str, optional
        Term names, for messages.
    max_iterations : int
        ergm's ``MCMLE.maxit`` (60).
    termination : {"confidence", "hotelling", "none"}
    confidence, precision : float
        ergm's ``MCMLE.confidence`` (0.99) and ``MCMLE.MCMC.precision`` (0.1 with
        ``"confidence"``).
    steplength_margin, max_step : float
        ergm's ``MCMLE.steplength.margin`` (0.05) and ``MCMLE.steplength`` (1).
    min_step_length, stall_iterations : float, int
        Stop with :class:`ErgmDegeneracyError` when γ < ``min_step_length`` in
        ``stall_iterations`` successive iterations.
    max_repeats : int
        Most ``simulate`` calls joined into one iteration's sample.
    hotelling_min_p_value : float
        ergm's ``MCMLE.conv.min.pval`` (for ``"hotelling"``).
    verbose : bool
        Print one line per iteration.

    Returns
    -------
    MCMLEResult

    Raises
    ------
    ErgmDegeneracyError
        A sampled term with zero variance, linearly dependent terms, or a stalled step
        length; ``terms`` names them, ``record`` holds the iterations so far.
    """
    owner = "mcmle"
    _check_simulate(owner, simulate)
    observed = _as_vector(owner, "observed", observed)
    k = observed.size
    theta = _as_vector(owner, "theta0", theta0, k)
    names = _as_names(owner, names, k)
    key = as_key(key, owner)
    max_iterations = check_count(owner, "max_iterations", max_iterations)
    stall_iterations = check_count(owner, "stall_iterations", stall_iterations)
    max_repeats = check_count(owner, "max_repeats", max_repeats)
    if termination not in _TERMINATIONS:
        raise ValueError(f"{owner}: termination must be one of {_TERMINATIONS}, got "
                         f"{termination!r}")
    confidence = _check_fraction(owner, "confidence", confidence)
    precision = _check_fraction(owner, "precision", precision, high=math.inf)
    margin = float(steplength_margin)
    if not math.isfinite(margin) or margin < 0:
        raise ValueError(f"{owner}: steplength_margin must be a finite number >= 0, got "
                         f"{steplength_margin!r}")
    max_step = _check_fraction(owner, "max_step", max_step, open_high=False)
    min_step_length = _check_fraction(owner, "min_step_length", min_step_length,
                                      open_low=False, high=max_step)
    hotelling_threshold = 1.0 - math.sqrt(1.0 - _check_fraction(
        owner, "hotelling_min_p_value", hotelling_min_p_value))

    history = {name: [] for name in ("step", "t2", "p", "d2", "pconv", "n", "neff",
                                     "predicted")}
    thetas = [theta.copy()]
    repeats, stalled, last_adequate = 1, 0, False
    previous_difference, not_improved = None, [False] * 4
    stats = None
    converged, message = False, f"reached max_iterations = {max_iterations}"

    def record(final_message, done):
        return MCMLEResult(
            theta=thetas[-1].copy(), converged=done, iterations=len(history["step"]),
            termination=termination, message=final_message,
            theta_history=np.asarray(thetas), step_lengths=np.asarray(history["step"]),
            hotelling_statistics=np.asarray(history["t2"]),
            hotelling_p_values=np.asarray(history["p"]),
            tolerance_distances=np.asarray(history["d2"]),
            convergence_p_values=np.asarray(history["pconv"]),
            predicted_differences=np.asarray(history["predicted"]).reshape(-1, k),
            num_draws=np.asarray(history["n"], dtype=np.int64),
            effective_sizes=np.asarray(history["neff"]), last_statistics=stats,
            repeats=repeats)

    for iteration in range(1, max_iterations + 1):
        key, subkey = jax.random.split(key)
        stats = _simulate(simulate, theta, subkey, repeats, k, owner)
        try:
            _check_degenerate(owner, stats, names, observed, theta)
        except ErgmDegeneracyError as error:
            error.record = record(str(error), False)
            raise
        moments = _moments(stats)
        difference = observed - moments.mean
        t2 = _hotelling(difference, moments.mean_cov)
        p_nonconvergence = _tsq_sf(t2, k, moments.effective_size - 1.0)
        tolerance_inverse = np.linalg.pinv(precision * moments.cov, hermitian=True)
        d2 = float(difference @ tolerance_inverse @ difference)
        gamma = _hummel(stats, observed, margin, max_step)
        target = moments.mean + gamma * difference
        delta, _ = _geyer_thompson_step(stats, target)
        new_theta = theta + delta
        weighted = _moments(stats, stats.reshape(-1, k) @ delta)
        predicted = observed - weighted.mean

        stalled = stalled + 1 if gamma < min_step_length else 0
        history["step"].append(gamma)
        history["t2"].append(t2)
        history["p"].append(p_nonconvergence)
        history["d2"].append(d2)
        history["n"].append(stats.shape[0] * stats.shape[1])
        history["neff"].append(moments.effective_size)
        history["predicted"].append(predicted)
        p_converged = float("nan")

        if stalled >= stall_iterations:
            history["pconv"].append(p_converged)
            thetas.append(theta.copy())  # no update: the record keeps its shapes
            bad, details = _outside_terms(stats, observed, names)
            text = (f"{owner}: the observed statistics stay outside the convex hull of the "
                    f"sampled ones (Hummel step length {gamma:.2g} < {min_step_length:g} in "
                    f"{stall_iterations} successive iterations) at theta = "
                    f"{np.round(theta, 4).tolist()}; terms {bad} ({'; '.join(details)}). The "
                    f"MLE may not exist (an observed statistic at the edge of its possible "
                    f"values) or the model is degenerate near this theta.")
            raise ErgmDegeneracyError(text, bad, record(text, False))

        if termination == "confidence":
            d2e = math.inf
            if d2 < 2.0 and gamma >= max_step:
                d2e = float(predicted @ tolerance_inverse @ predicted)
                if d2e < 1.0:
                    df = moments.effective_size - 1.0
                    try:
                        t2_boundary = _distance_to_ellipsoid_boundary(
                            predicted, weighted.mean_cov, tolerance_inverse)
                    except np.linalg.LinAlgError:
                        t2_boundary = float("nan")
                    p_converged = _tsq_sf(t2_boundary, k, df)
                    if p_converged < 1.0 - confidence:
                        converged = True
                        message = (f"converged with {confidence:.0%} confidence (E_theta[s] "
                                   f"within the tolerance region of s_obs)")
                    elif math.isfinite(p_converged) and t2_boundary > 0:
                        boost = min(_tsq_quantile(confidence, k, df) / t2_boundary, 2.0)
                        repeats = min(max_repeats, max(repeats, math.ceil(repeats * boost)))
                    else:
                        repeats = min(max_repeats, 2 * repeats)
            if previous_difference is not None:
                d2_previous = float(previous_difference @ tolerance_inverse
                                    @ previous_difference)
                not_improved = not_improved[1:] + [d2 >= d2_previous]
            previous_difference = difference
            if not converged and (d2 >= 2.0 or d2e > 1.0) and sum(not_improved) > 1:
                repeats = min(max_repeats, 2 * repeats)
                not_improved = [False] * 4
        elif termination == "hotelling":
            if gamma >= max_step and p_nonconvergence >= hotelling_threshold:
                if last_adequate:
                    converged = True
                    message = (f"converged: the Hotelling test of E_theta[s] = s_obs gave "
                               f"p >= {hotelling_threshold:.3f} twice in a row at step "
                               f"length {max_step:g}")
                else:
                    last_adequate = True
                    repeats = min(max_repeats, 4 * repeats)
            else:
                last_adequate = False
        history["pconv"].append(p_converged)
        theta = new_theta
        thetas.append(theta.copy())
        if verbose:
            print(f"mcmle iteration {iteration}: step length {gamma:.3f}, d2 {d2:.3g}, "
                  f"Hotelling p {p_nonconvergence:.3g}, convergence p {p_converged:.3g}, "
                  f"{history['n'][-1]} draws, theta {np.round(theta, 4).tolist()}")
        if converged:
            break
    return record(message, converged)


# --- standard errors -------------------------------------------------------------------


class StandardErrors(NamedTuple):
    """Output of :func:`mcmle_standard_errors` (all arrays over the k terms).

    Attributes
    ----------
    estimates : the estimate θ̂ (the one-step update of ``theta`` with ``update=True``);
    stderr : total standard errors √diag(cov);
    cov : I⁻¹ + cov_mcmc;
    cov_model : I⁻¹, the inverse Fisher information Cov_θ̂(s);
    cov_mcmc : I⁻¹ V I⁻¹, the Monte Carlo covariance of θ̂ (V: the autocorrelation-adjusted
        Monte Carlo covariance of the (importance-weighted) sample mean of s);
    mcmc_percent : ergm's ``MCMC %``, round(100 (se_total − se_model) / se_total);
    z : estimates / stderr;
    p_values : 2 Φ(−|z|);
    fisher_information : I;
    step_length : the Hummel step length of the update (1 when s_obs is well inside);
    effective_size : tr(Cov s) / tr(Cov s̄) of the sample.
    """

    estimates: np.ndarray
    stderr: np.ndarray
    cov: np.ndarray
    cov_model: np.ndarray
    cov_mcmc: np.ndarray
    mcmc_percent: np.ndarray
    z: np.ndarray
    p_values: np.ndarray
    fisher_information: np.ndarray
    step_length: float
    effective_size: float


def _mcmc_percent(stderr, model_stderr):
    with np.errstate(invalid="ignore", divide="ignore"):
        pct = np.where(stderr > 0, np.round(100.0 * (stderr - model_stderr) / stderr), 0.0)
    return np.maximum(pct, 0.0)


def _wald(estimates, stderr):
    with np.errstate(invalid="ignore", divide="ignore"):
        z = estimates / stderr
    return z, 2.0 * scipy_stats.norm.sf(np.abs(z))


def mcmle_standard_errors(stats: ArrayLike, observed: ArrayLike, theta: ArrayLike, *,
                          update: bool = True, names: Sequence[str] | None = None,
                          steplength_margin: float = 0.05) -> StandardErrors:
    """Standard errors of a Monte Carlo MLE from a final sample at the estimate.

    With ``update`` (default) the estimate is first moved by one Geyer–Thompson step on
    this sample (:func:`mcmle`'s update, Hummel-limited), so that θ̂ is a function of this
    sample's (importance-weighted) mean: θ̂ − θ* ≈ I⁻¹ (s_obs − ŝ). Then

    * I = Cov_θ̂(s), the Fisher information, from the importance-weighted sample;
    * cov_model = I⁻¹ (the asymptotic covariance of the MLE);
    * cov_mcmc = I⁻¹ V I⁻¹, V the Monte Carlo covariance of the weighted mean ŝ: its
      draws' covariance Σ w_i² (s_i − ŝ)(s_i − ŝ)ᵀ, inflated along each principal axis of
      Cov(s) by n / ESS of the influence series projected on it (numpyro's
      ``effective_sample_size`` over the chains): what autocorrelation adds (Hunter &
      Handcock 2006, sec. 3.3);
    * cov = cov_model + cov_mcmc (ergm's ``vcov(fit, sources="all")``), stderr, ergm's
      ``MCMC %`` = round(100 (se_total − se_model)/se_total), z and 2 Φ(−|z|).

    Parameters
    ----------
    stats : array (num_chains, num_draws, k)
        A sample drawn at ``theta`` (draws in chain order).
    observed : array (k,)
    theta : array (k,)
        Where ``stats`` were drawn.
    update : bool
        Take the one-step update first (else θ̂ = ``theta``, unweighted moments).
    names : sequence of str, optional
        For the degeneracy messages.
    steplength_margin : float
        Margin of the update's Hummel step.

    Returns
    -------
    StandardErrors
    """
    owner = "mcmle_standard_errors"
    observed = _as_vector(owner, "observed", observed)
    k = observed.size
    theta = _as_vector(owner, "theta", theta, k)
    names = _as_names(owner, names, k)
    stats = _as_statistics(owner, stats, k, name="stats")
    _check_degenerate(owner, stats, names, observed, theta)
    gamma = 1.0
    if update:
        gamma = _hummel(stats, observed, float(steplength_margin), 1.0)
        target = stats.reshape(-1, k).mean(axis=0)
        target = target + gamma * (observed - target)
        delta, _ = _geyer_thompson_step(stats, target)
        moments = _moments(stats, stats.reshape(-1, k) @ delta)
        estimates = theta + delta
    else:
        moments = _moments(stats)
        estimates = theta.copy()
    information = moments.cov
    cov_model = np.linalg.inv(information)
    cov_model = (cov_model + cov_model.T) / 2
    cov_mcmc = cov_model @ moments.mean_cov @ cov_model
    cov_mcmc = (cov_mcmc + cov_mcmc.T) / 2
    cov = cov_model + cov_mcmc
    stderr = np.sqrt(np.diag(cov))
    pct = _mcmc_percent(stderr, np.sqrt(np.diag(cov_model)))
    z, p = _wald(estimates, stderr)
    return StandardErrors(estimates, stderr, cov, cov_model, cov_mcmc, pct, z, p,
                          information, float(gamma), moments.effective_size)


# --- log-likelihood by bridge sampling -------------------------------------------------


class BridgeLogLikelihood(NamedTuple):
    """Output of :func:`log_likelihood_bridge`.

    Attributes
    ----------
    log_likelihood : l(θ) = θ·s_obs − log Z(θ);
    stderr : its Monte Carlo standard error;
    log_normalizer : log Z(θ);
    log_ratio : log Z(θ) − log Z(0);
    increments, increment_stderrs : arrays (num_bridges,) of the bridges'
        log Z(t_{j+1} θ) − log Z(t_j θ), j = 0 .. num_bridges − 1, and their s.e.
    """

    log_likelihood: float
    stderr: float
    log_normalizer: float
    log_ratio: float
    increments: np.ndarray
    increment_stderrs: np.ndarray


def _log_mean_exp(x):
    return special.logsumexp(x) - math.log(x.size)


def _bridge_increment(stats, half_step):
    """log Z(θ_m + h) − log Z(θ_m − h) from draws at θ_m: log mean exp(h·s) − log mean
    exp(−h·s), and its delta-method Monte Carlo s.e. (influence a_i/ā − b_i/b̄, variance
    inflated by its autocorrelation)."""
    c, d, k = stats.shape
    flat = stats.reshape(-1, k)
    shift = flat.mean(axis=0) @ half_step  # centred for range; added back below
    up = flat @ half_step - shift
    la, lb = _log_mean_exp(up), _log_mean_exp(-up)
    value = la - lb + 2.0 * shift
    influence = np.exp(up - la) - np.exp(-up - lb)
    variance = influence.var()
    if variance > 0:
        variance *= _inflation(influence.reshape(c, d, 1))[0] / influence.size
    return float(value), float(math.sqrt(variance))


def log_likelihood_bridge(simulate: Callable, theta: ArrayLike, observed: ArrayLike,
                          num_dyads: int, *, key: Any, num_bridges: int = 16,
                          repeats: int = 1, reference: tuple | None = None
                          ) -> BridgeLogLikelihood:
    """The log-likelihood l(θ) = θ·s_obs − log Z(θ) by bridge sampling, with its Monte
    Carlo standard error.

    log Z(θ) − log Z(0) is the sum over the bridges t_j = j/J, j = 0..J (J =
    ``num_bridges``) of log Z(t_{j+1}θ) − log Z(t_jθ), each estimated from draws at the
    bridge's midpoint θ_m = (t_j + t_{j+1})θ/2 by importance sampling towards both ends:
    log mean exp(h·s) − log mean exp(−h·s), h = θ/(2J) (an identity in expectation,
    ergm's bridge sampling up to its midpoint rule). log Z(0) = N log 2: at θ = 0 each of
    the 2^N graphs has probability 2^−N. With ``reference`` = (θ_ref, log Z(θ_ref)) the
    path runs from θ_ref instead (ergm's choice: the dyad-independent part of the model at
    its MLE, whose density is the observed one, so the chains never cross the density
    0.5 of θ = 0). Bridges run from t = 1 down to 0, so chains left
    near θ (e.g. by :func:`mcmle`) move in small steps. The standard error adds the
    bridges' delta-method variances (each inflated by its autocorrelation) as if the
    bridges were independent.

    Parameters
    ----------
    simulate : callable
        ``simulate(theta, key) -> stats`` (num_chains, num_draws, k), persistent chains.
    theta, observed : arrays (k,)
    num_dyads : int
        N, the number of dyads (node pairs) of the graph.
    key : jax PRNG key
    num_bridges : int
        J (ergm's ``bridge.nsteps``, 16).
    repeats : int
        ``simulate`` calls joined per bridge.

    Returns
    -------
    BridgeLogLikelihood
    """
    owner = "log_likelihood_bridge"
    _check_simulate(owner, simulate)
    observed = _as_vector(owner, "observed", observed)
    k = observed.size
    theta = _as_vector(owner, "theta", theta, k)
    num_dyads = check_count(owner, "num_dyads", num_dyads)
    num_bridges = check_count(owner, "num_bridges", num_bridges)
    repeats = check_count(owner, "repeats", repeats)
    key = as_key(key, owner)
    if reference is None:
        start, log_z_start = np.zeros(k), num_dyads * math.log(2.0)
    else:
        start, log_z_start = _as_vector(owner, "reference[0]", reference[0], k), float(
            reference[1])
    half_step = (theta - start) / (2.0 * num_bridges)
    increments = np.zeros(num_bridges)
    errors = np.zeros(num_bridges)
    keys = _split(key, num_bridges)
    for j in reversed(range(num_bridges)):
        midpoint = start + (j + 0.5) / num_bridges * (theta - start)
        stats = _simulate(simulate, midpoint, keys[j], repeats, k, owner)
        increments[j], errors[j] = _bridge_increment(stats, half_step)
    log_ratio = float(increments.sum())
    log_normalizer = log_ratio + log_z_start
    return BridgeLogLikelihood(float(theta @ observed - log_normalizer),
                               float(math.sqrt(np.sum(errors ** 2))), log_normalizer,
                               log_ratio, increments, errors)


# --- dyad-independent models, exactly ---------------------------------------------------


def _as_design(owner, change_statistics, k=None):
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
    observed = _as_vector(owner, "observed", observed)
    theta = _as_vector(owner, "theta", theta, observed.size)
    x = _as_design(owner, change_statistics, observed.size)
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
                         tol: float = 1e-10,
                         prior_scale: float | None = None) -> DyadIndependentMLE:
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

    Returns
    -------
    DyadIndependentMLE
        With ``converged`` False when the MLE does not exist (s_obs on the boundary of the
        statistics' range, e.g. no edges).
    """
    owner = "dyad_independent_mle"
    observed = _as_vector(owner, "observed", observed)
    k = observed.size
    x = _as_design(owner, change_statistics, k)
    theta = np.zeros(k) if theta0 is None else _as_vector(owner, "theta0", theta0, k)
    max_iterations = check_count(owner, "max_iterations", max_iterations)
    scale = np.maximum(np.abs(x).sum(axis=0), 1.0)
    penalty = 0.0 if prior_scale is None else 1.0 / float(prior_scale) ** 2

    def log_likelihood(t):
        return t @ observed - np.sum(np.logaddexp(0.0, x @ t))

    def value(t):
        return log_likelihood(t) - 0.5 * penalty * (t @ t)

    current = value(theta)
    converged = False
    iteration = 0
    for iteration in range(1, max_iterations + 1):
        p = special.expit(x @ theta)
        gradient = observed - p @ x - penalty * theta
        if np.max(np.abs(gradient) / scale) < tol:
            converged = True
            break
        hessian = (x * (p * (1 - p))[:, None]).T @ x + penalty * np.eye(k)
        try:
            direction = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            direction = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        step = 1.0
        while step > 1e-12:
            candidate = theta + step * direction
            new = value(candidate)
            if np.isfinite(new) and new >= current - 1e-12 * abs(current):
                break
            step *= 0.5
        theta, current = candidate, new
    p = special.expit(x @ theta)
    information = (x * (p * (1 - p))[:, None]).T @ x + penalty * np.eye(k)
    cov = np.linalg.pinv(information, hermitian=True)
    return DyadIndependentMLE(theta, cov, np.sqrt(np.diag(cov)), float(log_likelihood(theta)),
                              converged, iteration)


# --- the fit and its summary -----------------------------------------------------------


def _stars(p):
    if not np.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else \
        "." if p < 0.1 else ""


def _format_number(v, width):
    if not np.isfinite(v):
        return f"{'NA':>{width}}"
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-4):
        return f"{v:>{width}.3e}"
    return f"{v:>{width}.4f}"


def _format_p(p):
    if not np.isfinite(p):
        return "NA"
    return "<1e-04" if p < 1e-4 else f"{p:.4f}" if p < 0.1 else f"{p:.3f}"


@dataclasses.dataclass
class ErgmFit:
    """An ERGM fit: estimates, standard errors, tests, log-likelihood and diagnostics,
    printed like R's ``summary(ergm)`` (``print(fit)`` or ``fit.summary()``).

    Attributes
    ----------
    names : list of str
    estimates, stderr, mcmc_percent, z, p_values : arrays (k,)
        The coefficient table (see :func:`mcmle_standard_errors` for the definitions).
    cov, cov_model, cov_mcmc : arrays (k, k)
        Total, inverse Fisher information and Monte Carlo covariances.
    log_likelihood, log_likelihood_se : float
        l(θ̂) and its Monte Carlo s.e. (NaN when not computed; 0 when exact).
    aic, bic : float
        −2l + 2k and −2l + k log N.
    num_dyads : int
        N.
    converged : bool
    iterations : int
        MCMLE iterations (0 for an exact fit).
    method : str
        ``"MCMLE"`` or ``"MLE"`` (exact).
    message : str
        How the estimation ended.
    mcmle : MCMLEResult or None
        The per-iteration diagnostics.
    final_statistics : array (num_chains, num_draws, k) or None
        The final sample at the estimate (from which the standard errors come).
    log_likelihood_bridge : BridgeLogLikelihood or None
    """

    names: list
    estimates: np.ndarray
    stderr: np.ndarray
    cov: np.ndarray
    cov_model: np.ndarray
    cov_mcmc: np.ndarray
    mcmc_percent: np.ndarray
    z: np.ndarray
    p_values: np.ndarray
    log_likelihood: float
    log_likelihood_se: float
    aic: float
    bic: float
    num_dyads: int
    converged: bool
    iterations: int
    method: str = "MCMLE"
    message: str = ""
    mcmle: MCMLEResult | None = None
    final_statistics: np.ndarray | None = None
    log_likelihood_bridge: BridgeLogLikelihood | None = None

    @property
    def null_deviance(self) -> float:
        """−2 l(0) = 2 N log 2."""
        return 2.0 * self.num_dyads * math.log(2.0)

    @property
    def deviance(self) -> float:
        """Residual deviance −2 l(θ̂)."""
        return -2.0 * self.log_likelihood

    def coefficient_table(self) -> list[dict]:
        """One dict per term: name, Estimate, Std. Error, MCMC %, z value, Pr(>|z|)."""
        return [{"name": n, "Estimate": float(e), "Std. Error": float(s),
                 "MCMC %": float(m), "z value": float(z), "Pr(>|z|)": float(p)}
                for n, e, s, m, z, p in zip(self.names, self.estimates, self.stderr,
                                            self.mcmc_percent, self.z, self.p_values)]

    def to_dict(self) -> dict:
        """Plain Python (JSON-serializable) numbers and lists of the fit, without the
        samples."""
        def plain(v):
            if isinstance(v, np.ndarray):
                return v.tolist()
            if isinstance(v, (np.floating, np.integer, np.bool_)):
                return v.item()
            return v

        out = {name: plain(getattr(self, name)) for name in (
            "names", "estimates", "stderr", "cov", "cov_model", "cov_mcmc", "mcmc_percent",
            "z", "p_values", "log_likelihood", "log_likelihood_se", "aic", "bic",
            "num_dyads", "converged", "iterations", "method", "message")}
        out["null_deviance"] = self.null_deviance
        out["deviance"] = self.deviance
        if self.mcmle is not None:
            record = self.mcmle
            out["mcmle"] = {name: plain(getattr(record, name)) for name in (
                "termination", "theta_history", "step_lengths", "hotelling_statistics",
                "hotelling_p_values", "tolerance_distances", "convergence_p_values",
                "predicted_differences", "num_draws", "effective_sizes")}
        return out

    def summary(self) -> str:
        """The summary as R's ``print(summary(fit))`` lays it out."""
        header = {"MCMLE": "Monte Carlo Maximum Likelihood Results:",
                  "MLE": "Maximum Likelihood Results:"}.get(self.method,
                                                           f"{self.method} Results:")
        width = max(max(map(len, self.names)), 4)
        lines = [header, "",
                 f"{'':<{width}}  {'Estimate':>10} {'Std. Error':>10} {'MCMC %':>6} "
                 f"{'z value':>8} {'Pr(>|z|)':>8}"]
        for i, name in enumerate(self.names):
            pct = self.mcmc_percent[i]
            pct_text = f"{pct:6.0f}" if np.isfinite(pct) else f"{'NA':>6}"
            z_text = f"{self.z[i]:8.3f}" if np.isfinite(self.z[i]) else f"{'NA':>8}"
            lines.append(f"{name:<{width}}  {_format_number(self.estimates[i], 10)} "
                         f"{_format_number(self.stderr[i], 10)} {pct_text} {z_text} "
                         f"{_format_p(self.p_values[i]):>8} {_stars(self.p_values[i])}"
                         .rstrip())
        lines += ["---", "Signif. codes:  0 '***' 0.001 '**' 0.01 '*' 0.05 '.' 0.1 ' ' 1", ""]
        k, n = len(self.names), self.num_dyads
        if np.isfinite(self.log_likelihood):
            lines += [f"     Null Deviance: {self.null_deviance:.1f}  on {n}  degrees of "
                      f"freedom",
                      f" Residual Deviance: {self.deviance:.1f}  on {n - k}  degrees of "
                      f"freedom", ""]
            se = self.log_likelihood_se
            lines.append(f"Log-likelihood: {self.log_likelihood:.4f} (MC Std. Err. = "
                         f"{se:.4g})")
            lines.append(f"AIC: {self.aic:.4f}  BIC: {self.bic:.4f}  (Smaller is better. "
                         f"MC Std. Err. = {2 * se:.4g})")
        else:
            lines.append("Log-likelihood: not computed.")
        if self.method == "MCMLE":
            status = "Converged" if self.converged else "Did NOT converge"
            termination = f" (MCMLE termination: {self.mcmle.termination})" \
                if self.mcmle is not None else ""
            lines.append(f"{status} after {self.iterations} MCMLE iterations{termination}: "
                         f"{self.message}.")
            if self.mcmle is not None and self.mcmle.iterations:
                record = self.mcmle
                lines.append(f"Last iteration: step length {record.step_lengths[-1]:.3g}, "
                             f"Hotelling p-value {record.hotelling_p_values[-1]:.3g}, "
                             f"convergence p-value {record.convergence_p_values[-1]:.3g}, "
                             f"{record.num_draws[-1]} draws.")
            if self.final_statistics is not None:
                c, d, _ = self.final_statistics.shape
                lines.append(f"Standard errors from a final sample of {c} chain(s) x {d} "
                             f"draws at the estimate.")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        coefficients = ", ".join(f"{n}={e:.4g}" for n, e in zip(self.names, self.estimates))
        return (f"ErgmFit({self.method}, {coefficients}, log_likelihood="
                f"{self.log_likelihood:.4f}, converged={self.converged})")


def _information_criteria(log_likelihood, k, num_dyads):
    return -2.0 * log_likelihood + 2.0 * k, -2.0 * log_likelihood + k * math.log(num_dyads)


def dyad_independent_fit(change_statistics: ArrayLike, observed: ArrayLike,
                         names: Sequence[str] | None = None, **options) -> ErgmFit:
    """The exact fit of a dyad-independent ERGM as an :class:`ErgmFit` (what R's ergm
    reports for such models: ``MCMC %`` 0, exact log-likelihood).

    Parameters
    ----------
    change_statistics : array (N, k)
        Per-dyad change statistics.
    observed : array (k,)
    names : sequence of str, optional
    **options
        Passed to :func:`dyad_independent_mle`.
    """
    owner = "dyad_independent_fit"
    observed = _as_vector(owner, "observed", observed)
    k = observed.size
    x = _as_design(owner, change_statistics, k)
    names = _as_names(owner, names, k)
    mle = dyad_independent_mle(x, observed, **options)
    z, p = _wald(mle.theta, mle.stderr)
    aic, bic = _information_criteria(mle.log_likelihood, k, x.shape[0])
    return ErgmFit(names=names, estimates=mle.theta, stderr=mle.stderr, cov=mle.cov,
                   cov_model=mle.cov, cov_mcmc=np.zeros((k, k)), mcmc_percent=np.zeros(k),
                   z=z, p_values=p, log_likelihood=mle.log_likelihood, log_likelihood_se=0.0,
                   aic=aic, bic=bic, num_dyads=x.shape[0], converged=mle.converged,
                   iterations=0, method="MLE",
                   message="exact Newton" if mle.converged else "Newton did not converge "
                   "(the MLE may not exist)")


def mcmle_fit(simulate: Callable, observed: ArrayLike, theta0: ArrayLike, *, key: Any,
             num_dyads: int, names: Sequence[str] | None = None,
             log_likelihood: bool = True, num_bridges: int = 16,
             final_repeats: int | None = None, bridge_simulate: Callable | None = None,
             bridge_reference: tuple | None = None, **mcmle_options) -> ErgmFit:
    """Fit an ERGM by Monte Carlo maximum likelihood in one call, as R's ``ergm()``.

    1. :func:`mcmle` from ``theta0`` (e.g. the MPLE) to convergence;
    2. a final sample at its estimate (``final_repeats`` ``simulate`` calls, default as
       many as the last iteration used) and :func:`mcmle_standard_errors` from it (one
       last Geyer–Thompson update, Fisher information, Monte Carlo covariance, ``MCMC %``,
       z, p);
    3. with ``log_likelihood``, :func:`log_likelihood_bridge` at the estimate, then AIC
       and BIC (N = ``num_dyads``).

    Parameters
    ----------
    simulate : callable
        ``simulate(theta, key) -> stats`` (num_chains, num_draws, k), persistent chains.
    observed, theta0 : arrays (k,)
    key : jax PRNG key
    num_dyads : int
        N, the number of dyads.
    names : sequence of str, optional
        Term names (e.g. ``["edges", "nodematch.Grade", "gwesp.fixed.0.5"]``).
    log_likelihood : bool
        Compute the bridge log-likelihood (``num_bridges`` more simulations).
    num_bridges : int
    final_repeats : int, optional
    **mcmle_options
        Passed to :func:`mcmle` (``max_iterations``, ``termination``, ...).

    Returns
    -------
    ErgmFit

    Raises
    ------
    ErgmDegeneracyError
        From :func:`mcmle` or the final sample.
    """
    owner = "mcmle_fit"
    _check_simulate(owner, simulate)
    observed = _as_vector(owner, "observed", observed)
    k = observed.size
    names = _as_names(owner, names, k)
    num_dyads = check_count(owner, "num_dyads", num_dyads)
    key = as_key(key, owner)
    key_mcmle, key_rest = _split(key, 2)
    record = mcmle(simulate, observed, theta0, key=key_mcmle, names=names, **mcmle_options)
    repeats = record.repeats if final_repeats is None else check_count(
        owner, "final_repeats", final_repeats)
    return fit_at(simulate, observed, record.theta, key=key_rest, num_dyads=num_dyads,
                  names=names, record=record, repeats=repeats, log_likelihood=log_likelihood,
                  num_bridges=num_bridges, bridge_simulate=bridge_simulate,
                  bridge_reference=bridge_reference,
                  steplength_margin=mcmle_options.get("steplength_margin", 0.05))


def fit_at(simulate: Callable, observed: ArrayLike, theta: ArrayLike, *, key: Any,
           num_dyads: int, names: Sequence[str] | None = None,
           record: MCMLEResult | None = None, update: bool = True, repeats: int = 1,
           log_likelihood: bool = True, num_bridges: int = 16, method: str = "MCMLE",
           message: str = "", converged: bool = True,
           steplength_margin: float = 0.05, bridge_simulate: Callable | None = None,
           bridge_reference: tuple | None = None) -> ErgmFit:
    """The :class:`ErgmFit` of an estimate θ: a final sample there (``repeats``
    ``simulate`` calls), :func:`mcmle_standard_errors` (with ``update``, one last
    Geyer–Thompson step first), and with ``log_likelihood`` the bridge log-likelihood,
    AIC and BIC (from ``bridge_simulate`` if given, e.g. a cheaper sampler: the bridges
    need fewer draws than the standard errors). ``record`` (the :func:`mcmle` run) supplies the convergence report;
    without it, ``method``, ``message`` and ``converged`` do (an estimate from elsewhere,
    e.g. another estimator)."""
    owner = "fit_at"
    observed = _as_vector(owner, "observed", observed)
    k = observed.size
    names = _as_names(owner, names, k)
    key_final, key_bridge = _split(as_key(key, owner), 2)
    final = _simulate(simulate, _as_vector(owner, "theta", theta, k), key_final, repeats, k,
                      owner)
    errors = mcmle_standard_errors(final, observed, theta, update=update, names=names,
                                   steplength_margin=steplength_margin)
    if record is not None:
        message, converged, iterations = record.message, record.converged, record.iterations
    else:
        iterations = 0
    if update and errors.step_length < 1.0:
        message += (f"; the final sample's step length was {errors.step_length:.3g} < 1 (the "
                    f"observed statistics are near the edge of the final sample)")
    bridge, ll, ll_se = None, float("nan"), float("nan")
    if log_likelihood:
        bridge = log_likelihood_bridge(bridge_simulate or simulate, errors.estimates,
                                       observed, num_dyads, key=key_bridge,
                                       num_bridges=num_bridges, repeats=repeats,
                                       reference=bridge_reference)
        ll, ll_se = bridge.log_likelihood, bridge.stderr
    aic, bic = _information_criteria(ll, k, num_dyads)
    return ErgmFit(names=names, estimates=errors.estimates, stderr=errors.stderr,
                   cov=errors.cov, cov_model=errors.cov_model, cov_mcmc=errors.cov_mcmc,
                   mcmc_percent=errors.mcmc_percent, z=errors.z, p_values=errors.p_values,
                   log_likelihood=ll, log_likelihood_se=ll_se, aic=aic, bic=bic,
                   num_dyads=num_dyads, converged=converged, iterations=iterations,
                   method=method, message=message, mcmle=record, final_statistics=final,
                   log_likelihood_bridge=bridge)
