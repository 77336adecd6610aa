"""ERGM Monte Carlo maximum likelihood at the level of the statistics
(``numpyro_ugm.network.estimation.mcmle`` and the modules beside it), checked against exact answers:

* a dyad-independent model (200 dyads, a random design), sampled exactly: its MLE, standard
  errors and log-likelihood are exact by Newton on Σ_d log(1 + exp(θ·x_d));
* the edges + triangles model on 5 nodes (1,024 graphs), enumerated: exact MLE, Fisher
  information and log Z; sampled exactly (i.i.d. draws) and by random-scan Gibbs (one
  dyad per draw, strongly autocorrelated);
* R's ergm on flomarriage ~ edges + nodecov("wealth") (exact, dyad independent);
* the Hummel step length against a convex hull membership test (monotone chain), the tolerance
  region's boundary distance against a dense parametrization of the ellipse.

The samplers are numpy closures with their own generators (persistent state for Gibbs),
called with the module's keys, which they ignore.
"""

import itertools
import json
import math
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import optimize, special

from numpyro_ugm.network import ErgmDegeneracyError, ErgmFit, MCMLEControl
from numpyro_ugm.network.estimation.dyad_independent import (dyad_independent_log_likelihood,
                                                      dyad_independent_mle)
from numpyro_ugm.network.estimation.hotelling import distance_to_ellipsoid_boundary
from numpyro_ugm.network.estimation.log_likelihood import log_likelihood_bridge
from numpyro_ugm.network.estimation.mcmle import mcmle
from numpyro_ugm.network.estimation.step import (geyer_thompson_step, hummel_step_length,
                                                 lognormal_step)
from numpyro_ugm.network.estimation.standard_errors import StandardErrors, mcmle_standard_errors
from numpyro_ugm.network.summary import dyad_independent_fit, mcmle_fit

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "networks"


# --- a dyad-independent model ------------------------------------------------------------


def _design(num_dyads=200, seed=0):
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(num_dyads), rng.normal(size=num_dyads)])
    y = rng.random(num_dyads) < special.expit(x @ np.array([-1.0, 0.8]))
    return x, x.T @ y


def _bernoulli_simulator(x, num_chains=2, num_draws=500, seed=1):
    rng = np.random.default_rng(seed)

    def simulate(theta, key):
        p = special.expit(x @ np.asarray(theta))
        return (rng.random((num_chains, num_draws, x.shape[0])) < p).astype(float) @ x

    return simulate


# --- the 5-node edges + triangles model, enumerated -------------------------------------


def _five_node_statistics():
    """(1024, 2): edges and triangles of every graph on 5 nodes (bit d of the index: dyad d
    of the 10 pairs in lexicographic order)."""
    pairs = list(itertools.combinations(range(5), 2))
    index = {p: i for i, p in enumerate(pairs)}
    bits = (np.arange(1024)[:, None] >> np.arange(10)) & 1
    triangles = np.zeros(1024)
    for a, b, c in itertools.combinations(range(5), 3):
        triangles += bits[:, index[a, b]] * bits[:, index[a, c]] * bits[:, index[b, c]]
    return np.column_stack([bits.sum(1), triangles]).astype(float)


STATS5 = _five_node_statistics()
OBSERVED5 = np.array([5.0, 2.0])


def _exact_moments(theta):
    lw = STATS5 @ theta
    log_z = special.logsumexp(lw)
    w = np.exp(lw - log_z)
    mean = w @ STATS5
    centered = STATS5 - mean
    return mean, (centered * w[:, None]).T @ centered, log_z


def _exact_log_likelihood(theta):
    return float(theta @ OBSERVED5 - _exact_moments(theta)[2])


def _exact_mle():
    theta = np.zeros(2)
    for _ in range(50):
        mean, cov, _ = _exact_moments(theta)
        theta = theta + np.linalg.solve(cov, OBSERVED5 - mean)
    mean, cov, _ = _exact_moments(theta)
    assert np.allclose(mean, OBSERVED5, atol=1e-10)
    return theta, np.linalg.inv(cov)


THETA5, COV5 = _exact_mle()


