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

from ..graphs import num_dyads, pair_tables
from ..sampling.moments import autocorrelation_inflation, multivariate_effective_size
from ..sampling.simulation import lengthen_sample
from ..terms.structural import change_statistics

__all__ = ["EstimateSample", "check_estimate_sample", "simulate_at_estimate",
           "EstimateDraws", "EFFECTIVE_SHARE", "simulate_independent",
           "gof_effective_size"]

#: a mean of the simulated statistics this many Monte Carlo standard errors from the
#: observed one is reported (the estimate's own error adds to the Monte Carlo error)
MEAN_TOLERANCE = 3.0

#: the share of the simulated networks that their effective size should reach: below
#: it :func:`check_estimate_sample` warns, and :func:`simulate_at_estimate` (given
#: ``effective_size``) lengthens the interval until it is reached
EFFECTIVE_SHARE = 0.25


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
        Below it (default: :data:`EFFECTIVE_SHARE` of the draws) the message says the
        draws are too correlated to read.

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
    floor = EFFECTIVE_SHARE * n if min_effective_size is None else float(min_effective_size)
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


class EstimateDraws(NamedTuple):
    """The draws of :func:`simulate_at_estimate`: the ``networks`` (list of (m, 2)
    arrays, chain by chain), their ``statistics`` (C, D, k) in the same order, the
    ``interval`` they are drawn at and the ``effective_size`` the lengthening reached
    (None: not lengthened)."""

    networks: list
    statistics: np.ndarray
    interval: int
    effective_size: float | None


def simulate_at_estimate(simulator, theta: np.ndarray, final_state: tuple | None,
                         num_sims: int, interval: int, burnin: int, rng_key, *,
                         effective_size: float | None = None,
                         max_interval: int | None = None, guard=None) -> EstimateDraws:
    """``num_sims`` networks drawn at θ̂ = ``theta`` by a
    :class:`~numpyro_ugm.network.sampling.simulation.NetworkSimulator`: its chains from
    ``final_state`` (the end of the fit's final sample at θ̂, never a bridge's end),
    ``burnin`` steps at θ̂ (none when the chains are already at this θ), then one draw
    per chain every ``interval`` steps (the interval the fit's effective-size check
    reached). With ``effective_size``, while the draws' multivariate effective size
    falls short (a sample that reaches it is kept as drawn) the chains are continued
    and thinned, the interval doubling up to ``max_interval``, as the fit's own
    adaptive sample
    (:func:`~numpyro_ugm.network.sampling.simulation.lengthen_sample`; ``guard``, a
    :class:`~numpyro_ugm.network.sampling.guard.DensityGuard`, stops chains that run
    away), and topped up to ``num_sims`` at the interval reached.

    Returns
    -------
    EstimateDraws
        C·D = ``num_sims`` rounded up to whole chains statistics; networks of the last
        draws dropped to ``num_sims``."""
    if final_state is not None:
        simulator.restore(final_state)
    num_chains = len(simulator.networks())
    draws = -(-num_sims // num_chains)
    keys = {"first": list(jax.random.split(rng_key, draws)), "more": 0}

    def draw(step, count=draws, first_burnin=0):
        stats, networks = [], []
        for t in range(count):
            if keys["first"]:
                key = keys["first"].pop(0)
            else:
                keys["more"] += 1
                key = jax.random.fold_in(rng_key, keys["more"])
            stats.append(simulator.simulate(theta, key, 1, step, first_burnin if t == 0
                                            else 0))
            networks.append(simulator.networks())
        return np.concatenate(stats, 1), networks

    stats, networks = draw(interval, first_burnin=burnin)
    stats = np.asarray(stats, np.float64)
    current = {"interval": int(interval), "burnin": int(burnin)}
    longest = max(max_interval or interval, interval)
    check = None if guard is None else (lambda s, e: guard.check(
        simulator.networks(), s, e, effective_size, current["interval"], theta))
    # a sample effective enough is kept as drawn; each pass ends at the target or
    # doubles the interval (at most log2 of the span)
    ess = None if effective_size is None else multivariate_effective_size(stats)
    passes = 0 if effective_size is None else int(math.log2(longest / interval)) + 2
    for _ in range(passes):
        if ess >= effective_size or 2 * current["interval"] > longest:
            break
        stats, networks, _ = lengthen_sample(draw, stats, draws, effective_size, longest,
                                             current, payload=networks, check=check)
        if stats.shape[1] < draws:  # the non-stationary start was cut: top up
            more, extra = draw(current["interval"], draws - stats.shape[1])
            stats, networks = np.concatenate([stats, more], 1), networks + extra
        # the last num_sims draws (the sample may hold up to twice as many): lengthened
        # again while they fall short of the target
        stats, networks = stats[:, -draws:], networks[-draws:]
        ess = multivariate_effective_size(stats)
    by_chain = [net for chain in zip(*networks) for net in chain]
    keep = np.arange(stats.shape[0] * stats.shape[1]).reshape(stats.shape[:2]) < num_sims
    return EstimateDraws([net for net, k in zip(by_chain, keep.ravel()) if k],
                         np.asarray(stats), current["interval"], ess)


def simulate_independent(net, statistics, theta: np.ndarray, num_sims: int, rng_key,
                         limit: int) -> tuple[list, np.ndarray]:
    """(networks, statistics (1, num_sims, k)) of a dyad-independent model at θ: every
    dyad an independent Bernoulli draw, refused above ``limit`` dyads
    (``SamplingControl.dyad_draws_limit``)."""
    size = num_dyads(net.num_nodes, net.directed)
    if size > limit:
        raise NotImplementedError(
            f"gof_ergm: the goodness of fit of a dyad-independent fit draws every dyad "
            f"of each simulated network, {size} here: not supported above "
            f"SamplingControl.dyad_draws_limit = {limit} dyads")
    X = np.asarray(change_statistics(np.zeros(size, np.float32), statistics, network=net),
                   np.float64)
    p = 1 / (1 + np.exp(-(X @ theta)))
    draws = np.asarray(jax.random.uniform(rng_key, (num_sims, len(p)))) < p
    _, i, j = pair_tables(net.num_nodes, net.directed)
    return [np.stack([i[row], j[row]], 1) for row in draws], (draws @ X)[None]


def gof_effective_size(effective_size: float | None, num_sims: int) -> float:
    """gof_ergm's ``effective_size`` checked: a number >= 0 (0: keep the interval);
    None: :data:`EFFECTIVE_SHARE` of ``num_sims``."""
    if effective_size is None:
        return EFFECTIVE_SHARE * num_sims
    try:
        target = float(effective_size)
    except (TypeError, ValueError):
        target = float("nan")
    if isinstance(effective_size, bool) or not 0 <= target < math.inf:
        raise ValueError(f"gof_ergm: effective_size must be a number >= 0 (0: keep the "
                         f"interval), got {effective_size!r}")
    return target
