"""Diagnostics of the statistics sampled at an ERGM fit, as statnet's ``mcmc.diagnostics()``


* :func:`mcmc_diagnostics`: effective sample size, split R-hat, autocorrelation and the
  Monte Carlo z-score of each sampled statistic against the observed
  (:class:`StatisticsDiagnostics`, with a trace and autocorrelation figure).
* the degeneracy checks live in :mod:`~numpyro_ugm.network.diagnostics.degeneracy`.

matplotlib is imported by the plotting method only.
"""

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...runtime.checks import check_count
from ...runtime.optional import require
from .degeneracy import as_sampled_statistics
from .goodness_of_fit import format_table

__all__ = ["mcmc_diagnostics", "StatisticsDiagnostics"]


@dataclass(frozen=True)
class StatisticsDiagnostics:
    """MCMC diagnostics of sampled statistics (:func:`mcmc_diagnostics`), per term.

    Attributes
    ----------
    names : tuple of str
    observed : numpy.ndarray (k,)
    samples : numpy.ndarray (num_chains, num_samples, k)
    mean, sd : numpy.ndarray (k,)
        Over all chains and draws (sd with ddof=1).
    effective_sample_size : numpy.ndarray (k,)
        numpyro's (Geyer's initial monotone sequence over the chains); NaN for a
        constant statistic.
    r_hat : numpy.ndarray (k,)
        numpyro's split Gelman-Rubin (NaN with fewer than 4 draws per chain).
    autocorrelation : numpy.ndarray (num_lags, k)
        Autocorrelation by lag 0, 1, ..., averaged over the chains.
    monte_carlo_se : numpy.ndarray (k,)
        sd / sqrt(effective_sample_size): the Monte Carlo standard error of the mean.
    z_scores, p_values : numpy.ndarray (k,)
        (mean − observed) / monte_carlo_se and its two-sided normal p-value (as ergm's
        individual p-values of mcmc.diagnostics: at the MLE the sampled mean is the
        observed, so a small p-value means the fit or the sampler is off).
    """

    names: tuple
    observed: np.ndarray
    samples: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    effective_sample_size: np.ndarray
    r_hat: np.ndarray
    autocorrelation: np.ndarray
    monte_carlo_se: np.ndarray
    z_scores: np.ndarray
    p_values: np.ndarray

    def table(self) -> str:
        """One row per term: observed, mean, sd, MC s.e., z, p-value, ESS, R-hat."""
        C, D, _ = self.samples.shape
        columns = [self.observed, self.mean, self.sd, self.monte_carlo_se, self.z_scores,
                   self.p_values, self.effective_sample_size, self.r_hat]
        columns = [np.round(c, 4) for c in columns]
        header = ["obs", "mean", "sd", "MC s.e.", "z", "p-value", "ESS", "R-hat"]
        return (f"Sampled statistics: {C} chain(s) x {D} draws\n\n" +
                format_table(self.names, columns, header))

    def __str__(self) -> str:
        return self.table()

    def plot(self, *, max_lag: int | None = None, figsize: tuple | None = None) -> Any:
        """Trace (each chain a line, the observed value dashed red) and autocorrelation
        (by lag, averaged over chains) of each term: one row of two panels per term.

        Returns
        -------
        matplotlib.figure.Figure
        """
        plt = require("matplotlib.pyplot", "network", "the figure")

        k = len(self.names)
        lags = self.autocorrelation.shape[0] if max_lag is None else int(max_lag) + 1
        lags = max(1, min(lags, self.autocorrelation.shape[0]))
        fig, axes = plt.subplots(k, 2, squeeze=False, layout="constrained",
                                 figsize=figsize or (10, 2.4 * k))
        for t, name in enumerate(self.names):
            trace, acf = axes[t]
            for chain in self.samples[:, :, t]:
                trace.plot(chain, lw=0.7)
            trace.axhline(self.observed[t], color="red", ls="--", lw=1)
            trace.set_ylabel(name)
            trace.set_title(f"{name}: trace (ESS {self.effective_sample_size[t]:.0f})",
                            fontsize=9)
            acf.vlines(np.arange(lags), 0, self.autocorrelation[:lags, t])
            acf.axhline(0, color="black", lw=0.5)
            acf.set_ylim(min(-0.1, np.nanmin(self.autocorrelation[:lags, t])), 1.05)
            acf.set_title(f"{name}: autocorrelation", fontsize=9)
        axes[-1, 0].set_xlabel("draw")
        axes[-1, 1].set_xlabel("lag")
        return fig


def mcmc_diagnostics(sampled_statistics: Any, observed: Any, names: Sequence | None = None,
                     *, max_lag: int = 100) -> StatisticsDiagnostics:
    """MCMC diagnostics of the statistics sampled at a fit (statnet's
    ``mcmc.diagnostics``): effective sample size, split R-hat and autocorrelation per term
    (numpyro's :func:`~numpyro.diagnostics.effective_sample_size`,
    :func:`~numpyro.diagnostics.split_gelman_rubin`,
    :func:`~numpyro.diagnostics.autocorrelation`), and the distance of the sampled mean
    from the observed value in Monte Carlo standard errors.

    Parameters
    ----------
    sampled_statistics : array (num_chains, num_samples, k) or (num_samples, k)
        Statistics of the sampled networks, chains in order.
    observed : array (k,)
        The observed network's statistics.
    names : sequence of str, optional
        Term names (default ``stat0``, ``stat1``, ...).
    max_lag : int
        Largest lag kept in ``autocorrelation``.

    Returns
    -------
    StatisticsDiagnostics
    """
    from numpyro.diagnostics import autocorrelation, effective_sample_size, split_gelman_rubin

    owner = "mcmc_diagnostics"
    x, obs, names = as_sampled_statistics(owner, sampled_statistics, observed, names)
    max_lag = check_count(owner, "max_lag", max_lag, minimum=0)
    C, D, k = x.shape
    flat = x.reshape(C * D, k)
    mean = flat.mean(axis=0)
    sd = flat.std(axis=0, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ess = np.asarray(effective_sample_size(x), np.float64)
        rhat = (np.asarray(split_gelman_rubin(x), np.float64) if D >= 4
                else np.full(k, np.nan))
        acf = np.nanmean(np.asarray(autocorrelation(x, axis=1), np.float64), axis=0)
    constant = sd == 0
    ess = np.where(constant, np.nan, ess)
    acf = acf[: max_lag + 1]
    se = np.where(constant, 0.0, sd / np.sqrt(np.where(constant, 1.0, ess)))
    diff = mean - obs
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(se > 0, diff / np.where(se > 0, se, 1.0),
                     np.where(diff == 0, 0.0, np.sign(diff) * np.inf))
    p = np.array([math.erfc(abs(v) / math.sqrt(2)) for v in z])
    return StatisticsDiagnostics(names, obs, x, mean, sd, ess, rhat, acf, se, z, p)
