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
* ``vbm``, ``rbm``, ``potts``: the small models of the exact evaluation with their
  parameters; ``chain_posterior``: the posterior samplers' data and grid posterior;
  ``triad6_problem``: an ERGM's data and exact MLE.
* ``TraceCounter``: a model function that counts its calls, for the tests that a
  repeated call reuses a compiled program (``from conftest import TraceCounter``).
"""

import contextlib
import functools
from pathlib import Path

import jax
import pytest

jax.config.update("jax_compilation_cache_dir",
                  str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "jax"))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)

#: test files by their time on a cold compilation cache, longest first (per-file sums of
#: a -n 2 --dist loadfile run with --junitxml, 2026-11-27; files under 5 s run after
#: these, in collection order)
LONGEST_FIRST = [
    "test_sampling_compiled.py",  # numba compiles its kernels: ~45 s cold
    "test_terms_compiled.py",
    "test_evaluate_enumeration.py",
    "test_tnt.py",
    "test_estimators_base.py",
    "test_learn_mle.py",
    "test_models.py",
    "test_evaluate_ais.py",
    "test_posterior_sgmcmc.py",
    "test_checkpoint.py",
    "test_evaluate_inputs.py",
    "test_structure_discovery.py",
    "test_kernels_gibbs.py",
    "test_model_surface.py",
    "test_infer_sampler.py",
    "test_estimators_reweighting.py",
    "test_kernels_tempered.py",
    "test_predict.py",
    "test_evaluate_exact.py",
    "test_learn_crf.py",
    "test_kernels_metropolis.py",
    "test_kernels_base.py",
    "test_learn_core.py",
    "test_conditionals.py",
    "test_estimators_pf.py",
    "test_learn_averaging.py",
    "test_sampling.py",
    "test_models_ergm_fit.py",
    "test_ergm_model.py",
    "test_posterior_exchange.py",
    "test_model.py",
    "test_estimator_config.py",
    "test_posterior_reference.py",
    "test_distributed.py",
    "test_domains.py",
    "test_evaluate_pseudo.py",
    "test_evaluate_gaussian.py",
    "test_factors.py",
    "test_models_ergm_large.py",
    "test_covariates.py",
    "test_structural.py",
    "test_kernels_gradient.py",
    "test_infer_coupling.py",
    "test_diagnose.py",
    "test_infer_conditioning.py",
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


# the models of the exact evaluation (test_evaluate_enumeration.py, test_evaluate_exact.py):
# module-scoped, so each of those files traces and compiles them once


@pytest.fixture(scope="module")
def vbm():
    """Spin VBM with fields; W and b have N(0, 1) priors (used by the MAP fit too)."""
    import numpyro_ugm as ugm
    from helpers import normal_params

    m = ugm.UGM(ugm.models.vbm, 9, prior_scale=1.0)
    return m, normal_params(m, 1, 0.6)


@pytest.fixture(scope="module")
def rbm():
    """RBM with 6 visible and 4 hidden units, N(0, 1) parameters."""
    import numpyro_ugm as ugm
    from helpers import normal_params

    m = ugm.UGM(ugm.models.rbm, 6, 4)
    return m, normal_params(m, 2, 1.0)


@pytest.fixture(scope="module")
def potts():
    """A 6-variable 3-label Potts chain (``helpers.potts_chain``), N(0, 1) parameters."""
    import numpyro_ugm as ugm
    from helpers import normal_params, potts_chain

    m = ugm.UGM(potts_chain, 6, 3)
    return m, normal_params(m, 3, 1.0)


@pytest.fixture(scope="module")
def chain_posterior():
    """50 cases of ``helpers.ising_chain`` and its posterior's mean and standard deviation
    by quadrature (``helpers.chain_posterior_data``, computed once per process)."""
    from helpers import chain_posterior_data

    return chain_posterior_data()


@pytest.fixture(scope="module")
def triad6_problem():
    """The triad ERGM on 6 nodes, its θ, 500 graphs drawn from it and their exact MLE
    (``helpers.triad6_problem_data``, computed once per process)."""
    from helpers import triad6_problem_data

    return triad6_problem_data()


class TraceCounter:
    """A numpyro model function that counts its calls (``calls``).

    The Python code of a model runs only when the model is traced (when the ``UGM`` is
    built, when its structure is analyzed, and each time a jitted program calling it is
    traced), never when a compiled program runs. A call of the package that runs a
    program it compiled before therefore makes no call here; one that traces it again
    (a new cache key, a lost cache, a changed static argument) makes some. Eager uses of
    the model count too (drawing the default initial parameters traces it): tests give
    what avoids them. ``unchanged`` checks that no call happens across a block::

        model = TraceCounter(ugm.models.vbm)
        m = ugm.UGM(model, 6)
        ugm.sample(m, params, key, 20)  # traces and compiles
        with model.unchanged("a second call"):
            ugm.sample(m, other_params, other_key, 20)  # must reuse the program
    """

    def __init__(self, model):
        functools.update_wrapper(self, model)
        self.model = model
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.model(*args, **kwargs)

    @contextlib.contextmanager
    def unchanged(self, what="the block"):
        """Assert that the code in the ``with`` block does not call (trace) the model,
        and that something did before (a counter wired to no model would pass unseen;
        tests also check that the first call of what they repeat traced it)."""
        assert self.calls > 0, "the counted model was never traced (test is blind)"
        before = self.calls
        yield
        assert self.calls == before, (
            f"{what} traced the model {self.calls - before} more time(s): it did not reuse "
            "the compiled program")
