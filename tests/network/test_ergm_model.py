"""The ERGM (numpyro_ugm/network/model.py) against brute force: its declared blocks
(matchings) against the analysis, the conditionals from its change statistics, log Z and
expectations by enumerating the 2^6 graphs on 4 nodes, estimator gradients, and learning
to the exact MLE. (Its statistics: terms/test_structural.py; graphs as data:
test_graphs.py; Gibbs with covariate terms, its colors and user factors:
test_ergm_model_gibbs.py; MPLE and the degeneracy check:
estimation/test_estimation_mple.py; the brute-force statistics and the shared models:
``helpers``.)"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from helpers.network import TRIAD, brute_statistics
from helpers.network import ergm_model as model

import numpyro_ugm as ugm
from numpyro_ugm.model.validation import validate_data
from numpyro_ugm import structure
from numpyro_ugm.conditionals import (LogDensity, conditional_logits,
                                      exact_conditional_logits, linear_combination)
from numpyro_ugm.evaluate import exact
from numpyro_ugm.models import ergm
from numpyro_ugm.network import (STATISTICS, change_statistics, edges_to_adjacency,
                                 ergm_statistics, mple)


# --- brute force ---------------------------------------------------------------------


def all_graphs(n):
    """Every graph on n nodes as edge data (2^(n(n-1)/2), n(n-1)/2)."""
    e = n * (n - 1) // 2
    return np.array(list(itertools.product([0, 1], repeat=e)), np.int8)


def brute_table(n, statistics, decay=0.5):
    graphs = all_graphs(n)
    A = edges_to_adjacency(graphs)
    return graphs, np.array([[brute_statistics(a, decay)[s] for s in statistics]
                             for a in A], np.float64)


def brute_moments(n, statistics, theta, decay=0.5):
    """log Z, E[s] and Cov[s] by enumeration in float64."""
    _, S = brute_table(n, statistics, decay)
    logits = S @ np.asarray(theta, np.float64)
    log_z = np.logaddexp.reduce(logits)
    p = np.exp(logits - log_z)
    mean = p @ S
    cov = (S - mean).T @ ((S - mean) * p[:, None])
    return log_z, mean, cov


@pytest.fixture(scope="module")
def triad4():
    return model(4, TRIAD)


# --- the declared blocks ---------------------------------------------------------------


def _assert_matchings(m, n):
    i, j = np.triu_indices(n, 1)
    covered = []
    for block in m.target().blocks:
        idx = np.arange(len(i)) if block["y"] is None else block["y"]
        nodes = np.concatenate([i[idx], j[idx]])
        assert len(np.unique(nodes)) == len(nodes)  # node-disjoint: a matching
        covered += list(idx)
    assert sorted(covered) == list(range(len(i)))


def _found_structure(n, statistics):
    """The structure the generic analysis finds from the log-potential alone (what the
    model's declared coloring must respect)."""
    m = model(n, statistics)
    k = len(statistics)
    return structure.analyze(m.target().log_potential, m.target().state_sites,
                             lambda key, rng: {"theta": jnp.asarray(rng.normal(size=k))})


def _share_a_node(n):
    i, j = np.triu_indices(n, 1)
    return {(a, b) for a, b in itertools.combinations(range(len(i)), 2)
            if {i[a], j[a]} & {i[b], j[b]}}


@pytest.mark.parametrize("statistics", [TRIAD, pytest.param(
    ("edges", "threestars", "isolates", ("gwdegree", 0.4)), marks=pytest.mark.slow)])
@pytest.mark.slow
def test_declared_matchings_hold_under_the_found_interactions(statistics):
    n = 5
    m = model(n, statistics)
    # the model declares round-robin matchings (no Hessian probes at setup) ...
    assert m.target().structure.edges is None and len(m.target().blocks) == n  # n odd: n colors
    assert m.target().structure.multilinear == ("gwdegree" not in str(statistics))
    _assert_matchings(m, n)
    # ... and the analysis of the potential finds exactly the pairs sharing a node, so
    # the matchings are conditionally independent blocks
    found = _found_structure(n, statistics)
    assert set(map(tuple, found.edges.tolist())) == _share_a_node(n)
    assert len(model(6, TRIAD).target().blocks) == 5  # n even: n - 1 perfect matchings
    assert len(model(4, ("edges",)).target().blocks) == 1  # dyad independent: one block


@pytest.mark.slow
def test_gwesp_blocks_are_single_dyads_as_the_analysis_finds():
    statistics = ("edges", ("gwesp", 0.7))
    m = model(5, statistics)
    assert len(m.target().blocks) == 10 and not m.target().structure.multilinear
    found = _found_structure(5, statistics)
    assert len(found.edges) == 10 * 9 // 2  # any two dyads interact


@pytest.mark.parametrize("statistics", [
    pytest.param(STATISTICS, marks=pytest.mark.slow),
    # the block views of every term are also checked against brute force by
    # terms/test_structural.py and terms/test_covariates.py (default suite)
    pytest.param(("edges", ("gwesp", 0.25), ("gwesp", 1.5), ("gwdegree", 0.1), "triangle"),
                 marks=pytest.mark.slow),
])
def test_block_change_statistics_and_hooked_conditionals_match_brute_force(statistics):
    n = 7
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, (3, 21)).astype(np.int8)
    y[2] = rng.random(21) < 0.8  # a dense graph too
    m = model(n, statistics)
    theta = jnp.asarray(rng.normal(size=len(statistics)))
    f = m.target().logdensity_fn({"theta": theta})
    assert isinstance(f, LogDensity)
    all_changes = np.asarray(change_statistics(y, statistics))
    # brute force: s(y with e on) − s(y with e off) for every graph and dyad, in one call
    eye = np.eye(21, dtype=np.int8)
    on, off = np.maximum(y[:, None], eye), y[:, None] * (1 - eye)
    brute_all = np.diff(np.asarray(ergm_statistics(np.stack([off, on], 2), statistics),
                                   np.float64), axis=2)[:, :, 0]
    exact_fn = jax.jit(lambda x: exact_conditional_logits(lambda z: m.target().log_potential(
        {"theta": theta}, z), x, m.target().state_sites, {"y": None})["y"])
    hooked = {"all": jax.jit(lambda x: f.conditional_logits(x, m.target().state_sites, {"y": None})),
              "some": jax.jit(lambda x, i: f.conditional_logits(x, m.target().state_sites, {"y": i}))}
    gradient = jax.jit(lambda x: conditional_logits(lambda z: m.target().log_potential(
        {"theta": theta}, z), x, m.target().state_sites, {"y": None})["y"])
    for g in range(3):
        brute = brute_all[g]
        np.testing.assert_allclose(all_changes[g], brute, rtol=1e-5, atol=1e-4)
        state = {"y": jnp.asarray(y[g], jnp.float32)}
        exact_logits = exact_fn(state)
        exact_odds = np.asarray(exact_logits[:, 1] - exact_logits[:, 0])
        for idx in (None, np.array([4, 0, 17]), np.array([20])):
            got = np.asarray((hooked["all"](state) if idx is None
                              else hooked["some"](state, idx))["y"])
            rows = slice(None) if idx is None else idx
            np.testing.assert_allclose(got[:, 1] - got[:, 0], brute[rows] @ np.asarray(theta),
                                       rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(got[:, 1] - got[:, 0], exact_odds[rows], rtol=1e-4,
                                       atol=1e-4)
        if m.target().structure.multilinear:  # the gradient gives the same conditionals
            grad = gradient(state)
            np.testing.assert_allclose(np.asarray(grad[:, 1] - grad[:, 0]), exact_odds,
                                       rtol=1e-4, atol=1e-4)


# -m slow (14 s, mostly compiling): by default the change-statistic conditionals are
# checked against brute force above and the sampled negative phase against the exact
# gradient (test_estimator_gradients_match_exact[PCD])
@pytest.mark.slow
@pytest.mark.parametrize("statistics,theta", [
    (TRIAD, (-0.4, 0.15, 0.3)),  # matchings of several dyads
    (("edges", "gwesp", "gwdegree"), (-0.8, 0.6, -0.3)),  # single dyads
])
def test_gibbs_with_change_statistics_samples_the_exact_distribution(statistics, theta):
    n = 5  # 10 dyads, 1024 graphs
    m = model(n, statistics)
    samples = ugm.sample(m, {"theta": jnp.asarray(theta)}, jax.random.PRNGKey(0), 100,
                         num_chains=100, num_warmup=10, thinning=2)
    S = np.asarray(ergm_statistics(samples["y"], statistics))
    _, mean, cov = brute_moments(n, statistics, theta)
    se = np.sqrt(np.diag(cov) / len(S)) * 2  # x2: autocorrelation within chains
    assert np.all(np.abs(S.mean(0) - mean) < 4 * se), (S.mean(0), mean, se)


@pytest.mark.slow
def test_tempered_samplers_keep_the_change_statistics():
    statistics, theta = ("edges", "gwesp", "gwdegree"), jnp.asarray([-0.8, 0.6, -0.3])
    m = model(4, statistics)
    f = m.target().logdensity_fn({"theta": theta})
    state = {"y": jnp.asarray([1, 0, 1, 1, 0, 1], jnp.float32)}
    block = {"y": np.array([1, 4])}
    # tempering and bridges keep the hook, with linearly combined conditionals
    tempered = linear_combination((0.3, f), (-0.5, m.target().logdensity_fn({"theta": -theta})))
    assert isinstance(tempered, LogDensity)
    got = tempered.conditional_logits(state, m.target().state_sites, block)["y"]
    want = exact_conditional_logits(tempered, state, m.target().state_sites, block)["y"]
    np.testing.assert_allclose(np.asarray(got[:, 1] - got[:, 0]),
                               np.asarray(want[:, 1] - want[:, 0]), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_psmc_with_change_statistics_estimates_log_z():
    """PSMC (adaptive tempering from uniform, then a bridge θ0 -> θ1) through the hook."""
    statistics, theta = ("edges", "gwesp", "gwdegree"), jnp.asarray([-0.8, 0.6, -0.3])
    m = model(4, statistics)
    psmc = ugm.PSMC(400, keep_fraction=1.0)
    key = jax.random.PRNGKey(1)
    first = psmc.init(key, m.target(), {"theta": theta}, None)
    second, _, _ = psmc.update(jax.random.fold_in(key, 1), first, m.target(),
                               {"theta": theta + 0.5}, None)
    for st, th in ((first, theta), (second, theta + 0.5)):
        log_z = brute_moments(4, statistics, np.asarray(th))[0]
        assert abs(float(st.log_z) - log_z) < 0.1, (float(st.log_z), log_z)


# --- exact evaluation against brute force ------------------------------------------------


# -m slow (13 s of compiling): the statistics are checked against brute force by
# default in terms/test_structural.py and terms/test_covariates.py, exact enumeration in test_evaluate_enumeration.py
@pytest.mark.slow
@pytest.mark.parametrize("statistics,theta", [
    (TRIAD, (-0.5, 0.2, 0.3)),
    (("edges", "threestars", "triangles", "isolates"), (0.3, -0.4, 0.5, 0.7)),
    (("edges", "gwesp", "gwdegree"), (-0.8, 0.6, -0.3)),
])
def test_log_partition_and_expectations_match_brute_force(statistics, theta):
    m = model(4, statistics)
    params = {"theta": jnp.asarray(theta)}
    log_z, mean, _ = brute_moments(4, statistics, theta)
    assert abs(float(exact.log_partition(m, params)) - log_z) < 1e-4
    got = exact.expectation(m, params, lambda x: ergm_statistics(x["y"], statistics))
    np.testing.assert_allclose(np.asarray(got), mean, rtol=1e-4, atol=1e-4)
    # log-likelihood gradient = mean data statistics - E[s]
    graphs, S = brute_table(4, statistics)
    rows = [0, 5, 17, 63, 40]
    grad = jax.grad(lambda p: exact.log_likelihood(m, p, {"y": graphs[rows]}))(params)
    np.testing.assert_allclose(np.asarray(grad["theta"]), S[rows].mean(0) - mean,
                               rtol=1e-3, atol=1e-4)
    # the structure: matchings, except gwesp (one dyad per block)
    if "gwesp" in statistics:
        assert not m.target().structure.multilinear
        assert len(m.target().blocks) == 6  # one edge per block
    else:
        assert m.target().structure.multilinear
        _assert_matchings(m, 4)


# --- stochastic gradients against exact ----------------------------------------------------


def _weighted_statistics(m, particles):
    """Σ_s w_s ∇θ f(x_s; θ): the estimator's negative phase (= weighted mean of s)."""
    w = jnp.exp(particles.log_weights)

    def negative(p):
        return jnp.sum(w * jax.vmap(lambda x: m.target().log_potential(p, x))(particles.position))

    theta = {"theta": jnp.zeros(3)}  # linear in θ: the gradient does not depend on it
    g = np.asarray(jax.grad(negative)(theta)["theta"])
    ess = float(1.0 / jnp.sum(w ** 2))
    return g, ess


# the weighted estimators' gradients are checked against exact on every default run in
# test_estimators_base.py; on the ERGM they run with -m slow
@pytest.mark.parametrize("name", ["PCD", pytest.param("PF", marks=pytest.mark.slow),
                                  pytest.param("MCMCMLE", marks=pytest.mark.slow)])
def test_estimator_gradients_match_exact(triad4, name):
    m = triad4
    theta0 = jnp.array([-0.5, 0.2, 0.3])
    theta1 = theta0 + jnp.array([0.1, -0.05, 0.1])
    graphs, S = brute_table(4, TRIAD)
    data = {"y": graphs[[3, 10, 33, 60]]}
    batch = validate_data(m.target().state_sites, data)
    _, mean1, cov1 = brute_moments(4, TRIAD, theta1)
    exact_grad = S[[3, 10, 33, 60]].mean(0) - mean1
    S_ = 4000
    key = jax.random.PRNGKey(3)
    # PF as in the paper: moves only on a low ESS (the default moves at every update)
    est = {"PCD": ugm.PCD(S_, num_mcmc_steps=1),
           "PF": ugm.PF(S_, resample_threshold=0.5, rejuvenate_every=None),
           "MCMCMLE": ugm.MCMCMLE(S_, num_mcmc_steps=10)}[name]
    state = est.init(key, m.target(), {"theta": theta0}, batch)
    if name == "PCD":  # burn in at θ1, then one more update
        update = jax.jit(lambda k, s: est.update(k, s, m.target(), {"theta": theta1}, batch))
        for t in range(20):
            state, particles, info = update(jax.random.fold_in(key, t), state)
    else:  # particles at θ0 reweighted to θ1 (no rejuvenation at this ESS)
        state, particles, info = est.update(jax.random.fold_in(key, 1), state, m.target(),
                                            {"theta": theta1}, batch)
        assert float(getattr(info, "rejuvenated", 0.0)) == 0.0
        assert float(info.ess) < S_  # the weights are not uniform
    negative, ess = _weighted_statistics(m, particles)
    grad = S[[3, 10, 33, 60]].mean(0) - negative
    se = np.sqrt(np.diag(cov1) / ess)
    assert np.all(np.abs(grad - exact_grad) < 5 * se + 1e-3), (name, grad, exact_grad, se)


# --- learning ------------------------------------------------------------------------------


def _learn(estimator, data, init, steps, lr, seed):
    learner = ugm.MLE(ergm, estimator, optax.adam(optax.exponential_decay(lr, steps, 0.02)))
    return learner.run(jax.random.PRNGKey(seed), steps, data, 6, TRIAD,
                       init_params={"theta": init}, progress_bar=False)


@pytest.mark.slow
def test_pcd_reaches_exact_mle(triad6_problem):
    m, theta_true, data, best = triad6_problem
    init = mple(data, TRIAD).params["theta"]
    result = _learn(ugm.PCD(500, num_mcmc_steps=1), data, init, 600, 0.05, 0)
    mle = np.asarray(best.params["theta"])
    error = np.abs(np.asarray(result.params["theta"]) - mle)
    # the exact MLE's sampling s.e. here is ~0.03-0.1; PCD lands well inside it
    assert error.max() < 0.03, (result.params["theta"], mle)
    ll = float(exact.log_likelihood(m, result.params, data))
    assert ll > float(best.log_likelihood) - 1e-3


@pytest.mark.slow
def test_pf_reaches_exact_mle(triad6_problem):
    m, theta_true, data, best = triad6_problem
    init = mple(data, TRIAD).params["theta"]
    S = 1000
    # PF as in the paper: moves only on a low ESS (the default moves at every update)
    pf = ugm.PF(S, resample_threshold=0.9, rejuvenate_every=None)
    result = _learn(pf, data, init, 400, 0.05, 1)
    mle = np.asarray(best.params["theta"])
    delta = np.asarray(result.params["theta"]) - mle
    # PF's last particle set fixes its final θ up to that set's Monte Carlo error: with
    # I = Cov_θ[s] the Fisher information, S·δᵀIδ is about χ²₃ (99.9%: 16.3) for S
    # independent particles (Gibbs rejuvenation makes them a little dependent)
    _, _, info = brute_moments(6, TRIAD, mle)
    assert S * delta @ info @ delta < 20.0, (result.params["theta"], mle)
    assert np.abs(delta).max() < 0.15
    # and at most the matching loss of log-likelihood (χ²₃ / 2S per graph)
    ll = float(exact.log_likelihood(m, result.params, data))
    assert ll > float(best.log_likelihood) - 10.0 / S
    assert np.nanmean(result.diagnostics["rejuvenated"]) < 0.5  # PF skipped most sweeps
