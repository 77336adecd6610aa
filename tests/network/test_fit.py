"""fit_ergm / gof_ergm (``network/fit.py``): the one call from a networkx graph to a fitted
ERGM. Dyad-independent fits against R's published numbers; Monte Carlo fits against the
exact MLE of a network small enough to enumerate (both samplers, and with another
estimator); the sparse path of large networks against the dense one; the adaptive sample
and chains the fit runs (``sampling/simulation.py`` as the fit uses it); bad input."""

import itertools

import jax
import networkx as nx
import numpy as np
import pytest

import numpyro_ugm as ugm
from numpyro_ugm import datasets
from numpyro_ugm.network import (ErgmControl, SamplingControl, ergm_statistics, fit_ergm,
                                 gof_ergm, fit as ergm_fit, MCMLEControl)
from numpyro_ugm.network.graphs import graph_edge_list
from numpyro_ugm.network.terms.structural import DEFAULT_DECAY, resolve_terms
from numpyro_ugm.network.terms.term import as_network
from numpyro_ugm.network.sampling.simulation import chain_groups, sparse_simulator
from numpyro_ugm.network.estimation.sparse_statistics import sparse_statistics
from ergm_cases import GWESP, random_network


def _flomarriage():
    return datasets.network("flomarriage")


def test_dyad_independent_fit_is_rs_exact_mle():
    fit = fit_ergm(_flomarriage(), "edges + nodecov('wealth')")
    # R ergm 4: summary(ergm(flomarriage ~ edges + nodecov("wealth")))
    np.testing.assert_allclose(fit.estimates, [-2.594929, 0.010546], atol=2e-6)
    np.testing.assert_allclose(fit.stderr, [0.536056, 0.004674], atol=2e-6)
    assert fit.names == ("edges", "nodecov.wealth")
    assert abs(fit.log_likelihood - -51.5543) < 1e-3
    assert abs(fit.aic - 107.1086) < 1e-3 and abs(fit.bic - 112.6836) < 1e-3
    text = fit.summary()
    assert "nodecov.wealth" in text and "-2.5949" in text
    gof = gof_ergm(fit, 20)
    degree = gof.statistics["degree"]
    observed = np.bincount([d for _, d in nx.Graph(_flomarriage()).degree()],
                           minlength=len(degree.observed))
    np.testing.assert_array_equal(degree.observed[:len(observed)], observed)
    assert degree.simulated.shape[0] == 20


def _small_network():
    """A 6-node network, a numeric attribute, and the exact MLE of edges + triangle +
    nodecov by enumeration of the 2^15 graphs."""
    graph = nx.Graph([(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (4, 5)])
    for v in graph:
        graph.nodes[v]["x"] = float(v % 3)
    formula = "edges + triangle + nodecov('x')"
    net = ugm.network.Network(6, False, {"x": np.array([0, 1, 2, 0, 1, 2], float)})
    graphs = np.array(list(itertools.product([0, 1], repeat=15)), np.float32)
    S = np.asarray(ergm_statistics(graphs, formula, network=net), np.float64)
    observed = np.asarray(ergm_statistics(ugm.network.graph_to_edges(graph)[None]
                                          .astype(np.float32), formula, network=net))[0]
    theta = np.zeros(3)
    for _ in range(50):  # Newton on the exact log-likelihood
        w = np.exp(S @ theta - np.max(S @ theta))
        w /= w.sum()
        mean = w @ S
        cov = (S - mean).T @ ((S - mean) * w[:, None])
        theta = theta + np.linalg.solve(cov, observed - mean)
    eta = S @ theta
    log_lik = observed @ theta - (np.max(eta) + np.log(np.sum(np.exp(eta - np.max(eta)))))
    return graph, formula, theta, np.sqrt(np.diag(np.linalg.inv(cov))), log_lik


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["sparse", "gibbs"])
def test_monte_carlo_fit_reaches_the_exact_mle(sampler):
    graph, formula, exact, exact_se, log_lik = _small_network()
    fit = fit_ergm(graph, formula, control=ErgmControl(SamplingControl(sampler=sampler)),
                   rng_key=jax.random.PRNGKey(3))
    assert fit.converged
    mc = np.sqrt(np.diag(fit.cov_mcmc))
    assert np.all(np.abs(fit.estimates - exact) < 4 * mc + 0.05 * exact_se), (
        fit.estimates, exact, mc)
    np.testing.assert_allclose(fit.stderr, exact_se, rtol=0.15)
    # the bridge log-likelihood (from the dyad-independent part at its MLE)
    assert abs(fit.log_likelihood - log_lik) < 4 * fit.log_likelihood_se + 0.05, (
        fit.log_likelihood, log_lik)


