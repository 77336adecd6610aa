"""Monte Carlo maximum likelihood for ERGMs at the level of the sufficient statistics:
statnet's MCMLE loop (:func:`mcmle`, Hummel, Hunter & Handcock 2012) and its record
(:class:`MCMLEResult`).

Simulate at θ_t (the ``simulate`` callback of
:mod:`~numpyro_ugm.network.estimation.samples`), find the Hummel step length
(:func:`~numpyro_ugm.network.estimation.step.hummel_step_length`), step to the maximum of
the lognormal (ergm 4's default) or Geyer–Thompson approximation of the log-likelihood
with the target moved that far towards s_obs, and stop by ergm 4's default ``"confidence"`` criterion (or
ergm's ``"Hotelling"`` one, :mod:`~numpyro_ugm.network.estimation.hotelling`). Degenerate samples
stop it with :class:`~numpyro_ugm.network.ErgmDegeneracyError`, naming the terms.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.typing import ArrayLike

from ..._checks import as_key, check_count
from .hotelling import _distance_to_ellipsoid_boundary, _hotelling, _tsq_quantile, _tsq_sf
from .step import _geyer_thompson_step, _hummel, _lognormal_step
from .samples import (ErgmDegeneracyError, _as_names, _as_vector,
                                      _check_degenerate, _check_fraction, _check_simulate,
                                      _moments, _simulate)
from .trust_region import _bridge_gain, _shrink, _takes_stop

__all__ = ["mcmle", "MCMLEResult"]

_TERMINATIONS = ("confidence", "hotelling", "none")
_METRICS = {"lognormal": _lognormal_step,
            "naive": lambda stats, target: _geyer_thompson_step(stats, target)[0]}


@dataclasses.dataclass
class MCMLEResult:
    """The record of :func:`mcmle`.

    Attributes
    ----------
    theta : array (k,)
        The estimate: the last update.
    converged : bool
        Whether the termination criterion was met.
    iterations : int
        Number of iterations (simulations + updates).
    termination : str
        The criterion (``"confidence"``, ``"hotelling"`` or ``"none"``).
    message : str
        How it ended.
    theta_history : array (iterations + 1, k)
        θ_0 (the start), θ_1, ..., θ_T; iteration t sampled at ``theta_history[t]``.
    step_lengths : array (iterations,)
        Hummel step length γ of each iteration.
    hotelling_statistics, hotelling_p_values : arrays (iterations,)
        Hotelling's T² test of E_θt[s] = s_obs with the autocorrelation-adjusted
        covariance of the sample mean (ergm's ``approx.hotelling.diff.test``): a small
        p-value says θ_t is not the MLE.
    tolerance_distances : arrays (iterations,)
        d² = (s_obs − s̄)ᵀ (precision Cov s)⁻¹ (s_obs − s̄): the distance of s_obs from the
        sample mean on the scale of ergm's tolerance region (< 2 starts the
        ``"confidence"`` test).
    convergence_p_values : array (iterations,)
        The ``"confidence"`` criterion's p-value (equivalence test; converged when below
        1 − confidence); NaN where it was not computed.
    predicted_differences : array (iterations, k)
        s_obs − Ê_{θ_{t+1}}[s], the importance-sampling estimate from iteration t's sample
        of how far the update's expected statistics miss s_obs (after a full step: 0 up
        to the solver's tolerance with ``metric="naive"``, small with ``"lognormal"``).
    num_draws : array (iterations,)
        Draws (all chains) in each iteration's sample.
    effective_sizes : array (iterations,)
        tr(Cov s) / tr(Cov s̄): the effective number of independent draws.
    last_statistics : array (num_chains, num_draws, k)
        The last iteration's sample, drawn at ``theta_history[-2]``.
    repeats : int
        ``simulate`` calls per sample reached.
    rejected : array (iterations,) bool
        Iterations whose θ the trust region rejected (its sample's estimated
        log-likelihood change below −``max_loss``): θ_{t+1} is then the last accepted θ
        plus a share of the rejected step, and the other diagnostics of the iteration
        are NaN.
    log_likelihood_gains : array (iterations,)
        The bridge estimate of l(θ_t) − l(θ_a), θ_a the last accepted θ before
        iteration t (NaN for the first iteration).
    """

    theta: np.ndarray
    converged: bool
    iterations: int
    termination: str
    message: str
    theta_history: np.ndarray
    step_lengths: np.ndarray
    hotelling_statistics: np.ndarray
    hotelling_p_values: np.ndarray
    tolerance_distances: np.ndarray
    convergence_p_values: np.ndarray
    predicted_differences: np.ndarray
    num_draws: np.ndarray
    effective_sizes: np.ndarray
    last_statistics: np.ndarray | None
    repeats: int = 1
    rejected: np.ndarray | None = None
    log_likelihood_gains: np.ndarray | None = None


def _outside_terms(stats, observed, names):
    """Terms whose observed value is at or beyond the sampled range; else those farthest
    from the sample mean (in standard deviations)."""
    flat = stats.reshape(-1, stats.shape[-1])
    low, high = flat.min(axis=0), flat.max(axis=0)
    outside = np.flatnonzero((observed <= low) | (observed >= high))
    if outside.size:
        return [names[i] for i in outside], [
            f"{names[i]}: observed {observed[i]:g}, sampled range [{low[i]:g}, {high[i]:g}]"
            for i in outside]
    z = np.abs(observed - flat.mean(axis=0)) / flat.std(axis=0)
    order = np.argsort(-z)[:max(1, min(2, len(names)))]
    return [names[i] for i in order], [
        f"{names[i]}: observed {observed[i]:g} is {z[i]:.1f} sd from the sampled mean "
        f"{flat[:, i].mean():g}" for i in order]


def mcmle(simulate: Callable, observed: ArrayLike, theta0: ArrayLike, *, key: Any,
          names: Sequence[str] | None = None, max_iterations: int = 60,
          termination: str = "confidence", confidence: float = 0.99,
          precision: float = 0.1, steplength_margin: float = 0.05,
          max_step: float = 1.0, min_step_length: float = 1e-4,
          stall_iterations: int = 3, max_repeats: int = 8,
          hotelling_min_p_value: float = 0.5, metric: str = "lognormal",
          max_loss: float | None = 1.0, max_rejections: int = 8,
          rewind: Callable[[], None] | None = None, verbose: bool = False) -> MCMLEResult:
    """Monte Carlo maximum likelihood (statnet's MCMLE: Hummel, Hunter & Handcock 2012).

    Iteration t: draw s_1..s_n at θ_t (``simulate``); take the Hummel step length γ
    (:func:`~numpyro_ugm.network.estimation.step.hummel_step_length`, margin
    ``steplength_margin``); set θ_{t+1} = θ_t + Δθ with Δθ maximizing an approximation
    of l(θ_t + Δθ) − l(θ_t) with s_obs replaced by the target ξ = s̄ + γ (s_obs − s̄)
    (s_obs when γ = 1), by ``metric``:

    * ``"lognormal"`` (ergm 4's default ``MCMLE.metric``): Δθ·(ξ − s̄) − ½ Δθᵀ Σ Δθ, Σ the
      sample covariance, so Δθ = Σ⁻¹ (ξ − s̄), a damped Newton step;
    * ``"naive"`` (Geyer–Thompson): Δθ·ξ − log mean_i exp(Δθ·s_i). Exact for the sample,
      but it extrapolates its tail: far from the MLE of a near-degenerate model (gwesp on
      faux.magnolia.high) its steps land where the chains run away.

    Termination (``termination``):

    * ``"confidence"`` (ergm 4's default, ``MCMLE.termination="confidence"``): the
      tolerance region is {δ : δᵀ (precision · Cov s)⁻¹ δ < 1} around s_obs. When the sample
      mean is near it (d² < 2), the update's expected statistics E_{θ_{t+1}}[s] are
      estimated by importance weights, with their Monte Carlo covariance V
      (autocorrelation-adjusted, inflated by the weights); if they lie inside the region,
      T² = the squared V-Mahalanobis distance from them to the region's boundary is
      referred to Hotelling's T² (k, n_eff − 1): converged when P(T²_{k,n_eff−1} > T²) <
      1 − confidence, i.e. E_θ̂[s] is within tolerance of s_obs with that confidence.
      Unlike ergm, the test also needs the full step length γ = ``max_step``: s_obs on
      the boundary of the sampled hull (γ = 1/(1 + margin)), e.g. an observed statistic
      at its smallest possible value, whose MLE does not exist, never converges (the
      coefficient runs off until the term stops varying:
      :class:`~numpyro_ugm.network.estimation.samples.ErgmDegeneracyError`).
      Otherwise the sample grows (more ``simulate`` calls per iteration, up to
      ``max_repeats``) by min(critical value / T², 2), as ergm's
      ``MCMLE.confidence.boost``; it also doubles when d² failed to decrease in more than
      1 of the last 4 iterations.
    * ``"hotelling"`` (ergm's ``"Hotelling"``): converged when γ = ``max_step`` and the
      Hotelling test of E_θt[s] = s_obs gives p >= 1 − √(1 − hotelling_min_p_value)
      twice in a row (the sample grows 4 times after the first).
    * ``"none"``: run ``max_iterations`` iterations.

    Trust region (``max_loss``): each sample at θ_{t+1} = θ_a + Δθ (θ_a the last accepted
    θ, s̄_a its sample mean) estimates the change of log-likelihood l(θ_{t+1}) − l(θ_a) =
    Δθ·s_obs − log Z(θ_{t+1})/Z(θ_a) with the ratio by the geometric bridge between the
    two samples, log mean_a exp(Δθ·s/2) − log mean_{t+1} exp(−Δθ·s/2) (about
    Δθ·(s̄_a + s̄_{t+1})/2 where the samples do not overlap). Below
    −``max_loss`` the step overshot (typically into a degenerate region where the chains
    run away towards the empty or a dense graph): it is rejected, the chains go back to
    θ_a (``rewind``), and θ_{t+1} = θ_a + τ Δθ, τ in [0.01, 0.5] the maximum of the
    quadratic in τ with the slope Δθ·(s_obs − s̄_a) at 0 and the estimated change at 1
    (a step far too long, e.g. the lognormal step along a direction the sample barely
    varies in, is cut in one go). The length of that share becomes the radius of the
    trust region: later steps are shortened to it, and it doubles with each accepted
    step. A ``simulate`` that takes a keyword
    ``stop`` gets the same test as ``stop(stats) -> bool`` and may end its sampling early
    when it is true (the adaptive sampler of
    :func:`~numpyro_ugm.network.fit_ergm`, which would otherwise keep doubling its interval
    after the runaway chains). ``max_rejections`` rejections in a row raise
    :class:`~numpyro_ugm.network.ErgmDegeneracyError`.

    Every iteration records the Hotelling nonconvergence p-value, d², γ, the update's
    predicted miss s_obs − Ê_{θ_{t+1}}[s] and (where computed) the ``"confidence"``
    p-value (:class:`MCMLEResult`).

    Parameters
    ----------
    simulate : callable
        ``simulate(theta, key) -> stats`` (num_chains, num_draws, k), draws in chain order;
        persistent chains (two calls at the same θ continue them).
    observed : array (k,)
        Observed statistics s(y_obs).
    theta0 : array (k,)
        Start (ergm starts at the MPLE).
    key : jax PRNG key
        Split into one key per ``simulate`` call.
    names : sequence of k str, optional
        Term names, for messages.
    max_iterations : int
        ergm's ``MCMLE.maxit`` (60).
    termination : {"confidence", "hotelling", "none"}
    confidence, precision : float
        ergm's ``MCMLE.confidence`` (0.99) and ``MCMLE.MCMC.precision`` (0.1 with
        ``"confidence"``).
    steplength_margin, max_step : float
        ergm's ``MCMLE.steplength.margin`` (0.05) and ``MCMLE.steplength`` (1).
    min_step_length, stall_iterations : float, int
        Stop with :class:`~numpyro_ugm.network.estimation.samples.ErgmDegeneracyError`
        when γ < ``min_step_length`` in ``stall_iterations`` successive iterations.
    max_repeats : int
        Most ``simulate`` calls joined into one iteration's sample.
    hotelling_min_p_value : float
        ergm's ``MCMLE.conv.min.pval`` (for ``"hotelling"``).
    metric : {"lognormal", "naive"}
        The approximation each step maximizes (ergm's ``MCMLE.metric``; ergm's
        ``"naive"`` is the Geyer–Thompson one).
    max_loss : float or None
        The trust region: the largest estimated loss of log-likelihood (nats) a step may
        make; None: every step is taken.
    max_rejections : int
        Rejected steps in a row before giving up.
    rewind : callable, optional
        ``rewind()`` returns ``simulate``'s chains to where they were before the last
        change of θ (:meth:`~numpyro_ugm.network.sampling.simulation.NetworkSimulator.rewind`);
        without it a rejected step's chains go on from where they ran.
    verbose : bool
        Print one line per iteration.

    Returns
    -------
    MCMLEResult

    Raises
    ------
    ErgmDegeneracyError
        A sampled term with zero variance, linearly dependent terms, a stalled step
        length, or ``max_rejections`` rejected steps in a row; ``terms`` names them,
        ``record`` holds the iterations so far.
    """
    owner = "mcmle"
    _check_simulate(owner, simulate)
    observed = _as_vector(owner, "observed", observed)
    k = observed.size
    theta = _as_vector(owner, "theta0", theta0, k)
    names = _as_names(owner, names, k)
    key = as_key(key, owner)
    max_iterations = check_count(owner, "max_iterations", max_iterations)
    stall_iterations = check_count(owner, "stall_iterations", stall_iterations)
    max_repeats = check_count(owner, "max_repeats", max_repeats)
    max_rejections = check_count(owner, "max_rejections", max_rejections)
    if max_loss is not None:
        max_loss = _check_fraction(owner, "max_loss", max_loss, high=math.inf)
    if rewind is not None and not callable(rewind):
        raise TypeError(f"{owner}: rewind must be a callable rewind() or None, got "
                        f"{type(rewind).__name__}")
    takes_stop = _takes_stop(simulate)
    if metric not in _METRICS:
        raise ValueError(f"{owner}: metric must be one of {tuple(_METRICS)}, got {metric!r}")
    if termination not in _TERMINATIONS:
        raise ValueError(f"{owner}: termination must be one of {_TERMINATIONS}, got "
                         f"{termination!r}")
    confidence = _check_fraction(owner, "confidence", confidence)
    precision = _check_fraction(owner, "precision", precision, high=math.inf)
    margin = float(steplength_margin)
    if not math.isfinite(margin) or margin < 0:
        raise ValueError(f"{owner}: steplength_margin must be a finite number >= 0, got "
                         f"{steplength_margin!r}")
    max_step = _check_fraction(owner, "max_step", max_step, open_high=False)
    min_step_length = _check_fraction(owner, "min_step_length", min_step_length,
                                      open_low=False, high=max_step)
    hotelling_threshold = 1.0 - math.sqrt(1.0 - _check_fraction(
        owner, "hotelling_min_p_value", hotelling_min_p_value))

    history = {name: [] for name in ("step", "t2", "p", "d2", "pconv", "n", "neff",
                                     "predicted", "rejected", "gain")}
    thetas = [theta.copy()]
    repeats, stalled, last_adequate = 1, 0, False
    previous_difference, not_improved = None, [False] * 4
    stats = None
    anchor, rejections = None, 0  # (θ_a, s̄_a, sample) of the last accepted θ
    radius = math.inf  # the trust region's radius ‖Δθ‖, finite after a rejected step
    converged, message = False, f"reached max_iterations = {max_iterations}"

    def record(final_message, done):
        return MCMLEResult(
            theta=thetas[-1].copy(), converged=done, iterations=len(history["step"]),
            termination=termination, message=final_message,
            theta_history=np.asarray(thetas), step_lengths=np.asarray(history["step"]),
            hotelling_statistics=np.asarray(history["t2"]),
            hotelling_p_values=np.asarray(history["p"]),
            tolerance_distances=np.asarray(history["d2"]),
            convergence_p_values=np.asarray(history["pconv"]),
            predicted_differences=np.asarray(history["predicted"]).reshape(-1, k),
            num_draws=np.asarray(history["n"], dtype=np.int64),
            effective_sizes=np.asarray(history["neff"]), last_statistics=stats,
            repeats=repeats, rejected=np.asarray(history["rejected"], dtype=bool),
            log_likelihood_gains=np.asarray(history["gain"]))

    def give_up(reason):
        """Raise ErgmDegeneracyError, the terms the last sample misses named; θ not
        updated (the record keeps its shapes)."""
        thetas.append(theta.copy())
        bad, details = _outside_terms(stats, observed, names)
        text = f"{reason}; terms {bad} ({'; '.join(details)})."
        raise ErgmDegeneracyError(text, bad, record(text, False))

    for iteration in range(1, max_iterations + 1):
        key, subkey = jax.random.split(key)
        gain_of = loses = None
        if anchor is not None:
            gain_of = functools.partial(_bridge_gain, theta - anchor[0], observed,
                                        anchor[2])
            if max_loss is not None:
                def loses(s, gain_of=gain_of):
                    return gain_of(s) < -max_loss
        stats = _simulate(simulate, theta, subkey, repeats, k, owner,
                          stop=loses if takes_stop else None)
        gain = float("nan") if gain_of is None else gain_of(stats)
        if loses is not None and gain < -max_loss:
            rejections += 1
            history["gain"].append(gain)
            for name in ("step", "t2", "p", "d2", "neff", "pconv"):
                history[name].append(float("nan"))
            history["predicted"].append(np.full(k, np.nan))
            history["n"].append(stats.shape[0] * stats.shape[1])
            history["rejected"].append(True)
            if rejections >= max_rejections:
                give_up(f"{owner}: {rejections} steps in a row from theta = "
                        f"{np.round(anchor[0], 4).tolist()} lost log-likelihood (the last, "
                        f"{np.round(theta - anchor[0], 4).tolist()}, by an estimated "
                        f"{-gain:.3g}): the chains run away from the observed statistics "
                        f"even this close, so the model is degenerate near this theta")
            if rewind is not None:
                rewind()
            shrink = _shrink(theta - anchor[0], observed, anchor[1], gain)
            theta = anchor[0] + shrink * (theta - anchor[0])
            radius = float(np.linalg.norm(theta - anchor[0]))
            thetas.append(theta.copy())
            if verbose:
                print(f"mcmle iteration {iteration}: step rejected (estimated log-likelihood "
                      f"change {gain:.3g} < -{max_loss:g}, {history['n'][-1]} draws); "
                      f"{shrink:.3g} of it: theta {np.round(theta, 4).tolist()}")
            continue
        rejections = 0
        try:
            _check_degenerate(owner, stats, names, observed, theta)
        except ErgmDegeneracyError as error:
            error.record = record(str(error), False)
            raise
        moments = _moments(stats)
        anchor = (theta.copy(), moments.mean, stats)
        difference = observed - moments.mean
        t2 = _hotelling(difference, moments.mean_cov)
        p_nonconvergence = _tsq_sf(t2, k, moments.effective_size - 1.0)
        tolerance_inverse = np.linalg.pinv(precision * moments.cov, hermitian=True)
        d2 = float(difference @ tolerance_inverse @ difference)
        gamma = _hummel(stats, observed, margin, max_step)
        target = moments.mean + gamma * difference
        delta = _METRICS[metric](stats, target)
        length = float(np.linalg.norm(delta))
        if length > radius:  # within the trust region, which grows after each good step
            delta = delta * (radius / length)
        radius *= 2.0
        new_theta = theta + delta
        weighted = _moments(stats, stats.reshape(-1, k) @ delta)
        predicted = observed - weighted.mean

        stalled = stalled + 1 if gamma < min_step_length else 0
        history["step"].append(gamma)
        history["t2"].append(t2)
        history["p"].append(p_nonconvergence)
        history["d2"].append(d2)
        history["n"].append(stats.shape[0] * stats.shape[1])
        history["neff"].append(moments.effective_size)
        history["predicted"].append(predicted)
        history["rejected"].append(False)
        history["gain"].append(gain)
        p_converged = float("nan")

        if stalled >= stall_iterations:
            history["pconv"].append(p_converged)
            give_up(f"{owner}: the observed statistics stay outside the convex hull of the "
                    f"sampled ones (Hummel step length {gamma:.2g} < {min_step_length:g} in "
                    f"{stall_iterations} successive iterations) at theta = "
                    f"{np.round(theta, 4).tolist()}: the MLE may not exist (an observed "
                    f"statistic at the edge of its possible values) or the model is "
                    f"degenerate near this theta")

        if termination == "confidence":
            d2e = math.inf
            if d2 < 2.0 and gamma >= max_step:
                d2e = float(predicted @ tolerance_inverse @ predicted)
                if d2e < 1.0:
                    df = moments.effective_size - 1.0
                    try:
                        t2_boundary = _distance_to_ellipsoid_boundary(
                            predicted, weighted.mean_cov, tolerance_inverse)
                    except np.linalg.LinAlgError:
                        t2_boundary = float("nan")
                    p_converged = _tsq_sf(t2_boundary, k, df)
                    if p_converged < 1.0 - confidence:
                        converged = True
                        message = (f"converged with {confidence:.0%} confidence (E_theta[s] "
                                   f"within the tolerance region of s_obs)")
                    elif math.isfinite(p_converged) and t2_boundary > 0:
                        boost = min(_tsq_quantile(confidence, k, df) / t2_boundary, 2.0)
                        repeats = min(max_repeats, max(repeats, math.ceil(repeats * boost)))
                    else:
                        repeats = min(max_repeats, 2 * repeats)
            if previous_difference is not None:
                d2_previous = float(previous_difference @ tolerance_inverse
                                    @ previous_difference)
                not_improved = not_improved[1:] + [d2 >= d2_previous]
            previous_difference = difference
            if not converged and (d2 >= 2.0 or d2e > 1.0) and sum(not_improved) > 1:
                repeats = min(max_repeats, 2 * repeats)
                not_improved = [False] * 4
        elif termination == "hotelling":
            if gamma >= max_step and p_nonconvergence >= hotelling_threshold:
                if last_adequate:
                    converged = True
                    message = (f"converged: the Hotelling test of E_theta[s] = s_obs gave "
                               f"p >= {hotelling_threshold:.3f} twice in a row at step "
                               f"length {max_step:g}")
                else:
                    last_adequate = True
                    repeats = min(max_repeats, 4 * repeats)
            else:
                last_adequate = False
        history["pconv"].append(p_converged)
        theta = new_theta
        thetas.append(theta.copy())
        if verbose:
            print(f"mcmle iteration {iteration}: step length {gamma:.3f}, d2 {d2:.3g}, "
                  f"Hotelling p {p_nonconvergence:.3g}, convergence p {p_converged:.3g}, "
                  f"{history['n'][-1]} draws, theta {np.round(theta, 4).tolist()}")
        if converged:
            break
    return record(message, converged)
