"""Host-side work under JAX's multi-controller runtime (``jax.distributed``): the few
places where the package leaves the compiled programs and touches the host (reading
arrays back, writing files, showing a progress bar, warning) made safe when the same
script runs as several processes over one global mesh.

The compiled programs need nothing from here: with a mesh over ``jax.devices()`` (every
process's devices), XLA partitions them and runs the collectives between processes. What
differs is the host:

* an array split over the devices of several processes is not *fully addressable*: no
  process holds all of it, so ``np.asarray`` of it fails. :func:`to_host` gathers such
  arrays (a collective: every process must call it) and copies the others;
* files are written by one process (:func:`is_primary`), the others waiting for it
  (:func:`barrier`) before they read them;
* the progress bar and warnings show on the primary process only;
* a check that may fail on some processes only (a file that one host cannot read) is
  agreed on first (:func:`agree`), so that every process raises the same error instead of
  some raising and the others waiting forever in the next collective.

With one process every function here is a plain local operation (no collective runs).
"""

import hashlib
import warnings
from typing import Any

import jax
import numpy as np

__all__ = ["is_primary", "to_host", "barrier", "agree", "check_identical", "warn"]


def is_primary() -> bool:
    """Whether this is the process that writes files, shows progress and warns (process
    0; the only one without ``jax.distributed``)."""
    return jax.process_index() == 0


def _multihost():
    from jax.experimental import multihost_utils

    return multihost_utils


def to_host(tree: Any) -> Any:
    """Every array leaf of ``tree`` as a whole NumPy array on every process.

    Leaves split over the devices of several processes are gathered
    (``multihost_utils.process_allgather``): a collective, so every process must call
    this at the same point with arrays of the same global shapes. Other leaves (local or
    replicated arrays, NumPy arrays, scalars) are copied as ``np.asarray`` would."""
    def one(leaf):
        if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
            return np.asarray(_multihost().process_allgather(leaf, tiled=True))
        return np.asarray(leaf)

    return jax.tree.map(one, tree)


def barrier(name: str):
    """Wait until every process reaches the barrier ``name`` (nothing with one process):
    e.g. after the primary wrote a checkpoint, before anyone reads it."""
    if jax.process_count() > 1:
        _multihost().sync_global_devices(name)


def agree(ok: bool, error: BaseException):
    """Raise ``error`` on every process if ``ok`` is false on any of them (a collective
    with several processes; give the same ``error`` on every process: its message gains
    the processes where ``ok`` was false). A failure that only some processes see (a
    file missing on one host, data that differ) then stops all of them at once instead
    of leaving the rest blocked in their next collective."""
    if jax.process_count() == 1:
        if not ok:
            raise error
        return
    flags = np.asarray(_multihost().process_allgather(np.asarray([bool(ok)])))
    failed = np.flatnonzero(~flags.reshape(-1).astype(bool))
    if failed.size:
        where = ", ".join(map(str, failed))
        raise type(error)(f"{error} (on process(es) {where} of {jax.process_count()})")


def check_identical(tree: Any, what: str):
    """Raise ``ValueError`` on every process unless every process holds the same values
    in ``tree`` (host or process-local arrays; nothing runs with one process): e.g. the
    data set each process passed, which the global mesh then splits. Compares a digest
    of the bytes, not the arrays themselves."""
    if jax.process_count() == 1:
        return
    digest = hashlib.blake2b(digest_size=16)
    for leaf in jax.tree.leaves(tree):
        digest.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    mine = np.frombuffer(digest.digest(), np.uint8)
    every = np.asarray(_multihost().process_allgather(mine)).reshape(jax.process_count(), -1)
    differ = [i for i in range(len(every)) if not np.array_equal(every[i], every[0])]
    if differ:
        raise ValueError(
            f"{what} differ between processes: process(es) "
            f"{', '.join(map(str, differ))} hold other values than process 0. Every "
            "process must pass the whole, identical data set (the mesh gives each device "
            "its part)")


def warn(message: str, category=UserWarning, stacklevel: int = 1):
    """``warnings.warn`` on the primary process only (the others would repeat it once
    per process)."""
    if is_primary():
        warnings.warn(message, category, stacklevel=stacklevel + 1)
