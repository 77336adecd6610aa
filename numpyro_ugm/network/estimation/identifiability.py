"""What a dyad-independent design says before any fit: whether its coefficients are
identifiable (:func:`check_identifiable`, the design's rank), and which of its
statistics sit at their smallest or largest attainable values, where the MLE is at
−∞ or +∞ (:func:`boundary_mle`, as R's ergm reports them); and, for any terms, whether
the pseudo-likelihood has a maximum (:func:`find_separation`, a linear program).

For dyadic terms the change statistics x_d of dyad d do not depend on the rest of the
network, so s(y) = Σ_d y_d x_d: statistic j ranges over [Σ_d min(0, x_dj),
Σ_d max(0, x_dj)], and θ and θ + v give the same model for every v with X v = 0.
Networks too large for the (N, k) design X (the edge-list path) are checked on a sample
of their dyads, and a deficient sample on XᵀX over every dyad
(:func:`check_sampled_identifiable`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy import optimize

from ..diagnostics.degeneracy import ErgmDegeneracyError
from .dyad_independent import DyadIndependentMLE, dyad_independent_mle
from .sparse_statistics import dyadic_sums

__all__ = ["dependent_terms", "gram_dependent_terms", "check_identifiable",
           "check_sampled_identifiable", "Boundary", "find_boundary",
           "boundary_mle", "boundary_message", "check_dyadic_columns", "find_separation",
           "separation_message", "check_mple_exists"]


#: the largest change statistic a Monte Carlo fit accepts (float32 sums of statistics)
MAX_SAMPLED = 1e15

#: :func:`gram_dependent_terms` calls a column dependent when the smallest eigenvalue of
#: the unit-diagonal Gram matrix, per column, is at most this (1 − ρ² of two covariates
#: correlated at ρ = 0.999999 is 2e-6; exactly dependent columns leave rounding, ~1e-15)
GRAM_TOLERANCE = 1e-10


def _distinct_rows(x):
    return np.unique(x, axis=0) if len(x) > 0 else x


def _scaled(x):
    """Columns scaled to a largest entry of 1 (the rank of columns of very different
    sizes, e.g. a covariate in the thousands beside edges)."""
    size = np.max(np.abs(x), axis=0) if len(x) else np.ones(x.shape[1])
    return x / np.where(size > 0, size, 1.0)


def dependent_terms(change_statistics: np.ndarray, names: Sequence[str]) -> list[str]:
    """The coefficients, in order, whose change statistics are a linear combination of
    the ones before them (a constant column is a multiple of ``edges``; a zero column is
    dependent on its own).

    Parameters
    ----------
    change_statistics : array (N, k)
        The dyads' change statistics of dyadic terms.
    names : sequence of str
        The k coefficient names.
    """
    x = _scaled(_distinct_rows(np.asarray(change_statistics, np.float64)))
    out, rank = [], 0
    for j in range(x.shape[1]):
        new = np.linalg.matrix_rank(x[:, :j + 1], tol=1e-9 * max(x.shape)) if len(x) else 0
        if new == rank:
            out.append(names[j])
        rank = new
    return out


def gram_dependent_terms(gram: np.ndarray, names: Sequence[str]) -> list[str]:
    """:func:`dependent_terms` from the Gram matrix XᵀX (k, k) of the change statistics
    over every dyad (rank X = rank XᵀX): with XᵀX scaled to a unit diagonal, coefficient
    j is dependent when the leading (j + 1) block's smallest eigenvalue is at most
    :data:`GRAM_TOLERANCE` (a zero column on its own)."""
    gram = np.asarray(gram, np.float64)
    size = np.sqrt(np.maximum(np.diag(gram), 0.0))
    unit = gram / np.outer(np.where(size > 0, size, 1.0), np.where(size > 0, size, 1.0))
    out, kept = [], []
    for j in range(len(names)):
        block = unit[np.ix_(kept + [j], kept + [j])]
        if size[j] == 0 or np.linalg.eigvalsh(block)[0] <= GRAM_TOLERANCE * len(block):
            out.append(names[j])
        else:
            kept.append(j)
    return out


def _refuse(owner, dependent, names):
    """ValueError naming the coefficients that are combinations of others."""
    raise ValueError(
        f"{owner}: the model is not identifiable: the statistic(s) {dependent} are "
        f"linear combinations of the terms before them in {list(names)} (their change "
        "statistics are, at every dyad), so no data can tell their coefficients apart; "
        "drop them (or the term they repeat, e.g. a nodefactor's base level)")


def check_identifiable(owner: str, change_statistics: np.ndarray,
                       names: Sequence[str]) -> None:
    """Raise ValueError naming the coefficients that are combinations of others (a
    design of deficient rank: ``edges + kstar(1)``, a constant ``nodecov``,
    ``nodefactor(..., base=0)`` beside ``edges``)."""
    dependent = dependent_terms(change_statistics, names)
    if dependent:
        _refuse(owner, dependent, names)


def check_sampled_identifiable(owner: str, net, terms, sample_statistics: np.ndarray,
                               names: Sequence[str]) -> None:
    """:func:`check_identifiable` of the dyadic terms of a large network (the edge-list
    path, no (N, k) design) at a bounded cost: the rank of their change statistics on a
    sample of dyads ``sample_statistics`` (b, k) (every tie and a uniform sample of
    non-ties: the sampled MPLE's) proves a full rank; a sample of deficient rank (it
    may have missed the rare dyads that tell two terms apart) is confirmed or cleared
    by the Gram matrix XᵀX over every dyad
    (:func:`~numpyro_ugm.network.estimation.sparse_statistics.dyadic_sums`, one pass of
    O(N) work, O(n) memory). ``terms`` resolved, ``names`` their k coefficients."""
    columns = [t.dependence == "dyadic" for t in terms for _ in t.names]
    dyadic = [n for n, d in zip(names, columns) if d]
    if not dyadic:
        return
    x = np.asarray(sample_statistics, np.float64)[:, np.asarray(columns)]
    if not dependent_terms(x, dyadic):
        return
    dyadic_terms = [t for t in terms if t.dependence == "dyadic"]
    gram = 4.0 * dyadic_sums(net, dyadic_terms, np.zeros(len(dyadic)), True)[2]
    dependent = gram_dependent_terms(gram, dyadic)
    if dependent:
        _refuse(owner, dependent, dyadic)


class Boundary(NamedTuple):
    """Statistics at the edge of their range: ``side`` (k,) −1 at the minimum, +1 at
    the maximum, 0 inside, NaN when the remaining dyads do not inform it; ``free``
    the dyads (N,) not fixed by them; ``residual`` (k,) the observed statistics less
    the fixed dyads' ties."""

    side: np.ndarray
    free: np.ndarray
    residual: np.ndarray


