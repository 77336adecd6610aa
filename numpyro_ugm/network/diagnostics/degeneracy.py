"""ERGM degeneracy, checked in one place: a model that puts nearly all its mass on
extreme graphs, or a sample that cannot move θ.

* :func:`check_sample_degeneracy` raises :class:`ErgmDegeneracyError` when a sample of
  statistics cannot move θ (a term without variance, linearly dependent terms), as the
  Monte Carlo estimators need; :func:`terms_outside_sample` names the terms whose
  observed value the sample misses.
* :func:`check_fit_degeneracy` warns (:class:`DegeneracyWarning`) when a fit's sampled
  statistics lie far from the observed ones, or its simulated networks are nearly empty
  or nearly complete (:class:`FitDegeneracy`).
* :func:`check_particle_degeneracy` warns when a learner's edge particles collapse to the
  empty or the complete graph (:class:`ParticleDegeneracy`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import numpy as np

from ..graphs import as_edge_data
from .goodness_of_fit import check_level

__all__ = ["ErgmDegeneracyError", "DegeneracyWarning", "check_sample_degeneracy",
           "terms_outside_sample", "outside_sample_error", "check_fit_degeneracy", "FitDegeneracy", "TermRange",
           "check_particle_degeneracy", "ParticleDegeneracy", "as_sampled_statistics"]


class ErgmDegeneracyError(RuntimeError):
    """The sampled statistics cannot move θ: a term with zero variance, linearly
    dependent terms, or observed statistics outside the sampled convex hull with a step
    length of about 0 for several iterations.

    Attributes
    ----------
    terms : list of str
        The offending terms.
    record : MCMLEResult or None
        The iterations up to the stop (when raised by
        :func:`~numpyro_ugm.network.estimation.mcmle.mcmle`).
    """

    def __init__(self, message: str, terms: Sequence[str], record: Any = None):
        super().__init__(message)
        self.terms = list(terms)
        self.record = record


class DegeneracyWarning(RuntimeWarning):
    """Sampled graphs collapsed to extreme graphs, or a fit's sampled statistics miss the
    observed ones (ERGM degeneracy)."""


# --- a sample that cannot move θ ----------------------------------------------------------


def check_sample_degeneracy(owner: str, stats: np.ndarray, names: Sequence[str],
                            observed: np.ndarray, theta: np.ndarray) -> None:
    """Raise :class:`ErgmDegeneracyError` for terms without variance or linearly
    dependent terms in the sample ``stats`` (C, D, k) drawn at ``theta``; ``owner`` names
    the caller in the message."""
    k = stats.shape[2]
    flat = stats.reshape(-1, k)
    sd = flat.std(axis=0)
    scale = np.maximum(np.abs(flat).max(axis=0), 1.0)
    constant = np.flatnonzero(sd <= 1e-12 * scale)
    if constant.size:
        bad = [names[i] for i in constant]
        detail = ", ".join(f"{names[i]} = {flat[0, i]:g} in every draw (observed "
                           f"{observed[i]:g})" for i in constant)
        raise ErgmDegeneracyError(
            f"{owner}: the sampled statistics of {bad} have zero variance at theta = "
            f"{np.round(theta, 4).tolist()} ({detail}): the sampler did not mix, or the "
            f"model is degenerate there (nearly all mass on one graph), or the observed "
            f"value is the term's smallest or largest possible one (then its MLE does not "
            f"exist: the coefficient is -inf or +inf); theta cannot be estimated from this "
            f"sample. Start closer (e.g. the MPLE), simulate longer, or drop the term.", bad)
    if k > 1:
        corr = np.corrcoef(flat, rowvar=False)
        values, vectors = np.linalg.eigh(corr)
        if values[0] < 1e-10:
            loading = np.abs(vectors[:, 0])
            involved = [names[i] for i in np.flatnonzero(loading > 0.1)]
            raise ErgmDegeneracyError(
                f"{owner}: the sampled statistics of {involved} are linearly dependent "
                f"(their correlation matrix is singular, smallest eigenvalue "
                f"{values[0]:.2e}) at theta = {np.round(theta, 4).tolist()}: the model is "
                f"not identifiable from this sample; drop one of these terms. Or, if the "
                f"terms are identifiable, the observed statistics may lie on the boundary "
                f"of the convex hull of the attainable statistics, where the sample of a "
                f"theta on its way to infinity concentrates (the MLE does not exist; "
                f"network.mple(...) then reports converged=False).", involved)


def terms_outside_sample(stats: np.ndarray, observed: np.ndarray,
                         names: Sequence[str]) -> tuple[list, list]:
    """(names, details) of the terms whose observed value is at or beyond the sampled
    range; else of those farthest from the sample mean (in standard deviations)."""
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


def outside_sample_error(reason: str, stats: np.ndarray, observed: np.ndarray,
                         names: Sequence[str]) -> ErgmDegeneracyError:
    """The :class:`ErgmDegeneracyError` of ``reason``, naming the terms whose observed
    value the sample ``stats`` (C, D, k) misses (:func:`terms_outside_sample`)."""
    bad, details = terms_outside_sample(stats, observed, names)
    return ErgmDegeneracyError(f"{reason}; terms {bad} ({'; '.join(details)}).", bad)


# --- a fit whose samples miss the observed network ----------------------------------------


def as_sampled_statistics(owner: str, sampled_statistics: Any, observed: Any,
                          names: Sequence | None) -> tuple:
    """(statistics (C, D, k), observed (k,), names) checked: statistics of sampled
    networks (a (D, k) array is one chain), at least 2 draws per chain, finite; names
    default ``stat0``, ``stat1``, ..."""
    x = np.asarray(sampled_statistics, np.float64)
    if x.ndim == 2:
        x = x[None]
    if x.ndim != 3:
        raise ValueError(f"{owner}: sampled_statistics must be (num_chains, num_samples, k) "
                         f"(or (num_samples, k)), got shape {np.shape(sampled_statistics)}")
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


class TermRange(NamedTuple):
    """One term of :class:`FitDegeneracy`: its observed value, the mean, sd and central
    interval [lower, upper] of its sampled values, the share of them below the observed,
    and whether the observed lies outside the interval (``far``)."""

    name: str
    observed: float
    mean: float
    sd: float
    lower: float
    upper: float
    fraction_below: float
    far: bool


class FitDegeneracy(NamedTuple):
    """Result of :func:`check_fit_degeneracy`.

    Attributes
    ----------
    degenerate : bool
    far_terms : tuple of str
        The terms whose observed value lies outside the sampled interval.
    terms : tuple of TermRange
        Every term, in order (:meth:`term` finds one by name).
    mean_density, fraction_near_empty, fraction_near_complete : float
        Of the simulated networks; NaN without ``simulated_densities``.
    """

    degenerate: bool
    far_terms: tuple
    terms: tuple
    mean_density: float = float("nan")
    fraction_near_empty: float = float("nan")
    fraction_near_complete: float = float("nan")

    def term(self, name: str) -> TermRange:
        """The :class:`TermRange` of the term ``name``."""
        for row in self.terms:
            if row.name == name:
                return row
        raise KeyError(f"no term {name!r} among {[row.name for row in self.terms]}")


def _term_ranges(x, obs, names, level):
    flat = x.reshape(-1, x.shape[2])
    tail = (1 - level) / 2
    lower, upper = np.quantile(flat, [tail, 1 - tail], axis=0)
    far = (obs < lower) | (obs > upper)
    return tuple(TermRange(name, float(obs[t]), float(flat[:, t].mean()),
                           float(flat[:, t].std(ddof=1)), float(lower[t]), float(upper[t]),
                           float(np.mean(flat[:, t] < obs[t])), bool(far[t]))
                 for t, name in enumerate(names))


def _extreme_networks(owner, simulated_densities, observed_density, near_extreme):
    """(densities, nearly empty, nearly complete, the two words) of simulated networks."""
    d = np.asarray(simulated_densities, np.float64).reshape(-1)
    if d.size == 0 or np.any((d < 0) | (d > 1)) or not np.all(np.isfinite(d)):
        raise ValueError(f"{owner}: simulated_densities must be a non-empty array of "
                         "densities in [0, 1]")
    if observed_density is None:
        return d, d == 0, d == 1, ("empty", "complete")
    d0 = float(observed_density)
    if not 0 <= d0 <= 1:
        raise ValueError(f"{owner}: observed_density must be in [0, 1], got {d0}")
    empty = (d <= near_extreme * d0) if d0 > 0 else np.zeros(d.shape, bool)
    full = ((1 - d) <= near_extreme * (1 - d0)) if d0 < 1 else np.zeros(d.shape, bool)
    return d, empty, full, ("nearly empty", "nearly complete")


def check_fit_degeneracy(sampled_statistics: Any, observed: Any,
                         names: Sequence | None = None, simulated_densities: Any = None, *,
                         observed_density: float | None = None, level: float = 0.99,
                         near_extreme: float = 0.1, extreme_fraction: float = 0.5,
                         warn: bool = True) -> FitDegeneracy:
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
    sampled_statistics : array (num_chains, num_samples, k) or (num_samples, k)
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
        Issue the :class:`DegeneracyWarning` (else only report).

    Returns
    -------
    FitDegeneracy
    """
    owner = "check_fit_degeneracy"
    x, obs, names = as_sampled_statistics(owner, sampled_statistics, observed, names)
    check_level(owner, level)
    for name, value in (("near_extreme", near_extreme),
                        ("extreme_fraction", extreme_fraction)):
        if not 0 < float(value) <= 1:
            raise ValueError(f"{owner}: {name} must be in (0, 1], got {value!r}")
    terms = _term_ranges(x, obs, names, level)
    far_terms = tuple(row.name for row in terms if row.far)
    problems, densities = [], {}
    if far_terms:
        detail = "; ".join(
            f"{row.name}: observed {row.observed:.6g}, sampled mean {row.mean:.6g} "
            f"(central {level:.0%}: {row.lower:.6g} to {row.upper:.6g})"
            for row in terms if row.far)
        problems.append(f"the observed {', '.join(far_terms)} lie(s) outside the "
                        f"central {level:.0%} of the sampled values ({detail})")
    if simulated_densities is not None:
        d, empty, full, what = _extreme_networks(owner, simulated_densities,
                                                 observed_density, near_extreme)
        densities = dict(mean_density=float(d.mean()), fraction_near_empty=float(empty.mean()),
                         fraction_near_complete=float(full.mean()))
        for frac, label in ((empty.mean(), what[0]), (full.mean(), what[1])):
            if frac >= extreme_fraction:
                problems.append(f"{frac:.0%} of the {d.size} simulated networks are {label} "
                                f"(mean density {d.mean():.4g}"
                                + ("" if observed_density is None
                                   else f", observed {float(observed_density):.4g}") + ")")
    if problems and warn:
        warnings.warn(
            "ERGM degeneracy: " + "; and ".join(problems) + ". The fit (or its sampler) "
            "does not reproduce the observed network: the parameters may be in a "
            "degenerate region, or the MCMC has not converged. Check the terms named, "
            "try curved terms (gwesp, gwdegree) instead of triangles/stars, or a longer "
            "burn-in.", DegeneracyWarning, stacklevel=2)
    return FitDegeneracy(bool(problems), far_terms, terms, **densities)


