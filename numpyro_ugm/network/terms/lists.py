"""Padded neighbour lists, the sparse form of a network that the compiled change
statistics read (:mod:`~numpyro_ugm.network.terms.compiled`) and the compiled sampler
toggles (:mod:`~numpyro_ugm.network.sampling.compiled`), as numba functions.

The layout is that of :class:`~numpyro_ugm.network.sampling.chains.NetworkChains`:
``lists`` (C, n, D, 2) holds, for chain c and node i, the neighbours
``lists[c, i, :degree[c, i], 0]`` and the position of each tie in the edge list
``lists[c, i, :, 1]``; slots past the degree hold ``-1``. Removing a neighbour moves
the last slot into the freed one (the JAX side does the same:
:func:`~numpyro_ugm.network.sampling.chains.toggle_writes`).

Shared partners are counted with stamp marks: :func:`mark` stamps the neighbours of a
node in an (n,) array, :func:`count_marked` counts the neighbours of another node
carrying the stamp, O(D) each, and a fresh stamp clears every mark at once.
"""

import pickle
import warnings

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; kept for clarity
    numba = None

__all__ = ["available", "jit", "inline", "find_slot", "mark", "count_marked", "append",
           "remove", "retag", "empty_lists"]

def _compiled(**options):
    """``numba.njit(**options)`` with numba's disk cache where numba finds a place to
    write it, else without one: a read-only install (package folder and home not
    writable, ``NUMBA_CACHE_DIR`` unset) still imports, and compiles in each process."""
    def decorate(function):
        try:
            return _rebuilt_if_damaged(numba.njit(cache=True, **options)(function))
        except RuntimeError as error:  # "cannot cache function ...: no locator available"
            if "cannot cache" not in str(error):
                raise
            return numba.njit(cache=False, **options)(function)
    return decorate


#: what numba's cache raises when its files are truncated or damaged
_DAMAGED = (EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError,
            IndexError, KeyError, ImportError, OSError)


def _rebuilt_if_damaged(dispatcher):
    """``dispatcher`` whose disk cache, when damaged (a copy cut short, a disk error),
    is emptied with a warning and the function compiled afresh, instead of every call
    failing with numba's ``EOFError`` or ``UnpicklingError`` until the cache folder is
    deleted by hand."""
    cache = getattr(dispatcher, "_cache", None)
    load = getattr(cache, "load_overload", None)
    if load is None:  # pragma: no cover - another numba's layout: its own behaviour
        return dispatcher

    def load_overload(*args, **kwargs):
        try:
            return load(*args, **kwargs)
        except _DAMAGED as error:
            warnings.warn(f"numba's compiled-code cache of {dispatcher.py_func.__qualname__} "
                          f"was damaged ({type(error).__name__}: {error}); it is emptied "
                          "and the function compiled afresh (if this repeats, delete the "
                          "cache folder: numba's __pycache__ beside numpyro_ugm/network, "
                          "or NUMBA_CACHE_DIR)", RuntimeWarning, stacklevel=2)
            cache.flush()
            return None

    cache.load_overload = load_overload
    return dispatcher


if numba is not None:
    #: small helpers are inlined by LLVM; numba inlines (``inline``) the functions that
    #: take the model's ~20 arrays, whose calls made the kernel 2-2.5 times slower
    #: (numba-level inlining of the small ones too doubled the compile time, 18 s -> 9 s
    #: for the kernel without it, at the same speed)
    jit = _compiled(nogil=True)
    inline = _compiled(nogil=True, inline="always")
else:  # pragma: no cover
    def jit(f):
        """Without numba: the function itself."""
        return f
    inline = jit


def available() -> bool:
    """Whether numba is importable (else the JAX sampler runs every model)."""
    return numba is not None


@jit
def find_slot(lists, c, i, degree_i, j):
    """Slot of j in i's list, or -1."""
    for s in range(degree_i):
        if lists[c, i, s, 0] == j:
            return s
    return -1


@jit
def mark(lists, c, i, degree_i, marks, stamp):
    """``marks[x] = stamp`` for every x in i's list."""
    for s in range(degree_i):
        marks[lists[c, i, s, 0]] = stamp


@jit
def count_marked(lists, c, i, degree_i, marks, stamp):
    """#{x in i's list: marks[x] == stamp}."""
    total = 0
    for s in range(degree_i):
        if marks[lists[c, i, s, 0]] == stamp:
            total += 1
    return total


@jit
def append(lists, degree, c, i, j, position):
    """Add j, at edge position ``position``, to the end of i's list."""
    lists[c, i, degree[c, i], 0] = j
    lists[c, i, degree[c, i], 1] = position
    degree[c, i] += 1


@jit
def remove(lists, degree, c, i, s):
    """Move the last slot of i's list into slot s."""
    last = degree[c, i] - 1
    lists[c, i, s, 0], lists[c, i, s, 1] = lists[c, i, last, 0], lists[c, i, last, 1]
    lists[c, i, last, 0] = -1
    degree[c, i] = last


@jit
def retag(lists, degree, c, i, j, position):
    """Set the edge position of the slot holding j in i's list."""
    lists[c, i, find_slot(lists, c, i, degree[c, i], j), 1] = position


def empty_lists(num_chains: int, num_nodes: int, capacity: int):
    """(lists (C, n, D, 2), degree (C, n)) int32 of networks without ties."""
    lists = np.zeros((num_chains, num_nodes, capacity, 2), np.int32)
    lists[..., 0] = -1
    return lists, np.zeros((num_chains, num_nodes), np.int32)
