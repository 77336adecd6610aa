"""The MCMLE loop (``network/estimation/mcmle.py``) against exact answers: a
dyad-independent model sampled exactly (from a poor start, both metrics, both termination
rules), degenerate samples stopping it with the terms named, its argument checks, and
R's ergm (ergmx) on flomarriage ~ edges + triangle."""

import math

import jax
import numpy as np
import pytest
from scipy import special

from numpyro_ugm.network import ErgmDegeneracyError, MCMLEControl
from numpyro_ugm.network.estimation.dyad_independent import (dyad_independent_log_likelihood,
                                                             dyad_independent_mle)
from numpyro_ugm.network.estimation.log_likelihood import log_likelihood_bridge
from numpyro_ugm.network.estimation.mcmle import mcmle
from numpyro_ugm.network.summary import mcmle_fit
from helpers.network import STATNET


def test_mcmle_from_a_poor_start_reaches_the_exact_mle(dyad_model):
    x, observed = dyad_model.design()
    exact = dyad_independent_mle(x, observed)
    fit = mcmle_fit(dyad_model.simulator(x), observed, [2.0, -2.0],
                      jax.random.PRNGKey(0), num_dyads=x.shape[0], names=["edges", "x"])
    record = fit.mcmle
    assert fit.converged and record.converged
    # far from the MLE the observed statistics are outside the sample: Hummel steps < 1
    assert record.step_lengths[0] < 0.5
    assert record.step_lengths[-1] == 1.0
    assert record.hotelling_p_values[0] < 1e-6
    assert np.isfinite(record.convergence_p_values[-1])
    assert record.convergence_p_values[-1] < 0.01
    np.testing.assert_array_equal(record.theta_history[0], [2.0, -2.0])
    # the partial steps stop short of the observed statistics (importance-weighted
    # prediction); the last full lognormal steps nearly reach them
    full = record.step_lengths == 1.0
    assert np.all(np.abs(record.predicted_differences[~full]).max(axis=1) > 1e-3)
    assert np.all(np.abs(record.predicted_differences[-1]) < 0.01 * np.abs(observed))
    mc_se = np.sqrt(np.diag(fit.cov_mcmc))
    assert np.all(mc_se < 0.02)
    assert np.all(np.abs(fit.estimates - exact.theta) < 4.5 * mc_se), (fit.estimates,
                                                                      exact.theta, mc_se)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.cov_model)), exact.stderr, rtol=0.1)
    np.testing.assert_allclose(fit.stderr, exact.stderr, rtol=0.1)
    assert fit.log_likelihood_se < 0.2
    exact_ll = dyad_independent_log_likelihood(fit.estimates, x, observed)
    assert abs(fit.log_likelihood - exact_ll) < 4 * fit.log_likelihood_se + 1e-3
    assert fit.aic == pytest.approx(-2 * fit.log_likelihood + 4)
    assert fit.bic == pytest.approx(-2 * fit.log_likelihood + 2 * math.log(200))


def test_naive_metric_steps_match_the_observed_statistics_under_the_weights(dyad_model):
    """Geyer–Thompson steps solve the importance-weighted moment equation exactly (full
    steps); lognormal ones are its Newton step."""
    x, observed = dyad_model.design()
    exact = dyad_independent_mle(x, observed)
    record = mcmle(dyad_model.simulator(x, seed=2), observed, [2.0, -2.0],
                   jax.random.PRNGKey(0), control=MCMLEControl(metric="naive"))
    assert record.converged
    full = record.step_lengths == 1.0
    assert full.any()
    assert np.all(np.abs(record.predicted_differences[full]) < 1e-6 * np.abs(observed))
    np.testing.assert_allclose(record.theta, exact.theta, atol=0.05)


def test_mcmle_hotelling_termination(dyad_model):
    x, observed = dyad_model.design()
    exact = dyad_independent_mle(x, observed)
    record = mcmle(dyad_model.simulator(x, seed=5), observed, [0.0, 0.0],
                      jax.random.PRNGKey(1), control=MCMLEControl(termination="hotelling"))
    assert record.converged
    assert np.all(record.hotelling_p_values[-2:] >= 1 - math.sqrt(0.5))
    assert record.num_samples[-1] >= 4 * record.num_samples[0]  # grown after the first pass
    np.testing.assert_allclose(record.theta, exact.theta, atol=0.05)


def test_zero_variance_term_stops_naming_it(five_node):
    """A triangle-free observed graph has no MLE: θ_triangle runs off to −∞ until the draws
    have no triangles at all."""
    with pytest.raises(ErgmDegeneracyError, match="triangle") as info:
        mcmle(five_node.exact_simulator(seed=7), [3.0, 0.0], [0.0, 0.0],
                 jax.random.PRNGKey(5), names=["edges", "triangle"])
    assert info.value.terms == ["triangle"]
    assert "zero variance" in str(info.value)
    assert info.value.record is not None and info.value.record.iterations >= 1
    assert info.value.record.theta[1] < -3


def test_stalled_step_length_stops_naming_the_term():
    """A sample flat but for one point a hair off the line: the observed statistics lie
    outside the hull, which s̄ nearly touches, so γ ≈ 0 every time."""
    points = np.column_stack([np.tile([0.0, 1.0], 500), np.zeros(1000)])
    points[0] = [0.5, 1e-7]

    def simulate(theta, key):
        return points[None]

    with pytest.raises(ErgmDegeneracyError, match="outside the convex hull") as info:
        mcmle(simulate, [0.5, 1.0], [0.0, 0.0], jax.random.PRNGKey(0),
                 names=["edges", "triangle"])
    assert info.value.terms == ["triangle"]
    assert "triangle: observed 1" in str(info.value)
    assert info.value.record.iterations == 3
    assert info.value.record.theta_history.shape == (4, 2)
    assert np.all(info.value.record.step_lengths < 1e-4)


