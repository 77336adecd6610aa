"""The JAX TNT sampler (numpyro_ugm/network/sampling/tnt.py) on the sparse chains.

* The stationary distribution against exact enumeration: a 5-node undirected graph
  (1,024 graphs; edges, triangles, gwesp) and a 4-node directed one (4,096 graphs;
  edges, mutual, transitive triples, OTP gwesp). Chain means of many independent chains
  give standard errors that account for autocorrelation; the same draws must be far off
  the expectations at a wrong θ, and a run without the proposal ratio q(y'→y)/q(y→y')
  must be far off too; triadic proposals keep it, and need their share of the ratio.
* The running statistics equal the statistics of the final edges; the state's lists,
  edge positions and degrees stay consistent; views of the final states are right.
* Chains split into groups move as in one call; overflow of ``max_degree`` raises; bad
  input raises clear errors.

The models and the checks of the state: sampling/conftest.py. The default tests share
three compiled samplers (about 2 s each to compile on 2 CPU cores); the ``slow`` ones run
bigger versions (and a check against ergmx).
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numpyro_ugm.network import ergm_statistics, graph_to_edges
from numpyro_ugm.network.sampling import chains as nc
from numpyro_ugm.network.sampling import tnt as ns


# --- 1. the stationary distribution against exact enumeration ------------------------


def exact_expectations(statistics_of, n, directed, theta):
    """E_θ[s] over every graph on n nodes."""
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b and (directed or a < b)]
    table = []
    for bits in itertools.product([0, 1], repeat=len(pairs)):
        A = np.zeros((n, n))
        for (a, b), on in zip(pairs, bits):
            A[a, b] = on
            if not directed:
                A[b, a] = on
        table.append(statistics_of(A))
    table = np.array(table)

    def expectation(theta):
        logw = table @ np.asarray(theta, float)
        w = np.exp(logw - logw.max())
        return w @ table / w.sum()

    return expectation


def z_scores(draws, expected, burn_in):
    """(chain-mean average − expected) / its standard error from the spread of the
    independent chains' means (autocorrelation is inside each chain's mean)."""
    means = np.asarray(draws, float)[:, burn_in:].mean(1)
    se = means.std(0, ddof=1) / np.sqrt(len(means))
    return (means.mean(0) - expected) / se


@pytest.fixture(scope="module")
def cases(sparse_models):
    """The two small models: directed, n, max_degree, change function, statistics, θ,
    wrong θ."""
    m = sparse_models
    return {"undirected": (False, 5, 4, m.undirected_change, m.undirected_statistics,
                           [-0.6, 0.35, 0.25], [-0.4, 0.35, 0.25]),
            "directed": (True, 4, 3, m.directed_change, m.directed_statistics,
                         [-0.5, 0.6, 0.15, 0.2], [-0.3, 0.6, 0.15, 0.2])}


_RUNS = {}


def distribution_run(cases, case, num_chains=64, num_samples=300, interval=8, key=0,
                     ratio_weight=1.0, triadic=0.0, bits=False):
    """Draws of the statistics from empty graphs (cached per settings)."""
    settings = (case, num_chains, num_samples, interval, key, ratio_weight, triadic, bits)
    if settings not in _RUNS:
        directed, n, D, change, stats, theta, _ = cases[case]
        state = nc.init_network_chains(np.zeros((0, 2), int), n, num_chains,
                                       directed=directed, statistics0=np.zeros(len(theta)),
                                       max_degree=D, adjacency_bits=bits)
        key = jax.random.PRNGKey(key)
        theta = jnp.asarray(theta, jnp.float32)
        if ratio_weight == 1.0:
            state, draws = ns.simulate_statistics(key, state, theta, change, num_samples,
                                                  interval, triadic=triadic)
        else:  # the same compiled sampler with the proposal ratio scaled (0: dropped)
            state, draws = ns._simulate_jit(key, state, theta, change, num_samples,
                                            interval, ratio_weight, triadic)
        _RUNS[settings] = state, np.asarray(draws)
    return _RUNS[settings]


@pytest.mark.parametrize("case", ["undirected", pytest.param("directed", marks=pytest.mark.slow)])
def test_distribution_matches_exact_enumeration(cases, case):
    directed, n, _, _, stats, theta, wrong = cases[case]
    expectation = exact_expectations(stats, n, directed, theta)
    _, draws = distribution_run(cases, case)
    assert np.max(np.abs(z_scores(draws, expectation(theta), 50))) < 4.5
    # the same draws are far from the expectations at a wrong θ
    assert np.max(np.abs(z_scores(draws, expectation(wrong), 50))) > 8
    # without the TNT proposal ratio the chains settle elsewhere
    _, biased = distribution_run(cases, case, ratio_weight=0.0)
    assert np.max(np.abs(z_scores(biased, expectation(theta), 50))) > 8


@pytest.mark.parametrize("case", ["undirected", "directed"])
@pytest.mark.parametrize("bits", [False, True])
def test_triadic_proposals_keep_the_distribution(cases, chain_checks, case, bits):
    """Half the proposals triadic (a tie k − i and a neighbour j of k; directed: a leg of
    a two-path i → k → j): the same exact moments, and the state stays consistent; with
    ``bits`` the views and the triadic rate read the adjacency bit sets, kept up to
    date."""
    directed, n, _, change, stats, theta, wrong = cases[case]
    expectation = exact_expectations(stats, n, directed, theta)
    state, draws = distribution_run(cases, case, triadic=0.5, bits=bits)
    assert np.max(np.abs(z_scores(draws, expectation(theta), 50))) < 4.5
    assert np.max(np.abs(z_scores(draws, expectation(wrong), 50))) > 8
    chain_checks.check_consistent(state)
    with pytest.raises(ValueError, match=r"triadic must be a probability in \[0, 1\)"):
        ns.network_mh_step(jax.random.PRNGKey(0), state, jnp.asarray(theta), change, 10,
                           triadic=1.0)


@pytest.mark.slow
def test_triadic_proposals_need_their_share_of_the_ratio(cases, monkeypatch):
    """Counting every shared partner k alike (no 1/d_k) in the triadic part of the
    proposal probability is detected (so the distribution test can see the ratio)."""
    directed, n, _, _, stats, theta, _ = cases["undirected"]
    expectation = exact_expectations(stats, n, directed, theta)

    def count(state, rows, value):
        row_i, row_j = rows["lists"][0, :, 0], rows["lists"][1, :, 0]
        return jnp.sum((row_j[:, None] == row_i[None, :]) & (row_j[:, None] >= 0)).astype(
            value.dtype)

    monkeypatch.setattr(ns, "triadic_rate", count)
    # another triadic weight: a new trace, which reads the patched rate
    _, biased = distribution_run(cases, "undirected", num_chains=256, num_samples=1000,
                                 triadic=0.75)
    assert np.max(np.abs(z_scores(biased, expectation(theta), 100))) > 5


# --- 2. running statistics and the state ---------------------------------------------


@pytest.mark.parametrize("case", ["undirected", "directed"])
def test_running_statistics_and_state_after_sampling(cases, chain_checks, case):
    """After the distribution run (thousands of toggles per chain): the running
    statistics are those of the final edges, the lists and edge positions agree."""
    directed, n, _, _, stats, _, _ = cases[case]
    state, _ = distribution_run(cases, case)
    chain_checks.check_consistent(state)
    edges = nc.network_edges(state)
    recomputed = np.array([stats(chain_checks.adjacency(e, n, directed)) for e in edges])
    np.testing.assert_allclose(np.asarray(state.statistics), recomputed, rtol=1e-5,
                               atol=1e-4)
    assert len({e.tobytes() for e in edges}) > 10  # the chains went different ways


def test_chains_split_into_groups_move_as_in_one_call(cases):
    """Chain c draws from fold_in(key, first_chain + c) alone: 4 chains run as two groups
    of 2 (first_chain 0 and 2) end exactly where the 4 run in one call do."""
    directed, n, D, change, _, theta, _ = cases["undirected"]

    def start(num_chains):
        return nc.init_network_chains(np.zeros((0, 2), int), n, num_chains,
                                      directed=directed, statistics0=np.zeros(len(theta)),
                                      max_degree=D)

    key, theta = jax.random.PRNGKey(3), jnp.asarray(theta, jnp.float32)
    whole, draws = ns.simulate_statistics(key, start(4), theta, change, 4, 25, triadic=0.5)
    first, draws_a = ns.simulate_statistics(key, start(2), theta, change, 4, 25,
                                            triadic=0.5, first_chain=0)
    second, draws_b = ns.simulate_statistics(key, start(2), theta, change, 4, 25,
                                             triadic=0.5, first_chain=2)
    np.testing.assert_array_equal(np.asarray(draws), np.concatenate([draws_a, draws_b]))
    for name in ("lists", "edges", "degree", "statistics"):
        np.testing.assert_array_equal(np.asarray(getattr(whole, name)), np.concatenate(
            [getattr(first, name), getattr(second, name)]))
    assert len({e.tobytes() for e in nc.network_edges(whole)}) > 1
    with pytest.raises(ValueError, match="first_chain"):
        ns.network_mh_step(key, whole, theta, change, 10, first_chain=-1)


@pytest.mark.slow
def test_undirected_statistics_match_package_statistics(cases, chain_checks,
                                                        sparse_models):
    """The running statistics use the package's conventions (ergm_statistics)."""
    state, _ = distribution_run(cases, "undirected")
    for e in nc.network_edges(state)[:8]:
        A = chain_checks.adjacency(e, 5, False)
        np.testing.assert_allclose(
            np.asarray(ergm_statistics(graph_to_edges(A), ["edges", "triangles",
                                                          ("gwesp", sparse_models.ALPHA)])),
            sparse_models.undirected_statistics(A), rtol=1e-5)


