"""Example axes padded to a power of two, so that one compiled program serves every data
length up to that power (a program per length would pile up: about 10 MB each).

The padded rows repeat the first example (valid data, finite values) and are masked out
of every result: a mean is taken over the first ``num`` rows only (:func:`mean_of_first`)
and per-example values are cut back to them (:func:`first`). Padding costs at most as
many extra examples as there are real ones, and only in the per-example part of a
computation (not, e.g., in log Z). The learner's run loop pads its step count the same
way.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["padded_length", "pad_examples", "mean_of_first", "first"]


def padded_length(num: int) -> int:
    """The smallest power of two >= ``num`` (>= 1)."""
    return 1 << (max(int(num), 1) - 1).bit_length()


def pad_examples(tree: Any, length: int) -> Any:
    """The arrays of ``tree`` (leading example axis) padded to ``length`` rows with
    copies of their first row; concrete arrays are padded on the host (no program is
    compiled for the padding)."""
    def pad(a):
        extra = length - a.shape[0]
        if extra == 0:
            return a
        xp = jnp if isinstance(a, jax.core.Tracer) else np
        a = a if xp is jnp else np.asarray(a)
        return xp.concatenate([a, xp.repeat(a[:1], extra, axis=0)])

    return jax.tree.map(pad, tree)


def mean_of_first(values: jax.Array, num: jax.Array) -> jax.Array:
    """Mean of the first ``num`` entries of ``values`` (its padded rows masked out);
    ``num`` may be traced, so one program serves every count."""
    keep = jnp.arange(values.shape[0]) < num
    return jnp.sum(jnp.where(keep, values, 0)) / num.astype(values.dtype)


def first(values: jax.Array, num: int) -> jax.Array:
    """The first ``num`` entries of ``values`` (cut on the host when concrete)."""
    if isinstance(values, jax.core.Tracer):
        return values[:num]
    return jnp.asarray(np.asarray(values)[:num])
