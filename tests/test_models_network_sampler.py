"""The sparse-network TNT sampler (models/network_chains.py, network_dyad_views.py,
network_sampler.py).

* The dyad views against brute force on dense adjacency matrices (random graphs, every
  ordered pair, so dyads both on and off), undirected and directed, and the change
  functions built from them against s(y, on) − s(y, off) by their definitions.
* The stationary distribution against exact enumeration: a 5-node undirected graph
  (1,024 graphs; edges, triangles, gwesp) and a 4-node directed one (4,096 graphs;
  edges, mutual, transitive triples, OTP gwesp). Chain means of many independent chains
  give standard errors that account for autocorrelation; the same draws must be far off
  the expectations at a wrong θ, and a run without the proposal ratio q(y'→y)/q(y→y')
  must be far off too.
* The running statistics equal the statistics of the final edges; the state's lists,
  edge positions and degrees stay consistent; views of the final states are right.
* Overflow of ``max_degree`` raises; bad input raises clear errors.

The default tests share three compiled samplers (about 2 s each to compile on 2 CPU
cores); the ``slow`` ones run bigger versions (and a check against ergmx).
"""

import itertools
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numpyro_ugm.network import ergm_statistics, graph_to_edges
from numpyro_ugm.network.sampling import chains as nc
from numpyro_ugm.network.sampling import views as nv
from numpyro_ugm.network.sampling import tnt as ns

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "networks"
ALPHA = 0.7  # gwesp decay of the tests
R = -math.expm1(-ALPHA)


# --- change functions from the views (module level: one compilation per shape) --------


def undirected_change(view):
    """edges, triangles, gwesp(ALPHA)."""
    r = -jnp.expm1(-ALPHA)
    return jnp.stack([jnp.ones_like(view.value), view.shared,
                      jnp.exp(ALPHA) * (1 - r ** view.shared) + view.partner_terms(r)])


def directed_change(view):
    """edges, mutual, transitive triples, OTP gwesp(ALPHA)."""
    r = -jnp.expm1(-ALPHA)
    return jnp.stack([jnp.ones_like(view.value), view.reverse,
                      view.two_paths + view.shared_out + view.shared_in,
                      jnp.exp(ALPHA) * (1 - r ** view.two_paths) + view.otp_partner_terms(r)])


def edges_only(view):
    return jnp.ones_like(view.value)[None]


# --- brute force on dense adjacency matrices -----------------------------------------


def undirected_statistics(A):
    """edges, triangles, gwesp(ALPHA) by their definitions."""
    sp = A @ A
    return np.array([A.sum() / 2, np.trace(A @ A @ A) / 6,
                     math.exp(ALPHA) * np.sum(A * (1 - R ** sp)) / 2])


def directed_statistics(A):
    """edges, mutual, transitive triples (a→b, b→c, a→c), OTP gwesp(ALPHA)."""
    tp = A @ A  # tp[x, y] = #{k: x→k→y}
    return np.array([A.sum(), np.sum(A * A.T) / 2, np.sum(tp * A),
                     math.exp(ALPHA) * np.sum(A * (1 - R ** tp))])


def undirected_truth(A, i, j, r):
    """The view's quantities of pair (i, j) from the dense adjacency."""
    off = A.copy()
    off[i, j] = off[j, i] = 0
    common = off[i] * off[j]
    partner = sum(r ** (off[i] @ off[k]) + r ** (off[j] @ off[k])
                  for k in np.flatnonzero(common))
    return {"value": A[i, j], "degree_i": off[i].sum(), "degree_j": off[j].sum(),
            "shared": common.sum(), "partner": partner}