# --- 3. overflow and errors ------------------------------------------------------------


def test_overflow_raises(sparse_models):
    edges_only = sparse_models.edges_only
    # a star's centre has degree 2 = max_degree; strong edges push it over
    edges = np.array([[0, 1], [0, 2]])
    state = nc.init_network_chains(edges, 6, 1, directed=False, statistics0=[2.0],
                                   max_degree=2)
    with pytest.raises(ValueError, match="max_degree=2"):
        ns.network_mh_step(jax.random.PRNGKey(0), state, jnp.array([3.0]), edges_only, 200)
    # under jit nothing raises: the flag is in the state
    state, _ = ns._mh_jit(jax.random.PRNGKey(0), state, jnp.array([3.0]), edges_only, 200,
                          1.0)
    assert np.asarray(state.overflow).all()
    with pytest.raises(ValueError, match="larger max_degree"):
        nc.check_overflow(state)


def test_bad_input_raises(sparse_models):
    """(The checks of init_network_chains: sampling/test_chains.py.)"""
    edges_only = sparse_models.edges_only
    state = nc.init_network_chains([[0, 1]], 3, 2, directed=False, statistics0=[1.0])
    with pytest.raises(ValueError, match="theta"):
        ns.network_mh_step(jax.random.PRNGKey(0), state, jnp.zeros(2), edges_only, 5)
    with pytest.raises(ValueError, match="num_proposals"):
        ns.network_mh_step(jax.random.PRNGKey(0), state, jnp.zeros(1), edges_only, 0)
    with pytest.raises(ValueError, match="change_fn must return"):
        ns.network_mh_step(jax.random.PRNGKey(0), state, jnp.zeros(1),
                           lambda view: jnp.ones(2), 5)