def find_boundary(change_statistics: np.ndarray, observed: np.ndarray) -> Boundary:
    """Which statistics are at their smallest or largest attainable value: at the
    minimum every dyad with x_dj > 0 is empty and every dyad with x_dj < 0 a tie (and
    the reverse at the maximum), so those dyads are fixed; repeated on the dyads left
    until no statistic is newly at a bound."""
    x = np.asarray(change_statistics, np.float64)
    residual = np.array(observed, np.float64)
    k = x.shape[1]
    side = np.zeros(k)
    free = np.ones(len(x), bool)
    tol = 1e-9 * np.maximum(np.sum(np.abs(x), axis=0), 1.0)
    while True:
        open_ = side == 0
        xs = x[free]
        low = np.minimum(xs, 0).sum(axis=0)
        high = np.maximum(xs, 0).sum(axis=0)
        flat = open_ & (high - low <= tol)
        side[flat] = np.nan
        at_low = open_ & ~flat & (residual <= low + tol)
        at_high = open_ & ~flat & (residual >= high - tol)
        if not (at_low.any() or at_high.any()):
            return Boundary(side, free, residual)
        side[at_low], side[at_high] = -1.0, 1.0
        fixed = free & np.any(x[:, at_low | at_high] != 0, axis=1)
        # the fixed dyads' ties: x < 0 at a minimum, x > 0 at a maximum
        ties = fixed & (np.any(x[:, at_low] < 0, axis=1) | np.any(x[:, at_high] > 0, axis=1))
        residual = residual - x[ties].sum(axis=0)
        free &= ~fixed