def _exact_simulator(num_chains=2, num_draws=1000, seed=0):
    rng = np.random.default_rng(seed)

    def simulate(theta, key):
        lw = STATS5 @ np.asarray(theta)
        p = np.exp(lw - special.logsumexp(lw))
        return STATS5[rng.choice(1024, size=(num_chains, num_draws), p=p)]

    return simulate


def _gibbs_simulator(num_chains=4, num_draws=1000, seed=0, flips=1):
    """Random-scan Gibbs on the 10 dyads, ``flips`` single-dyad updates per draw, chains
    persistent across calls."""
    rng = np.random.default_rng(seed)
    state = rng.integers(0, 1024, size=num_chains)

    def simulate(theta, key):
        nonlocal state
        theta = np.asarray(theta)
        out = np.empty((num_chains, num_draws, 2))
        dyads = rng.integers(0, 10, size=(num_draws, flips, num_chains))
        uniforms = rng.random((num_draws, flips, num_chains))
        for t in range(num_draws):
            for f in range(flips):
                bit = 1 << dyads[t, f]
                on, off = state | bit, state & ~bit
                p_on = special.expit((STATS5[on] - STATS5[off]) @ theta)
                state = np.where(uniforms[t, f] < p_on, on, off)
            out[:, t] = STATS5[state]
        return out

    return simulate


# --- the Hummel step length and the tolerance boundary -----------------------------------


def _convex_hull_2d(points):
    """Vertices of the convex hull of 2-D points, counter-clockwise (Andrew's monotone
    chain)."""
    pts = sorted(map(tuple, points))

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


def _hull_step_by_bisection(points, observed, margin):
    """The largest γ in [0, 1] with mean + (1 + margin) γ (observed − mean) in the hull of
    ``points`` (inside every edge's half-plane), by bisection."""
    vertices = _convex_hull_2d(points)
    edges = np.roll(vertices, -1, axis=0) - vertices
    mean = points.mean(axis=0)

    def inside(gamma):
        x = mean + (1 + margin) * gamma * (observed - mean) - vertices
        return np.all(edges[:, 0] * x[:, 1] - edges[:, 1] * x[:, 0] >= 0)

    if inside(1.0):
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if inside(middle) else (low, middle)
    return low


@pytest.mark.parametrize("observed", [[0.3, -0.2], [2.5, 0.4], [-4.0, -3.0], [0.0, 6.0]])
def test_hummel_step_length_matches_a_convex_hull_bisection(observed):
    rng = np.random.default_rng(3)
    points = rng.normal(size=(300, 2)) @ np.array([[1.0, 0.6], [0.0, 0.8]]) + [5.0, 1.0]
    observed = np.asarray(observed) + [5.0, 1.0]
    expected = _hull_step_by_bisection(points, observed, 0.05)
    gamma = hummel_step_length(points[None], observed, margin=0.05)
    assert gamma == pytest.approx(expected, abs=1e-6)
    if np.linalg.norm(observed - points.mean(0)) > 3:
        assert gamma < 0.9  # far points are out of the hull: a real restriction


def test_hummel_step_length_is_zero_outside_a_flat_sample():
    points = np.column_stack([np.arange(10.0), 2 * np.arange(10.0)])  # a segment
    assert hummel_step_length(points, [4.0, 9.0]) == 0.0
    assert hummel_step_length(points, [4.0, 8.0]) == 1.0


def test_distance_to_the_tolerance_boundary_matches_a_dense_search():
    rng = np.random.default_rng(0)
    for _ in range(5):
        a = rng.normal(size=(2, 2))
        shape = a @ a.T + 0.3 * np.eye(2)  # ellipse {x : xᵀ shape⁻¹ x = 1}
        b = rng.normal(size=(2, 2))
        cov = b @ b.T + 0.1 * np.eye(2)
        point = np.linalg.cholesky(shape) @ rng.uniform(-0.5, 0.5, size=2)  # inside
        angles = np.linspace(0, 2 * np.pi, 200001)
        boundary = (np.linalg.cholesky(shape) @ np.stack([np.cos(angles), np.sin(angles)])).T
        diff = boundary - point
        brute = np.min(np.einsum("ni,ij,nj->n", diff, np.linalg.inv(cov), diff))
        got = distance_to_ellipsoid_boundary(point, cov, np.linalg.inv(shape))
        assert got == pytest.approx(brute, rel=1e-6)
    # at the centre: the smallest boundary distance along the ellipse's principal axes
    got = distance_to_ellipsoid_boundary(np.zeros(2), np.eye(2), np.diag([1 / 4, 1]))
    assert got == pytest.approx(1.0)


