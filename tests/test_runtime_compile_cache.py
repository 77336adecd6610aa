"""The compile cache (numpyro_ugm/compile_cache.py): one entry per owner and key, none for
an unhashable key, and at most MAX_ENTRIES, the least recently used dropped first."""

import numpy as np
from helpers.models import spin_chain as chain

from numpyro_ugm.runtime import compile_cache
from numpyro_ugm.runtime.compile_cache import cached
from numpyro_ugm.model import UGM


def test_cached_builds_once_per_key_and_not_for_unhashable_keys():
    m = UGM(chain, 3)
    calls = []
    for _ in range(3):
        cached(m.target().cache_key, ("test", 2), lambda: calls.append("a"))
    assert calls == ["a"]
    for _ in range(2):
        cached(m.target().cache_key, ("test", np.zeros(2)), lambda: calls.append("b"))  # unhashable
    assert calls == ["a", "b", "b"]


def test_the_cache_is_bounded_and_drops_the_least_recently_used():
    m = UGM(chain, 3)
    calls = []
    cached(m.target().cache_key, ("first",), lambda: calls.append("first"))
    for i in range(compile_cache.MAX_ENTRIES - 1):
        cached(m.target().cache_key, ("filler", i), lambda: None)
    cached(m.target().cache_key, ("first",), lambda: calls.append("again"))  # used: kept
    assert calls == ["first"]
    cached(m.target().cache_key, ("one more",), lambda: None)  # evicts ("filler", 0)
    assert len(compile_cache._entries) <= compile_cache.MAX_ENTRIES
    cached(m.target().cache_key, ("first",), lambda: calls.append("again"))
    assert calls == ["first"]
    cached(m.target().cache_key, ("filler", 0), lambda: calls.append("rebuilt"))
    assert calls == ["first", "rebuilt"]