def boundary_message(side: np.ndarray, names: Sequence[str]) -> str:
    """What a :class:`Boundary` means for the estimates, naming the terms."""
    low = [n for n, s in zip(names, side) if s == -1]
    high = [n for n, s in zip(names, side) if s == 1]
    none = [n for n, s in zip(names, side) if np.isnan(s)]
    parts = []
    if low:
        parts.append(f"{low} at their smallest attainable value(s): their MLE is −∞")
    if high:
        parts.append(f"{high} at their largest attainable value(s): their MLE is +∞")
    if none:
        parts.append(f"{none} not informed by the dyads left: estimate NaN")
    return "the observed statistic(s) " + "; ".join(parts)


def boundary_mle(change_statistics: np.ndarray, observed: np.ndarray,
                 names: Sequence[str], **options) -> tuple[DyadIndependentMLE, str | None]:
    """The exact MLE of a dyad-independent model whose statistics may be at a bound:
    those coefficients ±∞ (NaN when undetermined) with NaN standard errors and a warning
    naming them, the others fitted on the dyads left; (MLE, message or None)."""
    x = np.asarray(change_statistics, np.float64)
    found = find_boundary(x, observed)
    if not np.any(found.side != 0):
        return dyad_independent_mle(x, observed, **options), None
    message = (boundary_message(found.side, names) + " (the other coefficients are "
               "fitted on the dyads these do not fix, as R's ergm does)")
    warnings.warn(f"fit_ergm: {message}", RuntimeWarning, stacklevel=3)
    k = x.shape[1]
    keep = found.side == 0
    theta, cov = np.zeros(k), np.full((k, k), np.nan)
    theta[found.side == -1], theta[found.side == 1] = -np.inf, np.inf
    theta[np.isnan(found.side)] = np.nan
    log_likelihood, converged, iterations = 0.0, True, 0
    if keep.any() and found.free.any():
        options.pop("theta0", None)
        sub = dyad_independent_mle(x[found.free][:, keep], found.residual[keep], **options)
        theta[keep] = sub.theta
        cov[np.ix_(keep, keep)] = sub.cov
        log_likelihood, converged, iterations = sub.log_likelihood, sub.converged, \
            sub.iterations
    return DyadIndependentMLE(theta, cov, np.sqrt(np.diag(cov)), log_likelihood, converged,
                              iterations), message


def check_dyadic_columns(owner: str, change_statistics: np.ndarray, observed: np.ndarray,
                         names: Sequence[str], dyadic: np.ndarray) -> None:
    """Before a Monte Carlo fit of a model with dependent terms: its dyadic terms' columns
    (``dyadic`` (k,) bool) must be identifiable and inside their range (a dyadic
    statistic at its bound puts the MLE at infinity whatever the other terms);
    ValueError, or :class:`~numpyro_ugm.network.diagnostics.degeneracy.ErgmDegeneracyError`
    naming the terms at a bound."""
    dyadic = np.asarray(dyadic, bool)
    x = np.asarray(change_statistics, np.float64)
    huge = [n for n, v in zip(names, np.max(np.abs(x), axis=0)) if v > MAX_SAMPLED]
    if huge:
        raise ValueError(f"{owner}: the change statistics of {huge} exceed "
                         f"{MAX_SAMPLED:g}, beyond what the samplers' float32 can sum; "
                         "rescale the covariates (e.g. to their standard deviation)")
    if not dyadic.any():
        return
    x = x[:, dyadic]
    columns = [n for n, d in zip(names, dyadic) if d]
    check_identifiable(owner, x, columns)
    side = find_boundary(x, np.asarray(observed, np.float64)[dyadic]).side
    if np.any(side != 0):
        bad = [n for n, s in zip(columns, side) if s != 0]
        raise ErgmDegeneracyError(
            f"{owner}: {boundary_message(side, columns)}; with dependent terms this "
            "package does not fit the rest on the dyads left: drop these terms or fit "
            "the model without them", bad)