# --- a learner's particles collapsed to an extreme graph -----------------------------------


class ParticleDegeneracy(NamedTuple):
    """Result of :func:`check_particle_degeneracy`: the fractions of particles that are
    the empty and the complete graph, their mean density, and whether that is degenerate."""

    fraction_empty: float
    fraction_full: float
    mean_density: float
    degenerate: bool


def _edge_particles(obj):
    """(S, E) edge values from samples, particles or learner/estimator states."""
    for attr in ("state", "estimator_state", "kernel_state"):  # RunResult, LearnState, PCD
        if hasattr(obj, attr) and not isinstance(obj, dict):
            inner = getattr(obj, attr)
            if inner is not None and not isinstance(inner, (np.ndarray, jax.Array)):
                try:
                    return _edge_particles(inner)
                except TypeError:
                    pass
    if hasattr(obj, "position") and not isinstance(obj, dict):
        return _edge_particles(obj.position)
    if isinstance(obj, dict):
        if "y" not in obj:
            raise KeyError(f"check_particle_degeneracy: no site 'y' among {list(obj)}")
        obj = obj["y"]
    if isinstance(obj, (np.ndarray, jax.Array, list)):
        y = np.asarray(obj)
        return y.reshape((-1, y.shape[-1]))
    raise TypeError(f"check_particle_degeneracy: cannot find edge particles in "
                    f"{type(obj).__name__}")


