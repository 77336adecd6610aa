"""The MCMLE's trust region (:func:`~numpyro_ugm.network.estimation.mcmle.mcmle`,
``max_loss``): the estimated change of log-likelihood between two samples, the share of
a rejected step to try next, and whether a ``simulate`` callback can stop early.
"""

import inspect
import math

import numpy as np
from scipy import special


def _bridge_gain(step, observed, base_stats, stats):
    """l(θ_a + Δθ) − l(θ_a) = Δθ·s_obs − log Z(θ_a + Δθ)/Z(θ_a), the ratio by the
    geometric bridge between the samples at both ends: log mean_a exp(Δθ·s/2) −
    log mean exp(−Δθ·s/2). Where the samples do not overlap (chains run away) it is
    about the trapezoid rule Δθ·(s̄_a + s̄)/2, which it corrects for the change of
    variance along the step."""
    k = stats.shape[-1]
    forward = np.asarray(base_stats, np.float64).reshape(-1, k) @ step / 2
    backward = -np.asarray(stats, np.float64).reshape(-1, k) @ step / 2
    log_ratio = (special.logsumexp(forward) - math.log(forward.size)
                 - special.logsumexp(backward) + math.log(backward.size))
    return float(step @ observed - log_ratio)


def _shrink(step, observed, base_mean, gain):
    """The share τ of a rejected step to try next: the maximizer of the quadratic in τ
    with the slope Δθ·(s_obs − s̄_a) at 0 and the estimated change ``gain`` at 1, within
    [0.01, 0.5] (0.5 when the slope is not positive)."""
    slope = float(step @ (observed - base_mean))
    if not slope > 0:
        return 0.5
    return float(np.clip(slope / (2.0 * (slope - gain)), 0.01, 0.5))


def _takes_stop(simulate):
    """Whether ``simulate`` accepts a keyword ``stop``."""
    try:
        parameters = inspect.signature(simulate).parameters
    except (TypeError, ValueError):
        return False
    return "stop" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())