# --- dyad-independent exact fits ------------------------------------------------------------


def test_dyad_independent_mle_is_the_maximum_with_exact_standard_errors():
    x, observed = _design()
    mle = dyad_independent_mle(x, observed)
    assert mle.converged

    def negative(theta):
        return -dyad_independent_log_likelihood(theta, x, observed)

    reference = optimize.minimize(negative, np.zeros(2), method="Nelder-Mead",
                                  options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 5000})
    np.testing.assert_allclose(mle.theta, reference.x, atol=1e-5)
    assert mle.log_likelihood == pytest.approx(-reference.fun, abs=1e-9)
    # the inverse of a finite-difference Hessian of the log-likelihood
    h = 1e-4
    hessian = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            ei_, ej = np.eye(2)[i] * h, np.eye(2)[j] * h
            hessian[i, j] = (negative(mle.theta + ei_ + ej) - negative(mle.theta + ei_ - ej)
                             - negative(mle.theta - ei_ + ej)
                             + negative(mle.theta - ei_ - ej)) / (4 * h * h)
    np.testing.assert_allclose(mle.cov, np.linalg.inv(hessian), rtol=1e-4)


def test_dyad_independent_fit_matches_r_ergm_on_flomarriage():
    path = DATA / "flomarriage.npz"
    if not path.exists():
        pytest.skip("flomarriage data not found")
    data = np.load(path, allow_pickle=False)
    n = int(data["num_nodes"])
    wealth = data["attr_wealth"]
    i, j = np.triu_indices(n, 1)
    x = np.column_stack([np.ones(i.size), wealth[i] + wealth[j]])
    adjacency = np.zeros((n, n), bool)
    adjacency[data["edges"][:, 0], data["edges"][:, 1]] = True
    adjacency |= adjacency.T
    observed = x.T @ adjacency[i, j]
    fit = dyad_independent_fit(x, observed, ["edges", "nodecov.wealth"])
    # R: summary(ergm(flomarriage ~ edges + nodecov("wealth"))) (ergm 4)
    np.testing.assert_allclose(fit.estimates, [-2.594929, 0.010546], rtol=1e-4)
    np.testing.assert_allclose(fit.stderr, [0.536056, 0.004674], rtol=1e-3)
    assert fit.null_deviance == pytest.approx(166.4, abs=0.05)
    assert fit.deviance == pytest.approx(103.1, abs=0.05)
    assert fit.aic == pytest.approx(107.1, abs=0.05)
    assert fit.bic == pytest.approx(112.7, abs=0.05)
    np.testing.assert_allclose(fit.z, [-4.841, 2.256], atol=1e-3)
    text = fit.summary()
    assert "Maximum Likelihood Results" in text and "nodecov.wealth" in text
    assert "on 120  degrees of freedom" in text and "on 118  degrees of freedom" in text


# --- MCMLE on the dyad-independent model --------------------------------------------------


