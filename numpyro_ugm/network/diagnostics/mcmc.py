"""Diagnostics of the statistics sampled at an ERGM fit, as statnet's ``mcmc.diagnostics()``
and its degeneracy warnings.

* :func:`mcmc_diagnostics`: effective sample size, split R-hat, autocorrelation and the
  Monte Carlo z-score of each sampled statistic against the observed
  (:class:`StatisticsDiagnostics`, with a trace and autocorrelation figure).
* :func:`check_ergm_degeneracy`: warns (:class:`~numpyro_ugm.network.DegeneracyWarning`)
  naming the terms whose observed value lies outside the bulk of the sampled values, and
  when the simulated networks are nearly empty or nearly complete.

matplotlib is imported by the plotting method only.
"""

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._checks import check_count
from ..estimation.mple import DegeneracyWarning
from .goodness_of_fit import _check_level, _format_table

__all__ = ["mcmc_diagnostics", "StatisticsDiagnostics", "check_ergm_degeneracy"]


def _as_samples(owner, sampled_statistics, observed, names):
    x = np.asarray(sampled_statistics, np.float64)
    if x.ndim == 2:
        x = x[None]
    if x.ndim != 3:
        raise ValueError(f"{owner}: sampled_statistics must be (num_chains, num_draws, k) "
                         f"(or (num_draws, k)), got shape {np.shape(sampled_statistics)}")
    if x.shape[1] < 2:
        raise ValueError(f"{owner}: sampled_statistics needs at least 2 draws per chain, "
                         f"got {x.shape[1]}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{owner}: sampled_statistics has non-finite values")
    obs = np.asarray(observed, np.float64).reshape(-1)
    if obs.shape[0] != x.shape[2]:
        raise ValueError(f"{owner}: observed has {obs.shape[0]} values for {x.shape[2]} "
                         "sampled statistics")
    names = (tuple(f"stat{k}" for k in range(x.shape[2])) if names is None
             else tuple(str(s) for s in names))
    if len(names) != x.shape[2]:
        raise ValueError(f"{owner}: names has {len(names)} names for {x.shape[2]} "
                         "statistics")
    return x, obs, names


