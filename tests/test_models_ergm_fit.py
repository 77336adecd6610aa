"""fit_ergm / gof_ergm (models/ergm_fit.py): the one call from a networkx graph to a
fitted ERGM. Dyad-independent fits against R's published numbers; Monte Carlo fits
against the exact MLE of a network small enough to enumerate (both samplers, and with
another estimator); goodness of fit against networkx; bad input."""

import itertools

import jax
import networkx as nx
import numpy as np
import pytest

import numpyro_ugm as ugm
from numpyro_ugm import datasets
from numpyro_ugm.models import ergm_statistics, fit_ergm, gof_ergm


def _flomarriage():
    try:
        return datasets.network("flomarriage")
    except FileNotFoundError:
        pytest.skip("the shipped networks are not beside the repository")


def test_dyad_independent_fit_is_rs_exact_mle():
    fit = fit_ergm(_flomarriage(), "edges + nodecov('wealth')")
    # R ergm 4: summary(ergm(flomarriage ~ edges + nodecov("wealth")))
    np.testing.assert_allclose(fit.estimates, [-2.594929, 0.010546], atol=2e-6)
    np.testing.assert_allclose(fit.stderr, [0.536056, 0.004674], atol=2e-6)
    assert fit.names == ["edges", "nodecov.wealth"]
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
    net = ugm.models.Network(6, False, {"x": np.array([0, 1, 2, 0, 1, 2], float)})
    graphs = np.array(list(itertools.product([0, 1], repeat=15)), np.float32)
    S = np.asarray(ergm_statistics(graphs, formula, network=net), np.float64)
    observed = np.asarray(ergm_statistics(ugm.models.graph_to_edges(graph)[None]
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
    fit = fit_ergm(graph, formula, sampler=sampler, rng_key=jax.random.PRNGKey(3))
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
    fit = fit_ergm(graph, formula, estimator=ugm.PCD(256), num_steps=3000,
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
        fit_ergm(ugm.models.Network(4), "edges")
    with pytest.raises(ValueError, match="self-loops"):
        fit_ergm(ugm.models.Network(4), "edges", edges=[[0, 1], [2, 2]])


class _AutocorrelatedChains:
    """A stand-in simulator whose draws, ``interval`` steps apart, are AR(1) with lag-one
    correlation 0.99 ** interval (2 chains, 256 draws, 2 statistics); records the calls."""

    def __init__(self):
        self.calls, self.rng = [], np.random.default_rng(0)

    def simulate(self, theta, key, num_draws, interval, burnin):
        self.calls.append((num_draws, interval, burnin))
        rho = 0.99 ** interval
        x = np.zeros((2, num_draws, 2))
        x[:, 0] = self.rng.normal(size=(2, 2))
        for t in range(1, num_draws):
            x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho ** 2) * self.rng.normal(size=(2, 2))
        return x


def test_the_interval_grows_until_the_sample_is_effective_enough():
    from numpyro_ugm.models.ergm_fit import _adaptive_simulate
    from numpyro_ugm.models.ergm_sampled_statistics import multivariate_effective_size

    chains = _AutocorrelatedChains()
    simulate, current = _adaptive_simulate(chains, 256, 1, 16, 64, 1024, False)
    stats = simulate(np.zeros(2), jax.random.PRNGKey(0))
    # at interval 1 the effective size is about 512 * 0.01 / 1.99 = 2.6: the interval
    # jumps by a power of two at least as large as 64 / ESS, the burn-in with it
    intervals = [c[1] for c in chains.calls]
    assert intervals[0] == 1 and len(intervals) >= 2 and intervals[1] >= 16
    assert all(np.log2(i).is_integer() for i in intervals)
    assert [c[2] for c in chains.calls] == [16 * i for i in intervals]
    assert multivariate_effective_size(stats) >= 64
    assert current["interval"] == intervals[-1]
    # later samples start at the interval reached; the cap ends the growth
    simulate(np.zeros(2), jax.random.PRNGKey(1))
    assert chains.calls[len(intervals)][1] == intervals[-1]
    capped = _AutocorrelatedChains()
    simulate, current = _adaptive_simulate(capped, 256, 1, 16, 64, 4, False)
    simulate(np.zeros(2), jax.random.PRNGKey(0))
    assert [c[1] for c in capped.calls] == [1, 4] and current["burnin"] == 64
    fixed = _AutocorrelatedChains()
    simulate, _ = _adaptive_simulate(fixed, 256, 1, 16, None, 1024, False)
    simulate(np.zeros(2), jax.random.PRNGKey(0))
    assert len(fixed.calls) == 1


def test_multivariate_effective_size_is_the_geometric_mean_over_directions():
    from numpyro_ugm.models.ergm_sampled_statistics import multivariate_effective_size

    rng = np.random.default_rng(1)
    iid = rng.normal(size=(4, 2048, 3))
    assert 0.8 * 8192 < multivariate_effective_size(iid) <= 8192
    # one statistic of three made 64 times slower (each value repeated 64 times): about
    # 8192 / 64^(1/3) = 2048, where the per-direction minimum would say 128
    slow = iid.copy()
    slow[..., 0] = np.repeat(iid[:, ::64, 0], 64, axis=1)
    got = multivariate_effective_size(slow)
    assert 1200 < got < 3000, got
    constant = iid.copy()
    constant[..., 2] = 1.0
    assert 0.8 * 8192 < multivariate_effective_size(constant) <= 8192
