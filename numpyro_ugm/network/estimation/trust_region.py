"""The MCMLE's trust region (:func:`~numpyro_ugm.network.estimation.mcmle.mcmle`,
``MCMLEControl.max_loss``): the estimated change of log-likelihood between two samples,
the share of a rejected step to try next, whether a ``simulate`` callback can stop early,
and the region itself (:class:`TrustRegion`: the last accepted θ, the rejections in a
row, the radius).
"""

import inspect
import math

import numpy as np
from scipy import special

__all__ = ["bridge_gain", "shrink_share", "takes_stop", "TrustRegion"]


def bridge_gain(step, observed, base_stats, stats):
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


def shrink_share(step, observed, base_mean, gain):
    """The share τ of a rejected step to try next: the maximizer of the quadratic in τ
    with the slope Δθ·(s_obs − s̄_a) at 0 and the estimated change ``gain`` at 1, within
    [0.01, 0.5] (0.5 when the slope is not positive)."""
    slope = float(step @ (observed - base_mean))
    if not slope > 0:
        return 0.5
    return float(np.clip(slope / (2.0 * (slope - gain)), 0.01, 0.5))


def takes_stop(simulate):
    """Whether ``simulate`` accepts a keyword ``stop``."""
    try:
        parameters = inspect.signature(simulate).parameters
    except (TypeError, ValueError):
        return False
    return "stop" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


class TrustRegion:
    """The trust region of one :func:`~numpyro_ugm.network.estimation.mcmle.mcmle` run:
    the last accepted θ_a with its sample (the anchor), the rejections in a row, and the
    radius ‖Δθ‖ steps are shortened to (infinite until a step is rejected; it doubles
    with each accepted step).

    Parameters
    ----------
    observed : array (k,)
        s_obs.
    max_loss : float or None
        The largest estimated loss of log-likelihood a step may make (None: no test).
    """

    def __init__(self, observed, max_loss):
        self.observed = observed
        self.max_loss = max_loss
        self.anchor = None  # (θ_a, s̄_a, sample at θ_a)
        self.rejections = 0
        self.radius = math.inf
        self.share = 1.0  # of the last rejected step

    def tests(self, theta):
        """(gain, loses) at θ: ``gain(stats)`` the estimated l(θ) − l(θ_a) from a sample
        at θ, ``loses(stats)`` whether it is below −max_loss; None before an anchor (and
        ``loses`` None without ``max_loss``)."""
        if self.anchor is None:
            return None, None
        step, base = theta - self.anchor[0], self.anchor[2]

        def gain(stats):
            return bridge_gain(step, self.observed, base, stats)

        if self.max_loss is None:
            return gain, None

        def loses(stats):
            return gain(stats) < -self.max_loss

        return gain, loses

    def reject(self):
        """Count a rejected step; the rejections in a row."""
        self.rejections += 1
        return self.rejections

    def retreat(self, theta, gain):
        """After a rejected step to θ: θ_a + τ (θ − θ_a) (τ kept as ``share``), the new
        radius ‖τ Δθ‖."""
        step = theta - self.anchor[0]
        self.share = shrink_share(step, self.observed, self.anchor[1], gain)
        theta = self.anchor[0] + self.share * step
        self.radius = float(np.linalg.norm(theta - self.anchor[0]))
        return theta

    def accept(self, theta, mean, stats):
        """θ's sample is accepted: it becomes the anchor."""
        self.rejections = 0
        self.anchor = (theta.copy(), mean, stats)

    def clip(self, delta):
        """``delta`` shortened to the radius, which then doubles."""
        length = float(np.linalg.norm(delta))
        if length > self.radius:
            delta = delta * (self.radius / length)
        self.radius *= 2.0
        return delta