# --- slow: bigger checks ----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("case", ["undirected", "directed"])
def test_distribution_matches_exact_enumeration_long(cases, case):
    """More chains and draws, two seeds: 4 standard errors then resolve ~0.02 of a
    statistic's sd; a wrong θ by 0.05 is detected."""
    directed, n, _, _, stats, theta, _ = cases[case]
    expectation = exact_expectations(stats, n, directed, theta)
    for key in (1, 2):
        _, draws = distribution_run(cases, case, num_chains=256, num_samples=2000, interval=8,
                                    key=key)
        assert np.max(np.abs(z_scores(draws, expectation(theta), 100))) < 4.5
        close = np.array(theta) + np.eye(len(theta))[0] * 0.05
        assert np.max(np.abs(z_scores(draws, expectation(close), 100))) > 5
    # a proposal ratio of the wrong size is detected too
    _, biased = distribution_run(cases, case, num_chains=256, num_samples=2000,
                                 interval=8, ratio_weight=0.8)
    assert np.max(np.abs(z_scores(biased, expectation(theta), 100))) > 5


@pytest.mark.slow
def test_running_statistics_on_a_real_sparse_network(network_data, chain_checks,
                                                      sparse_models):
    """faux.magnolia.high (1,461 nodes, 974 edges), edges + triangles + gwesp: after
    10^5 proposals per chain the running statistics equal those recomputed from the
    edges (float32 accumulation), the state is consistent, views are right."""
    ALPHA, R = sparse_models.ALPHA, sparse_models.R
    path = network_data / "faux_magnolia_high.npz"
    data = np.load(path, allow_pickle=False)
    edges, n = data["edges"], int(data["num_nodes"])

    def statistics(e):
        import scipy.sparse as sp
        A = sp.coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n)).tocsr()
        A = A + A.T
        shared = (A @ A).multiply(A)  # shared partners of each edge (both orientations)
        triangles = shared.sum() / 6
        values = shared.tocoo().data
        gwesp = math.exp(ALPHA) * np.sum(1 - R ** values) / 2
        return np.array([len(e), triangles, gwesp])

    s0 = statistics(edges)
    state = nc.init_network_chains(edges, n, 4, directed=False, statistics0=s0)
    theta = jnp.array([-6.5, 0.2, 0.8])
    state, info = ns.network_mh_step(jax.random.PRNGKey(0), state, theta,
                                     sparse_models.undirected_change, 100_000)
    assert np.all(np.asarray(info["acceptance_rate"]) > 0.05)
    chain_checks.check_consistent(state)
    for c, e in enumerate(nc.network_edges(state)):
        np.testing.assert_allclose(np.asarray(state.statistics[c]), statistics(e),
                                   rtol=1e-4, atol=1e-2)
    # views of the final state: every tie (both orientations) and random dyads
    e = nc.network_edges(state)[0]
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, n, 300), rng.integers(0, n, 300)
    i = np.concatenate([e[:, 0], e[:, 1], a[a != b]])
    j = np.concatenate([e[:, 1], e[:, 0], b[a != b]])
    sparse_models.check_views(state, 0, i, j, check_change=False)


