"""Checkpoints of a learning run as plain arrays (``.npz``, no pickle).

A :class:`~numpyro_ugm.learn.LearnState` (parameters, optimizer state, the estimator's
particles and weights, PRNG keys, step) is flattened into arrays named by their pytree
paths; loading needs a template state of the same structure (``learner.init(...)``), so
nothing but arrays is ever read back. Diagnostics recorded so far travel with it.

Under ``jax.distributed`` (several processes over one global mesh) a checkpoint is still
one file: every process takes part in gathering the arrays split over processes, the
primary process writes the file, and the others wait for it
(:mod:`numpyro_ugm.runtime.distributed`); :func:`load` reads it on every process and puts each
array back on the devices its template's array lives on. The directory must be one that
every process sees (a shared file system) to restore on several hosts.
"""

import os
import re
import zipfile
from pathlib import Path

import jax
import numpy as np

from . import distributed

__all__ = ["save", "load", "latest", "read_meta", "CheckpointError"]

_STATE = "state/"
_DIAG = "diagnostics/"
_META = "meta/"
_TMP = ".tmp.npz"


class CheckpointError(ValueError):
    """A checkpoint that cannot be read (truncated, damaged, not a checkpoint) or that
    was written for another model, estimator, optimizer or setting."""


def _flatten(tree):
    """The leaves of ``tree`` as whole host arrays named by their paths (leaves split over
    several processes are gathered: every process must call this)."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    values = distributed.to_host([leaf for _, leaf in leaves])
    return {jax.tree_util.keystr(path): v for (path, _), v in zip(leaves, values)}


def save(path, state, diagnostics=None, meta=None):
    """Write ``state`` (and per-step ``diagnostics``, and ``meta``: strings describing
    what wrote it, checked by :func:`load`) to ``path`` atomically: the file appears
    whole or not at all, and no temporary file is left behind. Under ``jax.distributed``
    every process calls it; the primary writes, and all return once the file is there
    (or all raise if the primary could not write it)."""
    path = Path(path)
    arrays = {_STATE + k: v for k, v in _flatten(state).items()}
    error = None
    if distributed.is_primary():
        try:
            _write(path, arrays, diagnostics, meta)
        except OSError as failure:
            error = failure
    distributed.agree(error is None, error if error is not None else OSError(
        f"checkpoint {path} could not be written by the primary process"))
    return path


def _write(path, arrays, diagnostics, meta):
    """:func:`save`'s file, written atomically by one process."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for k, v in (diagnostics or {}).items():
        arrays[_DIAG + k] = np.asarray(v)
    for k, v in (meta or {}).items():
        arrays[_META + k] = np.asarray(str(v))
    for stale in path.parent.glob("step_*" + _TMP):  # left by a process killed mid-save
        stale.unlink(missing_ok=True)
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
    for k, v in (meta or {}).items():
        saved = arrays.get(_META + k)
        if saved is not None and str(saved) != str(v):
            raise CheckpointError(f"checkpoint {path} was written with {k} {str(saved)!r}; "
                                  f"this one is {str(v)!r}")
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
    state = jax.tree_util.tree_unflatten(treedef, values)
    diagnostics = {k[len(_DIAG):]: v for k, v in arrays.items() if k.startswith(_DIAG)}
    return state, diagnostics


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
    directory = Path(directory)
    if not directory.is_dir():
        return None
    found = sorted(((int(m.group(1)), p) for p in directory.glob("step_*.npz")
                    if (m := re.fullmatch(r"step_(\d+)\.npz", p.name))), reverse=True)
    for _, path in found:
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