def find_separation(change_statistics: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """A direction v along which the pseudo-likelihood rises for ever, or None when its
    maximum exists: the ties' and non-ties' change statistics are (quasi-)separated,
    v·x_d ≥ 0 at every tie and ≤ 0 at every non-tie with X v ≠ 0 (Albert & Anderson
    1984). The linear program maximizes Σ_d (2 y_d − 1) v·x_d under those constraints
    and −1 ≤ v ≤ 1 (columns scaled to a largest entry of 1); a positive maximum is the
    certificate. v is returned in the original units, scaled to a largest entry of 1."""
    x = np.asarray(change_statistics, np.float64)
    sign = 2.0 * np.asarray(y, np.float64).reshape(-1) - 1.0
    size = np.max(np.abs(x), axis=0) if len(x) else np.ones(x.shape[1])
    size = np.where(size > 0, size, 1.0)
    rows = _distinct_rows(sign[:, None] * (x / size))
    result = optimize.linprog(-rows.sum(axis=0) if len(rows) else np.zeros(x.shape[1]),
                              A_ub=-rows, b_ub=np.zeros(len(rows)),
                              bounds=[(-1.0, 1.0)] * x.shape[1], method="highs")
    # distinct rows: the objective counts each kind of dyad once, enough for its sign
    if result.status != 0 or -result.fun <= 1e-9 * max(1.0, np.abs(rows).sum()):
        return None
    v = result.x / size
    return v / np.max(np.abs(v))


def separation_message(direction: np.ndarray, names: Sequence[str]) -> str:
    """What a separation :func:`find_separation` found means, naming the terms."""
    v = np.asarray(direction, np.float64)
    tiny = 1e-9 * np.max(np.abs(v))
    combination = " ".join(f"{'+' if c > 0 else '-'} "
                           + ("" if abs(c) == 1 else f"{abs(c):.4g}·") + n
                           for n, c in zip(names, v) if abs(c) > tiny).lstrip("+ ")
    ways = "; ".join(f"{[n for n, c in zip(names, v) if side * c > tiny]} → {end}"
                     for side, end in ((1, "+∞"), (-1, "−∞"))
                     if np.any(side * v > tiny))
    return (f"the maximum pseudo-likelihood estimate does not exist: the change statistics "
            f"separate the observed ties from the non-ties, so the pseudo-likelihood "
            f"rises for ever along the direction {ways} (no single toggle "
            f"of a dyad raises {combination}); where no network at all has a larger "
            f"{combination}, the observed statistics lie on the boundary of the convex "
            f"hull of the attainable statistics and the MLE does not exist either (it is "
            f"at infinity along the same direction)")


def check_mple_exists(owner: str, change_statistics: np.ndarray, y: np.ndarray,
                      names: Sequence[str]) -> None:
    """Before a Monte Carlo fit started at the MPLE: raise
    :class:`~numpyro_ugm.network.diagnostics.degeneracy.ErgmDegeneracyError` naming the
    terms when the MPLE is at infinity (:func:`find_separation`)."""
    direction = find_separation(change_statistics, y)
    if direction is not None:
        bad = [n for n, c in zip(names, direction) if abs(c) > 1e-9]
        raise ErgmDegeneracyError(
            f"{owner}: {separation_message(direction, names)}. Drop or replace one of "
            f"the terms {bad} (e.g. a curved term such as gwdegree for kstar), or give "
            "ErgmControl(init=...) to start elsewhere", bad)
