"""An ERGM fit and its summary (:class:`ErgmFit`, printed like R's ``summary(ergm)``),
and the functions that make one: :func:`mcmle_fit` (statnet's ``ergm()`` in one call),
:func:`fit_at` (its last part, at a given estimate) and :func:`dyad_independent_fit`
(exact).

Definitions (checked against R's ergm 4 sources; ``MCMC %``, z and p-values in
:mod:`~numpyro_ugm.network.estimation.standard_errors`):

* AIC = −2 l + 2 k, BIC = −2 l + k log N with N the number of dyads (ergm's ``nobs``);
  null deviance 2 N log 2 on N degrees of freedom, residual deviance −2 l on N − k.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jax.typing import ArrayLike

from ..runtime.checks import as_key, check_count
from .control import MCMLEControl
from .estimation.dyad_independent import DyadIndependentMLE, as_design
from .estimation.identifiability import boundary_mle, check_identifiable
from .estimation.log_likelihood import BridgeLogLikelihood, log_likelihood_bridge
from .estimation.mcmle import MCMLEResult, mcmle
from .estimation.samples import as_names, as_vector, check_simulate, sample_statistics, split_keys
from .estimation.standard_errors import StandardErrors, mcmle_standard_errors, wald

__all__ = ["ErgmFit", "mcmle_fit", "fit_at", "dyad_independent_fit", "exact_fit"]


def _stars(p):
    if not np.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else \
        "." if p < 0.1 else ""


def _format_number(v, width):
    if np.isinf(v):
        return f"{'-Inf' if v < 0 else 'Inf':>{width}}"
    if not np.isfinite(v):
        return f"{'NA':>{width}}"
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-4):
        return f"{v:>{width}.3e}"
    return f"{v:>{width}.4f}"


def _format_p(p):
    if not np.isfinite(p):
        return "NA"
    return "<1e-04" if p < 1e-4 else f"{p:.4f}" if p < 0.1 else f"{p:.3f}"


@dataclasses.dataclass(frozen=True, eq=False)
class ErgmFit:
    """An ERGM fit: estimates, standard errors, tests, log-likelihood and diagnostics,
    printed like R's ``summary(ergm)`` (``print(fit)`` or ``fit.summary()``). Frozen:
    ``dataclasses.replace`` makes a changed copy.

    Attributes
    ----------
    names : tuple of str
    standard_errors : StandardErrors
        The coefficient table and covariances
        (:func:`~numpyro_ugm.network.estimation.standard_errors.mcmle_standard_errors`);
        ``estimates``, ``stderr``, ``mcmc_percent``, ``z``, ``p_values`` (k,) and
        ``cov``, ``cov_model``, ``cov_mcmc`` (k, k) read through to it.
    log_likelihood, log_likelihood_se : float
        l(θ̂) and its Monte Carlo s.e. (NaN when not computed; 0 when exact).
    aic, bic : float
        −2l + 2k and −2l + k log N.
    num_dyads : int
        N.
    converged : bool
    iterations : int
        MCMLE iterations (0 for an exact fit).
    method : str
        ``"MCMLE"`` or ``"MLE"`` (exact).
    message : str
        How the estimation ended.
    mcmle : MCMLEResult or None
        The per-iteration diagnostics.
    final_statistics : array (num_chains, num_samples, k) or None
        The final sample at the estimate (from which the standard errors come).
    log_likelihood_bridge : BridgeLogLikelihood or None
    network_fit : NetworkFit or None
        The network, terms, control and chains of :func:`~numpyro_ugm.network.fit_ergm`
        (for :func:`~numpyro_ugm.network.gof_ergm`).
    """

    names: tuple
    standard_errors: StandardErrors
    log_likelihood: float
    log_likelihood_se: float
    aic: float
    bic: float
    num_dyads: int
    converged: bool
    iterations: int
    method: str = "MCMLE"
    message: str = ""
    mcmle: MCMLEResult | None = None
    final_statistics: np.ndarray | None = None
    log_likelihood_bridge: BridgeLogLikelihood | None = None
    network_fit: Any = None

    @property
    def estimates(self) -> np.ndarray:
        """θ̂ (k,)."""
        return self.standard_errors.estimates

    @property
    def stderr(self) -> np.ndarray:
        """Total standard errors (k,)."""
        return self.standard_errors.stderr

    @property
    def cov(self) -> np.ndarray:
        """Total covariance (k, k): ``cov_model + cov_mcmc``."""
        return self.standard_errors.cov

    @property
    def cov_model(self) -> np.ndarray:
        """The inverse Fisher information (k, k)."""
        return self.standard_errors.cov_model

    @property
    def cov_mcmc(self) -> np.ndarray:
        """The Monte Carlo covariance of θ̂ (k, k)."""
        return self.standard_errors.cov_mcmc

    @property
    def mcmc_percent(self) -> np.ndarray:
        """ergm's ``MCMC %`` (k,)."""
        return self.standard_errors.mcmc_percent

    @property
    def z(self) -> np.ndarray:
        """Wald z values (k,)."""
        return self.standard_errors.z

    @property
    def p_values(self) -> np.ndarray:
        """Two-sided p-values of z (k,)."""
        return self.standard_errors.p_values

    @property
    def null_deviance(self) -> float:
        """−2 l(0) = 2 N log 2."""
        return 2.0 * self.num_dyads * math.log(2.0)

    @property
    def deviance(self) -> float:
        """Residual deviance −2 l(θ̂)."""
        return -2.0 * self.log_likelihood

    def coefficient_table(self) -> list[dict]:
        """One dict per term: name, Estimate, Std. Error, MCMC %, z value, Pr(>|z|)."""
        return [{"name": n, "Estimate": float(e), "Std. Error": float(s),
                 "MCMC %": float(m), "z value": float(z), "Pr(>|z|)": float(p)}
                for n, e, s, m, z, p in zip(self.names, self.estimates, self.stderr,
                                            self.mcmc_percent, self.z, self.p_values)]

    def to_dict(self) -> dict:
        """Plain Python (JSON-serializable) numbers and lists of the fit, without the
        samples."""
        def plain(v):
            if isinstance(v, np.ndarray):
                return v.tolist()
            if isinstance(v, tuple):
                return list(v)
            if isinstance(v, (np.floating, np.integer, np.bool_)):
                return v.item()
            return v

        out = {name: plain(getattr(self, name)) for name in (
            "names", "estimates", "stderr", "cov", "cov_model", "cov_mcmc", "mcmc_percent",
            "z", "p_values", "log_likelihood", "log_likelihood_se", "aic", "bic",
            "num_dyads", "converged", "iterations", "method", "message")}
        out["null_deviance"] = self.null_deviance
        out["deviance"] = self.deviance
        if self.mcmle is not None:
            record = self.mcmle
            out["mcmle"] = {name: plain(getattr(record, name)) for name in (
                "termination", "theta_history", "step_lengths", "hotelling_statistics",
                "hotelling_p_values", "tolerance_distances", "convergence_p_values",
                "predicted_differences", "num_samples", "effective_sizes", "rejected",
                "log_likelihood_gains")}
        return out

    def summary(self) -> str:
        """The summary as R's ``print(summary(fit))`` lays it out."""
        header = {"MCMLE": "Monte Carlo Maximum Likelihood Results:",
                  "MLE": "Maximum Likelihood Results:"}.get(self.method,
                                                           f"{self.method} Results:")
        width = max(max(map(len, self.names)), 4)
        lines = [header, "",
                 f"{'':<{width}}  {'Estimate':>10} {'Std. Error':>10} {'MCMC %':>6} "
                 f"{'z value':>8} {'Pr(>|z|)':>8}"]
        for i, name in enumerate(self.names):
            pct = self.mcmc_percent[i]
            pct_text = f"{pct:6.0f}" if np.isfinite(pct) else f"{'NA':>6}"
            z_text = f"{self.z[i]:8.3f}" if np.isfinite(self.z[i]) else f"{'NA':>8}"
            lines.append(f"{name:<{width}}  {_format_number(self.estimates[i], 10)} "
                         f"{_format_number(self.stderr[i], 10)} {pct_text} {z_text} "
                         f"{_format_p(self.p_values[i]):>8} {_stars(self.p_values[i])}"
                         .rstrip())
        lines += ["---", "Signif. codes:  0 '***' 0.001 '**' 0.01 '*' 0.05 '.' 0.1 ' ' 1", ""]
        k, n = len(self.names), self.num_dyads
        if np.isfinite(self.log_likelihood):
            lines += [f"     Null Deviance: {self.null_deviance:.1f}  on {n}  degrees of "
                      f"freedom",
                      f" Residual Deviance: {self.deviance:.1f}  on {n - k}  degrees of "
                      f"freedom", ""]
            se = self.log_likelihood_se
            lines.append(f"Log-likelihood: {self.log_likelihood:.4f} (MC Std. Err. = "
                         f"{se:.4g})")
            lines.append(f"AIC: {self.aic:.4f}  BIC: {self.bic:.4f}  (Smaller is better. "
                         f"MC Std. Err. = {2 * se:.4g})")
        else:
            lines.append("Log-likelihood: not computed.")
        if self.method == "MCMLE":
            status = "Converged" if self.converged else "Did NOT converge"
            termination = f" (MCMLE termination: {self.mcmle.termination})" \
                if self.mcmle is not None else ""
            lines.append(f"{status} after {self.iterations} MCMLE iterations{termination}: "
                         f"{self.message}.")
            if self.mcmle is not None and self.mcmle.iterations:
                record = self.mcmle
                lines.append(f"Last iteration: step length {record.step_lengths[-1]:.3g}, "
                             f"Hotelling p-value {record.hotelling_p_values[-1]:.3g}, "
                             f"convergence p-value {record.convergence_p_values[-1]:.3g}, "
                             f"{record.num_samples[-1]} draws.")
                rejected = 0 if record.rejected is None else int(record.rejected.sum())
                if rejected:
                    lines.append(f"The trust region rejected {rejected} step(s) that lost "
                                 f"log-likelihood (the chains ran away) and shortened them.")
            if self.final_statistics is not None:
                c, d, _ = self.final_statistics.shape
                lines.append(f"Standard errors from a final sample of {c} chain(s) x {d} "
                             f"draws at the estimate.")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        coefficients = ", ".join(f"{n}={e:.4g}" for n, e in zip(self.names, self.estimates))
        return (f"ErgmFit({self.method}, {coefficients}, log_likelihood="
                f"{self.log_likelihood:.4f}, converged={self.converged})")


