"""Simulations at a fitted θ̂ (``network/diagnostics/estimate_sample.py``, gof_ergm;
issue 46, item 1): the chains start from the fit's final sample at θ̂ (not a bridge's
end), their effective size is reported, and a mean away from the observed statistics
(the MLE's defining property) is a warning; the numbers against an enumeration of every
network of 6 nodes and against an AR(1) process's known effective size."""

import itertools
import warnings

import jax
import networkx as nx
import numpy as np
import pytest

from numpyro_ugm.network import ergm_statistics, fit_ergm, gof_ergm
from numpyro_ugm.network.diagnostics.estimate_sample import check_estimate_sample
from numpyro_ugm.network.terms.term import Network


def test_an_independent_sample_at_the_observed_mean_passes():
    rng = np.random.default_rng(0)
    stats = rng.normal([10.0, -3.0], [2.0, 1.0], size=(4, 100, 2))
    check = check_estimate_sample(stats, [10.0, -3.0], ["a", "b"])
    assert check.message == ""
    assert 250 < check.effective_size <= 400
    np.testing.assert_allclose(check.mc_stderr, np.array([2.0, 1.0]) / 20, rtol=0.2)


def test_a_mean_off_the_observed_statistics_is_named():
    rng = np.random.default_rng(1)
    stats = rng.normal([10.0, -3.0], 1.0, size=(4, 100, 2))
    check = check_estimate_sample(stats, [10.0, -2.5], ["edges", "triangle"])
    assert "triangle" in check.message and "edges" not in check.message
    assert check.z[1] == pytest.approx(-10, abs=2.5)  # 0.5 / (1/20)


def test_correlated_draws_have_the_effective_size_of_an_ar1_process():
    """ρ = 0.9: ESS = n (1 − ρ)/(1 + ρ) ≈ n / 19, reported as too correlated to read."""
    rng = np.random.default_rng(2)
    rho, c, d = 0.9, 8, 2000
    x = np.zeros((c, d, 1))
    x[:, 0, 0] = rng.normal(size=c) / np.sqrt(1 - rho ** 2)
    for t in range(1, d):
        x[:, t, 0] = rho * x[:, t - 1, 0] + rng.normal(size=c)
    check = check_estimate_sample(x, [0.0], ["s"])
    assert check.effective_size == pytest.approx(c * d * (1 - rho) / (1 + rho), rel=0.3)
    assert "too correlated" in check.message