def directed_truth(A, i, j, r):
    """The view's quantities of tie i -> j from the dense adjacency."""
    off = A.copy()
    off[i, j] = 0
    out_common, in_common = off[i] * off[j], off[:, i] * off[:, j]
    # tp(x, y) = #{k: x→k→y} = off[x] · off[:, y]
    partner = (sum(r ** (off[i] @ off[:, b]) for b in np.flatnonzero(out_common))
               + sum(r ** (off[a] @ off[:, j]) for a in np.flatnonzero(in_common)))
    return {"value": A[i, j], "reverse": A[j, i], "out_i": off[i].sum(),
            "in_i": off[:, i].sum(), "out_j": off[j].sum(), "in_j": off[:, j].sum(),
            "two_paths": np.sum(off[i] * off[:, j]), "cycles": np.sum(off[:, i] * off[j]),
            "shared_out": out_common.sum(), "shared_in": in_common.sum(),
            "partner": partner}


def adjacency(edges, n, directed):
    A = np.zeros((n, n))
    if len(edges):
        A[edges[:, 0], edges[:, 1]] = 1
        if not directed:
            A[edges[:, 1], edges[:, 0]] = 1
    return A


def random_edges(rng, n, density, directed):
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b and (directed or a < b)]
    keep = rng.random(len(pairs)) < density
    return np.array([p for p, k in zip(pairs, keep) if k], np.int64).reshape(-1, 2)


_VIEWS = {}


def views_of(state, chain, i, j):
    """The view quantities of the pairs (i[k], j[k]) of one chain and the test's change
    function of each (jitted, vmapped over pairs); partner sums at r = R."""
    directed = state.directed
    if directed not in _VIEWS:
        names = (["value", "reverse", "out_i", "in_i", "out_j", "in_j", "two_paths",
                  "cycles", "shared_out", "shared_in"] if directed
                 else ["value", "degree_i", "degree_j", "shared"])
        change = directed_change if directed else undirected_change

        def one(state, chain, i, j):
            view = nv.dyad_view(state, i, j, chain)
            out = {name: getattr(view, name) for name in names}
            out["partner"] = (view.otp_partner_terms(R) if directed
                              else view.partner_terms(R))
            out["i"], out["j"], out["change"] = view.i, view.j, change(view)
            return out

        _VIEWS[directed] = jax.jit(jax.vmap(one, in_axes=(None, None, 0, 0)))
    got = _VIEWS[directed](state, chain, jnp.asarray(i, jnp.int32), jnp.asarray(j, jnp.int32))
    return {k: np.asarray(v) for k, v in got.items()}


def check_views(state, chain, i, j, check_change=False):
    """Views (and, with ``check_change``, the change function against s(on) − s(off)
    by definition) of pairs (i[k], j[k]) against brute force."""
    directed, n = state.directed, state.num_nodes
    A = adjacency(nc.network_edges(state)[chain], n, directed)
    got = views_of(state, chain, i, j)
    np.testing.assert_array_equal(got["i"], i)
    np.testing.assert_array_equal(got["j"], j)
    truth = directed_truth if directed else undirected_truth
    statistics = directed_statistics if directed else undirected_statistics
    for k, (a, b) in enumerate(zip(i, j)):
        expected = truth(A, a, b, R)
        for name, value in expected.items():
            assert got[name][k] == pytest.approx(value, rel=1e-5, abs=1e-5), (name, a, b)
        if check_change:
            on, off = A.copy(), A.copy()
            on[a, b], off[a, b] = 1, 0
            if not directed:
                on[b, a], off[b, a] = 1, 0
            np.testing.assert_allclose(got["change"][k], statistics(on) - statistics(off),
                                       rtol=1e-5, atol=1e-5)


