"""The learner's per-step diagnostics after a run: the history kept across runs (what a
checkpoint holds; the writer is in :mod:`.checkpoints`), and the warnings a run's
diagnostics can raise.

A trace is a dict of per-step arrays keyed by name (the fields of
:meth:`StepInfo.diagnostics <numpyro_ugm.learn.core.StepInfo.diagnostics>`, and what a run's
``record`` adds), entry ``i`` of the history being update ``i``. A run that records every
``thinning``-th update only (:meth:`~numpyro_ugm.MLE.run`) fills the history at the
updates it recorded; the others read NaN, as do updates the learner never saw.
"""

import numpy as np

from ..runtime import distributed
from ..runtime.checkpoint import Piece, piece_span, stitch

__all__ = ["Piece", "stitch", "until_failure", "History", "LOG_Z_SE_TOLERANCE",
           "warn_if_log_z_unreliable", "warn_if_collapsed"]

#: standard error (nats) of a running log Z beyond which MLE.run warns that the running
#: log-likelihood is no longer a useful measure
LOG_Z_SE_TOLERANCE = 1.0


def until_failure(state, piece: Piece) -> Piece:
    """The rows of ``piece`` up to the record of the failing update, if one failed."""
    failed_at = int(state.failed_at)
    return piece if failed_at < 0 else piece.until(failed_at + piece.stride)


class History:
    """Per-step diagnostics of the updates that led to the learner's last state, kept
    across runs, updates and restores, so that a checkpoint holds them all (entry i is
    update i; NaN for updates this learner did not record).

    ``stored``: where a checkpoint directory already holds the start of this history,
    ``(directory, names)`` (its diagnostics files, in order), so that a run continuing
    there writes only the rest; None if nowhere."""

    def __init__(self, stored=None):
        self.pieces, self.key = [], None  # [Piece], the end state's key
        self.stored = stored
        self.last = None  # (start, end) of the last update that succeeded

    def resume(self, state, step=None):
        """Continue from ``state`` (whose step is ``step``, when the caller knows it):
        keep what led to it, up to its step, if it is the state the history ends at
        (same PRNG key); else start afresh."""
        key = state.rng_key
        if self.key is None or (key is not self.key and not np.array_equal(
                np.asarray(key), np.asarray(self.key))):
            self.pieces, self.stored = [], None
            return
        # pieces are recorded in step order without overlap, so only the last ones can
        # reach beyond ``step``: trimming from the end keeps a long run of update() calls
        # linear in its length (rebuilding every piece made each call cost O(steps))
        step = int(state.step) if step is None else step
        if self.stored is not None:  # the files of updates before ``step`` only
            directory, names = self.stored
            self.stored = (directory, tuple(n for n in names if piece_span(n)[1] <= step))
        while self.pieces:
            last = self.pieces[-1]
            if last.first >= step:
                self.pieces.pop()
                continue
            if last.end > step:
                self.pieces[-1] = last.until(step)
            break

    def add(self, piece: Piece, state, before=None):
        """Record ``piece``, which led to ``state``; ``before``: the state the last of
        its updates started from, when that update succeeded (see :meth:`before`)."""
        if piece.size:
            self.pieces.append(piece)
        self.key = state.rng_key  # compared by identity first (no transfer)
        if before is not None:
            self.last = (before, state)

    def before(self, state):
        """The state the last successful update started from, if ``state`` is the one
        it ended at (the same object, or the same step and key); else ``state``: the
        last good state when an update from ``state`` fails (its parameters are those
        that update made)."""
        if self.last is None:
            return state
        start, end = self.last
        if state is end or (int(state.step) == int(end.step) and np.array_equal(
                np.asarray(state.rng_key), np.asarray(end.rng_key))):
            return start
        return state

    def arrays(self) -> dict:
        """Everything recorded, as arrays indexed by update."""
        return stitch(self.pieces)


def warn_if_log_z_unreliable(piece: Piece):
    """Warn when the running log-likelihood is impossible (> 0: a probability mass is at
    most 1) or its standard error exceeds :data:`LOG_Z_SE_TOLERANCE`."""
    step = lambda j: piece.first + (j + 1) * piece.stride - 1  # noqa: E731
    log_likelihood = piece.rows.get("log_likelihood")
    if log_likelihood is None:
        return
    log_likelihood = np.asarray(log_likelihood)
    impossible = np.flatnonzero(log_likelihood > 0)
    if impossible.size:
        worst = impossible[np.argmax(log_likelihood[impossible])]
        distributed.warn(
            f"the running log-likelihood was positive on {impossible.size} of "
            f"{len(log_likelihood)} steps, first at step {step(impossible[0])} and up to "
            f"{log_likelihood[worst]:+.3g} nats per case at step {step(worst)}: "
            "impossible for a discrete model (log p(x) <= 0), so the running log Z is "
            "wrong by at least that much. The particle weights missed probability mass; "
            "do not read the running log-likelihood, evaluate the model with "
            "ugm.evaluate.exact or ugm.evaluate.ais.", RuntimeWarning, stacklevel=3)
    se = piece.rows.get("log_z_se")
    if se is None:
        return
    beyond = np.flatnonzero(np.asarray(se) > LOG_Z_SE_TOLERANCE)
    if beyond.size:
        distributed.warn(
            f"the running log Z's standard error exceeded {LOG_Z_SE_TOLERANCE} nat from "
            f"step {step(beyond[0])} on (up to {float(np.nanmax(se)):.3g}; diagnostics "
            "'log_z_se'): from there the running log-likelihood is too uncertain to "
            "compare models; evaluate with ugm.evaluate.exact or ugm.evaluate.ais.",
            RuntimeWarning, stacklevel=3)


def warn_if_collapsed(piece: Piece, estimator):
    """Warn when the importance-weighted particles degenerated to about one (ESS < 1.5);
    not for estimators without importance weights (CD, PCD: their ESS counts chains,
    one per example for CD on a CRF)."""
    ess = piece.rows.get("ess")
    if ess is None or not estimator.importance_weighted:
        return
    collapsed = np.flatnonzero(np.asarray(ess) < 1.5)
    if collapsed.size:
        first = piece.first + (collapsed[0] + 1) * piece.stride - 1
        distributed.warn(
            f"the importance weights collapsed to about one particle (ESS < 1.5) on "
            f"{collapsed.size} of {len(ess)} steps, first at step {first}: the particle "
            "approximation was poor there. Lower the learning rate, use more particles, a "
            "higher resample_threshold (PF) or target_ess (SMC, PSMC), or (PF) a weight "
            "temperature > 1.", RuntimeWarning, stacklevel=3)
