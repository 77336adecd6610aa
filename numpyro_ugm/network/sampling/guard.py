"""ergm's density guard (``MCMLE.density.guard``): chains that run away to dense graphs
stop the adaptive sample instead of lengthening its interval for hours.

Near a degenerate θ the chains run from the observed network towards the complete
graph; the adaptive sample
(:func:`~numpyro_ugm.network.sampling.simulation.adaptive_simulate`) then never reaches
its effective size (the chains keep moving), doubles its interval again and again, and
each proposal on a dense graph costs more than on the observed one (faux.mesa.high
``edges + triangle + kstar(2) + gwesp + isolates`` at its MPLE: 20,900 of 20,910 ties
after three doublings, one call 35 s, the next twice that). :class:`DensityGuard`
stops it, as ergm does, once a chain holds more than max(``density_guard_min``,
``density_guard`` × the observed ties) ties, with :class:`ChainsRanAwayError`
(the fit turns it into :class:`~numpyro_ugm.network.ErgmDegeneracyError`, naming the
statistics that ran off).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["ChainsRanAwayError", "DensityGuard", "density_guard"]


class ChainsRanAwayError(RuntimeError):
    """The chains ran away from the observed network (:class:`DensityGuard`).

    Attributes
    ----------
    statistics : array (num_chains, num_samples, k)
        The sample at the stop.
    interval : int
        The interval reached.
    effective_size : float
        The sample's multivariate effective size (0: the chains were still moving).
    ties : list of int
        Each chain's ties at the stop.
    max_ties : int
        The most ties the guard allowed.
    """

    def __init__(self, message: str, statistics: np.ndarray, interval: int,
                 effective_size: float, ties: list, max_ties: int):
        super().__init__(message)
        self.statistics = statistics
        self.interval = int(interval)
        self.effective_size = float(effective_size)
        self.ties = list(ties)
        self.max_ties = int(max_ties)

    @property
    def last_draws(self) -> np.ndarray:
        """The last quarter (at least 2) of the draws of the chains that ran away
        (more ties than the guard allows; all chains when the ties are unknown): where
        they ran to, for naming the statistics that ran off."""
        d = self.statistics.shape[1]
        over = [c for c, m in enumerate(self.ties) if m > self.max_ties]
        chains = self.statistics[over] if over else self.statistics
        return chains[:, d - min(d, max(2, d // 4)):]


class DensityGuard(NamedTuple):
    """The most ties a chain may hold (``max_ties``), of ``num_dyads``, for a network
    observed with ``observed_ties``; ``factor`` and ``minimum`` are the settings it came
    from (for the message)."""

    max_ties: int
    observed_ties: int
    num_dyads: int
    factor: float
    minimum: int

    def check(self, networks: list, stats: np.ndarray, effective_size: float,
              target: float, interval: int, theta) -> None:
        """Raise :class:`ChainsRanAwayError` when a chain's network (``networks``: the
        chains' edge arrays) holds more than ``max_ties`` ties; ``stats``, the
        ``effective_size`` (against its ``target``), ``interval`` and ``theta`` describe
        the sample for the message."""
        ties = [len(e) for e in networks]
        if max(ties) <= self.max_ties:
            return
        moving = f"effective sample size {effective_size:.1f} < {target:g}" + (
            ", the chains still moving" if effective_size == 0 else "")
        raise ChainsRanAwayError(
            f"the chains ran away to dense graphs at theta = "
            f"{np.round(np.asarray(theta, np.float64), 4).tolist()}: a chain holds "
            f"{max(ties)} ties of {self.num_dyads} dyads (density "
            f"{max(ties) / self.num_dyads:.3f}; observed {self.observed_ties} ties, "
            f"density {self.observed_ties / self.num_dyads:.4f}), above the density "
            f"guard max(density_guard_min = {self.minimum}, density_guard = "
            f"{self.factor:.3g} x the observed ties) = {self.max_ties}, at interval "
            f"{interval} ({moving}): the model is degenerate near this theta (nearly all "
            f"its mass on dense graphs), and longer intervals would only cost more. Try "
            f"curved terms (gwesp, gwdegree) instead of triangle or kstar, another start "
            f"(ErgmControl(init=...)), or SamplingControl(density_guard=None) to sample "
            f"on", stats, interval, effective_size, ties, self.max_ties)


def density_guard(factor: float | None, minimum: int, observed_ties: int,
                  num_dyads: int) -> DensityGuard | None:
    """The :class:`DensityGuard` of ``SamplingControl.density_guard`` (``factor``;
    None: no guard) and ``density_guard_min`` (``minimum``) for a network with
    ``observed_ties`` of ``num_dyads`` dyads (None when the limit is not below
    ``num_dyads``: the guard cannot fire)."""
    if factor is None:
        return None
    limit = max(int(minimum), int(math.floor(factor * observed_ties)))
    if limit >= num_dyads:
        return None
    return DensityGuard(limit, int(observed_ties), int(num_dyads), float(factor),
                        int(minimum))