def check_consistent(state):
    """Lists, edge positions, degrees, the edge list and the bit sets (if kept) of every
    chain agree."""
    for c in range(state.num_chains):
        one = jax.tree.map(lambda x: np.asarray(x[c]), state)
        m = int(one.num_edges)
        edges = one.edges[:m]
        key = edges if state.directed else np.sort(edges, 1)
        assert len(np.unique(key, axis=0)) == m
        if state.bits is not None:
            A = adjacency(edges, state.num_nodes, state.directed).astype(bool)
            for bits, matrix in [(one.bits, A)] + ([(one.in_bits, A.T)] if state.directed
                                                   else []):
                unpacked = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")
                np.testing.assert_array_equal(unpacked[:, :state.num_nodes], matrix)
        lists = [(one.lists, one.degree, 0)]
        if state.directed:
            lists.append((one.in_lists, one.in_degree, 1))
        for table, degree, side in lists:
            assert degree.sum() == (m if state.directed else 2 * m)
            for node in range(state.num_nodes):
                d = degree[node]
                assert np.all(table[node, d:, 0] == -1)
                for neighbour, position in table[node, :d]:
                    assert 0 <= position < m
                    tie = edges[position]
                    if state.directed:
                        assert tie[side] == node and tie[1 - side] == neighbour
                    else:
                        assert {tie[0], tie[1]} == {node, neighbour}


# --- 1. views -------------------------------------------------------------------------


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("capacity, bits", [(None, False), (40, False), (None, True)])
def test_views_and_change_functions_match_brute_force(directed, capacity, bits):
    """Every ordered pair of random graphs (so dyads on and off, and for undirected
    graphs both orientations); the change functions built from the views equal
    s(y, on) − s(y, off) by definition (so the distribution tests check the sampler).
    Capacity 40 takes the partner sums' mark-array path (D > COMPARE_MAX_DEGREE);
    ``bits`` the adjacency bit sets' popcounts (37 nodes: two words per row)."""
    assert 16 <= nv.COMPARE_MAX_DEGREE < 40
    rng = np.random.default_rng(1 + directed)
    n = 37 if bits else 9
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    for density in ((0.1, 0.3) if bits else (0.25, 0.6)):
        edges = random_edges(rng, n, density, directed)
        state = nc.init_network_chains(edges, n, 1, directed=directed, statistics0=[0.0],
                                       max_degree=capacity, adjacency_bits=bits)
        check_consistent(state)
        check_views(state, 0, i, j, check_change=density > 0.5 or (bits and density > 0.2))


# --- 2. the stationary distribution against exact enumeration ------------------------


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


CASES = {
    # directed, n, max_degree, change function, statistics, θ, wrong θ
    "undirected": (False, 5, 4, undirected_change, undirected_statistics,
                   [-0.6, 0.35, 0.25], [-0.4, 0.35, 0.25]),
    "directed": (True, 4, 3, directed_change, directed_statistics,
                 [-0.5, 0.6, 0.15, 0.2], [-0.3, 0.6, 0.15, 0.2]),
}
_RUNS = {}


def distribution_run(case, num_chains=64, num_samples=300, interval=8, key=0,
                     ratio_weight=1.0, triadic=0.0, bits=False):
    """Draws of the statistics from empty graphs (cached per settings)."""
    settings = (case, num_chains, num_samples, interval, key, ratio_weight, triadic, bits)
    if settings not in _RUNS:
        directed, n, D, change, stats, theta, _ = CASES[case]
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
def test_distribution_matches_exact_enumeration(case):
    directed, n, _, _, stats, theta, wrong = CASES[case]
    expectation = exact_expectations(stats, n, directed, theta)
    _, draws = distribution_run(case)
    assert np.max(np.abs(z_scores(draws, expectation(theta), 50))) < 4.5
    # the same draws are far from the expectations at a wrong θ
    assert np.max(np.abs(z_scores(draws, expectation(wrong), 50))) > 8
    # without the TNT proposal ratio the chains settle elsewhere
    _, biased = distribution_run(case, ratio_weight=0.0)
    assert np.max(np.abs(z_scores(biased, expectation(theta), 50))) > 8


