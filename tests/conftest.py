"""Test-session settings.

* Files run longest first (their times in ``durations.json``, written by
  ``make test-durations``), so that with ``pytest -n 2 --dist loadfile`` the two workers
  finish together: the short files fill in at the end.
  pytest-xdist would otherwise order files by their number of tests
  (``--loadscope-reorder``, its default), which put the one-test sharding file last.
* A persistent JAX compilation cache shared by the tests and the workers: a computation
  compiled by one test (the same model, estimator and shapes under a new learner
  object) is loaded, not recompiled, by the next.
* ``spins``: the learner's small data set (``helpers.learning.spins_data``).
* ``vbm``, ``rbm``, ``potts``: the small models of the exact evaluation with their
  parameters; ``chain_posterior``: the posterior samplers' data and grid posterior;
  ``triad6_problem``: an ERGM's data and exact MLE.
* ``count_traces``: wraps a model function in a :class:`TraceCounter`, which counts its
  calls, for the tests that a repeated call reuses a compiled program.
"""

import collections
import contextlib
import functools
import json
import os
from pathlib import Path

import jax
import pytest

#: the data folder beside the repository (CI's ../shared/data), when there is one: the large
#: sets are read from it instead of downloaded (tests that need them skip without it)
_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if _DATA.is_dir():
    os.environ.setdefault("NUMPYRO_UGM_DATA", str(_DATA))

jax.config.update("jax_compilation_cache_dir",
                  str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "jax"))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)

#: per-file seconds of the last ``make test-durations`` run (cold compilation cache):
#: files run longest first, so that with ``pytest -n 2 --dist loadfile`` the two workers
#: finish together (files not listed run after them, in collection order)
DURATIONS = Path(__file__).resolve().parent / "durations.json"


def pytest_addoption(parser):
    parser.addoption("--store-durations", action="store_true",
                     help=f"write each test file's time to {DURATIONS.name}")
    parser.addoption("--compile-report", action="store", default=None, metavar="FILE",
                     help="write, per test file, the seconds JAX spent tracing, lowering "
                          "and compiling, and its compilations and cache hits, to FILE "
                          "(one FILE.<worker> per xdist worker)")


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: keep the order below
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    seconds = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    root = Path(str(config.rootpath))
    items.sort(key=lambda item: -seconds.get(item.path.relative_to(root).as_posix(), 0.0))


#: seconds per test file of this session (setup, call and teardown of every test)
_SECONDS = collections.Counter()


def pytest_runtest_logreport(report):
    _SECONDS[report.location[0]] += report.duration


#: per test file: JAX's trace, lowering and compile seconds, compilations and cache hits
#: (``--compile-report``), attributed to the file whose test is running
_COMPILES = collections.defaultdict(collections.Counter)
_RUNNING = ["(collection)"]
_EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "trace_s",
           "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
           "/jax/core/compile/backend_compile_duration": "compile_s",
           "/jax/compilation_cache/cache_retrieval_time_sec": "cache_load_s"}


def _on_duration(event, seconds, **_):
    if event in _EVENTS:
        _COMPILES[_RUNNING[0]][_EVENTS[event]] += seconds
        if event == "/jax/core/compile/backend_compile_duration":
            _COMPILES[_RUNNING[0]]["compiles"] += 1


def _on_event(event, **_):
    if event == "/jax/compilation_cache/cache_hits":
        _COMPILES[_RUNNING[0]]["cache_hits"] += 1


def pytest_sessionstart(session):
    if session.config.getoption("compile_report"):
        jax.monitoring.register_event_duration_secs_listener(_on_duration)
        jax.monitoring.register_event_listener(_on_event)


def pytest_runtest_setup(item):
    _RUNNING[0] = item.location[0]


def pytest_sessionfinish(session):
    report = session.config.getoption("compile_report")
    if report:
        worker = getattr(session.config, "workerinput", {}).get("workerid", "main")
        Path(f"{report}.{worker}").write_text(json.dumps(
            {f: {k: round(v, 3) for k, v in c.items()} for f, c in _COMPILES.items()},
            indent=1) + "\n")
    if session.config.getoption("store_durations") and not hasattr(session.config,
                                                                   "workerinput"):
        DURATIONS.write_text(json.dumps(
            {f: round(t, 2) for f, t in sorted(_SECONDS.items(), key=lambda kv: -kv[1])},
            indent=1) + "\n")


@pytest.fixture(scope="module")
def spins():
    """40 random ±1 rows of 6 spins (``helpers.learning.spins_data``)."""
    from helpers.learning import spins_data

    return spins_data()


# the models of the exact evaluation (test_evaluate_enumeration.py, test_evaluate_exact.py):
# module-scoped, so each of those files traces and compiles them once


@pytest.fixture(scope="module")
def vbm():
    """Spin VBM with fields; W and b have N(0, 1) priors (used by the MAP fit too)."""
    import numpyro_ugm as ugm
    from helpers.models import normal_params

    m = ugm.UGM(ugm.models.vbm, 9, prior_scale=1.0)
    return m, normal_params(m, 1, 0.6)


@pytest.fixture(scope="module")
def rbm():
    """RBM with 6 visible and 4 hidden units, N(0, 1) parameters."""
    import numpyro_ugm as ugm
    from helpers.models import normal_params

    m = ugm.UGM(ugm.models.rbm, 6, 4)
    return m, normal_params(m, 2, 1.0)


@pytest.fixture(scope="module")
def potts():
    """A 6-variable 3-label Potts chain (``helpers.models.potts_chain``), N(0, 1) parameters."""
    import numpyro_ugm as ugm
    from helpers.models import normal_params, potts_chain

    m = ugm.UGM(potts_chain, 6, 3)
    return m, normal_params(m, 3, 1.0)


@pytest.fixture(scope="module")
def chain_posterior():
    """50 cases of ``helpers.posterior.ising_chain`` and its posterior's mean and standard deviation
    by quadrature (``helpers.posterior.chain_posterior_data``, computed once per process)."""
    from helpers.posterior import chain_posterior_data

    return chain_posterior_data()


@pytest.fixture(scope="module")
def triad6_problem():
    """The triad ERGM on 6 nodes, its θ, 500 graphs drawn from it and their exact MLE
    (``helpers.triad6_problem_data``, computed once per process)."""
    from helpers.network import triad6_problem_data

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


@pytest.fixture
def count_traces():
    """``count_traces(model)``: the model function wrapped in a :class:`TraceCounter`."""
    return TraceCounter
