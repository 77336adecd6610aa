"""Standard errors of a Monte Carlo MLE of an ERGM (:func:`mcmle_standard_errors`): from
a final sample at the estimate, the inverse Fisher information and the Monte Carlo
covariance of θ̂, their sum, ergm's ``MCMC %``, z and p-values.

Definitions (checked against R's ergm 4 sources):

* ``MCMC %`` = round(100 (se_total − se_model) / se_total) with se_total² = se_model² +
  se_MC², the share of the total standard error due to Monte Carlo estimation
  (``summary.ergm``). (ergmx prints 100 se_MC² / se_total² instead.)
* z = θ̂ / se_total and Pr(>|z|) = 2 Φ(−|z|) (normal, as ergm 4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from jax.typing import ArrayLike
from scipy import stats as scipy_stats

from .step import geyer_thompson_step, hull_step_length
from ..diagnostics.degeneracy import check_sample_degeneracy
from ..sampling.moments import sample_moments
from .samples import as_names, as_statistics, as_vector

__all__ = ["mcmle_standard_errors", "StandardErrors", "wald"]


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


def wald(estimates, stderr):
    """(z, p): the Wald z = estimates / stderr and its two-sided normal p-value."""
    with np.errstate(invalid="ignore", divide="ignore"):
        z = estimates / stderr
    return z, 2.0 * scipy_stats.norm.sf(np.abs(z))


def mcmle_standard_errors(stats: ArrayLike, observed: ArrayLike, theta: ArrayLike, *,
                          update: bool = True, names: Sequence[str] | None = None,
                          steplength_margin: float = 0.05) -> StandardErrors:
    """Standard errors of a Monte Carlo MLE from a final sample at the estimate.

    With ``update`` (default) the estimate is first moved by one Geyer–Thompson step on
    this sample (:func:`~numpyro_ugm.network.estimation.mcmle.mcmle`'s update, Hummel-limited), so
    that θ̂ is a function of this sample's (importance-weighted) mean:
    θ̂ − θ* ≈ I⁻¹ (s_obs − ŝ). Then

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
    stats : array (num_chains, num_samples, k)
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
    observed = as_vector(owner, "observed", observed)
    k = observed.size
    theta = as_vector(owner, "theta", theta, k)
    names = as_names(owner, names, k)
    stats = as_statistics(owner, stats, k, name="stats")
    check_sample_degeneracy(owner, stats, names, observed, theta)
    gamma = 1.0
    if update:
        gamma = hull_step_length(stats, observed, float(steplength_margin), 1.0)
        target = stats.reshape(-1, k).mean(axis=0)
        target = target + gamma * (observed - target)
        delta, _ = geyer_thompson_step(stats, target)
        moments = sample_moments(stats, stats.reshape(-1, k) @ delta)
        estimates = theta + delta
    else:
        moments = sample_moments(stats)
        estimates = theta.copy()
    information = moments.cov
    cov_model = np.linalg.inv(information)
    cov_model = (cov_model + cov_model.T) / 2
    cov_mcmc = cov_model @ moments.mean_cov @ cov_model
    cov_mcmc = (cov_mcmc + cov_mcmc.T) / 2
    cov = cov_model + cov_mcmc
    stderr = np.sqrt(np.diag(cov))
    pct = _mcmc_percent(stderr, np.sqrt(np.diag(cov_model)))
    z, p = wald(estimates, stderr)
    return StandardErrors(estimates, stderr, cov, cov_model, cov_mcmc, pct, z, p,
                          information, float(gamma), moments.effective_size)