@pytest.mark.slow
def test_another_estimator_by_one_argument():
    graph, formula, exact, exact_se, _ = _small_network()
    fit = fit_ergm(graph, formula, control=ErgmControl(estimator=ugm.PCD(256), num_steps=3000),
                   rng_key=jax.random.PRNGKey(4), log_likelihood=False)
    assert "PCD" in fit.method
    assert np.all(np.abs(fit.estimates - exact) < 0.25 * exact_se), (fit.estimates, exact)


def test_bad_networks_are_refused():
    loop = nx.Graph([(0, 1), (1, 1), (1, 2)])
    with pytest.raises(ValueError, match="self-loop"):
        fit_ergm(loop, "edges + triangle")
    with pytest.raises(ValueError, match="multigraph"):
        fit_ergm(nx.MultiGraph([(0, 1), (0, 1), (1, 2)]), "edges")
    with pytest.raises(ValueError, match="directed networks"):
        fit_ergm(nx.path_graph(4), "edges + mutual")
    with pytest.raises(KeyError, match="'wealth'"):
        fit_ergm(nx.path_graph(4), "edges + nodecov('wealth')")
    graph = nx.path_graph(4)
    nx.set_node_attributes(graph, {0: 1.0, 1: float("nan"), 2: 2.0, 3: 0.0}, "x")
    with pytest.raises(ValueError, match="node 1"):
        fit_ergm(graph, "edges + nodecov('x')")
    with pytest.raises(ValueError, match="edges="):
        fit_ergm(ugm.network.Network(4), "edges")
    with pytest.raises(ValueError, match="self-loops"):
        fit_ergm(ugm.network.Network(4), "edges", edges=[[0, 1], [2, 2]])
    with pytest.raises(ValueError, match="triadic must be a probability"):
        SamplingControl(sampler="sparse", triadic=1.5)
    with pytest.raises(ValueError, match="sparse sampler"):
        SamplingControl(sampler="gibbs", triadic=0.5)
    with pytest.raises(ValueError, match="native=True asks for the compiled sparse"):
        SamplingControl(sampler="gibbs", native=True)
    with pytest.raises(TypeError, match="native must be None, True or False"):
        SamplingControl(native="yes")
    with pytest.raises(ValueError, match="threads"):
        SamplingControl(threads=0)
    with pytest.raises(ValueError, match="init must be a vector of finite values"):
        ErgmControl(init=[0.0, float("nan")])
    with pytest.raises(ValueError, match=r"init must be 2 finite values.*'triangle'"):
        fit_ergm(nx.path_graph(4), "edges + triangle", control=ErgmControl(init=[0.0]))
    with pytest.raises(ValueError, match="cannot reach effective_size=64"):
        SamplingControl(num_chains=4, samplesize=64)
    with pytest.raises(TypeError, match="control must be an ErgmControl"):
        fit_ergm(nx.path_graph(4), "edges + triangle", control=SamplingControl())
    # triadic with a sampler that "auto" resolves to Gibbs (no compiled terms, few dyads)
    with pytest.raises(ValueError, match="this fit uses 'gibbs'"):
        fit_ergm(nx.path_graph(4), "edges + triangle",
                 control=ErgmControl(SamplingControl(triadic=0.5, native=False)))


