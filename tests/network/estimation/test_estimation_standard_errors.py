"""Standard errors of the Monte Carlo MLE (``network/estimation/standard_errors.py``, through
``mcmle_fit``) on the enumerated 5-node edges + triangles model: exact and Gibbs draws
against the exact MLE and Fisher information, and calibrated Monte Carlo errors."""

import math

import jax
import numpy as np
import pytest

from numpyro_ugm.network import MCMLEControl
from numpyro_ugm.network.estimation.standard_errors import mcmle_standard_errors
from numpyro_ugm.network.summary import mcmle_fit


def test_fit_with_exact_draws_matches_the_enumeration(five_node):
    fit = mcmle_fit(five_node.exact_simulator(seed=4), five_node.observed, [-2.0, 2.0],
                      jax.random.PRNGKey(2), num_dyads=10, names=["edges", "triangle"])
    assert fit.converged
    mc_se = np.sqrt(np.diag(fit.cov_mcmc))
    exact_se = np.sqrt(np.diag(five_node.cov))
    np.testing.assert_allclose(mc_se, exact_se / math.sqrt(fit.final_statistics[..., 0].size),
                               rtol=0.2)  # i.i.d. draws: I⁻¹/n
    assert np.all(np.abs(fit.estimates - five_node.theta) < 4.5 * mc_se)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.cov_model)), exact_se, rtol=0.1)
    exact_ll = five_node.log_likelihood(fit.estimates)
    assert abs(fit.log_likelihood - exact_ll) < 4 * fit.log_likelihood_se + 1e-3
    assert fit.log_likelihood_se < 0.05


def test_fit_with_gibbs_draws_matches_the_enumeration(five_node):
    fit = mcmle_fit(five_node.gibbs_simulator(num_chains=4, num_draws=250, seed=3),
                    five_node.observed, [-2.0, 2.0], jax.random.PRNGKey(7), num_dyads=10,
                    control=MCMLEControl(num_bridges=8))
    assert fit.converged
    mc_se = np.sqrt(np.diag(fit.cov_mcmc))
    iid_se = np.sqrt(np.diag(five_node.cov) / fit.final_statistics[..., 0].size)
    assert np.all(mc_se > 2 * iid_se)  # the autocorrelation is counted
    assert np.all(np.abs(fit.estimates - five_node.theta) < 4.5 * mc_se)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.cov_model)), np.sqrt(np.diag(five_node.cov)),
                               rtol=0.15)
    exact_ll = five_node.log_likelihood(fit.estimates)
    assert abs(fit.log_likelihood - exact_ll) < 4 * fit.log_likelihood_se + 1e-3


def test_gibbs_draws_have_more_monte_carlo_error_than_exact_draws(five_node):
    """Same number of draws at the exact MLE: the autocorrelated Gibbs sample's Monte Carlo
    variance of θ̂ is several times that of i.i.d. draws, and its MCMC % larger."""
    gibbs = five_node.gibbs_simulator(num_chains=4, num_draws=100, seed=1)
    gibbs(five_node.theta, None)  # burn-in
    errors = {}
    for name, simulate in [("gibbs", gibbs), ("exact", five_node.exact_simulator(4, 100, seed=1))]:
        stats = simulate(five_node.theta, None)
        errors[name] = mcmle_standard_errors(stats, five_node.observed, five_node.theta)
    exact_se = np.sqrt(np.diag(five_node.cov))
    ratio = np.diag(errors["gibbs"].cov_mcmc) / np.diag(errors["exact"].cov_mcmc)
    assert np.all(ratio > 3), ratio
    assert np.all(errors["gibbs"].mcmc_percent > errors["exact"].mcmc_percent)
    assert np.all(errors["exact"].mcmc_percent <= 1)
    for result in errors.values():  # ergm's MCMC %: the share of the total standard error
        model_se = np.sqrt(np.diag(result.cov_model))
        np.testing.assert_allclose(result.stderr ** 2,
                                   model_se ** 2 + np.diag(result.cov_mcmc))
        np.testing.assert_array_equal(result.mcmc_percent,
                                      np.round(100 * (1 - model_se / result.stderr)))
    for name in errors:
        assert np.all(np.abs(errors[name].estimates - five_node.theta)
                      < 4.5 * np.sqrt(np.diag(errors[name].cov_mcmc)))
        np.testing.assert_allclose(np.sqrt(np.diag(errors[name].cov_model)), exact_se,
                                   rtol=0.25)


@pytest.mark.slow
def test_monte_carlo_errors_are_calibrated_under_gibbs_sampling(five_node):
    """Over 30 independent Gibbs fits (persistent chains, sample growth, final sample), the
    spread of θ̂ around the exact MLE matches the reported Monte Carlo standard errors, and
    the bridge log-likelihood's error matches its standard error."""
    errors, reported, ll_z = [], [], []
    for seed in range(30):
        fit = mcmle_fit(five_node.gibbs_simulator(num_chains=4, num_draws=500, seed=100 + seed),
                          five_node.observed, [-2.0, 2.0], jax.random.PRNGKey(seed),
                          num_dyads=10,
                    control=MCMLEControl(num_bridges=8))
        assert fit.converged
        errors.append(fit.estimates - five_node.theta)
        reported.append(np.diag(fit.cov_mcmc))
        ll_z.append((fit.log_likelihood - five_node.log_likelihood(fit.estimates))
                    / fit.log_likelihood_se)
        np.testing.assert_allclose(np.sqrt(np.diag(fit.cov_model)),
                                   np.sqrt(np.diag(five_node.cov)), rtol=0.15)
    z = np.asarray(errors) / np.sqrt(np.asarray(reported))
    assert np.all(np.abs(z.mean(0)) < 0.6), z.mean(0)
    assert np.all((0.6 < z.std(0)) & (z.std(0) < 1.5)), z.std(0)
    assert 0.5 < np.std(ll_z) < 1.6 and abs(np.mean(ll_z)) < 0.8, ll_z
