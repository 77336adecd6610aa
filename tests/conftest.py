"""Test-session settings.

* Files run longest first (``LONGEST_FIRST``, measured), so that with
  ``pytest -n 2 --dist loadfile`` the two workers finish together: the short files
  fill in at the end.
  pytest-xdist would otherwise order files by their number of tests
  (``--loadscope-reorder``, its default), which put the one-test sharding file last.
* A persistent JAX compilation cache shared by the tests and the workers: a computation
  compiled by one test (the same model, estimator and shapes under a new learner
  object) is loaded, not recompiled, by the next.
* ``spins``: the learner's small data set (``helpers.spins_data``).
"""

from pathlib import Path

import jax
import pytest

jax.config.update("jax_compilation_cache_dir",
                  str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "jax"))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)

#: test files by their time on a cold compilation cache, longest first (from
#: -n 2 --dist loadfile --durations=0, summed per file, 2026-11-25; files not listed
#: run after these, in collection order)
LONGEST_FIRST = [
    "test_estimators_base.py",
    "test_models_ergm.py",
    "test_kernels_gibbs.py",
    "test_evaluate_exact.py",
    "test_evaluate_ais.py",
    "test_learn.py",
    "test_posterior.py",
    "test_estimators_pf.py",
    "test_estimator_config.py",
    "test_infer.py",
    "test_kernels_metropolis.py",
    "test_learn_crf.py",
    "test_structure.py",
    "test_checkpoint.py",
    "test_sharding.py",  # one test, in a subprocess (PCD learners: about 15 s)
    "test_estimators_tempering.py",
    "test_evaluate_inputs.py",
    "test_model_surface.py",
    "test_kernels_tempered.py",
    "test_conditionals.py",
    "test_learn_core.py",
    "test_predict.py",
    "test_end_to_end.py",
    "test_kernels_base.py",
    "test_domains.py",
    "test_evaluate_pseudo.py",
    "test_model.py",
    "test_sampling.py",
    "test_runloop.py",
    "test_checks.py",
]


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: keep the order below
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable


@pytest.fixture(scope="module")
def spins():
    """40 random ±1 rows of 6 spins (``helpers.spins_data``)."""
    from helpers import spins_data

    return spins_data()
