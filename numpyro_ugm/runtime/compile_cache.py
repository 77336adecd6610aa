"""The package's one cache of compiled programs (jitted functions, enumeration plans).

Entries are keyed by the owner's cache key (:attr:`~numpyro_ugm.model.target.Target.cache_key`:
one per model, arguments, latent sites and fitted base) and by what the
caller's program depends on statically. The cache holds at most :data:`MAX_ENTRIES`
programs; the least recently used goes first, so a process that builds programs for ever
new shapes (new models, sample counts, data lengths) stays within bounded memory.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

__all__ = ["cached", "clear", "MAX_ENTRIES"]

T = TypeVar("T")

#: most programs kept at once
MAX_ENTRIES = 64

_entries: "OrderedDict[Hashable, object]" = OrderedDict()
_lock = threading.Lock()


def cached(owner: Hashable, key: Hashable, build: Callable[[], T]) -> T:
    """``build()``, computed once per ``(owner, key)`` while it stays among the
    :data:`MAX_ENTRIES` most recently used entries.

    ``key`` must hold everything static that ``build`` depends on and start with the
    caller's name (e.g. ``("ais", ...)``). With an unhashable key nothing is cached and
    ``build()`` runs at every call.
    """
    full = (owner, key)
    try:
        with _lock:
            value = _entries[full]
            _entries.move_to_end(full)
        return value
    except KeyError:
        pass
    except TypeError:  # unhashable key (e.g. a kernel spec holding arrays)
        return build()
    value = build()
    with _lock:
        _entries[full] = value
        _entries.move_to_end(full)
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
    return value


def clear() -> None:
    """Drop every cached program."""
    with _lock:
        _entries.clear()
