"""A learner's checkpoints: the directory a run owns, the writer the run loop is handed
(what a checkpoint records of the learner, and how many files it keeps), and the checks
a restored state passes.

A checkpoint holds the state; the diagnostics of the updates that led to it (the
learner's history) go beside it, into the directory's diagnostics folder
(:mod:`numpyro_ugm.runtime.checkpoint`), each update's once: every checkpoint adds the
diagnostics recorded since the previous one, and a run that continues a history already
there (the same learner run on, or one restored from that directory) writes only the
rest. So the directory grows linearly in the number of updates, and deleting old
checkpoints (``keep``) keeps every diagnostic the newest ones need.

A checkpoint directory belongs to one run: the first run that writes to it leaves its
run id in :data:`OWNER` and in every checkpoint's ``meta``; a run that continues it
(``run(init_state=...)`` after that run, or after :meth:`~numpyro_ugm.MLE.restore` of one
of its checkpoints) writes on, and any other run is refused unless it is asked to take
the directory over (``checkpoint_overwrite=True``, which deletes the other run's
checkpoints). So :func:`~numpyro_ugm.runtime.checkpoint.latest` never returns another
run's step, and two runs started into one directory do not overwrite each other's files.
"""

import uuid
from pathlib import Path
from typing import Optional

import jax

from ..runtime import checkpoint, distributed
from ..runtime.checkpoint import CheckpointError
from .averaging import AveragedState
from .diagnostics import History, Piece, until_failure

__all__ = ["OWNER", "DEFAULT_KEEP", "new_run_id", "claim", "CheckpointWriter",
           "checkpoint_meta", "check_restored", "run_id_of", "good_state", "start_writing",
           "stored_in"]

#: the file of a checkpoint directory that names the run owning it
OWNER = "run_id.txt"

#: checkpoints (state files) a run keeps by default: the newest three, so that a damaged
#: newest file (a copy cut short: ``latest`` skips it) leaves two to resume from, and the
#: directory stays bounded (each holds a whole state) whatever the run's length; the
#: diagnostics they need are kept whole. ``checkpoint_keep=None`` keeps every one.
DEFAULT_KEEP = 3


def new_run_id() -> str:
    """A fresh run id."""
    return uuid.uuid4().hex


def _owner(directory: Path) -> Optional[str]:
    path = directory / OWNER
    return path.read_text().strip() if path.is_file() else None


def claim(directory, run_id: str, *, resumed_from=None, overwrite: bool = False) -> None:
    """Make ``directory`` the checkpoint directory of run ``run_id`` before the run starts.

    Parameters
    ----------
    directory : str or Path
    run_id : str
    resumed_from : Path, optional
        The directory of the checkpoint the run was restored from: one written before
        directories had owners is then this run's.
    overwrite : bool
        Take over a directory of another run, deleting its checkpoints.

    Raises
    ------
    CheckpointError
        ``directory`` is a file, or holds another run's checkpoints (without
        ``overwrite``).
    OSError
        It cannot be created or written.
    """
    directory, error = Path(directory), None
    if distributed.is_primary():  # the one writer; every process learns the outcome
        try:
            _claim(directory, run_id, resumed_from, overwrite)
        except (CheckpointError, OSError) as failure:
            error = failure
    distributed.agree(error is None, error if error is not None else CheckpointError(
        f"checkpoint directory {directory} could not be claimed by the primary process"))


def _claim(directory, run_id, resumed_from, overwrite):
    if directory.exists() and not directory.is_dir():
        raise CheckpointError(f"checkpoint_dir {directory} is a file, not a directory: "
                              "give a directory (it is created if missing)")
    directory.mkdir(parents=True, exist_ok=True)
    owner, found = _owner(directory), checkpoint.steps(directory)
    ours = owner == run_id or (owner is None and resumed_from is not None
                               and Path(resumed_from).resolve() == directory.resolve())
    if found and not ours:
        if not overwrite:
            raise CheckpointError(
                f"checkpoint directory {directory} holds the checkpoints of another run "
                f"({len(found)} file(s), up to step {found[-1][0]}; run id {owner}). "
                "Continue that run (learner.restore(ugm.checkpoint.latest(directory), "
                "...) then run(..., init_state=state)), give another directory, or pass "
                "checkpoint_overwrite=True to delete them")
        for _, path in found:
            path.unlink(missing_ok=True)
    if not ours:  # diagnostics no checkpoint of this run names
        checkpoint.collect(directory)
    if owner != run_id:
        (directory / OWNER).write_text(run_id + "\n")


