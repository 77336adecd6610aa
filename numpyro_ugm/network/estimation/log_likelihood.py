"""The log-likelihood of an ERGM by bridge sampling (:func:`log_likelihood_bridge`):
log L(θ) = θ·s_obs − log Z(θ) along tθ, t ∈ [0, 1], from log Z(0) = N log 2, with its
Monte Carlo standard error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from jax.typing import ArrayLike
from scipy import special

from ...runtime.checks import as_key, check_count
from ..sampling.moments import autocorrelation_inflation
from .samples import as_vector, check_simulate, sample_statistics, split_keys

__all__ = ["log_likelihood_bridge", "BridgeLogLikelihood"]


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
        variance *= autocorrelation_inflation(influence.reshape(c, d, 1))[0] / influence.size
    return float(value), float(math.sqrt(variance))


def log_likelihood_bridge(simulate: Callable, theta: ArrayLike, observed: ArrayLike,
                          num_dyads: int, rng_key: Any, *, num_bridges: int = 16,
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
    0.5 of θ = 0). Bridges run from t = 1 down to 0, so chains left near θ (e.g. by
    :func:`~numpyro_ugm.network.estimation.mcmle.mcmle`) move in small steps. The standard error
    adds the bridges' delta-method variances (each inflated by its autocorrelation) as if
    the bridges were independent.

    Parameters
    ----------
    simulate : callable
        ``simulate(theta, rng_key) -> stats`` (num_chains, num_samples, k), persistent chains.
    theta, observed : arrays (k,)
    num_dyads : int
        N, the number of dyads (node pairs) of the graph.
    rng_key : jax PRNG key
    num_bridges : int
        J (ergm's ``bridge.nsteps``, 16).
    repeats : int
        ``simulate`` calls joined per bridge.

    Returns
    -------
    BridgeLogLikelihood
    """
    owner = "log_likelihood_bridge"
    check_simulate(owner, simulate)
    observed = as_vector(owner, "observed", observed)
    k = observed.size
    theta = as_vector(owner, "theta", theta, k)
    num_dyads = check_count(owner, "num_dyads", num_dyads)
    num_bridges = check_count(owner, "num_bridges", num_bridges)
    repeats = check_count(owner, "repeats", repeats)
    rng_key = as_key(rng_key, owner)
    if reference is None:
        start, log_z_start = np.zeros(k), num_dyads * math.log(2.0)
    else:
        start, log_z_start = as_vector(owner, "reference[0]", reference[0], k), float(
            reference[1])
    half_step = (theta - start) / (2.0 * num_bridges)
    increments = np.zeros(num_bridges)
    errors = np.zeros(num_bridges)
    keys = split_keys(rng_key, num_bridges)
    for j in reversed(range(num_bridges)):
        midpoint = start + (j + 0.5) / num_bridges * (theta - start)
        stats = sample_statistics(simulate, midpoint, keys[j], repeats, k, owner)
        increments[j], errors[j] = _bridge_increment(stats, half_step)
    log_ratio = float(increments.sum())
    log_normalizer = log_ratio + log_z_start
    return BridgeLogLikelihood(float(theta @ observed - log_normalizer),
                               float(math.sqrt(np.sum(errors ** 2))), log_normalizer,
                               log_ratio, increments, errors)
