"""The sampled statistics that the Monte Carlo estimators of an ERGM work from: checks of
their arguments, the ``simulate`` callback, and moments with the chains' autocorrelation
(the degeneracy check is :mod:`~numpyro_ugm.network.diagnostics.degeneracy`'s).

The model is p(y; θ) = exp(θ·s(y)) / Z(θ) over the graphs y with N dyads. Its Monte Carlo
estimators (:mod:`~numpyro_ugm.network.estimation.mcmle`,
:mod:`~numpyro_ugm.network.estimation.standard_errors`,
:mod:`~numpyro_ugm.network.estimation.log_likelihood`, :mod:`~numpyro_ugm.network.summary`)
work from sampled statistics, never from graphs, and take the sampler as a callback::

    simulate(theta, rng_key) -> stats   # array (num_chains, num_samples, k), draws in chain order

The callback keeps its own chain state between calls (persistent chains; its burn-in after
θ moves is its own business). Two calls at the same θ continue the same chains, so a larger
sample is made by calling it again and joining the draws along the draw axis
(:func:`sample_statistics`).

The arithmetic is numpy float64 on the host, vectorized over the draws: the sums of
exp(Δθ·s) over draws with statistics in the thousands need the double precision that JAX
does not use by default here, and the loops are over iterations (each a callback, a linear
program and a small Newton solve), not over draws or chains.
"""

from __future__ import annotations

import math

import numpy as np

from ...runtime.checks import split_key

__all__ = ["as_vector", "as_names", "as_statistics", "check_simulate", "check_fraction",
           "split_keys", "sample_statistics"]


# --- argument checks -------------------------------------------------------------------


def as_vector(owner, name, value, k=None):
    """A finite float64 vector (k,)."""
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{owner}: {name} must be a numeric vector, got "
                        f"{type(value).__name__}") from error
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"{owner}: {name} must be a non-empty vector (k,), got shape "
                         f"{v.shape}")
    if k is not None and v.shape != (k,):
        raise ValueError(f"{owner}: {name} must have shape ({k},) (one value per statistic), "
                         f"got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{owner}: {name} holds non-finite values {v.tolist()}")
    return v


def as_names(owner, names, k):
    """``names`` as a list of k strings (``theta[i]`` when None)."""
    if names is None:
        return [f"theta[{i}]" for i in range(k)]
    if isinstance(names, str):
        raise TypeError(f"{owner}: names must be a sequence of {k} strings, got one string "
                        f"{names!r}")
    names = list(names)
    if len(names) != k or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{owner}: names must be {k} strings (one per statistic), got "
                         f"{names!r}")
    return names


def as_statistics(owner, value, k, name="simulate(theta, rng_key)"):
    """Sampled statistics as float64 (num_chains, num_samples, k)."""
    try:
        s = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{owner}: {name} must return a numeric array (num_chains, "
                        f"num_samples, k), got {type(value).__name__}") from error
    if s.ndim != 3 or s.shape[2] != k:
        raise ValueError(f"{owner}: {name} must return an array (num_chains, num_samples, {k}) "
                         f"(draws in chain order; num_chains may be 1), got shape {s.shape}")
    if s.shape[0] < 1 or s.shape[1] < 2:
        raise ValueError(f"{owner}: {name} must return at least one chain of at least 2 "
                         f"draws, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{owner}: {name} returned non-finite statistics")
    return s


def check_simulate(owner, simulate):
    """Refuse a ``simulate`` that is not callable."""
    if not callable(simulate):
        raise TypeError(f"{owner}: simulate must be a callable simulate(theta, rng_key) -> "
                        f"stats (num_chains, num_samples, k), got {type(simulate).__name__}")


def check_fraction(owner, name, value, low=0.0, high=1.0, open_low=True, open_high=True):
    """``value`` as a float inside the interval (low, high) (ends closed on request)."""
    try:
        v = float(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{owner}: {name} must be a number, got {value!r}") from error
    below = v <= low if open_low else v < low
    above = v >= high if open_high else v > high
    if not math.isfinite(v) or below or above:
        lo, hi = ("(" if open_low else "["), (")" if open_high else "]")
        raise ValueError(f"{owner}: {name} must lie in {lo}{low}, {high}{hi}, got {value!r}")
    return v


def split_keys(rng_key, num):
    """``num`` keys from ``rng_key`` by successive two-way splits
    (:func:`~numpyro_ugm.runtime.checks.split_key`, on the host: no program compiled
    for any ``num``; ``jax.random.split(rng_key, num)`` compiles once per ``num``)."""
    keys = []
    for _ in range(num):
        rng_key, subkey = split_key(rng_key)
        keys.append(subkey)
    return keys


def sample_statistics(simulate, theta, rng_key, repeats, k, owner, stop=None):
    """``repeats`` calls at θ, joined along the draw axis (persistent chains); with
    ``stop`` (a test of the draws so far), each call gets it as a keyword and the calls
    end as soon as it is true."""
    keys = split_keys(rng_key, repeats)
    parts = []
    for i in range(repeats):
        extra = {} if stop is None else {"stop": stop}
        parts.append(as_statistics(owner, simulate(np.asarray(theta), keys[i], **extra), k))
        if len({p.shape[0] for p in parts}) != 1:
            raise ValueError(f"{owner}: simulate returned different numbers of chains "
                             f"across calls ({[p.shape[0] for p in parts]})")
        if stop is not None and i + 1 < repeats and stop(np.concatenate(parts, axis=1)):
            break
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
