"""The kernel contract shared by every sampler of the discrete state.

Kernels follow blackjax: a :class:`Kernel` has ``init(position, logdensity_fn)`` and
``step(rng_key, state, logdensity_fn, **unused) -> (state, info)``, with NamedTuple states
whose ``position`` is a dict of site -> model-representation values of **one** chain
(``jax.vmap`` over chains). Both are pure and ``jax.jit``-able, so a kernel is a valid
inner kernel of ``blackjax.smc`` and of the tempered kernels.

What users pass to estimators and to :func:`~numpyro_ugm.sampling.sample` is a
:class:`KernelSpec`: a description (``gibbs(scan="random")``) that is bound to a model's
structure by ``spec.build(m)``.
"""

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp


class Kernel(NamedTuple):
    """A kernel bound to a model: blackjax's ``init`` / ``step`` pair."""

    init: Callable
    step: Callable


class KernelInfo(NamedTuple):
    """Per-step information every kernel reports."""

    acceptance_rate: jax.Array


class KernelSpec:
    """Base class of kernel descriptions; subclasses implement :meth:`build`."""

    def build(self, m):
        """Bind to the model ``m`` (a :class:`~numpyro_ugm.model.UGM`) -> :class:`Kernel`."""
        raise NotImplementedError

    def __call__(self, m):
        return self.build(m)


def sample_labels(rng_key, logits):
    """Draw labels from per-variable logits (..., K); one uniform per variable if K = 2."""
    if logits.shape[-1] == 2:
        p1 = jax.nn.sigmoid(logits[..., 1] - logits[..., 0])
        return (jax.random.uniform(rng_key, p1.shape, p1.dtype) < p1).astype(jnp.int32)
    return jax.random.categorical(rng_key, logits, axis=-1).astype(jnp.int32)


def as_spec(kernel, default):
    """``None`` -> ``default``; a :class:`KernelSpec` as is; anything else is an error."""
    if kernel is None:
        return default
    if not isinstance(kernel, KernelSpec):
        raise TypeError(f"kernel must be a ugm.kernels spec such as ugm.kernels.gibbs(), "
                        f"got {kernel!r}")
    return kernel
