"""The maximum pseudo-likelihood estimate of a large sparse network from a sample of its
dyads, as R ergm starts its Monte Carlo MLE (``control.ergm``'s
``init.MPLE.samplesize``), and the exact log Z of the model's dyad-independent part
that the bridge sampling of the log-likelihood starts from.

Case-control sampling (ergm's ``ergm.pl`` for sparse networks): every tie (weight 1)
and a uniform sample, without replacement, of ``size`` non-ties, each weighted by
(number of non-ties) / ``size``, so that the weighted pseudo-log-likelihood is unbiased
for the one of all N dyads. Their change statistics come from the sparse state of the
observed network
(:func:`~numpyro_ugm.network.estimation.sparse_statistics.dyad_change_statistics`);
the weighted logistic regression is
:func:`~numpyro_ugm.network.estimation.dyad_independent.dyad_independent_mle` with weights.
Nothing is O(N): the sample is drawn by rejection of ties and repeats, unless it takes
over half the non-ties (small networks: they are then listed).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import special

from .dyad_independent import dyad_independent_mle
from ..graphs import num_dyads, pair_tables
from .sparse_statistics import dyad_change_statistics, dyadic_log_normalizer, one_chain

__all__ = ["mple_samplesize", "sample_non_ties", "DyadSample", "sample_dyads", "SampledMPLE",
           "sampled_mple", "sampled_reference"]


def mple_samplesize(num_dyads_: int, num_ties: int) -> int:
    """ergm's ``init.MPLE.samplesize``: max(√N, m, 40) · 8 dyads (N dyads, m ties)."""
    return int(math.ceil(max(math.sqrt(num_dyads_), num_ties, 40) * 8))


def _keys(i, j, n):
    return np.asarray(i, np.int64) * n + np.asarray(j, np.int64)


def _tie_keys(ties, n, directed):
    ties = np.asarray(ties, np.int64).reshape(-1, 2)
    if not directed:
        ties = np.sort(ties, 1)
    return np.sort(_keys(ties[:, 0], ties[:, 1], n))


def _is_tie(keys, tie_keys):
    if len(tie_keys) == 0:
        return np.zeros(keys.shape, bool)
    at = np.minimum(np.searchsorted(tie_keys, keys), len(tie_keys) - 1)
    return tie_keys[at] == keys