@dataclass(frozen=True)
class StatisticsDiagnostics:
    """MCMC diagnostics of sampled statistics (:func:`mcmc_diagnostics`), per term.

    Attributes
    ----------
    names : tuple of str
    observed : numpy.ndarray (k,)
    samples : numpy.ndarray (num_chains, num_draws, k)
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
                _format_table(self.names, columns, header))

    def __str__(self) -> str:
        return self.table()

    def plot(self, *, max_lag: int | None = None, figsize: tuple | None = None) -> Any:
        """Trace (each chain a line, the observed value dashed red) and autocorrelation
        (by lag, averaged over chains) of each term: one row of two panels per term.

        Returns
        -------
        matplotlib.figure.Figure
        """
        import matplotlib.pyplot as plt

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
    sampled_statistics : array (num_chains, num_draws, k) or (num_draws, k)
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
    x, obs, names = _as_samples(owner, sampled_statistics, observed, names)
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


# --- degeneracy --------------------------------------------------------------------------


def check_ergm_degeneracy(sampled_statistics: Any, observed: Any,
                          names: Sequence | None = None, simulated_densities: Any = None, *,
                          observed_density: float | None = None, level: float = 0.99,
                          near_extreme: float = 0.1, extreme_fraction: float = 0.5,
                          warn: bool = True) -> dict:
    """Warn when a fitted ERGM is degenerate: its sampled statistics far from the observed,
    or its simulated networks nearly empty or nearly complete.

    A term is far when the observed value lies outside the central ``level`` interval
    of its sampled values (all chains pooled): at the MLE the observed statistics are
    the model's mean, well inside. A simulated network is nearly empty when its density
    is at most ``near_extreme`` times the observed density (nearly complete: when its
    non-edge density is at most ``near_extreme`` times the observed one); without
    ``observed_density``, only exactly empty or complete networks count. Either is
    reported when at least ``extreme_fraction`` of the simulated networks are.

    Parameters
    ----------
    sampled_statistics : array (num_chains, num_draws, k) or (num_draws, k)
    observed : array (k,)
    names : sequence of str, optional
        Term names, used in the warning.
    simulated_densities : array (S,), optional
        Densities of networks simulated from the fit
        (:func:`~numpyro_ugm.network.diagnostics.distributions.network_densities`).
    observed_density : float, optional
        The observed network's density.
    level : float
        Central probability of the sampled values the observed must lie in.
    near_extreme, extreme_fraction : float
        What nearly empty / complete means, and how many such networks are too many.
    warn : bool
        Issue the :class:`~numpyro_ugm.network.DegeneracyWarning` (else only report).

    Returns
    -------
    dict
        ``degenerate`` (bool), ``far_terms`` (names of the far terms), ``terms`` (per
        name: ``observed``, ``mean``, ``sd``, ``lower``, ``upper`` (the interval),
        ``fraction_below`` (of the sampled values under the observed), ``far``), and,
        with densities, ``mean_density``, ``fraction_near_empty``,
        ``fraction_near_complete``.
    """
    owner = "check_ergm_degeneracy"
    x, obs, names = _as_samples(owner, sampled_statistics, observed, names)
    _check_level(owner, level)
    for name, value in (("near_extreme", near_extreme),
                        ("extreme_fraction", extreme_fraction)):
        if not 0 < float(value) <= 1:
            raise ValueError(f"{owner}: {name} must be in (0, 1], got {value!r}")
    flat = x.reshape(-1, x.shape[2])
    tail = (1 - level) / 2
    lower, upper = np.quantile(flat, [tail, 1 - tail], axis=0)
    far = (obs < lower) | (obs > upper)
    terms = {name: {"observed": float(obs[t]), "mean": float(flat[:, t].mean()),
                    "sd": float(flat[:, t].std(ddof=1)), "lower": float(lower[t]),
                    "upper": float(upper[t]),
                    "fraction_below": float(np.mean(flat[:, t] < obs[t])),
                    "far": bool(far[t])}
             for t, name in enumerate(names)}
    report = {"far_terms": [names[t] for t in np.flatnonzero(far)], "terms": terms}
    problems = []
    if report["far_terms"]:
        detail = "; ".join(
            f"{s}: observed {terms[s]['observed']:.6g}, sampled mean {terms[s]['mean']:.6g} "
            f"(central {level:.0%}: {terms[s]['lower']:.6g} to {terms[s]['upper']:.6g})"
            for s in report["far_terms"])
        problems.append(f"the observed {', '.join(report['far_terms'])} lie(s) outside the "
                        f"central {level:.0%} of the sampled values ({detail})")
    if simulated_densities is not None:
        d = np.asarray(simulated_densities, np.float64).reshape(-1)
        if d.size == 0 or np.any((d < 0) | (d > 1)) or not np.all(np.isfinite(d)):
            raise ValueError(f"{owner}: simulated_densities must be a non-empty array of "
                             "densities in [0, 1]")
        if observed_density is None:
            empty, full = d == 0, d == 1
            what = "empty", "complete"
        else:
            d0 = float(observed_density)
            if not 0 <= d0 <= 1:
                raise ValueError(f"{owner}: observed_density must be in [0, 1], got {d0}")
            empty = (d <= near_extreme * d0) if d0 > 0 else np.zeros(d.shape, bool)
            full = ((1 - d) <= near_extreme * (1 - d0)) if d0 < 1 else np.zeros(d.shape, bool)
            what = "nearly empty", "nearly complete"
        report.update(mean_density=float(d.mean()), fraction_near_empty=float(empty.mean()),
                      fraction_near_complete=float(full.mean()))
        for frac, label in ((empty.mean(), what[0]), (full.mean(), what[1])):
            if frac >= extreme_fraction:
                problems.append(f"{frac:.0%} of the {d.size} simulated networks are {label} "
                                f"(mean density {d.mean():.4g}"
                                + ("" if observed_density is None
                                   else f", observed {float(observed_density):.4g}") + ")")
    report["degenerate"] = bool(problems)
    if problems and warn:
        warnings.warn(
            "ERGM degeneracy: " + "; and ".join(problems) + ". The fit (or its sampler) "
            "does not reproduce the observed network: the parameters may be in a "
            "degenerate region, or the MCMC has not converged. Check the terms named, "
            "try curved terms (gwesp, gwdegree) instead of triangles/stars, or a longer "
            "burn-in.", DegeneracyWarning, stacklevel=2)
    return report
