"""One step of statnet's MCMLE: the Hummel step length (:func:`hummel_step_length`,
Hummel, Hunter & Handcock 2012) and the update towards the target it allows — by the
lognormal approximation of the log-likelihood ratio (ergm 4's default
``MCMLE.metric="lognormal"``) or the Geyer–Thompson importance-sampling one
(``"naive"``) — both from a sample of statistics (numpy float64 on the host).
"""

from __future__ import annotations

import math

import numpy as np
from jax.typing import ArrayLike
from scipy import optimize, special

from .samples import as_statistics, as_vector, check_fraction

__all__ = ["hummel_step_length", "hull_step_length", "lognormal_step", "geyer_thompson_step"]


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
    stats : array (num_chains, num_samples, k) or (num_samples, k)
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
    observed = as_vector(owner, "observed", observed)
    k = observed.size
    s = np.asarray(stats, dtype=np.float64)
    if s.ndim == 2:
        s = s[None]
    s = as_statistics(owner, s, k, name="stats")
    margin = float(margin)
    if not math.isfinite(margin) or margin < 0:
        raise ValueError(f"{owner}: margin must be a finite number >= 0, got {margin!r}")
    max_step = check_fraction(owner, "max_step", max_step, open_high=False)
    return hull_step_length(s, observed, margin, max_step)


def hull_step_length(stats, observed, margin, max_step):
    """:func:`hummel_step_length` of checked arguments (stats (C, D, k) float64)."""
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


def lognormal_step(stats, target):
    """Δθ maximizing Δθ·(target − s̄) − ½ Δθᵀ Σ Δθ (s̄, Σ: the sample's mean and
    covariance): the log-likelihood ratio when Δθ·s is normal, ergm's ``"lognormal"``
    metric, i.e. the Newton step Σ⁻¹ (target − s̄) (least squares where Σ is singular).
    Unlike :func:`geyer_thompson_step` it does not extrapolate the sample's tail, where
    the chains of a large network run away (``benchmarks/results/ergm_statnet.md``,
    faux.magnolia.high)."""
    flat = stats.reshape(-1, stats.shape[-1])
    mean = flat.mean(axis=0)
    cov = np.atleast_2d(np.cov(flat, rowvar=False, bias=True))
    return np.linalg.lstsq(cov, target - mean, rcond=None)[0]


def geyer_thompson_step(stats, target, max_newton=200, tol=1e-10):
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
        centered = z - mu
        hessian = (centered * w[:, None]).T @ centered
        try:
            direction = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            direction = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        slope = gradient @ direction  # the Newton decrement: twice the gain left
        # converged: the gradient below tol, or the gain left below the objective's
        # rounding (on 5,120 draws of faux.mesa.high the gradient stalls at 3e-9 with a
        # gain of 1e-17 left, and the line search then spent 6,000 evaluations)
        if np.max(np.abs(gradient)) < tol or slope < 1e-14 * max(1.0, abs(value)):
            converged = True
            break
        step = 1.0
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
