"""ergm's density guard (``network/sampling/guard.py``; issue 46, item 21): chains that
run away to dense graphs stop the adaptive sample with an error naming what happened,
instead of doubling its interval for hours; samples short of their effective size but
below the guard lengthen as before, and a sample that reaches it is never checked."""

import jax
import networkx as nx
import numpy as np
import pytest

from numpyro_ugm.network import (ErgmControl, ErgmDegeneracyError, MCMLEControl,
                                 SamplingControl, fit_ergm)
from numpyro_ugm.network.sampling.guard import (ChainsRanAwayError, DensityGuard,
                                                density_guard)
from numpyro_ugm.network.sampling.simulation import adaptive_simulate


def test_the_guard_is_ergms_rule_and_off_where_it_cannot_fire():
    # max(density_guard_min, density_guard x observed ties), as ergm's MCMLE.density.guard
    assert density_guard(20.0, 10000, 203, 20910).max_ties == 10000
    assert density_guard(20.0, 1000, 203, 20910).max_ties == 4060
    assert density_guard(None, 10000, 203, 20910) is None
    assert density_guard(20.0, 10000, 20, 120) is None  # never above 120 dyads


class _GrowingChains:
    """A stand-in simulator: 2 chains whose statistic (k = 1) drifts by ``drift`` per
    step and never settles (no effective size), their networks holding that many ties
    (``networks()``); records the calls."""

    def __init__(self, drift):
        self.drift, self.x, self.calls = drift, np.array([10.0, 10.0]), []
        self.rng = np.random.default_rng(0)

    def simulate(self, theta, key, num_draws, interval, burnin):
        self.calls.append((num_draws, interval, burnin))
        draws = []
        for _ in range(num_draws):
            self.x = self.x + self.drift * interval + self.rng.normal(size=2)
            draws.append(self.x.copy())
        return np.stack(draws, axis=1)[..., None]

    def networks(self):
        return [np.zeros((max(int(v), 0), 2)) for v in self.x]


def test_runaway_chains_stop_the_adaptive_sample_before_a_longer_interval():
    guard = DensityGuard(500, 10, 1000, 20.0, 500)
    chains = _GrowingChains(drift=1.0)  # 16 draws x 32 steps: 10 + 512 ties > 500
    simulate, current, _ = adaptive_simulate(chains, 16, 32, 0, 8, 2 ** 20, False, guard)
    with pytest.raises(ChainsRanAwayError, match=r"holds 5\d\d ties of 1000 dyads.*"
                       r"guard.* = 500, at interval 32 \(effective sample size 0.0 < 8"
                       ) as caught:
        simulate(np.zeros(1), jax.random.PRNGKey(0))
    assert chains.calls == [(16, 32, 0)] and current["interval"] == 32
    error = caught.value
    assert error.interval == 32 and error.effective_size == 0.0 and min(error.ties) > 500
    # the chains' last draws, for naming the statistics that ran off
    assert error.last_draws.shape == (2, 4, 1) and np.all(error.last_draws > 400)


def test_chains_below_the_guard_lengthen_their_interval_as_before():
    """The same drifting chains with a guard they never reach: the interval doubles up
    to ``max_interval`` and the calls are those of an unguarded sample."""
    calls = []
    for guard in (None, DensityGuard(10 ** 9, 10, 10 ** 10, 20.0, 10 ** 9)):
        chains = _GrowingChains(drift=0.01)
        simulate, current, _ = adaptive_simulate(chains, 16, 1, 0, 8, 8, False, guard)
        simulate(np.zeros(1), jax.random.PRNGKey(0))
        calls.append(chains.calls)
        assert current["interval"] == 8
    assert calls[0] == calls[1] and len(calls[0]) > 3


def test_a_sample_that_reaches_its_effective_size_is_not_checked():
    class Watched(_GrowingChains):
        def simulate(self, theta, key, num_draws, interval, burnin):
            self.calls.append((num_draws, interval, burnin))
            return self.rng.normal(size=(2, num_draws, 1))  # independent: effective

        def networks(self):
            raise AssertionError("the guard looked at a sample that was effective enough")

    chains = Watched(drift=0.0)
    simulate, _, _ = adaptive_simulate(chains, 64, 1, 0, 8, 1024, False,
                                       DensityGuard(1, 1, 10, 20.0, 1))
    assert simulate(np.zeros(1), jax.random.PRNGKey(0)).shape == (2, 64, 1)


def test_a_degenerate_fit_ends_in_seconds_naming_the_statistics_that_ran_off():
    """edges + triangle at θ = (−3, 1) on a 150-node sparse network (256 ties of 11,175
    dyads): the chains run to the complete graph. Before the guard the interval doubled
    (1,024 → 4,096, 15 s) until every chain sat at the complete graph, then the error
    blamed linearly dependent terms; with the default guard (10,000 ties) it stops
    after the first sample, naming edges and triangle with where they ran."""
    graph = nx.gnp_random_graph(150, 0.02, seed=1)
    control = ErgmControl(SamplingControl(samplesize=256), MCMLEControl(max_iterations=2),
                          init=(-3.0, 1.0))
    with pytest.raises(ErgmDegeneracyError, match="ran away to dense graphs") as caught:
        fit_ergm(graph, "edges + triangle", control=control, log_likelihood=False)
    error = caught.value
    assert set(error.terms) == {"edges", "triangle"}
    message = str(error)
    assert "at interval 1024" in message and "effective sample size" in message
    assert "edges: observed 256, sampled range" in message
    assert error.record is not None and error.record.iterations == 1