def test_init_starts_the_mcmle_instead_of_the_mple(monkeypatch):
    graph, formula, exact, _, _ = _small_network()

    real = ergm_fit.dyad_independent_mle

    def no_mple(X, observed, **kwargs):  # the MPLE regresses on every column
        if X.shape[1] == len(exact):
            raise AssertionError("the MPLE was computed although init was given")
        return real(X, observed, **kwargs)  # the bridges' reference (edges only)

    class Started(Exception):
        pass

    def mcmle_fit(simulate, observed, theta0, *args, **options):
        raise Started(theta0)

    monkeypatch.setattr(ergm_fit, "dyad_independent_mle", no_mple)
    monkeypatch.setattr("numpyro_ugm.network.fit.mcmle_fit", mcmle_fit)
    with pytest.raises(Started) as started:
        fit_ergm(graph, formula, control=ErgmControl(SamplingControl(sampler="sparse"),
                                                     init=exact))
    np.testing.assert_array_equal(started.value.args[0], exact)


def test_a_dyad_independent_fit_from_the_edge_list_is_the_exact_one():
    graph, _, _ = random_network(80, 0.05, seed=2)
    formula = "edges + nodematch('group') + nodecov('x')"
    dense = fit_ergm(graph, formula)
    # Newton from the sampled MLE
    sparse = fit_ergm(graph, formula, control=ErgmControl(mple_samplesize=200))
    # "auto" takes the sparse path above sparse_limit dyads
    auto = fit_ergm(graph, formula, control=ErgmControl(SamplingControl(sparse_limit=1000)))
    np.testing.assert_allclose(auto.estimates, sparse.estimates, rtol=1e-9)
    limited = fit_ergm(graph, formula, control=ErgmControl(SamplingControl(
        sparse_limit=1000, dyad_draws_limit=1000)))
    with pytest.raises(NotImplementedError, match="dyad_draws_limit = 1000"):
        gof_ergm(limited, 10)
    # the same MLE; the dense observed statistics are float32 sums
    np.testing.assert_allclose(sparse.estimates, dense.estimates, rtol=1e-6)
    np.testing.assert_allclose(sparse.stderr, dense.stderr, rtol=1e-6)
    assert sparse.log_likelihood == pytest.approx(dense.log_likelihood, abs=1e-6)
    assert sparse.bic == pytest.approx(dense.bic, abs=1e-5)
    with pytest.raises(ValueError, match="mple_samplesize"):
        ErgmControl(mple_samplesize="all")


@pytest.mark.slow
def test_a_gwesp_fit_from_the_edge_list_follows_the_dense_one():
    graph, _, _ = random_network(80, 0.05, seed=2)
    options = {"sampling": SamplingControl(samplesize=4 * 64, interval=256, effective_size=None),
               "mcmle": MCMLEControl(max_iterations=2)}
    dense = fit_ergm(graph, GWESP, control=ErgmControl(mple_samplesize=None, **options))
    every = fit_ergm(graph, GWESP, control=ErgmControl(mple_samplesize=10 ** 9, **options))
    # every dyad: the same start, statistics and reference, so the same chains
    np.testing.assert_allclose(every.estimates, dense.estimates, atol=1e-4)
    assert every.log_likelihood == pytest.approx(dense.log_likelihood, abs=1e-3)
    sampled = fit_ergm(graph, GWESP, control=ErgmControl(mple_samplesize=500, **options))
    combined = np.hypot(sampled.stderr, dense.stderr)
    assert np.all(np.abs(sampled.estimates - dense.estimates) < 3 * combined)
    assert abs(sampled.log_likelihood - dense.log_likelihood) < 4 * np.hypot(
        sampled.log_likelihood_se, dense.log_likelihood_se) + 0.5


def test_the_sparse_simulators_threads_do_not_change_its_draws():
    """The chains run in groups on threads; each chain draws from its own stream, so one
    thread and two give the same statistics (4 chains: groups of 2 and 2)."""
    graph, formula, _, _, _ = _small_network()
    net, ties = as_network(graph), graph_edge_list(graph)  # as fit_ergm reads a graph
    terms = resolve_terms(formula, net, DEFAULT_DECAY)
    observed = sparse_statistics(net, terms, ties)
    assert chain_groups(4, 3) == [(0, 2), (2, 1), (3, 1)]
    draws = []
    for threads in (1, 2):
        simulator = sparse_simulator(net, terms, ties, observed, 4, burnin=50,
                                     threads=threads)
        draws.append(simulator.simulate(np.array([-1.0, 0.2, 0.3]), jax.random.PRNGKey(5),
                                        6, 20))
        assert len(simulator.networks()) == 4
    np.testing.assert_array_equal(draws[0], draws[1])
    assert np.ptp(draws[0][:, :, 0]) > 0