def _information_criteria(log_likelihood, k, num_dyads):
    return -2.0 * log_likelihood + 2.0 * k, -2.0 * log_likelihood + k * math.log(num_dyads)


def _information(cov):
    """The Fisher information of an exact fit: cov⁻¹ (NaN where cov is not finite)."""
    if not np.all(np.isfinite(cov)):
        return np.full(cov.shape, np.nan)
    return np.linalg.pinv(cov, hermitian=True)


def dyad_independent_fit(change_statistics: ArrayLike, observed: ArrayLike,
                         names: Sequence[str] | None = None, **options) -> ErgmFit:
    """The exact fit of a dyad-independent ERGM as an :class:`ErgmFit` (what R's ergm
    reports for such models: ``MCMC %`` 0, exact log-likelihood).

    Parameters
    ----------
    change_statistics : array (N, k)
        Per-dyad change statistics.
    observed : array (k,)
    names : sequence of str, optional
    **options
        Passed to :func:`~numpyro_ugm.network.estimation.dyad_independent.dyad_independent_mle`.
    """
    owner = "dyad_independent_fit"
    observed = as_vector(owner, "observed", observed)
    k = observed.size
    x = as_design(owner, change_statistics, k)
    names = as_names(owner, names, k)
    check_identifiable("fit_ergm", x, names)
    mle, boundary = boundary_mle(x, observed, names, **options)
    return exact_fit(mle, names, x.shape[0], boundary)