class CheckpointWriter:
    """What the run loop is handed to save a learner's state: ``writer(carry, rows)``,
    with the loop's ``(state, minibatch order, last good state)`` and the run's rows so
    far (from update ``first``, one per ``stride`` updates), writes
    ``directory/step_<step>.npz``: the state (after a failed update, the last good one),
    naming the diagnostics files of its history: those already in ``directory``
    (``history.stored``), then the history's other pieces and the run's rows up to a
    failing update, written once each; then deletes all but the newest ``keep``
    checkpoints (None: none) and the diagnostics that no checkpoint left names."""

    def __init__(self, directory, history: History, first: int, stride: int, meta: dict,
                 keep: Optional[int] = DEFAULT_KEEP):
        self.directory, self.history, self.first, self.stride = (
            Path(directory), history, first, stride)
        self.meta, self.keep = meta, keep
        self.names, self.end = self._stored(history.stored)  # already in the directory
        self.earlier = [p.after(self.end) for p in history.pieces]  # written at the first

    def _stored(self, stored):
        """``(names, end)`` of the history's files in this directory (none if they are
        elsewhere, or some are gone)."""
        if stored is None or Path(stored[0]).resolve() != self.directory.resolve():
            return (), 0
        folder = self.directory / checkpoint.DIAGNOSTICS
        if distributed.is_primary() and not all((folder / n).is_file() for n in stored[1]):
            return (), 0
        return stored[1], max([checkpoint.piece_span(n)[1] for n in stored[1]] + [0])

    def __call__(self, carry, rows):
        state = good_state(carry)
        run_id = self.meta.get("run")
        if distributed.is_primary() and run_id is not None and (
                _owner(self.directory) != run_id):
            raise CheckpointError(f"checkpoint directory {self.directory} was taken over "
                                  f"by another run (run id {_owner(self.directory)}); this "
                                  f"run ({run_id}) stops writing there")
        piece = until_failure(carry[0], Piece(self.first, rows, self.stride))
        new = self.earlier + [piece.after(self.end)]
        path = checkpoint.step_path(self.directory, int(state.step))
        replaced = _history_of(path) if distributed.is_primary() else set()
        self.names = checkpoint.save(path, state, meta=self.meta, history=self.names, new=new)
        self.end, self.earlier = max(self.end, piece.end), []
        self.history.stored = (self.directory, self.names)
        if distributed.is_primary():
            self._prune(replaced)

    def _prune(self, gone):
        """Delete all but the newest ``keep`` checkpoints, and the diagnostics files that
        only the checkpoints deleted or replaced named (``gone``: a replaced one's)."""
        old = [] if self.keep is None else checkpoint.steps(self.directory)[:-self.keep]
        for _, path in old:
            gone |= _history_of(path)
            path.unlink(missing_ok=True)
        if gone:
            checkpoint.collect(self.directory, gone)


def _history_of(path) -> set:
    """The diagnostics files the checkpoint at ``path`` names (none if it is missing or
    cannot be read)."""
    try:
        return set(checkpoint.history_of(path)) if path.exists() else set()
    except CheckpointError:
        return set()


def good_state(carry):
    """The state to keep of the run loop's carry ``(state, order, previous)``: ``state``,
    or after a failed update the last good one (``previous`` with the failure noted)."""
    state, previous = carry[0], carry[-1]
    if int(state.failed_at) < 0:
        return state
    return previous._replace(failed_at=state.failed_at)


def checkpoint_meta(m, state, run_id=None) -> dict:
    """What a checkpoint records of the learner that wrote it, beyond the shapes of its
    state, and :meth:`~numpyro_ugm.MLE.restore` checks: the model (its function and state
    sites: another model of the same shapes is refused) and the averaging start of
    :func:`~numpyro_ugm.averaged` (``"none"`` without averaging); with ``run_id``, the
    run that wrote it too (not checked)."""
    fn = getattr(m.model, "func", m.model)  # a functools.partial's function
    name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
    sites = ", ".join(f"{k}: {d!r}" for k, d in sorted(m.target().state_sites.items()))
    averaged = [int(s.start) for s in jax.tree.leaves(
        state.opt_state, is_leaf=lambda x: isinstance(x, AveragedState))
        if isinstance(s, AveragedState)]
    meta = {"model": f"{name}({sites})",
            "averaging start": ", ".join(map(str, averaged)) or "none"}
    return meta if run_id is None else {**meta, "run": run_id}


def run_id_of(path) -> Optional[str]:
    """The id of the run that wrote the checkpoint at ``path`` (None: written before runs
    had ids)."""
    return checkpoint.read_meta(path).get("run")


def check_restored(path, params, space) -> None:
    """Raise :class:`CheckpointError` unless the restored ``params`` (constrained) pass
    the parameters' one check (finite, inside their support)."""
    try:
        space.check(params)
    except (ValueError, FloatingPointError, TypeError, KeyError) as error:
        raise CheckpointError(f"checkpoint {path} holds parameters this model cannot "
                              f"start from: {error}. An earlier checkpoint of the run may "
                              "be good") from None


def start_writing(directory, run_id, *, keep, overwrite, resumed_from=None,
                  **writer) -> CheckpointWriter:
    """Claim ``directory`` for run ``run_id`` (:func:`claim`) and return its writer
    (``writer``: the other arguments of :class:`CheckpointWriter`, ``meta`` without the
    run id)."""
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise ValueError(f"MLE.run: checkpoint_keep must be an integer >= 1 or None (keep "
                         f"every checkpoint), got {keep!r}")
    claim(directory, run_id, resumed_from=resumed_from, overwrite=overwrite)
    writer["meta"] = {**writer["meta"], "run": run_id}
    return CheckpointWriter(directory, keep=keep, **writer)


def stored_in(path) -> tuple:
    """``History.stored`` of a history restored from the checkpoint at ``path``: its
    directory and the diagnostics files named there."""
    return Path(path).parent, checkpoint.history_of(path)
