"""The model ``ergm`` (numpyro_ugm/network/model.py) sampled by Gibbs against exact
enumeration, with covariate terms, undirected and directed; the colors its factor
declares by the terms' dependence; and a user factor composed with it (linear in y: the
declared matchings stand; nonlinear: the structure analysis takes over). (Its blocks,
conditionals and the estimators on it: test_ergm_model.py.)"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.models import ergm
from numpyro_ugm.network import ergm_statistics
from numpyro_ugm.network.model import dyad_colors
from numpyro_ugm.network.terms.structural import resolve_terms
from numpyro_ugm.network.terms.term import Network


def dyad_list(n, directed):
    """The dyads (i, j) in the documented order, written out here (as ``brute_force`` of
    tests/network/conftest.py) because the brute-force statistics below are module
    functions."""
    return [(i, j) for i in range(n) for j in range(n) if (i != j if directed else i < j)]


# --- 1. Gibbs sampling against exact enumeration; the declared colors ----------------------


def all_graphs(num_dyads):
    return np.array(list(itertools.product([0, 1], repeat=num_dyads)), np.int8)


def adjacency_batch(y, n, directed):
    A = np.zeros((len(y), n, n), np.int64)
    for e, (i, j) in enumerate(dyad_list(n, directed)):
        A[:, i, j] = y[:, e]
        if not directed:
            A[:, j, i] = y[:, e]
    return A


SMALL = {"Sex": np.array(["F", "M", "M", "F", "M"]), "x": np.array([0.0, 1.5, -1.0, 2.0, 0.5])}


def undirected_small_statistics(y):
    """edges, nodematch('Sex'), triangle, absdiff('x') of graphs (N, 10) on 5 nodes."""
    pairs = dyad_list(5, False)
    match = np.array([SMALL["Sex"][i] == SMALL["Sex"][j] for i, j in pairs], float)
    gap = np.array([abs(SMALL["x"][i] - SMALL["x"][j]) for i, j in pairs])
    A = adjacency_batch(y, 5, False)
    triangles = np.einsum("gij,gjk,gki->g", A, A, A) / 6
    return np.stack([y.sum(1), y @ match, triangles, y @ gap], 1).astype(np.float64)


def directed_small_statistics(y):
    """edges, mutual, ttriple, nodeicov('x') of directed graphs (N, 12) on 4 nodes."""
    A = adjacency_batch(y, 4, True)
    receiver_x = np.array([SMALL["x"][j] for _, j in dyad_list(4, True)])
    return np.stack([y.sum(1), np.einsum("gij,gji->g", A, A) / 2,
                     np.einsum("gij,gjk,gik->g", A, A, A), y @ receiver_x], 1).astype(float)


def exact_moments(S, theta):
    """E[s] and Cov[s] under p(y) ∝ exp(θ·s(y)) over the enumerated graphs."""
    logits = S @ np.asarray(theta, np.float64)
    p = np.exp(logits - np.logaddexp.reduce(logits))
    mean = p @ S
    return mean, (S - mean).T @ ((S - mean) * p[:, None])


def within(sampled, mean, cov):
    """Whether the sampled mean of every statistic is within 4 standard errors of the
    exact one (x2 for the autocorrelation within chains, as the other Gibbs tests)."""
    se = np.sqrt(np.diag(cov) / len(sampled)) * 2
    return bool(np.all(np.abs(sampled.mean(0) - mean) < 4 * se))


def gibbs_statistics(m, params, statistics_fn, seed=0):
    samples = ugm.sample(m, jax.tree.map(jnp.asarray, params), jax.random.PRNGKey(seed), 100,
                         num_chains=100, num_warmup=10, thinning=2)
    return statistics_fn(np.asarray(samples["y"]))


def assert_node_disjoint_colors(colors, n, directed):
    pairs = dyad_list(n, directed)
    for c in np.unique(colors):
        nodes = [v for e in np.flatnonzero(colors == c) for v in pairs[e]]
        assert len(nodes) == len(set(nodes)), (c, nodes)


UNDIRECTED_TERMS = "edges + nodematch('Sex') + triangle + absdiff('x')"


@pytest.mark.slow  # the default suite samples this ERGM with a user factor (below)
def test_gibbs_matches_exact_moments_undirected_with_covariates():
    net = Network(5, False, SMALL)
    terms = UNDIRECTED_TERMS
    m = ugm.UGM(ergm, net, terms)
    colors = m.target().structure.colors
    assert len(np.unique(colors)) == 5  # n odd: n matchings
    assert_node_disjoint_colors(colors, 5, False)
    theta = np.array([-0.5, 0.8, 0.4, -0.3])
    S = undirected_small_statistics(all_graphs(10))
    sampled = gibbs_statistics(m, {"theta": theta}, undirected_small_statistics)
    assert within(sampled, *exact_moments(S, theta)), (sampled.mean(0),
                                                       exact_moments(S, theta)[0])
    # the check can fail: the exact moments of a wrong θ are far from these samples
    wrong = theta * np.array([1, -1, 1, 1])
    assert not within(sampled, *exact_moments(S, wrong))
    # the package's statistics of the samples are the ones enumerated here
    y = all_graphs(10)[::37]
    np.testing.assert_allclose(np.asarray(ergm_statistics(y, terms, network=net)),
                               undirected_small_statistics(y), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_gibbs_matches_exact_moments_directed():
    net = Network(4, True, SMALL_DIRECTED)
    terms = "edges + mutual + ttriple + nodeicov('x')"
    m = ugm.UGM(ergm, net, terms)
    colors = m.target().structure.colors
    assert len(np.unique(colors)) == 2 * 3  # each of the n - 1 matchings, both directions
    assert_node_disjoint_colors(colors, 4, True)
    theta = np.array([-0.6, 1.0, 0.2, 0.5])
    S = directed_small_statistics(all_graphs(12))
    sampled = gibbs_statistics(m, {"theta": theta}, directed_small_statistics)
    assert within(sampled, *exact_moments(S, theta)), (sampled.mean(0),
                                                       exact_moments(S, theta)[0])
    assert not within(sampled, *exact_moments(S, theta * np.array([1, -1, 1, 1])))
    y = all_graphs(12)[::97]
    np.testing.assert_allclose(np.asarray(ergm_statistics(y, terms, network=net)),
                               directed_small_statistics(y), rtol=1e-5, atol=1e-5)


SMALL_DIRECTED = {"x": SMALL["x"][:4]}


def test_declared_colors_by_dependence():
    """The coloring the model's factor declares (dyad_colors), by the terms' dependence."""
    def colors(n, directed, formula):
        net = Network(n, directed, {"x": np.arange(n) * 0.5, "Sex": np.array(["F", "M"] * n)[:n]})
        return dyad_colors(net, resolve_terms(formula, net))

    # covariate terms only: one block of every dyad
    for directed in (False, True):
        c = colors(5, directed, "edges + nodematch('Sex') + absdiff('x') + nodecov('x')")
        assert c.shape == (20 if directed else 10,) and np.all(c == 0)
    # gwesp couples any two dyads: one color per dyad
    assert sorted(colors(5, False, "edges + nodematch('Sex') + gwesp(0.5, fixed=TRUE)")) == \
        list(range(10))
    assert sorted(colors(4, True, "edges + gwesp(0.5, fixed=TRUE)")) == list(range(12))
    # node terms: matchings, n - 1 colors for even n, n for odd n, twice as many directed
    for n, directed, count in ((6, False, 5), (5, False, 5), (6, True, 10), (5, True, 10),
                               (4, True, 6)):
        c = colors(n, directed, "edges + mutual" if directed else "edges + kstar(2)")
        assert len(np.unique(c)) == count
        assert_node_disjoint_colors(c, n, directed)


# --- 2. a user factor composed with the ERGM ---------------------------------------------

COMPOSED_TERMS = UNDIRECTED_TERMS
WEIGHTS = np.array([1.0, -0.5, 0.0, 2.0, 0.5, -1.0, 1.5, 0.0, -2.0, 1.0])


def ergm_and_mine(network, terms, pair=None, init=0.0):
    """An ERGM with a factor of its own: θ₂·(y @ w), or θ₂·y_a·y_b for ``pair`` (a, b);
    θ₂ a ``numpyro.param`` starting at ``init``."""
    y = ergm(network, terms)
    theta2 = numpyro.param("theta2", jnp.asarray(init, jnp.float32))
    if pair is None:
        numpyro.factor("mine", theta2 * (y @ jnp.asarray(WEIGHTS, y.dtype)))
    else:
        numpyro.factor("mine", theta2 * y[pair[0]] * y[pair[1]])
    return y


def composed_statistics(y, pair=None):
    extra = y @ WEIGHTS if pair is None else y[:, pair[0]] * y[:, pair[1]]
    return np.concatenate([undirected_small_statistics(y), extra[:, None]], 1)


def same_matching_pair(net):
    """Two dyads of one matching (no shared node): a product of them couples them."""
    matchings = dyad_colors(net, resolve_terms(COMPOSED_TERMS, net))
    same = np.flatnonzero(matchings == matchings[0])
    return matchings, (int(same[0]), int(same[1]))


def check_gibbs_against_exact(m, theta, pair, flip):
    """Gibbs means of s(y) and the user statistic against exact enumeration at θ, and
    (that the check can fail) against the exact means with the coefficient ``flip``
    negated."""
    S = composed_statistics(all_graphs(10), pair)
    sampled = gibbs_statistics(m, {"theta": theta[:-1], "theta2": theta[-1]},
                               lambda y: composed_statistics(y, pair), seed=1)
    assert within(sampled, *exact_moments(S, theta)), (sampled.mean(0),
                                                       exact_moments(S, theta)[0])
    wrong = theta.copy()
    wrong[flip] = -wrong[flip]
    assert not within(sampled, *exact_moments(S, wrong))


@pytest.mark.slow
def test_a_linear_user_factor_keeps_the_declared_matchings_and_gibbs_is_exact():
    """The default suite's Gibbs check: the ERGM with covariate terms (θ₂ = 0: the ERGM
    alone) and with a user factor θ₂·(y @ w), against exact enumeration of the 1,024
    graphs on 5 nodes."""
    net = Network(5, False, SMALL)
    matchings, _ = same_matching_pair(net)
    m = ugm.UGM(ergm_and_mine, net, COMPOSED_TERMS, None, 0.5)
    colors = m.target().structure.colors
    np.testing.assert_array_equal(colors, matchings)  # linear in y: the matchings stand
    assert len(np.unique(colors)) == 5  # n odd: n matchings
    assert_node_disjoint_colors(colors, 5, False)
    # the ERGM alone (a nodematch coefficient of the wrong sign is caught), then with θ₂
    check_gibbs_against_exact(m, np.array([-0.5, 0.8, 0.4, -0.3, 0.0]), None, flip=1)
    check_gibbs_against_exact(m, np.array([-0.4, 0.5, 0.7, -0.2, 0.6]), None, flip=4)


@pytest.mark.slow
def test_a_nonlinear_user_factor_falls_back_to_the_analysis_and_gibbs_is_exact():
    net = Network(5, False, SMALL)
    matchings, pair = same_matching_pair(net)
    m = ugm.UGM(ergm_and_mine, net, COMPOSED_TERMS, pair, 0.5)
    colors = m.target().structure.colors
    assert colors[pair[0]] != colors[pair[1]]  # the analysis splits the coupled pair
    assert not np.array_equal(colors, matchings)
    check_gibbs_against_exact(m, np.array([0.0, 0.0, 0.0, 0.0, -4.0]), pair, flip=4)


@pytest.mark.slow
def test_a_nonlinear_user_factor_whose_parameter_starts_at_zero_is_found():
    net = Network(5, False, SMALL)
    _, pair = same_matching_pair(net)
    m = ugm.UGM(ergm_and_mine, net, COMPOSED_TERMS, pair, 0.0)
    colors = m.analyze().colors  # m.target().structure, without its check of the hooks
    assert colors[pair[0]] != colors[pair[1]]


def test_a_sweep_of_many_chains_gathers_no_index_table_per_chain():
    """The block indices reach the ERGM's change statistics unbatched, so the compiled
    sweep of several chains gathers the dyads of a block's nodes by constant tables: no
    gather yields int32 indices per chain (each such gather redoes a table for every
    chain), unrolled (few blocks) or scanned."""
    import re

    from numpyro_ugm.kernels.base import init_chains, step_chains

    for n in (6, 20):  # 5 matchings (unrolled), 19 (scanned)
        m = ugm.UGM(ergm, n, ("edges", "twostars", "triangles"))
        target = m.target()
        kernel = ugm.kernels.gibbs().build(target)
        f = target.logdensity_fn({"theta": jnp.asarray([-1.0, 0.1, 0.2])})
        y = jnp.zeros((8, n * (n - 1) // 2))

        def sweep(key, y):
            return step_chains(kernel, key, init_chains(kernel, {"y": y}, f), f)[0]

        hlo = jax.jit(sweep).lower(jax.random.PRNGKey(0), y).compile().as_text()
        per_chain = re.findall(r"= s32\[(\d+)[^\]]*\][^ ]* gather\(", hlo)
        assert not [s for s in per_chain if int(s) % 8 == 0 and int(s) >= 8], per_chain