def exact_fit(mle: DyadIndependentMLE, names: Sequence[str], num_dyads: int,
              boundary: str | None = None) -> ErgmFit:
    """An :class:`ErgmFit` from the exact MLE of a dyad-independent model (of
    :func:`~numpyro_ugm.network.estimation.dyad_independent.dyad_independent_mle` or
    :func:`~numpyro_ugm.network.estimation.dyad_independent.newton_mle`) on ``num_dyads``
    dyads; ``boundary`` says which estimates are infinite (its ``message``)."""
    k = len(mle.theta)
    z, p = wald(mle.theta, mle.stderr)
    aic, bic = _information_criteria(mle.log_likelihood, k, num_dyads)
    errors = StandardErrors(mle.theta, mle.stderr, mle.cov, mle.cov, np.zeros((k, k)),
                            np.zeros(k), z, p, _information(mle.cov), 1.0, math.inf)
    return ErgmFit(names=tuple(names), standard_errors=errors,
                   log_likelihood=mle.log_likelihood, log_likelihood_se=0.0,
                   aic=aic, bic=bic, num_dyads=num_dyads, converged=mle.converged,
                   iterations=0, method="MLE",
                   message=("exact Newton" if mle.converged else "Newton did not converge "
                            "(the MLE may not exist)")
                   + ("" if boundary is None else f"; {boundary}"))