def test_mcmle_from_a_poor_start_reaches_the_exact_mle():
    x, observed = _design()
    exact = dyad_independent_mle(x, observed)
    fit = mcmle_fit(_bernoulli_simulator(x), observed, [2.0, -2.0],
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


def test_naive_metric_steps_match_the_observed_statistics_under_the_weights():
    """Geyer–Thompson steps solve the importance-weighted moment equation exactly (full
    steps); lognormal ones are its Newton step."""
    x, observed = _design()
    exact = dyad_independent_mle(x, observed)
    record = mcmle(_bernoulli_simulator(x, seed=2), observed, [2.0, -2.0],
                   jax.random.PRNGKey(0), control=MCMLEControl(metric="naive"))
    assert record.converged
    full = record.step_lengths == 1.0
    assert full.any()
    assert np.all(np.abs(record.predicted_differences[full]) < 1e-6 * np.abs(observed))
    np.testing.assert_allclose(record.theta, exact.theta, atol=0.05)


def test_lognormal_step_is_exact_for_normal_statistics():
    """Statistics s ~ N(μ, Σ) under θ are N(μ + Σ Δθ, Σ) under θ + Δθ, so the lognormal
    step to a target ξ is Σ⁻¹ (ξ − μ); the Geyer–Thompson step estimates the same."""
    rng = np.random.default_rng(3)
    mu, root = np.array([5.0, -1.0, 2.0]), np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0],
                                                     [0.2, -0.3, 0.5]])
    sigma = root @ root.T
    stats = (mu + rng.normal(size=(4, 50_000, 3)) @ root.T)
    target = mu + np.array([0.3, -0.2, 0.1])
    expected = np.linalg.solve(sigma, target - mu)
    np.testing.assert_allclose(lognormal_step(stats, target), expected, atol=0.03)
    np.testing.assert_allclose(geyer_thompson_step(stats, target)[0], expected, atol=0.05)
    with pytest.raises(ValueError, match="metric must be one of"):
        MCMLEControl(metric="Hummel")


def test_mcmle_hotelling_termination():
    x, observed = _design()
    exact = dyad_independent_mle(x, observed)
    record = mcmle(_bernoulli_simulator(x, seed=5), observed, [0.0, 0.0],
                      jax.random.PRNGKey(1), control=MCMLEControl(termination="hotelling"))
    assert record.converged
    assert np.all(record.hotelling_p_values[-2:] >= 1 - math.sqrt(0.5))
    assert record.num_draws[-1] >= 4 * record.num_draws[0]  # grown after the first pass
    np.testing.assert_allclose(record.theta, exact.theta, atol=0.05)


# --- the enumerated 5-node edges + triangles model ---------------------------------------


def test_fit_with_exact_draws_matches_the_enumeration():
    fit = mcmle_fit(_exact_simulator(seed=4), OBSERVED5, [-2.0, 2.0],
                      jax.random.PRNGKey(2), num_dyads=10, names=["edges", "triangle"])
    assert fit.converged
    mc_se = np.sqrt(np.diag(fit.cov_mcmc))
    exact_se = np.sqrt(np.diag(COV5))
    np.testing.assert_allclose(mc_se, exact_se / math.sqrt(fit.final_statistics[..., 0].size),
                               rtol=0.2)  # i.i.d. draws: I⁻¹/n
    assert np.all(np.abs(fit.estimates - THETA5) < 4.5 * mc_se)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.cov_model)), exact_se, rtol=0.1)
    exact_ll = _exact_log_likelihood(fit.estimates)
    assert abs(fit.log_likelihood - exact_ll) < 4 * fit.log_likelihood_se + 1e-3
    assert fit.log_likelihood_se < 0.05


def test_fit_with_gibbs_draws_matches_the_enumeration():
    fit = mcmle_fit(_gibbs_simulator(num_chains=4, num_draws=250, seed=3), OBSERVED5,
                      [-2.0, 2.0], jax.random.PRNGKey(7), num_dyads=10,
                    control=MCMLEControl(num_bridges=8))
    assert fit.converged
    mc_se = np.sqrt(np.diag(fit.cov_mcmc))
    iid_se = np.sqrt(np.diag(COV5) / fit.final_statistics[..., 0].size)
    assert np.all(mc_se > 2 * iid_se)  # the autocorrelation is counted
    assert np.all(np.abs(fit.estimates - THETA5) < 4.5 * mc_se)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.cov_model)), np.sqrt(np.diag(COV5)),
                               rtol=0.15)
    exact_ll = _exact_log_likelihood(fit.estimates)
    assert abs(fit.log_likelihood - exact_ll) < 4 * fit.log_likelihood_se + 1e-3