def check_particle_degeneracy(particles: Any, *, data: Any = None, threshold: float = 0.9,
                              warn: bool = True) -> ParticleDegeneracy:
    """Warn when sampled graphs collapse to the empty or the complete graph.

    Near a degenerate θ an ERGM puts almost all its mass on the empty or the full
    graph (Handcock 2003): the particles of a learner then sit there, the negative
    phase is a point mass, and learning or simulation is meaningless. This checks the
    fraction of particles that are empty or complete graphs.

    Parameters
    ----------
    particles : array (S, E), dict with ``"y"``, or a learner result / state
        Edge particles: samples (``ugm.sample`` output), ``Particles``, an estimator
        state, a :class:`~numpyro_ugm.learn.LearnState` or a
        :class:`~numpyro_ugm.learn.RunResult` (its estimator's particles).
    data : dict or array, optional
        Observed graphs: if given, no warning is issued when the data are themselves that
        extreme.
    threshold : float
        Warn when at least this fraction of particles is empty, or complete.
    warn : bool
        Issue the :class:`DegeneracyWarning` (else only report).

    Returns
    -------
    ParticleDegeneracy
    """
    y = _edge_particles(particles).astype(np.float64)
    density = y.mean(axis=-1)
    empty, full = float(np.mean(density == 0.0)), float(np.mean(density == 1.0))
    mean_density = float(np.mean(density))
    data_empty = data_full = False
    if data is not None:
        d = as_edge_data(data)["y"].astype(np.float64).mean(-1)
        data_empty, data_full = np.mean(d == 0.0) >= threshold, np.mean(d == 1.0) >= threshold
    problems = []
    if empty >= threshold and not data_empty:
        problems.append(f"{empty:.0%} of the {len(y)} particles are the empty graph")
    if full >= threshold and not data_full:
        problems.append(f"{full:.0%} of the {len(y)} particles are the complete graph")
    if problems and warn:
        warnings.warn(
            "ERGM degeneracy: " + " and ".join(problems) + " (mean density "
            f"{mean_density:.3f}). The parameters are in or near a degenerate "
            "region where the model puts nearly all its mass on an extreme graph; the "
            "negative phase is then a point mass. Start from the MPLE "
            "(ugm.network.mple(...).params), lower the learning rate, or use curved "
            "statistics such as gwesp.",
            DegeneracyWarning, stacklevel=2)
    return ParticleDegeneracy(empty, full, mean_density, bool(problems))