def sample_non_ties(ties, num_nodes: int, directed: bool, size: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``size`` distinct non-ties (i, j) drawn uniformly without replacement (i < j when
    undirected); all of them when ``size`` reaches their number.

    Uniform pairs are drawn, ties and repeats rejected, until ``size`` distinct ones
    are found, then ``size`` of them are kept at random (the set found is exchangeable,
    so the result is a uniform sample); when ``size`` is over half the non-ties, they
    are listed instead (O(N) memory, for small networks only)."""
    n = int(num_nodes)
    tie_keys = _tie_keys(ties, n, directed)
    total = num_dyads(n, directed) - len(tie_keys)
    if 2 * size >= total:
        _, i, j = pair_tables(n, directed)
        keys = _keys(i, j, n)
        keys = keys[~_is_tie(keys, tie_keys)]
        if size < total:
            keys = np.sort(rng.choice(keys, size, replace=False))
        return keys // n, keys % n
    found = np.zeros(0, np.int64)
    while len(found) < size:
        draws = int(1.1 * (size - len(found))) + 16
        a = rng.integers(0, n, draws)
        b = rng.integers(0, n - 1, draws)
        b = b + (b >= a)
        if not directed:
            a, b = np.minimum(a, b), np.maximum(a, b)
        keys = _keys(a, b, n)
        found = np.unique(np.concatenate([found, keys[~_is_tie(keys, tie_keys)]]))
    if len(found) > size:
        found = np.sort(rng.choice(found, size, replace=False))
    return found // n, found % n


class DyadSample(NamedTuple):
    """A case-control sample of dyads: nodes ``i``, ``j`` (b,), ``response`` y (b,),
    ``weights`` (b,), ``change_statistics`` Δs (b, k); the ties come first
    (``num_ties`` of them), ``num_non_ties`` non-ties in all."""

    i: np.ndarray
    j: np.ndarray
    response: np.ndarray
    weights: np.ndarray
    change_statistics: np.ndarray
    num_ties: int
    num_non_ties: int


def sample_dyads(net, terms, ties, observed, size: int,
                 rng: np.random.Generator) -> DyadSample:
    """Every tie of ``ties`` (m, 2) and ``size`` uniform non-ties of the network on ``net``
    with statistics ``observed``, with their case-control weights and change statistics
    for ``terms`` (from the network's sparse state)."""
    ties = np.asarray(ties, np.int64).reshape(-1, 2)
    m = len(ties)
    non_ties = num_dyads(net.num_nodes, net.directed) - m
    a, b = sample_non_ties(ties, net.num_nodes, net.directed, min(int(size), non_ties), rng)
    i, j = np.concatenate([ties[:, 0], a]), np.concatenate([ties[:, 1], b])
    state = one_chain(net, ties, observed)
    x = dyad_change_statistics(state, terms, i, j)
    weights = np.concatenate([np.ones(m), np.full(len(a), non_ties / max(len(a), 1))])
    return DyadSample(i, j, np.concatenate([np.ones(m), np.zeros(len(a))]), weights, x, m,
                      non_ties)


class SampledMPLE(NamedTuple):
    """Output of :func:`sampled_mple`: ``theta``, ``cov`` (the inverse weighted
    information), ``sampling_cov`` (the Monte Carlo covariance of ``theta`` from
    sampling the non-ties, by the sandwich H⁻¹ V H⁻¹, V the variance of the weighted
    score over samples without replacement), ``converged``, ``iterations``,
    ``sample`` (the :class:`DyadSample`)."""

    theta: np.ndarray
    cov: np.ndarray
    sampling_cov: np.ndarray
    converged: bool
    iterations: int
    sample: DyadSample


def _weighted_fit(sample, columns=None, **options):
    x = sample.change_statistics if columns is None else sample.change_statistics[:, columns]
    return x, dyad_independent_mle(x, sample.weights * sample.response @ x,
                                   weights=sample.weights, **options)


def sampled_mple(sample: DyadSample, *, max_iterations: int = 100,
                 tol: float = 1e-10) -> SampledMPLE:
    """The MPLE from a :class:`DyadSample`: the weighted logistic regression of the
    sampled dyads' responses on their change statistics (all dyads sampled: the MPLE)."""
    x, fit = _weighted_fit(sample, max_iterations=max_iterations, tol=tol)
    chosen = len(sample.i) - sample.num_ties
    k = x.shape[1]
    sampling_cov = np.zeros((k, k))
    if 1 < chosen < sample.num_non_ties:
        # score of a non-tie: −p x; the weighted sum of `chosen` of them, drawn without
        # replacement from num_non_ties, has variance N0² (1 − n0/N0) S² / n0
        p = special.expit(x[sample.num_ties:] @ fit.theta)
        score = -p[:, None] * x[sample.num_ties:]
        total = sample.num_non_ties
        variance = np.atleast_2d(np.cov(score, rowvar=False)) * (
            total ** 2 * (1 - chosen / total) / chosen)
        sampling_cov = fit.cov @ variance @ fit.cov
    return SampledMPLE(fit.theta, fit.cov, sampling_cov, fit.converged, fit.iterations, sample)


def sampled_reference(net, terms, sample: DyadSample) -> tuple | None:
    """(θ_ref, log Z(θ_ref)) where the bridge sampling of the log-likelihood starts: the
    dyad-independent terms at their MLE estimated from ``sample`` (the others 0), and
    the exact log Z there, Σ over every dyad
    (:func:`~numpyro_ugm.network.estimation.sparse_statistics.dyadic_log_normalizer`; O(N)
    work, no O(N) memory). The bridges need log Z(θ_ref) exactly, not θ_ref at the
    exact MLE (ergm's choice, so that the chains start at the observed density). None
    when no term is dyad independent."""
    columns = np.cumsum([0] + [t.size for t in terms])
    dyadic = [k for k, t in enumerate(terms) if t.dependence == "dyadic"]
    if not dyadic:
        return None
    keep = np.concatenate([np.arange(columns[k], columns[k + 1]) for k in dyadic])
    _, fit = _weighted_fit(sample, keep)
    theta = np.zeros(columns[-1])
    theta[keep] = fit.theta
    return theta, dyadic_log_normalizer(net, [terms[k] for k in dyadic], fit.theta)