def test_gibbs_draws_have_more_monte_carlo_error_than_exact_draws():
    """Same number of draws at the exact MLE: the autocorrelated Gibbs sample's Monte Carlo
    variance of θ̂ is several times that of i.i.d. draws, and its MCMC % larger."""
    gibbs = _gibbs_simulator(num_chains=4, num_draws=100, seed=1)
    gibbs(THETA5, None)  # burn-in
    errors = {}
    for name, simulate in [("gibbs", gibbs), ("exact", _exact_simulator(4, 100, seed=1))]:
        stats = simulate(THETA5, None)
        errors[name] = mcmle_standard_errors(stats, OBSERVED5, THETA5)
    exact_se = np.sqrt(np.diag(COV5))
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
        assert np.all(np.abs(errors[name].estimates - THETA5)
                      < 4.5 * np.sqrt(np.diag(errors[name].cov_mcmc)))
        np.testing.assert_allclose(np.sqrt(np.diag(errors[name].cov_model)), exact_se,
                                   rtol=0.25)


def test_bridge_log_likelihood_matches_the_enumeration():
    theta = np.array([-0.4, 0.6])
    bridge = log_likelihood_bridge(_exact_simulator(2, 500, seed=2), theta, OBSERVED5, 10,
                                      jax.random.PRNGKey(3))
    assert abs(bridge.log_likelihood - _exact_log_likelihood(theta)) < 4 * bridge.stderr
    assert 0 < bridge.stderr < 0.05
    assert bridge.log_normalizer == pytest.approx(_exact_moments(theta)[2],
                                                  abs=4 * bridge.stderr)
    # θ = 0: log Z(0) = N log 2 exactly
    zero = log_likelihood_bridge(_exact_simulator(1, 50), np.zeros(2), OBSERVED5, 10,
                                    jax.random.PRNGKey(3), num_bridges=2)
    assert zero.log_likelihood == pytest.approx(-10 * math.log(2)) and zero.stderr == 0


# --- the summary -----------------------------------------------------------------------------


def test_summary_prints_the_coefficient_table_and_fit_statistics():
    fit = mcmle_fit(_exact_simulator(seed=6), OBSERVED5, [-1.0, 1.0],
                      jax.random.PRNGKey(4), num_dyads=10,
                      names=["edges", "gwesp.fixed.0.5"])
    text = str(fit)
    assert text == fit.summary()
    assert text.startswith("Monte Carlo Maximum Likelihood Results:")
    header = [line for line in text.splitlines() if "Estimate" in line][0]
    assert header.split() == ["Estimate", "Std.", "Error", "MCMC", "%", "z", "value",
                              "Pr(>|z|)"]
    rows = {line.split()[0]: line.split() for line in text.splitlines()
            if line.startswith(("edges", "gwesp"))}
    assert set(rows) == {"edges", "gwesp.fixed.0.5"}
    for i, name in enumerate(fit.names):
        assert float(rows[name][1]) == pytest.approx(fit.estimates[i], abs=1e-4)
        assert float(rows[name][2]) == pytest.approx(fit.stderr[i], abs=1e-4)
        assert float(rows[name][4]) == pytest.approx(fit.z[i], abs=1e-3)
    assert f"AIC: {fit.aic:.4f}" in text and f"BIC: {fit.bic:.4f}" in text
    assert f"Log-likelihood: {fit.log_likelihood:.4f}" in text
    assert "Converged after" in text and "Signif. codes" in text
    assert f"step length {fit.mcmle.step_lengths[-1]:.3g}" in text
    assert "on 10  degrees of freedom" in text and "on 8  degrees of freedom" in text
    record = json.loads(json.dumps(fit.to_dict()))
    assert record["names"] == ["edges", "gwesp.fixed.0.5"]
    assert record["estimates"] == pytest.approx(fit.estimates.tolist())
    assert len(record["mcmle"]["step_lengths"]) == fit.iterations
    assert "ErgmFit(MCMLE" in repr(fit)


