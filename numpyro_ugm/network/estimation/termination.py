"""The termination rules of the MCMLE (:func:`~numpyro_ugm.network.estimation.mcmle.mcmle`,
:attr:`~numpyro_ugm.network.control.MCMLEControl.termination`), one strategy object
each: ergm 4's ``"confidence"`` (:class:`ConfidenceTermination`), ergm's ``"Hotelling"``
(:class:`HotellingTermination`) and ``"none"`` (:class:`NoTermination`).

Each rule reads one iteration's :class:`IterationSummary` and the sample size so far
(``simulate`` calls per iteration) and returns a :class:`Verdict`: whether the MCMLE
converged, how, the ``"confidence"`` p-value (NaN where not computed) and the sample size
of the next iteration. A rule keeps what it needs of earlier iterations.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .hotelling import distance_to_ellipsoid_boundary, tsq_quantile, tsq_sf

__all__ = ["IterationSummary", "Verdict", "ConfidenceTermination", "HotellingTermination",
           "NoTermination", "termination_rule"]


class IterationSummary(NamedTuple):
    """What one MCMLE iteration learned from its sample.

    Attributes
    ----------
    moments : Moments
        Of the sample at θ_t.
    difference : array (k,)
        s_obs − s̄.
    hotelling_statistic, p_nonconvergence : float
        Hotelling's T² of E_θt[s] = s_obs and its p-value.
    tolerance_inverse : array (k, k)
        (precision · Cov s)⁻¹, the shape of ergm's tolerance region.
    d2 : float
        The distance of s_obs from s̄ on that scale.
    gamma : float
        The Hummel step length.
    delta : array (k,)
        The update Δθ (within the trust region).
    weighted : Moments
        The sample's moments reweighted to θ_t + Δθ.
    predicted : array (k,)
        s_obs − Ê_{θ_t+Δθ}[s].
    """

    moments: Any
    difference: np.ndarray
    hotelling_statistic: float
    p_nonconvergence: float
    tolerance_inverse: np.ndarray
    d2: float
    gamma: float
    delta: np.ndarray
    weighted: Any
    predicted: np.ndarray


class Verdict(NamedTuple):
    """A rule's reading of one iteration: ``converged``, ``message`` (how), ``p_value``
    (the ``"confidence"`` p-value, NaN where not computed) and ``repeats`` (``simulate``
    calls in the next iteration's sample)."""

    converged: bool
    message: str
    p_value: float
    repeats: int


class ConfidenceTermination:
    """ergm 4's ``"confidence"`` rule: converged when E_θ̂[s] lies in the tolerance region
    of s_obs with probability ``confidence`` (Hotelling's T² to the region's boundary);
    otherwise the sample grows, by ergm's ``MCMLE.confidence.boost`` near the region, and
    doubles when d² failed to decrease in more than 1 of the last 4 iterations."""

    def __init__(self, control, k):
        self.control, self.k = control, k
        self.previous_difference, self.not_improved = None, [False] * 4

    def check(self, it: IterationSummary, repeats: int) -> Verdict:
        """The verdict on iteration ``it`` whose sample took ``repeats`` calls."""
        control, most = self.control, self.control.max_repeats
        converged, message, p_converged, d2e = False, "", float("nan"), math.inf
        if it.d2 < 2.0 and it.gamma >= control.max_step:
            d2e = float(it.predicted @ it.tolerance_inverse @ it.predicted)
            if d2e < 1.0:
                df = it.moments.effective_size - 1.0
                try:
                    t2_boundary = distance_to_ellipsoid_boundary(
                        it.predicted, it.weighted.mean_cov, it.tolerance_inverse)
                except np.linalg.LinAlgError:
                    t2_boundary = float("nan")
                p_converged = tsq_sf(t2_boundary, self.k, df)
                if p_converged < 1.0 - control.confidence:
                    converged = True
                    message = (f"converged with {control.confidence:.0%} confidence "
                               f"(E_theta[s] within the tolerance region of s_obs)")
                elif math.isfinite(p_converged) and t2_boundary > 0:
                    boost = min(tsq_quantile(control.confidence, self.k, df) / t2_boundary,
                                2.0)
                    repeats = min(most, max(repeats, math.ceil(repeats * boost)))
                else:
                    repeats = min(most, 2 * repeats)
        if self.previous_difference is not None:
            previous = self.previous_difference
            d2_previous = float(previous @ it.tolerance_inverse @ previous)
            self.not_improved = self.not_improved[1:] + [it.d2 >= d2_previous]
        self.previous_difference = it.difference
        if not converged and (it.d2 >= 2.0 or d2e > 1.0) and sum(self.not_improved) > 1:
            repeats = min(most, 2 * repeats)
            self.not_improved = [False] * 4
        return Verdict(converged, message, p_converged, repeats)


class HotellingTermination:
    """ergm's ``"Hotelling"`` rule: converged when the step length is full and the
    Hotelling test of E_θt[s] = s_obs gives p >= 1 − √(1 − ``hotelling_min_p_value``)
    twice in a row (the sample grows 4 times after the first)."""

    def __init__(self, control, k):
        self.control, self.k = control, k
        self.last_adequate = False

    def check(self, it: IterationSummary, repeats: int) -> Verdict:
        """The verdict on iteration ``it`` whose sample took ``repeats`` calls."""
        control = self.control
        threshold = control.hotelling_threshold
        if it.gamma >= control.max_step and it.p_nonconvergence >= threshold:
            if self.last_adequate:
                return Verdict(True, f"converged: the Hotelling test of E_theta[s] = s_obs "
                                     f"gave p >= {threshold:.3f} twice in a row at step "
                                     f"length {control.max_step:g}", float("nan"), repeats)
            self.last_adequate = True
            repeats = min(control.max_repeats, 4 * repeats)
        else:
            self.last_adequate = False
        return Verdict(False, "", float("nan"), repeats)


class NoTermination:
    """``"none"``: run every iteration."""

    def __init__(self, control, k):
        self.control, self.k = control, k

    def check(self, it: IterationSummary, repeats: int) -> Verdict:
        """Never converged; the sample size unchanged."""
        return Verdict(False, "", float("nan"), repeats)


_RULES = {"confidence": ConfidenceTermination, "hotelling": HotellingTermination,
          "none": NoTermination}


def termination_rule(control, k: int):
    """A fresh rule for ``control.termination`` on k statistics."""
    return _RULES[control.termination](control, k)
