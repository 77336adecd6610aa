"""Per-example particles for conditional models (CRFs).

A CRF's distribution p(y | inputs_n; θ) differs per example, so its negative phase is one
expectation per example. :class:`PerExample` wraps any estimator and keeps one copy of its
state per training example (stacked along a leading example axis), each run under the
model bound to that example's inputs; an update visits only the examples of the batch.
"""

import dataclasses
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp

from .base import Estimator


class ConditionalBatch(NamedTuple):
    """A batch of a conditional model.

    Attributes
    ----------
    data : dict of str -> array (B, ...)
        Observed sites, model representation.
    inputs : dict of str -> array (B, ...)
        The examples' model keyword arguments.
    index : array (B,) of int, optional
        Which examples of the training set these are (their particles are used and
        updated); ``None``: all examples, in order.
    """

    data: dict
    inputs: dict
    index: Optional[jax.Array] = None


class PerExample:
    """Run ``estimator`` separately for every example of a conditional model.

    Parameters
    ----------
    estimator : Estimator
        Any negative-phase estimator; each example gets its own state.

    Notes
    -----
    ``init`` takes the :class:`ConditionalBatch` of all training examples and returns
    their states stacked; ``update`` takes a :class:`ConditionalBatch` whose ``index``
    names the examples, and returns :class:`~numpyro_ugm.estimators.base.Particles` with
    leading axes (batch, particles) and the batch mean of each diagnostic (``log_z_se``:
    the standard error of the batch mean of ``log_z``).

    The log Z check of PF and MCMC-MLE (``check_log_z``) is off here: one training case
    bounds log Z only weakly, and under ``vmap`` the re-anneal, a branch of the update,
    would be paid by every example at every update (28 % more time on an 8×8 grid CRF).
    """

    def __init__(self, estimator: Estimator):
        if getattr(estimator, "check_log_z", False):
            estimator = dataclasses.replace(estimator, check_log_z=False)
        self.estimator = estimator

    @property
    def num_particles(self):
        """Particles per example."""
        return getattr(self.estimator, "num_particles", None)

    @property
    def importance_weighted(self):
        """Whether the wrapped estimator's particles carry importance weights."""
        return self.estimator.importance_weighted

    def init(self, rng_key, target, params, batch: ConditionalBatch):
        """One state per example of ``batch`` (stacked), each under its own inputs."""
        def one(key, inputs, example):
            return self.estimator.init(key, target.bind(**inputs), params,
                                       jax.tree.map(lambda a: a[None], example))

        num = jax.tree.leaves(batch.data)[0].shape[0]
        return jax.vmap(one)(jax.random.split(rng_key, num), batch.inputs, batch.data)

    def update(self, rng_key, state: Any, target, params, batch: ConditionalBatch):
        """Update the states of the batch's examples; the others are kept."""
        index = batch.index
        states = state if index is None else jax.tree.map(lambda a: a[index], state)

        def one(key, example_state, inputs, example):
            return self.estimator.update(key, example_state, target.bind(**inputs), params,
                                         jax.tree.map(lambda a: a[None], example))

        keys = jax.random.split(rng_key, jax.tree.leaves(batch.data)[0].shape[0])
        states, particles, info = jax.vmap(one)(keys, states, batch.inputs, batch.data)
        state = states if index is None else jax.tree.map(
            lambda a, b: a.at[index].set(b), state, states)
        means = jax.tree.map(lambda v: jnp.mean(jnp.asarray(v, jnp.float32)), info)
        if "log_z_se" in info._fields:  # the examples' estimates are independent
            se = jnp.asarray(info.log_z_se, jnp.float32)
            means = means._replace(log_z_se=jnp.sqrt(jnp.mean(se ** 2) / se.shape[0]))
        return state, particles, means

    def record_gradients(self, state: Any, grads: dict) -> Any:
        """Hand every example's estimator state the update's (shared) gradient."""
        if type(self.estimator).record_gradients is Estimator.record_gradients:
            return state
        return jax.vmap(lambda example_state: self.estimator.record_gradients(
            example_state, grads))(state)

    def __repr__(self):
        return f"PerExample({self.estimator!r})"