def test_summary_stars_and_small_p_values():
    errors = StandardErrors(np.array([5.0, 0.1]), np.array([1.0, 1.0]), np.eye(2), np.eye(2),
                            np.zeros((2, 2)), np.array([3.0, 0.0]), np.array([5.0, 0.1]),
                            np.array([5.7e-7, 0.92]), np.eye(2), 1.0, 100.0)
    fit = ErgmFit(names=("a", "bb"), standard_errors=errors,
                     log_likelihood=float("nan"), log_likelihood_se=float("nan"),
                     aic=float("nan"), bic=float("nan"), num_dyads=10, converged=False,
                     iterations=3, message="reached max_iterations = 3")
    lines = fit.summary().splitlines()
    row_a = next(line for line in lines if line.startswith("a "))
    assert row_a.endswith("<1e-04 ***") and " 3 " in row_a
    row_b = next(line for line in lines if line.startswith("bb"))
    assert row_b.endswith("0.920")
    assert "Log-likelihood: not computed." in lines
    assert any(line.startswith("Did NOT converge after 3") for line in lines)


# --- degeneracy ----------------------------------------------------------------------------


def test_trust_region_rejects_a_step_into_the_degenerate_region_and_converges():
    """From θ0 = (−2.5, −0.5) the sample barely has triangles, so the lognormal step puts
    about 800 on the triangle term (the complete graph in every draw): without the trust
    region the fit stops there. With it, that step's estimated log-likelihood change is
    far below 0: rejected, the chains rewound, a share of the step tried; the fit reaches
    the exact MLE."""
    start = np.array([-2.5, -0.5])
    with pytest.raises(ErgmDegeneracyError, match="zero variance"):
        mcmle(_exact_simulator(), OBSERVED5, start, jax.random.PRNGKey(0),
              names=["edges", "triangle"], control=MCMLEControl(max_loss=None))

    exact = _exact_simulator()
    calls = {"stop": 0, "rewind": 0}

    def simulate(theta, key, stop=None):
        calls["stop"] += stop is not None
        return exact(theta, key)

    def rewind():
        calls["rewind"] += 1

    fit = mcmle_fit(simulate, OBSERVED5, start, jax.random.PRNGKey(0), num_dyads=10,
                    names=["edges", "triangle"], log_likelihood=False, rewind=rewind)
    record = fit.mcmle
    assert fit.converged
    assert record.rejected[1] and not record.rejected[0] and not record.rejected[-1]
    assert calls["rewind"] == record.rejected.sum()
    assert calls["stop"] >= record.iterations - 1  # every sample but the first is screened
    # the rejected samples lost likelihood (by the exact log-likelihood too), and the
    # share tried next lies on the rejected step, closer to the last accepted θ
    for t in np.flatnonzero(record.rejected):
        accepted = record.theta_history[np.flatnonzero(~record.rejected[:t])[-1]]
        assert record.log_likelihood_gains[t] < -1.0
        assert (_exact_log_likelihood(record.theta_history[t])
                < _exact_log_likelihood(accepted) - 1.0)
        step, tried = record.theta_history[t] - accepted, record.theta_history[t + 1] - accepted
        share = tried @ step / (step @ step)
        assert 0.01 <= share <= 0.5 and np.allclose(tried, share * step)
        assert np.isnan(record.step_lengths[t]) and np.isnan(record.tolerance_distances[t])
    assert np.isnan(record.log_likelihood_gains[0])
    assert f"The trust region rejected {record.rejected.sum()} step(s)" in str(fit)
    assert fit.to_dict()["mcmle"]["rejected"] == record.rejected.tolist()
    mc_se = np.sqrt(np.diag(fit.cov_mcmc))
    assert np.all(np.abs(fit.estimates - THETA5) < 4.5 * mc_se + 0.02), (fit.estimates, THETA5)


def test_trust_region_gives_up_when_every_step_loses():
    """A sample whose mean runs far past s_obs at every θ but the start: each step is
    rejected; after max_rejections the fit stops naming the terms."""
    base = np.random.default_rng(0).normal(size=(2, 200, 2))

    def simulate(theta, key):
        if np.allclose(theta, 0.0):
            return base
        return base + 1e5 * np.sign(theta)  # the chains run away from any step

    with pytest.raises(ErgmDegeneracyError, match="steps in a row") as info:
        mcmle(simulate, [0.5, 0.5], [0.0, 0.0], jax.random.PRNGKey(0),
              names=["edges", "triangle"], control=MCMLEControl(max_rejections=3))
    record = info.value.record
    assert record.rejected.tolist() == [False, True, True, True]
    assert np.all(record.log_likelihood_gains[1:] < -1.0)


