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
