"""A sample of networks simulated at a fitted θ̂, checked: its effective size, and the
MLE's defining property, that the expected statistics at θ̂ are the observed ones
(:func:`check_estimate_sample`), so that a goodness of fit whose draws are too few, too
close together or not at θ̂ says so instead of failing a correct model."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import jax
import numpy as np

from ..sampling.moments import autocorrelation_inflation, multivariate_effective_size

__all__ = ["EstimateSample", "check_estimate_sample", "simulate_at_estimate"]

#: a mean of the simulated statistics this many Monte Carlo standard errors from the
#: observed one is reported (the estimate's own error adds to the Monte Carlo error)
MEAN_TOLERANCE = 3.0


class EstimateSample(NamedTuple):
    """The check of :func:`check_estimate_sample`: ``effective_size`` (multivariate, of
    the model statistics), ``mean`` and ``mc_stderr`` (k,) of the simulated statistics,
    ``z`` (k,) = (mean − observed) / mc_stderr, and ``message``: a warning's text, or
    "" when the sample is fine."""

    effective_size: float
    mean: np.ndarray
    mc_stderr: np.ndarray
    z: np.ndarray
    message: str


def check_estimate_sample(stats: np.ndarray, observed: np.ndarray, names: Sequence[str],
                          min_effective_size: float | None = None) -> EstimateSample:
    """Check statistics simulated at an MLE θ̂.

    Parameters
    ----------
    stats : array (C, D, k)
        The model statistics of D draws from each of C chains at θ̂, in chain order.
    observed : array (k,)
        The observed network's statistics.
    names : sequence of str
        The coefficient names.
    min_effective_size : float, optional
        Below it (default: a quarter of the draws) the message says the draws are too
        correlated to read.

    Returns
    -------
    EstimateSample
    """
    stats = np.asarray(stats, np.float64)
    c, d, k = stats.shape
    n = c * d
    observed = np.asarray(observed, np.float64)
    flat = stats.reshape(n, k)
    mean = flat.mean(axis=0)
    inflation = autocorrelation_inflation(stats)
    stderr = np.sqrt(flat.var(axis=0, ddof=1 if n > 1 else 0) * inflation / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(stderr > 0, (mean - observed) / stderr,
                     np.where(mean == observed, 0.0, np.inf))
    ess = multivariate_effective_size(stats) if n > 1 else 1.0
    floor = n / 4 if min_effective_size is None else float(min_effective_size)
    parts = []
    if ess < floor:
        parts.append(f"the {n} simulated networks have an effective sample size of "
                     f"{ess:.1f} (< {floor:g}): they are too correlated to read; pass a "
                     "larger interval")
    off = [j for j in range(k) if abs(z[j]) > MEAN_TOLERANCE]
    if off:
        detail = ", ".join(f"{names[j]} {mean[j]:.4g} vs {observed[j]:.4g} "
                           f"({z[j]:+.1f} s.e.)" for j in off)
        parts.append(f"at the MLE the simulated statistics' mean equals the observed "
                     f"statistics, but here {detail}: the simulations are not at the "
                     "estimate (too short a burn-in or interval) or the fit has not "
                     "converged")
    return EstimateSample(float(ess) if math.isfinite(ess) else float(n), mean, stderr, z,
                          "; ".join(parts))


def simulate_at_estimate(simulator, theta: np.ndarray, final_state: tuple | None,
                         num_sims: int, interval: int, burnin: int,
                         rng_key) -> tuple[list, np.ndarray]:
    """``num_sims`` networks drawn at θ̂ = ``theta`` by a
    :class:`~numpyro_ugm.network.sampling.simulation.NetworkSimulator`: its chains from
    ``final_state`` (the end of the fit's final sample at θ̂, never a bridge's end),
    ``burnin`` steps at θ̂ (none when the chains are already at this θ), then one draw
    per chain every ``interval`` steps (the interval the fit's effective-size check
    reached).

    Returns
    -------
    (list of arrays (m, 2), array (C, D, k))
        The networks, chain by chain (each chain's D draws in turn), and their
        statistics in the same order (C·D = ``num_sims`` rounded up to whole chains;
        networks of the last draws dropped to ``num_sims``)."""
    if final_state is not None:
        simulator.restore(final_state)
    num_chains = len(simulator.networks())
    keys = jax.random.split(rng_key, -(-num_sims // num_chains))
    networks, stats = [], []
    for t, key in enumerate(keys):
        stats.append(simulator.simulate(theta, key, 1, interval, burnin if t == 0 else 0))
        networks.append(simulator.networks())
    stats = np.concatenate(stats, 1)
    by_chain = [net for chain in zip(*networks) for net in chain]
    keep = np.arange(stats.shape[0] * stats.shape[1]).reshape(stats.shape[:2]) < num_sims
    return [net for net, k in zip(by_chain, keep.ravel()) if k], stats
