"""The learner's compiled steps over a data set: the minibatch of each update, one update,
and runs of updates whose rows go to NaN-filled buffers (:func:`numpyro_ugm.runtime.runloop.fill_rows`).

:class:`Steps` holds no data: the data (and CRF inputs) are arguments of every compiled
call, so new data of the same layout reuses the programs. What the run loop calls is
:meth:`Steps.run` with everything but the loop's state and the chunk length bound: a plain
compiled function of its arguments.
"""

import functools
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..estimators.per_example import ConditionalBatch
from ..runtime.runloop import fill_rows
from .core import LearnerCore
from .data import Minibatches, Placement


class Steps:
    """The compiled steps of a :class:`~numpyro_ugm.learn.core.LearnerCore` on minibatches.

    Parameters
    ----------
    core : LearnerCore
    batches : Minibatches
        The example order.
    placement : Placement
        Runs the programs with the device mesh set (if any).

    Attributes
    ----------
    scan : callable
        ``(carry, data, inputs, length, capacity, thinning, record) -> (carry, rows)``,
        jitted (the last three static): see :meth:`run`.
    """

    def __init__(self, core: LearnerCore, batches: Minibatches, placement: Placement):
        self.core, self.batches, self.placement = core, batches, placement
        self._attempts = {}  # the compiled attempt per layout of the state (treedef)
        self._last_attempt = (None, None)
        self._kept = (None, None, None)  # the last attempt's new state, leaves, treedef
        self.scan = placement.run(jax.jit(self._scan, static_argnums=(4, 5, 6)))

    def batch(self, indices, data, inputs=None):
        """The core's batch for the examples ``indices`` (None: all) of ``data`` and
        ``inputs``."""
        take = (lambda tree: tree) if indices is None else (
            lambda tree: jax.tree.map(lambda a: a[indices], tree))
        if inputs is None:
            return take(data)
        return ConditionalBatch(take(data), take(inputs), indices)

    def carry(self, state):
        """What :meth:`run` carries from chunk to chunk: ``(state, order, previous)``,
        ``order`` being the minibatch order ``(permutation, epoch)`` before any is drawn
        (epoch −1), ``previous`` the state before the last update that succeeded (the
        last good state when an update fails at parameters the one before made: chains
        that diverge there, gradients that are not finite there)."""
        size = 0 if self.batches.full else self.batches.num_examples
        return state, (jnp.zeros((size,), jnp.int32), -jnp.ones((), state.step.dtype)), state

    def run(self, carry, length, data, inputs, capacity: int, thinning: int = 1,
            record: Optional[Callable] = None):
        """``length`` (traced, <= ``capacity``) records of ``thinning`` updates each on
        ``data`` (and CRF ``inputs``) from ``carry`` (:meth:`carry`), in a ``fori_loop``
        with a dynamic trip count, so that a run split into pieces is bit-identical to one
        long run.

        The minibatch permutation in ``carry`` is drawn only when an epoch starts (a
        permutation of 50,000 examples costs ~10x a PCD-1 step of an RBM), not again for
        each piece a progress bar asks for; a full batch ignores it.

        Returns
        -------
        carry : (state, order, previous)
        rows : dict of str -> array ``(capacity, ...)``
            Per record: the last update's :meth:`StepInfo.diagnostics
            <numpyro_ugm.learn.core.StepInfo.diagnostics>` and ``record(core, state)``
            after it (NaN beyond ``length``).
        """
        return self.scan(carry, data, inputs, length, capacity, thinning, record)

    def advance(self, state, data, inputs, order):
        """One update on the next minibatch of ``data`` (traced). Returns
        ``(state, info, order)``."""
        batches = self.batches
        if not batches.full:
            epoch = state.step // batches.per_epoch
            order = jax.lax.cond(epoch != order[1],
                                 lambda: (batches.permutation(state), epoch),
                                 lambda: order)
        indices = batches.indices(state, order[0])
        state, info = self.core.update(state, self.batch(indices, data, inputs))
        return state, info, order

    def _tracked(self, state, data, inputs, order, previous):
        """:meth:`advance`, and the state before the last update that succeeded."""
        new, info, order = self.advance(state, data, inputs, order)
        succeeded = new.failed_at < 0
        previous = jax.tree.map(lambda a, b: jnp.where(succeeded, a, b), state, previous)
        return new, info, order, previous

    def _scan(self, carry, data, inputs, length, capacity, thinning, record):
        def one(carry):
            state, order, previous = carry
            if thinning == 1:
                state, info, order, previous = self._tracked(state, data, inputs, order,
                                                             previous)
            else:
                def inner(_, loop):
                    return self._tracked(loop[0], data, inputs, loop[2], loop[3])

                template = jax.eval_shape(
                    lambda s: self.advance(s, data, inputs, order)[1], state)
                state, info, order, previous = jax.lax.fori_loop(
                    0, thinning, inner,
                    (state, jax.tree.map(jnp.zeros_like, template), order, previous))
            row = info.diagnostics()
            if record is not None:
                extra = record(self.core, state)
                clash = sorted(set(extra) & set(row))
                if clash:
                    raise ValueError(f"MLE.run: record returned {clash}, names the "
                                     "diagnostics already use")
                row.update(extra)
            return (state, order, previous), row

        return fill_rows(one, carry, length, capacity)

    def attempt(self, state, batch):
        """One update from ``state`` (tried even when its ``failed_at`` is set: a retry),
        for :meth:`MLE.update <numpyro_ugm.MLE.update>`: compiled once per layout of the
        state (treedef) and called on its leaves, those of the state the last attempt
        returned being kept (continuing from it flattens no pytree of modules); the
        host reads what it needs in one transfer.

        Returns
        -------
        new_state : LearnState or None
            The new state, or None when the update was not finite (the caller keeps
            ``state``; nothing was settled on the device, see
            :meth:`LearnerCore.propose <numpyro_ugm.learn.core.LearnerCore.propose>`).
        info : StepInfo
        (step, failed_at, values) : (int, int, ndarray)
            The step of ``state``, the step that failed (-1: none) and the diagnostics'
            values in the order of ``info.names``.
        """
        kept, leaves, treedef = self._kept
        if state is not kept:
            leaves, treedef = jax.tree.flatten(state)
        last, compiled = self._last_attempt
        if treedef is not last:  # hashing a treedef of modules costs; the same one is kept
            compiled = self._attempts.get(treedef)
            if compiled is None:
                compiled = self._attempts[treedef] = self.placement.run(
                    jax.jit(functools.partial(self._attempt, treedef)))
            self._last_attempt = (treedef, compiled)
        leaves, info, summary = compiled(leaves, batch)
        summary = np.asarray(summary)
        step, failed_at = summary[:2].view(np.int32).tolist()
        new_state = None
        if failed_at < 0:
            new_state = jax.tree.unflatten(treedef, leaves)
            self._kept = (new_state, leaves, treedef)
        return new_state, info, (step, failed_at, summary[2:])

    def _attempt(self, treedef, leaves, batch):
        state = jax.tree.unflatten(treedef, leaves)
        state = state._replace(failed_at=-jnp.ones_like(state.failed_at))
        candidate, finite, info = self.core.propose(state, batch)
        failed_at = jnp.where(finite, state.failed_at, state.step)
        counts = jnp.stack([state.step, failed_at]).astype(jnp.int32)
        summary = jnp.concatenate([jax.lax.bitcast_convert_type(counts, jnp.float32),
                                   jnp.stack(list(info.diagnostics().values()))])
        return jax.tree.leaves(candidate._replace(failed_at=failed_at)), info, summary