@pytest.mark.slow
def test_matches_ergmx_simulation(network_data, chain_checks):
    """Florentine marriages, edges + gwesp(0.25, fixed): mean statistics of our chains
    against ergmx's simulate (R ergm's interface) at the same θ."""
    ergmx = pytest.importorskip("ergmx")
    nx = pytest.importorskip("networkx")
    path = network_data / "flomarriage.npz"
    data = np.load(path, allow_pickle=False)
    edges, n = data["edges"], int(data["num_nodes"])
    decay = 0.25
    theta = np.array([-1.7, 0.3])
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(edges.tolist())
    theirs = np.asarray(ergmx.simulate(graph, "edges + gwesp(0.25, fixed=TRUE)", theta,
                                       nsim=2000, seed=1, output="stats", burnin=20000,
                                       interval=200, triadic_weight=0.0), float)

    def change(view):
        r = -jnp.expm1(-decay)
        return jnp.stack([jnp.ones_like(view.value),
                          jnp.exp(decay) * (1 - r ** view.shared) + view.partner_terms(r)])

    A = chain_checks.adjacency(edges, n, False)
    sp = A @ A
    s0 = [A.sum() / 2, math.exp(decay) * np.sum(A * (1 - (-math.expm1(-decay)) ** sp)) / 2]
    state = nc.init_network_chains(edges, n, 128, directed=False, statistics0=s0)
    state, _ = ns.network_mh_step(jax.random.PRNGKey(0), state, theta, change, 5000)
    _, draws = ns.simulate_statistics(jax.random.PRNGKey(1), state, theta, change, 400, 50)
    means = np.asarray(draws).mean(1)
    ours, se_ours = means.mean(0), means.std(0, ddof=1) / np.sqrt(len(means))
    # ergmx's draws are 200 proposals apart: batch means of 100 draws for their se
    batches = theirs[: len(theirs) // 100 * 100].reshape(-1, 100, theirs.shape[1]).mean(1)
    se_theirs = batches.std(0, ddof=1) / np.sqrt(len(batches))
    z = (ours - theirs.mean(0)) / np.hypot(se_ours, se_theirs)
    assert np.all(np.abs(z) < 4.5), (ours, theirs.mean(0), z)