@pytest.mark.parametrize("case", ["undirected", "directed"])
@pytest.mark.parametrize("bits", [False, True])
def test_triadic_proposals_keep_the_distribution(case, bits):
    """Half the proposals triadic (a tie k − i and a neighbour j of k; directed: a leg of
    a two-path i → k → j): the same exact moments, and the state stays consistent; with
    ``bits`` the views and the triadic rate read the adjacency bit sets, kept up to
    date."""
    directed, n, _, change, stats, theta, wrong = CASES[case]
    expectation = exact_expectations(stats, n, directed, theta)
    state, draws = distribution_run(case, triadic=0.5, bits=bits)
    assert np.max(np.abs(z_scores(draws, expectation(theta), 50))) < 4.5
    assert np.max(np.abs(z_scores(draws, expectation(wrong), 50))) > 8
    check_consistent(state)
    with pytest.raises(ValueError, match=r"triadic must be a probability in \[0, 1\)"):
        ns.network_mh_step(jax.random.PRNGKey(0), state, jnp.asarray(theta), change, 10,
                           triadic=1.0)


@pytest.mark.slow
def test_triadic_proposals_need_their_share_of_the_ratio(monkeypatch):
    """Counting every shared partner k alike (no 1/d_k) in the triadic part of the
    proposal probability is detected (so the distribution test can see the ratio)."""
    directed, n, _, _, stats, theta, _ = CASES["undirected"]
    expectation = exact_expectations(stats, n, directed, theta)

    def count(state, rows, value):
        row_i, row_j = rows["lists"][0, :, 0], rows["lists"][1, :, 0]
        return jnp.sum((row_j[:, None] == row_i[None, :]) & (row_j[:, None] >= 0)).astype(
            value.dtype)

    monkeypatch.setattr(ns, "_triadic_rate", count)
    # another triadic weight: a new trace, which reads the patched rate
    _, biased = distribution_run("undirected", num_chains=256, num_samples=1000,
                                 triadic=0.75)
    assert np.max(np.abs(z_scores(biased, expectation(theta), 100))) > 5


# --- 3. running statistics and the state ---------------------------------------------


@pytest.mark.parametrize("case", ["undirected", "directed"])
def test_running_statistics_and_state_after_sampling(case):
    """After the distribution run (thousands of toggles per chain): the running
    statistics are those of the final edges, the lists and edge positions agree."""
    directed, n, _, _, stats, _, _ = CASES[case]
    state, _ = distribution_run(case)
    check_consistent(state)
    edges = nc.network_edges(state)
    recomputed = np.array([stats(adjacency(e, n, directed)) for e in edges])
    np.testing.assert_allclose(np.asarray(state.statistics), recomputed, rtol=1e-5,
                               atol=1e-4)
    assert len({e.tobytes() for e in edges}) > 10  # the chains went different ways


def test_chains_split_into_groups_move_as_in_one_call():
    """Chain c draws from fold_in(key, first_chain + c) alone: 4 chains run as two groups
    of 2 (first_chain 0 and 2) end exactly where the 4 run in one call do."""
    directed, n, D, change, _, theta, _ = CASES["undirected"]

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
def test_undirected_statistics_match_package_statistics():
    """The running statistics use the package's conventions (ergm_statistics)."""
    state, _ = distribution_run("undirected")
    for e in nc.network_edges(state)[:8]:
        A = adjacency(e, 5, False)
        np.testing.assert_allclose(
            np.asarray(ergm_statistics(graph_to_edges(A), ["edges", "triangles",
                                                          ("gwesp", ALPHA)])),
            undirected_statistics(A), rtol=1e-5)


# --- 4. overflow and errors ------------------------------------------------------------


def test_overflow_raises():
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