def test_linearly_dependent_terms_are_named():
    rng = np.random.default_rng(0)

    def simulate(theta, key):
        e = rng.integers(0, 10, size=(1, 200)).astype(float)
        return np.stack([e, 2 * e, rng.normal(size=(1, 200))], axis=-1)

    with pytest.raises(ErgmDegeneracyError, match="linearly dependent") as info:
        mcmle(simulate, [4.0, 8.0, 0.0], np.zeros(3), jax.random.PRNGKey(0),
                 names=["edges", "twice", "noise"])
    assert info.value.terms == ["edges", "twice"]


def test_bad_arguments_raise_clear_errors(five_node):
    simulate = five_node.exact_simulator()
    key = jax.random.PRNGKey(0)
    with pytest.raises(TypeError, match="simulate must be a callable"):
        mcmle(None, five_node.observed, [0.0, 0.0], key)
    with pytest.raises(ValueError, match=r"theta0 must have shape \(2,\)"):
        mcmle(simulate, five_node.observed, [0.0], key)
    with pytest.raises(ValueError, match="observed holds non-finite"):
        mcmle(simulate, [1.0, np.nan], [0.0, 0.0], key)
    with pytest.raises(ValueError, match="termination must be one of"):
        MCMLEControl(termination="Hummel")
    with pytest.raises(ValueError, match="names must be 2 strings"):
        mcmle(simulate, five_node.observed, [0.0, 0.0], key, names=["edges"])
    with pytest.raises(TypeError, match="rng_key must be one JAX PRNG key"):
        mcmle(simulate, five_node.observed, [0.0, 0.0], 3)
    with pytest.raises(ValueError, match=r"must return an array \(num_chains, num_samples, 2\)"):
        mcmle(lambda theta, key: np.zeros((10, 2)), five_node.observed, [0.0, 0.0], key)
    with pytest.raises(ValueError, match="confidence must lie in"):
        MCMLEControl(confidence=1.5)
    with pytest.raises(ValueError, match="num_dyads must be an integer"):
        log_likelihood_bridge(simulate, [0.0, 0.0], five_node.observed, 10.0, key)
    with pytest.raises(ValueError, match="change_statistics has 3 columns"):
        dyad_independent_mle(np.ones((5, 3)), [1.0, 2.0])


DATA = STATNET


def _flomarriage():
    path = DATA / "flomarriage.npz"
    data = np.load(path, allow_pickle=False)
    return int(data["num_nodes"]), data["edges"]


def _triangle_gibbs(n, num_chains=4, num_draws=1000, sweeps_per_draw=1, seed=0):
    """Edges + triangles Gibbs sampler on n-node graphs (systematic sweeps, chains
    persistent), in numpy."""
    rng = np.random.default_rng(seed)
    adjacency = np.zeros((num_chains, n, n))
    rows, cols = np.triu_indices(n, 1)
    chains = np.arange(num_chains)

    def simulate(theta, key):
        out = np.empty((num_chains, num_draws, 2))
        for t in range(num_draws):
            for _ in range(sweeps_per_draw):
                for i, j in zip(rows, cols):
                    shared = np.einsum("ck,ck->c", adjacency[:, i], adjacency[:, j])
                    p_on = special.expit(theta[0] + theta[1] * shared)
                    value = (rng.random(num_chains) < p_on).astype(float)
                    adjacency[chains, i, j] = value
                    adjacency[chains, j, i] = value
            edges = adjacency.sum((1, 2)) / 2
            triangles = np.einsum("cij,cjk,cki->c", adjacency, adjacency, adjacency) / 6
            out[:, t] = np.stack([edges, triangles], -1)
        return out

    return simulate


@pytest.mark.slow
def test_flomarriage_edges_triangle_agrees_with_ergmx():
    """flomarriage ~ edges + triangle by MCMLE with a numpy Gibbs sampler, against ergmx
    (R ergm's algorithm, its own sampler): estimates within their combined Monte Carlo
    error plus 2 % of a standard error, standard errors within 10 %, log-likelihoods within
    4 combined s.e."""
    ergmx = pytest.importorskip("ergmx")
    nx = pytest.importorskip("networkx")
    n, edges = _flomarriage()
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(map(tuple, edges.tolist()))
    reference = ergmx.ergm(graph, "edges + triangle", seed=1)
    adjacency = nx.to_numpy_array(graph, nodelist=range(n))
    observed = np.array([adjacency.sum() / 2, np.trace(adjacency @ adjacency @ adjacency) / 6])
    fit = mcmle_fit(_triangle_gibbs(n, num_draws=500), observed, [-1.5, 0.0],
                      jax.random.PRNGKey(0), num_dyads=n * (n - 1) // 2,
                      names=["edges", "triangle"])
    print(fit)
    print(reference.summary())
    assert fit.converged
    reference_se = np.sqrt(np.diag(reference._estimate.cov))
    reference_mc = (np.zeros(2) if reference._estimate.mc_cov is None
                    else np.sqrt(np.diag(reference._estimate.mc_cov)))
    mc = np.sqrt(np.diag(fit.cov_mcmc) + reference_mc ** 2)
    assert np.all(np.abs(fit.estimates - reference.params) < 4 * mc + 0.02 * reference_se)
    np.testing.assert_allclose(fit.stderr, reference_se, rtol=0.1)
    combined = math.hypot(fit.log_likelihood_se, reference.loglik_se or 0.0)
    assert abs(fit.log_likelihood - reference.loglik) < 4 * combined + 0.01