def test_gof_of_a_monte_carlo_fit_samples_at_the_estimate():
    """A 6-node edges + triangle fit: gof's simulated mean statistics against their
    expectation at the estimate by enumeration of the 2^15 networks, its effective size
    reported with the table; the chains restart from the final sample even when moved
    away after the fit (as the log-likelihood's bridges move them)."""
    graph = nx.Graph([(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (4, 5)])
    formula = "edges + triangle"
    fit = fit_ergm(graph, formula, rng_key=jax.random.PRNGKey(0))
    info = fit.network_fit
    assert info.final_state is not None
    # move the chains far from θ̂ (a bridge's end would be between θ̂ and the reference)
    info.simulator.simulate(np.array([6.0, 0.0]), jax.random.PRNGKey(5), 1, 64, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        gof = gof_ergm(fit, 400, rng_key=jax.random.PRNGKey(2))
    graphs = np.array(list(itertools.product([0, 1], repeat=15)), np.float32)
    S = np.asarray(ergm_statistics(graphs, formula, network=Network(6)), np.float64)
    w = np.exp(S @ fit.estimates - np.max(S @ fit.estimates))
    w /= w.sum()
    expected = w @ S
    sd = np.sqrt(w @ (S - expected) ** 2)
    simulated = gof.statistics["model"].simulated
    assert gof.effective_size is not None and gof.effective_size > 20
    error = sd / np.sqrt(gof.effective_size)
    assert np.all(np.abs(simulated.mean(0) - expected) < 4 * error), (
        simulated.mean(0), expected, error)
    assert "Effective sample size" in gof.table()


class _AR1Chains:
    """A stand-in simulator: 4 persistent AR(1) chains (lag-one correlation 0.95 per
    step) of one statistic; each chain's network is one tie labelled with the chain's
    current value and draw number, so a network can be matched to its statistic."""

    def __init__(self):
        self.x, self.rng, self.drawn = np.zeros(4), np.random.default_rng(0), 0
        self.calls = []

    def restore(self, state):
        pass

    def simulate(self, theta, key, num_draws, interval, burnin):
        self.calls.append((num_draws, interval, burnin))
        out = []
        for _ in range(num_draws):
            for _ in range(interval + burnin):
                self.x = 0.95 * self.x + np.sqrt(1 - 0.95 ** 2) * self.rng.normal(size=4)
            burnin = 0
            out.append(self.x.copy())
        return np.stack(out, 1)[..., None]

    def networks(self):
        return [np.array([[v, c]]) for c, v in enumerate(self.x)]


def test_the_draws_at_the_estimate_lengthen_their_interval_until_effective():
    """Draws 1 step apart (effective size about n · 0.05 / 1.95) are continued and
    thinned, the interval doubling, until the effective size reaches the target; every
    network stays paired with its statistic through the cut and the thinning, and the
    count is topped up to num_sims."""
    from numpyro_ugm.network.diagnostics.estimate_sample import simulate_at_estimate
    from numpyro_ugm.network.sampling.moments import multivariate_effective_size

    chains = _AR1Chains()
    draws = simulate_at_estimate(chains, np.zeros(1), None, 198, 1, 0,
                                 jax.random.PRNGKey(0), effective_size=50,
                                 max_interval=1024)
    assert draws.interval >= 16 and draws.effective_size >= 50
    assert draws.statistics.shape == (4, 50, 1) and len(draws.networks) == 198
    assert multivariate_effective_size(draws.statistics) == draws.effective_size
    by_chain = draws.statistics[..., 0].ravel()[:198]  # chain by chain, as the networks
    np.testing.assert_array_equal([net[0, 0] for net in draws.networks], by_chain)
    assert [int(net[0, 1]) for net in draws.networks] == [c for c in range(4)
                                                          for _ in range(50)][:198]
    # without a target the interval stays; a sample effective enough is kept as drawn
    fixed = simulate_at_estimate(_AR1Chains(), np.zeros(1), None, 198, 1, 0,
                                 jax.random.PRNGKey(0))
    assert fixed.interval == 1 and fixed.effective_size is None
    apart = [simulate_at_estimate(_AR1Chains(), np.zeros(1), None, 198, 64, 0,
                                  jax.random.PRNGKey(0), effective_size=target,
                                  max_interval=1024) for target in (None, 50)]
    assert apart[1].interval == 64 and apart[1].effective_size >= 50
    np.testing.assert_array_equal(apart[0].statistics, apart[1].statistics)


def test_gof_lengthens_a_short_interval_and_reports_it():
    """gof_ergm(fit, 200, interval=1): one Gibbs sweep between draws gave an effective
    size far below a quarter of the draws and a warning; now the interval doubles until
    it is reached, and the table says how far apart the draws are. effective_size=0
    keeps the interval given."""
    graph = nx.Graph([(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (4, 5)])
    fit = fit_ergm(graph, "edges + triangle", rng_key=jax.random.PRNGKey(0),
                   log_likelihood=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no "too correlated" warning
        gof = gof_ergm(fit, 200, interval=1, rng_key=jax.random.PRNGKey(3))
    assert gof.interval > 1 and gof.effective_size >= 50
    assert f"(draws {gof.interval} steps apart)" in gof.table()
    with pytest.warns(RuntimeWarning, match="too correlated"):
        kept = gof_ergm(fit, 200, interval=1, effective_size=0,
                        rng_key=jax.random.PRNGKey(3))
    assert kept.interval == 1 and kept.effective_size < 50
    with pytest.raises(ValueError, match="effective_size"):
        gof_ergm(fit, 200, effective_size=-1)
