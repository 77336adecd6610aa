"""Monte Carlo maximum likelihood for ERGMs at the level of the sufficient statistics:
statnet's MCMLE loop (:func:`mcmle`, Hummel, Hunter & Handcock 2012) and its record
(:class:`MCMLEResult`).

Simulate at θ_t (the ``simulate`` callback of
:mod:`~numpyro_ugm.network.estimation.samples`), find the Hummel step length
(:func:`~numpyro_ugm.network.estimation.step.hummel_step_length`), step to the maximum of
the lognormal (ergm 4's default) or Geyer–Thompson approximation of the log-likelihood
with the target moved that far towards s_obs, within the trust region
(:mod:`~numpyro_ugm.network.estimation.trust_region`), and stop by a termination rule
(:mod:`~numpyro_ugm.network.estimation.termination`). Degenerate samples stop it with
:class:`~numpyro_ugm.network.ErgmDegeneracyError`, naming the terms. The settings are an
:class:`~numpyro_ugm.network.control.MCMLEControl`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from jax.typing import ArrayLike

from ...runtime.checks import as_key, split_key
from ..control import MCMLEControl
from ..diagnostics.degeneracy import (ErgmDegeneracyError, check_sample_degeneracy,
                                      outside_sample_error)
from .hotelling import hotelling_t2, tsq_sf
from ..sampling.guard import ChainsRanAwayError
from ..sampling.moments import sample_moments
from .samples import as_names, as_vector, check_simulate, sample_statistics
from .step import geyer_thompson_step, hull_step_length, lognormal_step
from .termination import IterationSummary, termination_rule
from .trust_region import TrustRegion, takes_stop

__all__ = ["mcmle", "MCMLEResult", "IterationRecord"]

_METRICS = {"lognormal": lognormal_step,
            "naive": lambda stats, target: geyer_thompson_step(stats, target)[0]}


@dataclasses.dataclass(frozen=True, eq=False)
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
    num_samples : array (iterations,)
        Draws (all chains) in each iteration's sample.
    effective_sizes : array (iterations,)
        tr(Cov s) / tr(Cov s̄): the effective number of independent draws.
    last_statistics : array (num_chains, num_samples, k)
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
    num_samples: np.ndarray
    effective_sizes: np.ndarray
    last_statistics: np.ndarray | None
    repeats: int = 1
    rejected: np.ndarray | None = None
    log_likelihood_gains: np.ndarray | None = None


class IterationRecord(NamedTuple):
    """One MCMLE iteration's row of :class:`MCMLEResult` (NaN where a rejected step left
    it unmeasured)."""

    step_length: float
    hotelling_statistic: float
    hotelling_p_value: float
    tolerance_distance: float
    convergence_p_value: float
    num_samples: int
    effective_size: float
    predicted_difference: np.ndarray
    rejected: bool
    log_likelihood_gain: float


class _History:
    """The rows and θs of an MCMLE run so far, and its last sample (of the observed
    statistics ``observed`` of the terms ``names``)."""

    def __init__(self, theta0, observed, names, termination):
        self.rows, self.thetas = [], [theta0.copy()]
        self.observed, self.names, self.termination = observed, names, termination
        self.k = observed.size
        self.last_statistics = None

    def add(self, row, theta):
        """Record an iteration and the θ it leads to."""
        self.rows.append(row)
        self.thetas.append(theta.copy())

    def result(self, message, converged, repeats):
        """The :class:`MCMLEResult` of the rows so far."""
        column = {name: [getattr(row, name) for row in self.rows]
                  for name in IterationRecord._fields}
        return MCMLEResult(
            theta=self.thetas[-1].copy(), converged=converged, iterations=len(self.rows),
            termination=self.termination, message=message,
            theta_history=np.asarray(self.thetas),
            step_lengths=np.asarray(column["step_length"]),
            hotelling_statistics=np.asarray(column["hotelling_statistic"]),
            hotelling_p_values=np.asarray(column["hotelling_p_value"]),
            tolerance_distances=np.asarray(column["tolerance_distance"]),
            convergence_p_values=np.asarray(column["convergence_p_value"]),
            predicted_differences=np.asarray(column["predicted_difference"]).reshape(
                -1, self.k),
            num_samples=np.asarray(column["num_samples"], dtype=np.int64),
            effective_sizes=np.asarray(column["effective_size"]),
            last_statistics=self.last_statistics, repeats=repeats,
            rejected=np.asarray(column["rejected"], dtype=bool),
            log_likelihood_gains=np.asarray(column["log_likelihood_gain"]))

    def give_up(self, reason, row, theta, repeats):
        """Record the last iteration (``row``; θ not updated, so the record keeps its
        shapes) and raise ErgmDegeneracyError, the terms the last sample misses named."""
        self.add(row, theta)
        error = outside_sample_error(reason, self.last_statistics, self.observed, self.names)
        error.record = self.result(str(error), False, repeats)
        raise error


def _summarize(stats, observed, control, trust):
    """The :class:`~numpyro_ugm.network.estimation.termination.IterationSummary` of an
    accepted sample at θ_t: moments, tests, step length and the update Δθ (which the
    trust region shortens)."""
    k = observed.size
    moments = sample_moments(stats)
    difference = observed - moments.mean
    t2 = hotelling_t2(difference, moments.mean_cov)
    p_nonconvergence = tsq_sf(t2, k, moments.effective_size - 1.0)
    tolerance_inverse = np.linalg.pinv(control.precision * moments.cov, hermitian=True)
    d2 = float(difference @ tolerance_inverse @ difference)
    gamma = hull_step_length(stats, observed, control.steplength_margin, control.max_step)
    target = moments.mean + gamma * difference
    delta = trust.clip(_METRICS[control.metric](stats, target))
    weighted = sample_moments(stats, stats.reshape(-1, k) @ delta)
    return IterationSummary(moments, difference, t2, p_nonconvergence, tolerance_inverse,
                            d2, gamma, delta, weighted, observed - weighted.mean)


def _rejected_row(stats, gain, k):
    return IterationRecord(*[float("nan")] * 5, stats.shape[0] * stats.shape[1],
                           float("nan"), np.full(k, np.nan), True, gain)


def _accepted_row(it, p_converged, stats, gain):
    return IterationRecord(it.gamma, it.hotelling_statistic, it.p_nonconvergence, it.d2,
                           p_converged, stats.shape[0] * stats.shape[1],
                           it.moments.effective_size, it.predicted, False, gain)


def _stall_message(gamma, control, theta):
    return (f"mcmle: the observed statistics stay outside the convex hull of the sampled "
            f"ones (Hummel step length {gamma:.2g} < {control.min_step_length:g} in "
            f"{control.stall_iterations} successive iterations) at theta = "
            f"{np.round(theta, 4).tolist()}: the MLE may not exist (an observed statistic "
            f"at the edge of its possible values) or the model is degenerate near this "
            f"theta")


def _runaway_message(trust, theta, gain):
    anchor = trust.anchor[0]
    return (f"mcmle: {trust.rejections} steps in a row from theta = "
            f"{np.round(anchor, 4).tolist()} lost log-likelihood (the last, "
            f"{np.round(theta - anchor, 4).tolist()}, by an estimated {-gain:.3g}): the "
            f"chains run away from the observed statistics even this close, so the model "
            f"is degenerate near this theta")


def mcmle(simulate: Callable, observed: ArrayLike, theta0: ArrayLike, rng_key: Any, *,
          names: Sequence[str] | None = None, control: MCMLEControl | None = None,
          rewind: Callable[[], None] | None = None, verbose: bool = False) -> MCMLEResult:
    """Monte Carlo maximum likelihood (statnet's MCMLE: Hummel, Hunter & Handcock 2012).

    Iteration t: draw s_1..s_n at θ_t (``simulate``); take the Hummel step length γ
    (:func:`~numpyro_ugm.network.estimation.step.hummel_step_length`, margin
    ``control.steplength_margin``); set θ_{t+1} = θ_t + Δθ with Δθ maximizing an approximation
    of l(θ_t + Δθ) − l(θ_t) with s_obs replaced by the target ξ = s̄ + γ (s_obs − s̄)
    (s_obs when γ = 1), by ``metric``:

    * ``"lognormal"`` (ergm 4's default ``MCMLE.metric``): Δθ·(ξ − s̄) − ½ Δθᵀ Σ Δθ, Σ the
      sample covariance, so Δθ = Σ⁻¹ (ξ − s̄), a damped Newton step;
    * ``"naive"`` (Geyer–Thompson): Δθ·ξ − log mean_i exp(Δθ·s_i). Exact for the sample,
      but it extrapolates its tail: far from the MLE of a near-degenerate model (gwesp on
      faux.magnolia.high) its steps land where the chains run away.

    Termination (``control.termination``, :mod:`~numpyro_ugm.network.estimation.termination`):

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

    Trust region (``control.max_loss``,
    :class:`~numpyro_ugm.network.estimation.trust_region.TrustRegion`): each sample at
    θ_{t+1} = θ_a + Δθ (θ_a the last accepted θ, s̄_a its sample mean) estimates the change of log-likelihood l(θ_{t+1}) − l(θ_a) =
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
        ``simulate(theta, rng_key) -> stats`` (num_chains, num_samples, k), draws in chain
        order; persistent chains (two calls at the same θ continue them).
    observed : array (k,)
        Observed statistics s(y_obs).
    theta0 : array (k,)
        Start (ergm starts at the MPLE).
    rng_key : jax PRNG key
        Split into one key per ``simulate`` call.
    names : sequence of k str, optional
        Term names, for messages.
    control : MCMLEControl, optional
        The settings named above (default ``MCMLEControl()``, ergm's defaults).
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
        length, ``max_rejections`` rejected steps in a row, or chains that ran away to
        dense graphs (``simulate`` raised
        :class:`~numpyro_ugm.network.sampling.guard.ChainsRanAwayError`, the density
        guard); ``terms`` names them, ``record`` holds the iterations so far.
    """
    owner = "mcmle"
    check_simulate(owner, simulate)
    observed = as_vector(owner, "observed", observed)
    k = observed.size
    theta = as_vector(owner, "theta0", theta0, k)
    names = as_names(owner, names, k)
    rng_key = as_key(rng_key, owner)
    control = _check_control(owner, control, rewind)
    history = _History(theta, observed, names, control.termination)
    trust = TrustRegion(observed, control.max_loss)
    rule, stop_early = termination_rule(control, k), takes_stop(simulate)
    repeats, stalled = 1, 0
    for iteration in range(1, control.max_iterations + 1):
        rng_key, subkey = split_key(rng_key)
        gain_of, loses = trust.tests(theta)
        stats = _sample(simulate, theta, subkey, repeats, history,
                        loses if stop_early else None)
        gain = float("nan") if gain_of is None else gain_of(stats)
        if loses is not None and gain < -control.max_loss:  # the trust region rejects θ
            theta = _step_back(theta, stats, gain, trust, history, repeats, control, rewind)
            _report_rejection(verbose, iteration, gain, control, history, trust, theta)
            continue
        try:
            check_sample_degeneracy(owner, stats, names, observed, theta)
        except ErgmDegeneracyError as error:
            error.record = history.result(str(error), False, repeats)
            raise
        it = _summarize(stats, observed, control, trust)
        trust.accept(theta, it.moments.mean, stats)
        stalled = stalled + 1 if it.gamma < control.min_step_length else 0
        if stalled >= control.stall_iterations:
            history.give_up(_stall_message(it.gamma, control, theta),
                            _accepted_row(it, float("nan"), stats, gain), theta, repeats)
        verdict = rule.check(it, repeats)
        repeats = verdict.repeats
        theta = theta + it.delta
        history.add(_accepted_row(it, verdict.p_value, stats, gain), theta)
        _report(verbose, iteration, it, verdict, history, theta)
        if verdict.converged:
            return history.result(verdict.message, True, repeats)
    return history.result(f"reached max_iterations = {control.max_iterations}", False,
                          repeats)


def _sample(simulate, theta, rng_key, repeats, history, stop):
    """The sample at θ (``repeats`` calls), kept as the history's last; chains that ran
    away (the sampler's density guard) end the fit with ErgmDegeneracyError."""
    try:
        stats = sample_statistics(simulate, theta, rng_key, repeats, history.k, "mcmle",
                                  stop=stop)
    except ChainsRanAwayError as error:
        history.last_statistics = error.last_draws
        history.give_up(f"mcmle: {error}", _rejected_row(error.statistics, float("nan"),
                                                         history.k), theta, repeats)
    history.last_statistics = stats
    return stats


def _step_back(theta, stats, gain, trust, history, repeats, control, rewind):
    """The trust region rejected the sample at θ: record it, give up after
    ``control.max_rejections`` in a row, else rewind the chains and return θ_a plus the
    share of the step that the trust region allows."""
    row = _rejected_row(stats, gain, history.k)
    if trust.reject() >= control.max_rejections:
        history.give_up(_runaway_message(trust, theta, gain), row, theta, repeats)
    if rewind is not None:
        rewind()
    theta = trust.retreat(theta, gain)
    history.add(row, theta)
    return theta


def _check_control(owner, control, rewind):
    if control is None:
        control = MCMLEControl()
    if not isinstance(control, MCMLEControl):
        raise TypeError(f"{owner}: control must be an MCMLEControl, got "
                        f"{type(control).__name__}")
    if rewind is not None and not callable(rewind):
        raise TypeError(f"{owner}: rewind must be a callable rewind() or None, got "
                        f"{type(rewind).__name__}")
    return control


def _report_rejection(verbose, iteration, gain, control, history, trust, theta):
    if verbose:
        print(f"mcmle iteration {iteration}: step rejected (estimated log-likelihood "
              f"change {gain:.3g} < -{control.max_loss:g}, {history.rows[-1].num_samples} "
              f"draws); {trust.share:.3g} of it: theta {np.round(theta, 4).tolist()}")


def _report(verbose, iteration, it, verdict, history, theta):
    if verbose:
        print(f"mcmle iteration {iteration}: step length {it.gamma:.3f}, d2 {it.d2:.3g}, "
              f"Hotelling p {it.p_nonconvergence:.3g}, convergence p "
              f"{verdict.p_value:.3g}, {history.rows[-1].num_samples} draws, theta "
              f"{np.round(theta, 4).tolist()}")
