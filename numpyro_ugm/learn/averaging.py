"""Iterate averaging (Polyak–Ruppert) as an optax wrapper.

Under a constant learning rate (Adam 0.01, say) the parameters never settle: each
update moves them by about the rate, driven by the noise of the negative phase, and
the last iterate is wherever the last step left them. The mean of the iterates from
some step on averages that noise away (its bias, e.g. that of a stale importance
sample, stays). Measured: ``benchmarks/results/estimator_map.md``, "Under Adam".

:func:`averaged` wraps any optimizer; its state carries the running mean of the
parameters (unconstrained) after every update from step ``start`` on, so checkpoints,
restores and ``init_state`` keep it. Read it with
``learner.get_params(state, averaged=True)``. The optimizer's own trajectory is
unchanged: the average is only read, never fed back.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from ..runtime.checks import check_count


class AveragedState(NamedTuple):
    """State of :func:`averaged`.

    Attributes
    ----------
    inner : the wrapped optimizer's state
    mean : pytree like the parameters: the mean of the iterates averaged so far
    step : int32 scalar, updates done
    count : int32 scalar, iterates averaged: those of updates ``start + 1`` to ``step``
    start : int32 scalar, the setting of :func:`averaged` (kept in the state so that a
        checkpoint records it and a learner with another ``start`` refuses to restore it)
    """

    inner: Any
    mean: Any
    step: jax.Array
    count: jax.Array
    start: jax.Array


def averaged(optimizer: optax.GradientTransformation, start: int = 0
             ) -> optax.GradientTransformation:
    """``optimizer``, keeping the mean of the iterates after update ``start`` on.

    Parameters
    ----------
    optimizer : optax.GradientTransformation
        The optimizer whose iterates are averaged; it must be the outermost
        transformation given to the learner (``averaged(optax.chain(...))``, not the
        reverse), so that the iterates it sees are the parameters.
    start : int
        Updates left out of the average (the transient; e.g. half the run).

    Returns
    -------
    optax.GradientTransformation
        Its updates are ``optimizer``'s; its state is an :class:`AveragedState`.

    Examples
    --------
    >>> learner = ugm.MLE(ugm.models.vbm, ugm.PF(50), ugm.averaged(optax.adam(0.01), 3000))
    >>> result = learner.run(jax.random.PRNGKey(0), 6000, {"x": x}, 15)
    >>> params = learner.get_params(result.state, averaged=True)
    """
    if not isinstance(optimizer, optax.GradientTransformation):
        raise TypeError(f"averaged: optimizer must be an optax GradientTransformation, got "
                        f"{optimizer!r}")
    start = check_count("averaged", "start", start, minimum=0)

    def init(params):
        return AveragedState(optimizer.init(params), jax.tree.map(jnp.zeros_like, params),
                             jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32),
                             jnp.asarray(start, jnp.int32))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("averaged: update needs the current params")
        updates, inner = optimizer.update(updates, state.inner, params)
        iterate = optax.apply_updates(params, updates)
        step = state.step + 1
        take = step > start
        count = state.count + take.astype(jnp.int32)
        # a running mean (not a running sum): no growth, and exact for a constant iterate
        weight = jnp.where(take, 1.0 / jnp.maximum(count, 1), 0.0)
        mean = jax.tree.map(lambda m, x: m + (weight * (x - m)).astype(m.dtype),
                            state.mean, iterate)
        return updates, AveragedState(inner, mean, step, count, state.start)

    return optax.GradientTransformation(init, update)
