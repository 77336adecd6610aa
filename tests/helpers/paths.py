"""Parameter paths and estimates with standard errors, for the estimators' tests against exact values along a path."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

import numpyro_ugm as ugm

from .states import random_params


NUM_PARTICLES = 200


PATH_STEPS = 10  # updates along θ_0 → θ_1


Z_MAX = 4.0  # standard errors allowed


SLACK = 0.02  # absolute slack on top (bias O(1/S) of self-normalized weights, float32)


@functools.lru_cache(maxsize=None)
def vbm8_path():
    """8 fully connected spins with fields (256 states); θ_0 and the end θ_1 of a path."""
    m = ugm.UGM(ugm.models.vbm, 8).observe(["x"])
    start = random_params(m, 1, {"W": 0.5, "b": 0.4})
    step = random_params(m, 2, {"W": 0.2, "b": 0.2})
    end = jax.tree.map(jnp.add, start, step)
    return m, start, end


def schedule(num_still, jumps=()):
    """Positions t on the line θ_0 + t (θ_1 − θ_0) of successive updates: ``num_still``
    at θ_0, PATH_STEPS moving slowly to θ_1, then big ``jumps`` further along."""
    return tuple(np.concatenate([np.zeros(num_still),
                                 np.arange(1, PATH_STEPS + 1) / PATH_STEPS, jumps]))


def path(start, end, times):
    """Stacked parameters θ_0 + t (θ_1 − θ_0) for each t of ``times``."""
    t = jnp.asarray(times, jnp.float32)
    return jax.tree.map(lambda a, b: a[None] + t.reshape((-1,) + (1,) * a.ndim)
                        * (b - a)[None], start, end)


def mean_and_se(samples):
    """Mean over the leading (seed) axis and its standard error."""
    return samples.mean(0), samples.std(0, ddof=1) / np.sqrt(samples.shape[0])


def check_close(estimates, exact_value, what, abs_tol):
    """Mean over seeds within Z_MAX standard errors + SLACK of ``exact_value``, and
    its largest error below ``abs_tol``. Returns (max error, max z)."""
    mean, se = mean_and_se(np.asarray(estimates, np.float64))
    error = np.abs(mean - np.asarray(exact_value, np.float64))
    bad = error > Z_MAX * se + SLACK
    assert not np.any(bad), (f"{what}: error {error[bad]} > {Z_MAX} se {se[bad]} + {SLACK}")
    assert error.max() < abs_tol, f"{what}: max error {error.max():.4f} >= {abs_tol}"
    return error.max(), (error / np.maximum(se, 1e-12)).max()


def at(tree, index):
    return jax.tree.map(lambda a: a[index], tree)