class _AutocorrelatedChains:
    """A stand-in simulator: persistent AR(1) chains (lag-one correlation 0.99 per step,
    stationary N(0, 1)) of 2 statistics, started at ``start``; records the calls."""

    def __init__(self, start=None, num_chains=4):
        self.calls, self.rng = [], np.random.default_rng(0)
        shape = (num_chains, 2)
        self.x = self.rng.normal(size=shape) if start is None else np.full(shape, start)

    def _run(self, steps):
        rho = 0.99 ** steps
        self.x = rho * self.x + np.sqrt(1 - rho ** 2) * self.rng.normal(size=self.x.shape)

    def simulate(self, theta, key, num_draws, interval, burnin):
        self.calls.append((num_draws, interval, burnin))
        self._run(burnin)
        draws = []
        for _ in range(num_draws):
            self._run(interval)
            draws.append(self.x)
        return np.stack(draws, axis=1)


def test_the_sample_is_continued_and_thinned_until_it_is_effective_enough():
    from numpyro_ugm.network.sampling.simulation import adaptive_simulate
    from numpyro_ugm.network.sampling.moments import multivariate_effective_size

    chains = _AutocorrelatedChains()
    simulate, current, _ = adaptive_simulate(chains, 64, 1, 16, 64, 1024, False)
    stats = simulate(np.zeros(2), jax.random.PRNGKey(0))
    # 256 draws at interval 1 have an effective size of about 256 * 0.01 / 1.99 = 1.3:
    # the chains are continued (no burn-in again) and thinned, the interval doubling
    intervals = [c[1] for c in chains.calls]
    assert intervals[0] == 1 and intervals[-1] >= 32, intervals
    assert all(b == a or b == 2 * a for a, b in zip(intervals, intervals[1:]))
    assert [c[2] for c in chains.calls] == [16] + [0] * (len(intervals) - 1)
    assert multivariate_effective_size(stats) >= 64
    assert current["interval"] in (intervals[-1], 2 * intervals[-1])
    assert current["burnin"] == 16 * current["interval"]
    # the next sample starts at the interval reached, after its burn-in
    reached = current["interval"]
    simulate(np.zeros(2), jax.random.PRNGKey(1))
    assert chains.calls[len(intervals)][1:] == (reached, 16 * reached)
    # the cap ends the growth; without a target one call
    capped = _AutocorrelatedChains()
    simulate, current, _ = adaptive_simulate(capped, 64, 1, 16, 64, 4, False)
    simulate(np.zeros(2), jax.random.PRNGKey(0))
    assert max(c[1] for c in capped.calls) <= 4
    assert current["interval"] == 4 and current["burnin"] == 64
    fixed = _AutocorrelatedChains()
    simulate, _, _ = adaptive_simulate(fixed, 64, 1, 16, None, 1024, False)
    simulate(np.zeros(2), jax.random.PRNGKey(0))
    assert len(fixed.calls) == 1


