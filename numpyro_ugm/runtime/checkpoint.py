"""Checkpoints of a learning run as plain arrays (``.npz``, no pickle).

A :class:`~numpyro_ugm.learn.LearnState` (parameters, optimizer state, the estimator's
particles and weights, PRNG keys, step) is flattened into arrays named by their pytree
paths; loading needs a template state of the same structure (``learner.init(...)``), so
nothing but arrays is ever read back.

The per-update diagnostics recorded so far (the history, :class:`Piece` by
:class:`Piece`) are stored beside the state files, each piece once, in
``diagnostics/<first>-<end>-<digest>.npz`` (the updates it holds and a digest of its
contents): a state file names the diagnostics files its history is made of, so that a
checkpoint adds only what was recorded since the previous one (the directory grows
linearly in the number of updates), and :func:`load` reassembles the whole history.
A file of format 1 (before: every diagnostic so far inside each state file) is read as
well; a file of a later format than :data:`FORMAT` is refused, naming it.

Under ``jax.distributed`` (several processes over one global mesh) a checkpoint is still
one state file: every process takes part in gathering the arrays split over processes, the
primary process writes the files, and the others wait for it
(:mod:`numpyro_ugm.runtime.distributed`); :func:`load` reads it on every process and puts each
array back on the devices its template's array lives on. The directory must be one that
every process sees (a shared file system) to restore on several hosts.
"""

import hashlib
import os
import re
import zipfile
from pathlib import Path
from typing import NamedTuple, Optional

import jax
import numpy as np

from . import distributed

__all__ = ["save", "load", "latest", "read_meta", "CheckpointError", "Piece", "stitch",
           "merged", "piece_name", "piece_span", "history_of", "steps", "collect", "FORMAT",
           "DIAGNOSTICS"]

#: the version of the file layout this module writes (1: the diagnostics inside each
#: state file; 2: the diagnostics in files of their own, named by the state file)
FORMAT = 2

#: the folder, beside the state files, of the diagnostics files
DIAGNOSTICS = "diagnostics"

_STATE = "state/"
_DIAG = "diagnostics/"
_META = "meta/"
_ROWS = "rows/"
_TMP = ".tmp.npz"


class CheckpointError(ValueError):
    """A checkpoint that cannot be read (truncated, damaged, not a checkpoint) or that
    was written for another model, estimator, optimizer or setting."""


