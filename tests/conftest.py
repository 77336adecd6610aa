"""Test-session settings.

* The longest test (multi-device, in a subprocess) runs first, so that pytest-xdist's
  other worker gets through the rest meanwhile.
* A persistent JAX compilation cache shared by the tests and the workers: a computation
  compiled by one test (the same model, estimator and shapes under a new learner
  object) is loaded, not recompiled, by the next.
"""

from pathlib import Path

import jax
import pytest

jax.config.update("jax_compilation_cache_dir",
                  str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "jax"))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: "test_sharding" not in item.nodeid)


@pytest.fixture(scope="module")
def spins():
    """40 random ±1 rows of 6 spins (``helpers.spins_data``)."""
    from helpers import spins_data

    return spins_data()