def test_bad_input_raises():
    init = nc.init_network_chains
    with pytest.raises(ValueError, match="self-loops"):
        init([[0, 0]], 3, 1, directed=False, statistics0=[1.0])
    with pytest.raises(ValueError, match="repeated edges"):
        init([[0, 1], [1, 0]], 3, 1, directed=False, statistics0=[1.0])
    init([[0, 1], [1, 0]], 3, 1, directed=True, statistics0=[1.0])  # two ties
    with pytest.raises(ValueError, match=r"node ids in \[0, 3\)"):
        init([[0, 3]], 3, 1, directed=False, statistics0=[1.0])
    with pytest.raises(ValueError, match="shape"):
        init([0, 1], 3, 1, directed=False, statistics0=[1.0])
    with pytest.raises(TypeError, match="integer"):
        init([[0.0, 1.0]], 3, 1, directed=False, statistics0=[1.0])
    with pytest.raises(TypeError, match="adjacency_bits must be True or False"):
        init([[0, 1]], 3, 1, directed=False, statistics0=[1.0], adjacency_bits="yes")
    with pytest.raises(ValueError, match="below the largest degree"):
        init([[0, 1], [0, 2]], 3, 1, directed=False, statistics0=[1.0], max_degree=1)
    with pytest.raises(ValueError, match="num_chains"):
        init([[0, 1]], 3, 0, directed=False, statistics0=[1.0])
    with pytest.raises(TypeError, match="directed"):
        init([[0, 1]], 3, 1, directed=None, statistics0=[1.0])
    with pytest.raises(ValueError, match="statistics0"):
        init([[0, 1]], 3, 1, directed=False, statistics0=1.0)
    state = init([[0, 1]], 3, 2, directed=False, statistics0=[1.0])
    assert state.max_degree == 16 and nc.default_max_degree([[0, 1]] * 9, 3, False) == 18
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
def test_distribution_matches_exact_enumeration_long(case):
    """More chains and draws, two seeds: 4 standard errors then resolve ~0.02 of a
    statistic's sd; a wrong θ by 0.05 is detected."""
    directed, n, _, _, stats, theta, _ = CASES[case]
    expectation = exact_expectations(stats, n, directed, theta)
    for key in (1, 2):
        _, draws = distribution_run(case, num_chains=256, num_samples=2000, interval=8,
                                    key=key)
        assert np.max(np.abs(z_scores(draws, expectation(theta), 100))) < 4.5
        close = np.array(theta) + np.eye(len(theta))[0] * 0.05
        assert np.max(np.abs(z_scores(draws, expectation(close), 100))) > 5
    # a proposal ratio of the wrong size is detected too
    _, biased = distribution_run(case, num_chains=256, num_samples=2000, interval=8,
                                 ratio_weight=0.8)
    assert np.max(np.abs(z_scores(biased, expectation(theta), 100))) > 5


@pytest.mark.slow
def test_running_statistics_on_a_real_sparse_network():
    """faux.magnolia.high (1,461 nodes, 974 edges), edges + triangles + gwesp: after
    10^5 proposals per chain the running statistics equal those recomputed from the
    edges (float32 accumulation), the state is consistent, views are right."""
    path = DATA / "faux_magnolia_high.npz"
    if not path.exists():
        pytest.skip("faux_magnolia_high.npz not found")
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
                                     undirected_change, 100_000)
    assert np.all(np.asarray(info["acceptance_rate"]) > 0.05)
    check_consistent(state)
    for c, e in enumerate(nc.network_edges(state)):
        np.testing.assert_allclose(np.asarray(state.statistics[c]), statistics(e),
                                   rtol=1e-4, atol=1e-2)
    # views of the final state: every tie (both orientations) and random dyads
    e = nc.network_edges(state)[0]
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, n, 300), rng.integers(0, n, 300)
    i = np.concatenate([e[:, 0], e[:, 1], a[a != b]])
    j = np.concatenate([e[:, 1], e[:, 0], b[a != b]])
    check_views(state, 0, i, j, check_change=False)


@pytest.mark.slow
def test_matches_ergmx_simulation():
    """Florentine marriages, edges + gwesp(0.25, fixed): mean statistics of our chains
    against ergmx's simulate (R ergm's interface) at the same θ."""
    ergmx = pytest.importorskip("ergmx")
    nx = pytest.importorskip("networkx")
    path = DATA / "flomarriage.npz"
    if not path.exists():
        pytest.skip("flomarriage.npz not found")
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

    A = adjacency(edges, n, False)
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
