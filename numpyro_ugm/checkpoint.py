"""Checkpoints of a learning run as plain arrays (``.npz``, no pickle).

A :class:`~numpyro_ugm.learn.LearnState` (parameters, optimizer state, the estimator's
particles and weights, PRNG keys, step) is flattened into arrays named by their pytree
paths; loading needs a template state of the same structure (``learner.init(...)``), so
nothing but arrays is ever read back. Diagnostics recorded so far travel with it.
"""

import os
import re
from pathlib import Path

import jax
import numpy as np

__all__ = ["save", "load", "latest"]

_STATE = "state/"
_DIAG = "diagnostics/"
_TMP = ".tmp.npz"


def _flatten(tree):
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {jax.tree_util.keystr(path): np.asarray(leaf) for path, leaf in leaves}


def save(path, state, diagnostics=None):
    """Write ``state`` (and per-step ``diagnostics``) to ``path`` atomically: the file
    appears whole or not at all, and no temporary file is left behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {_STATE + k: v for k, v in _flatten(state).items()}
    for k, v in (diagnostics or {}).items():
        arrays[_DIAG + k] = np.asarray(v)
    for stale in path.parent.glob("step_*" + _TMP):  # left by a process killed mid-save
        stale.unlink(missing_ok=True)
    tmp = path.with_name(path.name + _TMP)
    try:
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
    finally:  # an interrupted save leaves no partial file
        tmp.unlink(missing_ok=True)
    return path


def load(path, template):
    """Read a checkpoint written by :func:`save`.

    Parameters
    ----------
    path : str or Path
    template : LearnState
        A state of the same structure (e.g. from ``learner.init``); its leaves give the
        shapes and dtypes to check against.

    Returns
    -------
    state : LearnState
    diagnostics : dict of str -> ndarray
    """
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    leaves, treedef = jax.tree_util.tree_flatten_with_path(template)
    values = []
    for p, leaf in leaves:
        name = _STATE + jax.tree_util.keystr(p)
        if name not in arrays:
            raise ValueError(f"checkpoint {path} lacks {name[len(_STATE):]}: it was written "
                             "for another model, estimator or optimizer")
        value = arrays[name]
        if value.shape != np.shape(leaf) or value.dtype != np.asarray(leaf).dtype:
            raise ValueError(f"checkpoint {path}: {name[len(_STATE):]} has shape "
                             f"{value.shape} and dtype {value.dtype}, expected "
                             f"{np.shape(leaf)} and {np.asarray(leaf).dtype}")
        values.append(jax.numpy.asarray(value))
    state = jax.tree_util.tree_unflatten(treedef, values)
    diagnostics = {k[len(_DIAG):]: v for k, v in arrays.items() if k.startswith(_DIAG)}
    return state, diagnostics


def latest(directory):
    """The checkpoint of the highest step in ``directory`` (None if there is none)."""
    directory = Path(directory)
    if not directory.is_dir():
        return None
    found = [(int(m.group(1)), p) for p in directory.glob("step_*.npz")
             if (m := re.fullmatch(r"step_(\d+)\.npz", p.name))]
    return max(found)[1] if found else None


def step_path(directory, step):
    """The file name of the checkpoint of ``step`` in ``directory``."""
    return Path(directory) / f"step_{int(step):09d}.npz"