def mcmle_fit(simulate: Callable, observed: ArrayLike, theta0: ArrayLike, rng_key: Any, *,
              num_dyads: int, names: Sequence[str] | None = None,
              control: MCMLEControl | None = None, log_likelihood: bool = True,
              bridge_simulate: Callable | None = None, bridge_reference: tuple | None = None,
              rewind: Callable[[], None] | None = None, verbose: bool = False) -> ErgmFit:
    """Fit an ERGM by Monte Carlo maximum likelihood in one call, as R's ``ergm()``.

    1. :func:`~numpyro_ugm.network.estimation.mcmle.mcmle` from ``theta0`` (e.g. the MPLE)
       to convergence;
    2. a final sample at its estimate (``control.final_repeats`` ``simulate`` calls,
       default as many as the last iteration used and at least ``control.last_boost``
       (4): the standard errors invert its covariance, and a fit that converges at once,
       e.g. flomarriage + triangle with 32 x 29 draws, had its triangle s.e. 5 % above the
       value from 16,000 draws) and
       :func:`~numpyro_ugm.network.estimation.standard_errors.mcmle_standard_errors` from it
       (one last Geyer–Thompson update, Fisher information, Monte Carlo covariance,
       ``MCMC %``, z, p);
    3. with ``log_likelihood``,
       :func:`~numpyro_ugm.network.estimation.log_likelihood.log_likelihood_bridge` at the
       estimate (``control.num_bridges`` bridges), then AIC and BIC (N = ``num_dyads``).

    Parameters
    ----------
    simulate : callable
        ``simulate(theta, rng_key) -> stats`` (num_chains, num_samples, k), persistent
        chains.
    observed, theta0 : arrays (k,)
    rng_key : jax PRNG key
    num_dyads : int
        N, the number of dyads.
    names : sequence of str, optional
        Term names (e.g. ``["edges", "nodematch.Grade", "gwesp.fixed.0.5"]``).
    control : MCMLEControl, optional
        The MCMLE's settings (default ``MCMLEControl()``).
    log_likelihood : bool
        Compute the bridge log-likelihood.
    bridge_simulate, bridge_reference
        As in :func:`fit_at`.
    rewind, verbose
        As in :func:`~numpyro_ugm.network.estimation.mcmle.mcmle`.

    Returns
    -------
    ErgmFit

    Raises
    ------
    ErgmDegeneracyError
        From :func:`~numpyro_ugm.network.estimation.mcmle.mcmle` or the final sample.
    """
    owner = "mcmle_fit"
    check_simulate(owner, simulate)
    observed = as_vector(owner, "observed", observed)
    names = as_names(owner, names, observed.size)
    num_dyads = check_count(owner, "num_dyads", num_dyads)
    control = MCMLEControl() if control is None else control
    key_mcmle, key_rest = split_keys(as_key(rng_key, owner), 2)
    record = mcmle(simulate, observed, theta0, key_mcmle, names=names, control=control,
                   rewind=rewind, verbose=verbose)
    repeats = (max(record.repeats, control.last_boost) if control.final_repeats is None
               else control.final_repeats)
    return fit_at(simulate, observed, record.theta, key_rest, num_dyads=num_dyads,
                  names=names, record=record, repeats=repeats, log_likelihood=log_likelihood,
                  num_bridges=control.num_bridges, bridge_simulate=bridge_simulate,
                  bridge_reference=bridge_reference,
                  steplength_margin=control.steplength_margin)