def test_zero_variance_term_stops_naming_it():
    """A triangle-free observed graph has no MLE: θ_triangle runs off to −∞ until the draws
    have no triangles at all."""
    with pytest.raises(ErgmDegeneracyError, match="triangle") as info:
        mcmle(_exact_simulator(seed=7), [3.0, 0.0], [0.0, 0.0],
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


# --- argument checks ----------------------------------------------------------------------


def test_bad_arguments_raise_clear_errors():
    simulate = _exact_simulator()
    key = jax.random.PRNGKey(0)
    with pytest.raises(TypeError, match="simulate must be a callable"):
        mcmle(None, OBSERVED5, [0.0, 0.0], key)
    with pytest.raises(ValueError, match=r"theta0 must have shape \(2,\)"):
        mcmle(simulate, OBSERVED5, [0.0], key)
    with pytest.raises(ValueError, match="observed holds non-finite"):
        mcmle(simulate, [1.0, np.nan], [0.0, 0.0], key)
    with pytest.raises(ValueError, match="termination must be one of"):
        MCMLEControl(termination="Hummel")
    with pytest.raises(ValueError, match="names must be 2 strings"):
        mcmle(simulate, OBSERVED5, [0.0, 0.0], key, names=["edges"])
    with pytest.raises(TypeError, match="rng_key must be one JAX PRNG key"):
        mcmle(simulate, OBSERVED5, [0.0, 0.0], 3)
    with pytest.raises(ValueError, match=r"must return an array \(num_chains, num_draws, 2\)"):
        mcmle(lambda theta, key: np.zeros((10, 2)), OBSERVED5, [0.0, 0.0], key)
    with pytest.raises(ValueError, match="confidence must lie in"):
        MCMLEControl(confidence=1.5)
    with pytest.raises(ValueError, match="num_dyads must be an integer"):
        log_likelihood_bridge(simulate, [0.0, 0.0], OBSERVED5, 10.0, key)
    with pytest.raises(ValueError, match="change_statistics has 3 columns"):
        dyad_independent_mle(np.ones((5, 3)), [1.0, 2.0])


# --- slow statistical checks ----------------------------------------------------------------


@pytest.mark.slow
def test_monte_carlo_errors_are_calibrated_under_gibbs_sampling():
    """Over 30 independent Gibbs fits (persistent chains, sample growth, final sample), the
    spread of θ̂ around the exact MLE matches the reported Monte Carlo standard errors, and
    the bridge log-likelihood's error matches its standard error."""
    errors, reported, ll_z = [], [], []
    for seed in range(30):
        fit = mcmle_fit(_gibbs_simulator(num_chains=4, num_draws=500, seed=100 + seed),
                          OBSERVED5, [-2.0, 2.0], jax.random.PRNGKey(seed),
                          num_dyads=10,
                    control=MCMLEControl(num_bridges=8))
        assert fit.converged
        errors.append(fit.estimates - THETA5)
        reported.append(np.diag(fit.cov_mcmc))
        ll_z.append((fit.log_likelihood - _exact_log_likelihood(fit.estimates))
                    / fit.log_likelihood_se)
        np.testing.assert_allclose(np.sqrt(np.diag(fit.cov_model)), np.sqrt(np.diag(COV5)),
                                   rtol=0.15)
    z = np.asarray(errors) / np.sqrt(np.asarray(reported))
    assert np.all(np.abs(z.mean(0)) < 0.6), z.mean(0)
    assert np.all((0.6 < z.std(0)) & (z.std(0) < 1.5)), z.std(0)
    assert 0.5 < np.std(ll_z) < 1.6 and abs(np.mean(ll_z)) < 0.8, ll_z


def _flomarriage():
    path = DATA / "flomarriage.npz"
    if not path.exists():
        pytest.skip("flomarriage data not found")
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