class Piece(NamedTuple):
    """Rows of a trace recorded by one run or update: row ``j`` is update
    ``first + (j + 1) * stride - 1`` (``rows``: a dict of arrays with one row each)."""

    first: int
    rows: dict
    stride: int = 1

    @property
    def size(self) -> int:
        """The number of rows."""
        return len(next(iter(self.rows.values()))) if self.rows else 0

    @property
    def end(self) -> int:
        """The update after the last one recorded."""
        return self.first + self.size * self.stride

    def until(self, step: int) -> "Piece":
        """The rows of updates before ``step``."""
        keep = max(0, (step - self.first) // self.stride)
        return self._replace(rows={k: v[:keep] for k, v in self.rows.items()})

    def after(self, step: int) -> "Piece":
        """The rows from update ``step`` on (``step`` at a row's start)."""
        drop = min(max(0, (step - self.first) // self.stride), self.size)
        return Piece(self.first + drop * self.stride,
                     {k: v[drop:] for k, v in self.rows.items()}, self.stride)


def stitch(pieces, end: Optional[int] = None) -> dict:
    """Pieces as arrays indexed by update (NaN where none recorded), at least ``end``
    long if given."""
    pieces = [p for p in pieces if p.size]
    if not pieces:
        return {}
    end = max([p.end for p in pieces] + [end or 0])
    out = {}
    for p in pieces:
        at = np.arange(p.size) * p.stride + p.first + p.stride - 1
        for k, v in p.rows.items():
            v = np.asarray(v)
            if k not in out:
                out[k] = np.full((end,) + v.shape[1:], np.nan, np.result_type(v, np.float32))
            out[k][at] = v
    return out


def merged(pieces) -> list:
    """``pieces`` (in update order) with each run of contiguous pieces of one stride and
    the same names, shapes and dtypes joined into one; empty pieces left out."""
    out = []
    for p in (p for p in pieces if p.size):
        last = out[-1] if out else None
        if last is not None and last.end == p.first and last.stride == p.stride and (
                _layout(last) == _layout(p)):
            p = last._replace(rows={k: np.concatenate([np.asarray(last.rows[k]),
                                                       np.asarray(v)])
                                    for k, v in p.rows.items()})
            out.pop()
        out.append(p)
    return out


def _layout(piece):
    return {k: (np.shape(v)[1:], np.asarray(v).dtype) for k, v in piece.rows.items()}


def piece_name(piece: Piece) -> str:
    """The name of the diagnostics file of ``piece``: the updates it spans and a digest
    of its contents (the same on every process, and another for other contents)."""
    digest = hashlib.blake2b(f"{piece.first} {piece.stride}".encode(), digest_size=8)
    for k in sorted(piece.rows):
        v = np.ascontiguousarray(piece.rows[k])
        digest.update(f"{k} {v.dtype.str} {v.shape}".encode())
        digest.update(v.tobytes())
    return f"{piece.first:09d}-{piece.end:09d}-{digest.hexdigest()}.npz"


def piece_span(name: str) -> tuple:
    """``(first, end)`` of the diagnostics file ``name``."""
    first, end = name.split("-")[:2]
    return int(first), int(end)


def _flatten(tree):
    """The leaves of ``tree`` as whole host arrays named by their paths (leaves split over
    several processes are gathered: every process must call this)."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    values = distributed.to_host([leaf for _, leaf in leaves])
    return {jax.tree_util.keystr(path): v for (path, _), v in zip(leaves, values)}


def save(path, state, diagnostics=None, meta=None, *, history=(), new=()):
    """Write ``state`` (and ``meta``: strings describing what wrote it, checked by
    :func:`load`) to ``path`` atomically: the file appears whole or not at all, and no
    temporary file is left behind. Under ``jax.distributed`` every process calls it; the
    primary writes, and all return once the files are there (or all raise if the primary
    could not write them).

    Parameters
    ----------
    path : str or Path
    state : pytree
    diagnostics : dict of str -> ndarray, optional
        Per-update diagnostics kept inside the state file (a history of its own).
    meta : dict of str -> str, optional
    history : sequence of str
        Names of diagnostics files (:func:`piece_name`) already in the ``DIAGNOSTICS``
        folder beside ``path``: the start of the state's history.
    new : sequence of Piece
        The rest of its history, written now as diagnostics files (a file already there
        under its name is not written again).

    Returns
    -------
    names : tuple of str
        The diagnostics files of the state's history, in order (``history``, then
        ``new``'s).
    """
    path = Path(path)
    new = merged(new)
    names = tuple(history) + tuple(piece_name(p) for p in new)
    arrays = {_STATE + k: v for k, v in _flatten(state).items()}
    arrays["format"] = np.asarray(FORMAT)
    arrays["history"] = np.asarray([n.encode() for n in names], "S")  # 1 byte a letter
    for k, v in (diagnostics or {}).items():
        arrays[_DIAG + k] = np.asarray(v)
    for k, v in (meta or {}).items():
        arrays[_META + k] = np.asarray(str(v))
    error = None
    if distributed.is_primary():
        try:
            folder = path.parent / DIAGNOSTICS
            for piece, name in zip(new, names[len(history):]):
                if not (folder / name).is_file():
                    _write(folder / name, _piece_arrays(piece), stale=False)
            _write(path, arrays)
        except OSError as failure:
            error = failure
    distributed.agree(error is None, error if error is not None else OSError(
        f"checkpoint {path} could not be written by the primary process"))
    return names


def _piece_arrays(piece):
    rows = {_ROWS + k: np.asarray(v) for k, v in piece.rows.items()}
    return {"first": np.asarray(piece.first), "stride": np.asarray(piece.stride), **rows}


def _write(path, arrays, stale=True):
    """The arrays written to ``path`` atomically (a temporary file then renamed), by one
    process; with ``stale``, the temporary files of state files left beside it by a
    process killed mid-save are deleted (those of diagnostics files: by
    :func:`collect`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in path.parent.glob("step_*" + _TMP) if stale else ():
        old.unlink(missing_ok=True)
    tmp = path.with_name(path.name + _TMP)
    try:
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
    finally:  # an interrupted save leaves no partial file
        tmp.unlink(missing_ok=True)


def _read(path):
    """Every array of the checkpoint at ``path``, or :class:`CheckpointError` saying why
    it cannot be read."""
    path = Path(path)
    if not zipfile.is_zipfile(path):
        size = path.stat().st_size if path.exists() else None
        what = ("it does not exist" if size is None else "it is empty" if size == 0 else
                f"its {size} bytes are not a .npz archive (truncated, or not a checkpoint)")
        raise CheckpointError(f"checkpoint {path} cannot be read: {what}")
    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as error:
        raise CheckpointError(
            f"checkpoint {path} cannot be read ({type(error).__name__}: {error}): the file "
            "is damaged or truncated; an earlier checkpoint of the run may be whole "
            "(checkpoint.latest(directory) skips unreadable ones)") from None


def load(path, template, meta=None):
    """Read a checkpoint written by :func:`save`.

    Parameters
    ----------
    path : str or Path
    template : LearnState
        A state of the same structure (e.g. from ``learner.init``); its leaves give the
        shapes and dtypes to check against, and the devices (mesh) the arrays go to.
    meta : dict of str -> str, optional
        What the reader is (model, estimator, optimizer, ...): each entry the checkpoint
        also holds must be equal.

    Returns
    -------
    state : LearnState
    diagnostics : dict of str -> ndarray

    Raises
    ------
    CheckpointError
        An unreadable file, or one written for another model, estimator, optimizer or
        setting (a leaf missing, extra, of another shape or dtype, or other ``meta``).
    """
    try:
        arrays, error = _read(path), None
    except CheckpointError as failure:
        arrays, error = None, failure
    # a file that some hosts cannot see stops every process, not only those
    distributed.agree(error is None, error if error is not None else CheckpointError(
        f"checkpoint {path} cannot be read by every process"))
    version = int(arrays.get("format", 1))
    if version > FORMAT:
        raise CheckpointError(f"checkpoint {path} is of format {version}, written by a "
                              "newer numpyro_ugm; this one reads formats 1 to "
                              f"{FORMAT}: upgrade numpyro_ugm to restore it")
    for k, v in (meta or {}).items():
        saved = arrays.get(_META + k)
        if saved is not None and str(saved) != str(v):
            raise CheckpointError(f"checkpoint {path} was written with {k} {str(saved)!r}; "
                                  f"this one is {str(v)!r}")
    state = _state(path, arrays, template)
    diagnostics = {k[len(_DIAG):]: v for k, v in arrays.items() if k.startswith(_DIAG)}
    names = _names(arrays.get("history", np.zeros(0, "S")))
    if names:
        inline = [Piece(0, diagnostics)] if diagnostics else []
        diagnostics = stitch(inline + _pieces(Path(path), names),
                             max(piece_span(n)[1] for n in names))
    return state, diagnostics


def _names(history) -> tuple:
    """The diagnostics files' names of a checkpoint's ``history`` array (bytes)."""
    return tuple(n.decode() for n in history.tolist())


def _state(path, arrays, template):
    """The state of the checkpoint's ``arrays``, checked against ``template`` leaf by
    leaf (names, shapes, dtypes) and placed as its leaves are."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(template)
    names = {_STATE + jax.tree_util.keystr(p) for p, _ in leaves}
    extra = sorted(k[len(_STATE):] for k in arrays if k.startswith(_STATE) and k not in names)
    if extra:
        shown = ", ".join(extra[:3]) + (" ..." if len(extra) > 3 else "")
        raise CheckpointError(f"checkpoint {path} holds {shown}, which this learner's state "
                              "lacks: it was written for another model, estimator or "
                              "optimizer")
    values = []
    for p, leaf in leaves:
        name = _STATE + jax.tree_util.keystr(p)
        if name not in arrays:
            raise CheckpointError(f"checkpoint {path} lacks {name[len(_STATE):]}: it was "
                                  "written for another model, estimator or optimizer")
        value = arrays[name]
        dtype = np.dtype(leaf.dtype) if hasattr(leaf, "dtype") else np.asarray(leaf).dtype
        if value.shape != np.shape(leaf) or value.dtype != dtype:
            raise CheckpointError(f"checkpoint {path}: {name[len(_STATE):]} has shape "
                                  f"{value.shape} and dtype {value.dtype}, expected "
                                  f"{np.shape(leaf)} and {dtype}")
        values.append(_placed_like(value, leaf))
    return jax.tree_util.tree_unflatten(treedef, values)


def _pieces(path, names):
    """The pieces of the diagnostics files ``names`` beside the checkpoint ``path``; a
    file that is missing or unreadable is left out with a warning (its updates read
    NaN: the state does not depend on it)."""
    pieces, lost = [], []
    for name in names:
        try:
            arrays = _read(path.parent / DIAGNOSTICS / name)
        except CheckpointError:
            lost.append(name)
            continue
        pieces.append(Piece(int(arrays["first"]), {k[len(_ROWS):]: v for k, v in
                                                   arrays.items() if k.startswith(_ROWS)},
                            int(arrays["stride"])))
    if lost:
        spans = ", ".join("{}-{}".format(*piece_span(n)) for n in lost)
        distributed.warn(
            f"checkpoint {path}: the diagnostics of updates {spans} are lost (missing or "
            f"unreadable in {path.parent / DIAGNOSTICS}: {', '.join(lost)}); they read NaN. "
            "The state is whole; copy a checkpoint with its directory's diagnostics "
            "folder to keep them", RuntimeWarning, stacklevel=3)
    return pieces


def read_meta(path) -> dict:
    """The ``meta`` strings the checkpoint at ``path`` was saved with."""
    return {k[len(_META):]: str(v) for k, v in _read(path).items() if k.startswith(_META)}


def _placed_like(value, leaf):
    """``value`` on the devices of the template's ``leaf`` when it spans several (a mesh,
    possibly over several processes: each takes its part of the whole array read from
    the file); else an array where JAX puts it."""
    if isinstance(leaf, jax.Array) and len(leaf.sharding.device_set) > 1:
        return jax.device_put(value, leaf.sharding)
    return jax.numpy.asarray(value)


def latest(directory):
    """The readable checkpoint of the highest step in ``directory`` (None if there is
    none); newer files that cannot be read (a copy cut short, a damaged disk) are
    skipped with a warning naming them."""
    for _, path in reversed(steps(directory)):
        try:
            _read(path)
        except CheckpointError as error:
            distributed.warn(f"skipping an unreadable checkpoint: {error}",
                             RuntimeWarning, stacklevel=2)
            continue
        return path
    return None


def step_path(directory, step):
    """The file name of the checkpoint of ``step`` in ``directory``."""
    return Path(directory) / f"step_{int(step):09d}.npz"


def steps(directory) -> list:
    """``(step, path)`` of the checkpoint (state) files in ``directory``, oldest first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted((int(m.group(1)), p) for p in directory.glob("step_*.npz")
                  if (m := re.fullmatch(r"step_(\d+)\.npz", p.name)))


def history_of(path) -> tuple:
    """The names of the diagnostics files the history of the checkpoint at ``path`` is
    made of (empty for a file of format 1); :class:`CheckpointError` if it cannot be
    read."""
    try:
        with np.load(path, allow_pickle=False) as f:
            return _names(f["history"]) if "history" in f.files else ()
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        raise CheckpointError(f"checkpoint {path} cannot be read ({type(error).__name__}: "
                              f"{error})") from None


def collect(directory, names=None) -> None:
    """Delete the diagnostics files in ``directory`` that no checkpoint there names (of
    checkpoints deleted or replaced, or of a save cut short): those of ``names`` (default:
    every one there). None is deleted while a checkpoint there cannot be read (what it
    names is unknown). One process calls it."""
    folder = Path(directory) / DIAGNOSTICS
    if not folder.is_dir():
        return
    try:
        named = {n for _, path in steps(directory) for n in history_of(path)}
    except CheckpointError:
        return
    names = {p.name for p in folder.glob("*.npz")} if names is None else set(names)
    for name in names - named:
        (folder / name).unlink(missing_ok=True)