def fit_at(simulate: Callable, observed: ArrayLike, theta: ArrayLike, rng_key: Any, *,
           num_dyads: int, names: Sequence[str] | None = None,
           record: MCMLEResult | None = None, update: bool = True, repeats: int = 1,
           log_likelihood: bool = True, num_bridges: int = 16, method: str = "MCMLE",
           message: str = "", converged: bool = True,
           steplength_margin: float = 0.05, bridge_simulate: Callable | None = None,
           bridge_reference: tuple | None = None) -> ErgmFit:
    """The :class:`ErgmFit` of an estimate θ: a final sample there (``repeats``
    ``simulate`` calls, keys from ``rng_key``),
    :func:`~numpyro_ugm.network.estimation.standard_errors.mcmle_standard_errors` (with
    ``update``, one last Geyer–Thompson step first), and with ``log_likelihood`` the
    bridge log-likelihood, AIC and BIC (from ``bridge_simulate`` if given, called once per
    bridge, e.g. a cheaper sampler: the bridges need fewer draws than the standard
    errors; else from ``repeats`` calls of ``simulate`` per bridge; the path from
    ``bridge_reference`` = (θ_ref, log Z(θ_ref)) if given). ``record`` (the
    :func:`~numpyro_ugm.network.estimation.mcmle.mcmle` run) supplies the convergence
    report; without it, ``method``, ``message`` and ``converged`` do (an estimate from
    elsewhere, e.g. another estimator)."""
    owner = "fit_at"
    observed = as_vector(owner, "observed", observed)
    k = observed.size
    names = as_names(owner, names, k)
    key_final, key_bridge = split_keys(as_key(rng_key, owner), 2)
    final = sample_statistics(simulate, as_vector(owner, "theta", theta, k), key_final,
                              repeats, k, owner)
    errors = mcmle_standard_errors(final, observed, theta, update=update, names=names,
                                   steplength_margin=steplength_margin)
    if record is not None:
        message, converged, iterations = record.message, record.converged, record.iterations
    else:
        iterations = 0
    if update and errors.step_length < 1.0:
        message += (f"; the final sample's step length was {errors.step_length:.3g} < 1 (the "
                    f"observed statistics are near the edge of the final sample)")
    bridge, ll, ll_se = None, float("nan"), float("nan")
    if log_likelihood:
        bridge = log_likelihood_bridge(bridge_simulate or simulate, errors.estimates,
                                       observed, num_dyads, key_bridge,
                                       num_bridges=num_bridges,
                                       repeats=1 if bridge_simulate else repeats,
                                       reference=bridge_reference)
        ll, ll_se = bridge.log_likelihood, bridge.stderr
    aic, bic = _information_criteria(ll, k, num_dyads)
    return ErgmFit(names=tuple(names), standard_errors=errors, log_likelihood=ll,
                   log_likelihood_se=ll_se, aic=aic, bic=bic, num_dyads=num_dyads,
                   converged=converged, iterations=iterations, method=method,
                   message=message, mcmle=record, final_statistics=final,
                   log_likelihood_bridge=bridge)