def test_the_trust_regions_stop_ends_the_adaptive_sample_and_rewind_restores_it():
    """``stop`` (the MCMLE's test that a step lost likelihood) ends the sampling at once,
    at a new θ first screening the burn-in drawn as a sample; ``rewind`` restores the
    simulator's chains and the interval reached before the last change of θ."""
    from numpyro_ugm.network.sampling.simulation import adaptive_simulate

    # a burn-in (16 steps) shorter than a sample (64 draws): the first sample is screened
    chains = _AutocorrelatedChains()
    simulate, _, _ = adaptive_simulate(chains, 64, 1, 16, 64, 1024, False)
    seen = []

    def stop(stats):
        seen.append(stats.shape)
        return True

    stats = simulate(np.zeros(2), jax.random.PRNGKey(0), stop=stop)
    assert chains.calls == [(64, 1, 16)] and stats.shape[1] <= 64 and len(seen) == 1

    # a longer one (64 steps): drawn as 16 draws 4 apart and screened; when it passes,
    # the sample proper follows without a second burn-in (and the interval grows)
    chains = _AutocorrelatedChains()
    rewound = []
    chains.rewind = lambda: rewound.append(True)
    simulate, current, rewind = adaptive_simulate(chains, 16, 1, 64, 64, 1024, False)
    simulate(np.zeros(2), jax.random.PRNGKey(0), stop=lambda stats: False)
    assert chains.calls[:2] == [(16, 4, 0), (16, 1, 0)]
    reached = dict(current)
    assert reached["interval"] > 1
    chains.calls.clear()
    stats = simulate(np.ones(2), jax.random.PRNGKey(1), stop=lambda stats: True)
    assert chains.calls == [(16, reached["burnin"] // 16, 0)] and stats.shape[1] == 16
    current.update(interval=7, burnin=7)  # as if the sample at θ = 1 had adapted
    rewind()
    assert rewound == [True] and current == reached


def test_a_start_that_is_not_stationary_is_dropped():
    from numpyro_ugm.network.sampling.simulation import adaptive_simulate
    from numpyro_ugm.network.sampling.moments import geweke_p_value

    # chains 30 standard deviations from equilibrium, a burn-in far too short (0.99^16):
    # the decay is found and cut, and the rest is centred on the equilibrium
    chains = _AutocorrelatedChains(start=30.0, num_chains=8)
    simulate, _, _ = adaptive_simulate(chains, 64, 4, 16, 64, 1024, False)
    stats = simulate(np.zeros(2), jax.random.PRNGKey(0))
    drawn = sum(c[0] for c in chains.calls)
    assert stats.shape[1] < drawn  # something was dropped (the thinning halves too)
    assert geweke_p_value(stats) > 0.2
    assert np.all(np.abs(stats.mean(axis=(0, 1))) < 0.5), stats.mean(axis=(0, 1))
    # without the check, the sample of the first call is far off
    fixed = _AutocorrelatedChains(start=30.0, num_chains=8)
    simulate, _, _ = adaptive_simulate(fixed, 64, 4, 16, None, 1024, False)
    assert np.all(simulate(np.zeros(2), jax.random.PRNGKey(0)).mean(axis=(0, 1)) > 3)


def test_the_chains_burn_in_only_when_theta_changes():
    """Repeated samples at one θ (an iteration's repeats, the final sample, a bridge's
    repeats) continue the chains already there; a new θ burns in again."""
    from numpyro_ugm.network.sampling.simulation import NetworkSimulator

    burnins = []

    def run(theta, key, num_draws, interval, burnin):
        burnins.append(burnin)
        return np.zeros((2, num_draws, 1))

    simulator = NetworkSimulator(run, list, "stand-in", 16, {"now": None})
    for theta in (0.0, 0.0, 0.5, 0.5, 0.0):
        simulator.simulate(np.array([theta]), None, 3, 1)
    assert burnins == [16, 0, 16, 0, 16]


def test_rewind_returns_the_chains_to_before_the_last_change_of_theta():
    """The MCMLE's trust region rewinds the chains after a rejected step: their state
    and θ go back to where the last θ change found them (so the next call burns in)."""
    from numpyro_ugm.network.sampling.simulation import NetworkSimulator

    chains, burnins = {"now": 0}, []

    def run(theta, key, num_draws, interval, burnin):  # each call moves the chains on
        burnins.append(burnin)
        chains["now"] += 1
        return np.zeros((2, num_draws, 1))

    simulator = NetworkSimulator(run, list, "stand-in", 16, chains)
    simulator.simulate(np.array([0.0]), None, 3, 1)
    simulator.simulate(np.array([0.0]), None, 3, 1)
    simulator.simulate(np.array([0.5]), None, 3, 1)
    simulator.simulate(np.array([0.5]), None, 3, 1)
    assert chains["now"] == 4
    simulator.rewind()
    assert chains["now"] == 2  # where θ = 0 left them
    simulator.simulate(np.array([0.25]), None, 3, 1)
    assert burnins == [16, 0, 16, 0, 16]
    simulator.simulate(np.array([0.0]), None, 3, 1)
    assert burnins[-1] == 16
