"""The exact negative phase as an estimator of :class:`~numpyro_ugm.MLE`: :class:`Exact`.

Where the other estimators weight particles whose mean of ∇θ f estimates E_p[∇θ f],
:class:`Exact` differentiates log Z(θ) itself — by enumeration, or by variable elimination
on the model's graph (a chain CRF: the forward algorithm), as ``ugm.exact`` chooses — so
each update's gradient is the exact gradient of the minibatch's log-likelihood: the
stochastic learner (any optax optimizer, minibatches, checkpoints, progress bar) on the
exact objective that :func:`~numpyro_ugm.learn.exact_fit.fit_exact` runs full-batch.
It sits in ``learn`` (above ``evaluate``, whose sums it uses), not in ``estimators``.
"""

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from ..estimators.base import Estimator, Particles
from ..evaluate.exact import (DEFAULT_CHUNK_SIZE, MAX_CONFIGURATIONS, MAX_TABLE_SIZE,
                              mean_log_partition)
from ..evaluate.elimination import METHODS
from ..runtime.checks import check_count

__all__ = ["Exact", "ExactInfo", "exact_negative"]


class ExactInfo(NamedTuple):
    """Diagnostics of an :class:`Exact` update.

    Attributes
    ----------
    log_z : the mean log Z over the minibatch's examples (its one log Z without inputs)
    """

    log_z: jax.Array


@dataclass(frozen=True)
class Exact(Estimator):
    """The exact negative phase: ∇θ log Z(θ) (per example for a CRF), no particles.

    Parameters
    ----------
    method : {"auto", "enumerate", "eliminate"}
        As in :func:`ugm.exact.log_partition
        <numpyro_ugm.evaluate.exact.log_partition>` (``"auto"``: enumeration of small
        models, elimination where the graph is thin and enumerating every example
        costs more).
    max_table_size : int or None
        The largest clique table elimination may build (entries per example).
    max_configurations : int or None
        The largest enumeration, counting every example of the data set.
    chunk_size : int
        Configurations an enumeration evaluates together.

    Examples
    --------
    >>> learner = ugm.MLE(ugm.models.chain_crf, ugm.Exact(), optax.adam(0.05))
    """

    method: str = "auto"
    max_table_size: int | None = MAX_TABLE_SIZE
    max_configurations: int | None = MAX_CONFIGURATIONS
    chunk_size: int = DEFAULT_CHUNK_SIZE
    importance_weighted: ClassVar[bool] = False

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"Exact: method must be one of {METHODS}, got "
                             f"{self.method!r}")
        self._set("chunk_size", check_count("Exact", "chunk_size", self.chunk_size))
        for name in ("max_table_size", "max_configurations"):
            if getattr(self, name) is not None:
                self._set(name, check_count("Exact", name, getattr(self, name)))

    def init(self, rng_key, target, params, batch) -> tuple:
        """No state: nothing is carried between updates."""
        return ()

    def update(self, rng_key, state, target, params, batch):
        """No particles (the learner differentiates :meth:`log_partition` instead);
        ``log_z`` is filled in by the learner from that value."""
        return state, Particles({}, jnp.zeros((0,))), ExactInfo(jnp.asarray(jnp.nan))

    def _log_partition(self, model, target, num_examples, inputs, params=None):
        return mean_log_partition(
            model, target, "Exact", self.method, chunk_size=self.chunk_size,
            max_configurations=self.max_configurations, max_table_size=self.max_table_size,
            num_examples=num_examples, params=params, inputs=inputs)

    def check(self, model, target, params: dict, num_examples: int,
              inputs: dict | None = None) -> None:
        """Before learning, on the host: the sums fit their limits on the whole data set
        and, where elimination runs, the potential decomposes over the model's graph
        (at ``params`` and random parameters; otherwise an error naming the sites)."""
        self._log_partition(model, target, num_examples, inputs, params)

    def log_partition(self, target, params: dict, inputs: dict | None) -> jax.Array:
        """log Z(θ), traceable in ``params``; with ``inputs`` (a leading example axis:
        the minibatch's) the mean of the examples' log Z's."""
        num = None if inputs is None else jax.tree.leaves(inputs)[0].shape[0]
        return self._log_partition(None, target, num, inputs)(params, inputs)


def exact_negative(estimator: Any):
    """``estimator.log_partition`` when the estimator computes the negative phase
    exactly (:class:`Exact`), else None."""
    return estimator.log_partition if isinstance(estimator, Exact) else None
