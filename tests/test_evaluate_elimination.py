"""Exact inference by variable elimination (``ugm.exact`` with ``method="eliminate"``,
evaluate/elimination.py) against enumeration (``method="enumerate"``) and brute force
written here (every configuration's log-potential, in float64) on small models — chains,
a tree, a star, a cycle, a 0/1 ring, a grid, Potts models, a model with two sites, CRFs
with per-example inputs, data with a latent site — and against transfer-matrix
recursions written here on a 1000-spin chain and a 10 × 200 strip; and its errors."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from scipy.special import logsumexp

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import elimination, exact
from numpyro_ugm.structure.elimination import plan_elimination
from numpyro_ugm.structure.tables import labels_to_state, num_values_of, state_to_labels

NUM_DRAWS = 4000


# --- models --------------------------------------------------------------------------------


def spin_graph(n, edges):
    """Spins with a field per variable and a coupling per edge of ``edges`` (pairs)."""
    edges = np.asarray(edges)
    h = numpyro.param("h", jnp.zeros(n))
    J = numpyro.param("J", jnp.zeros(len(edges)))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("f", h @ x + jnp.sum(J * x[edges[:, 0]] * x[edges[:, 1]]))


def ising_grid(height, width):
    """Ising model on a height × width grid, free boundary: β Σ x_i x_j + Σ h_i x_i."""
    beta = numpyro.param("beta", jnp.asarray(0.44))
    h = numpyro.param("h", jnp.zeros((height, width)))
    x = numpyro.sample("x", ugm.Spin((height, width)))
    bonds = jnp.sum(x[:, :-1] * x[:, 1:]) + jnp.sum(x[:-1] * x[1:])
    numpyro.factor("f", beta * bonds + jnp.sum(h * x))


def potts_grid(height, width, K):
    """K-label Potts model on a grid: a K × K coupling table per direction and fields."""
    A = numpyro.param("A", jnp.zeros((K, K)))
    B = numpyro.param("B", jnp.zeros((K, K)))
    h = numpyro.param("h", jnp.zeros((height, width, K)))
    x = numpyro.sample("x", ugm.Categorical((height, width), num_categories=K))
    right = jnp.einsum("ija,ab,ijb->", x[:, :-1], A, x[:, 1:])
    down = jnp.einsum("ija,ab,ijb->", x[:-1], B, x[1:])
    numpyro.factor("f", right + down + jnp.sum(h * x))


def binary_ring(n):
    """0/1 variables on a ring (couplings W, fields b)."""
    W = numpyro.param("W", jnp.zeros(n))
    b = numpyro.param("b", jnp.zeros(n))
    x = numpyro.sample("x", ugm.Binary(n))
    numpyro.factor("f", jnp.sum(W * x * jnp.roll(x, -1)) + b @ x)


def two_sites():
    """Spins ``s`` (a chain of 3) and a 3-label ``c`` (2 of them), coupled: s_i to c_i."""
    J = numpyro.param("J", jnp.zeros(2))
    U = numpyro.param("U", jnp.zeros((2, 3)))
    g = numpyro.param("g", jnp.zeros(3))
    s = numpyro.sample("s", ugm.Spin(3))
    c = numpyro.sample("c", ugm.Categorical(2, num_categories=3))
    numpyro.factor("f", J @ (s[:-1] * s[1:]) + jnp.sum(s[:2, None] * U * c) + g @ s)


def star_abs(n):
    """A star of spins (variable 0 the hub) with |x_0 + x_i| bonds and fields: pairwise
    (|x_0 + x_i| = 1 + x_0 x_i) but not multilinear in code, so tabulated by differences;
    its band is wide (a hub), so it is eliminated unrolled, leaf by leaf."""
    J = numpyro.param("J", jnp.zeros(n - 1))
    h = numpyro.param("h", jnp.zeros(n))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("f", J @ jnp.abs(x[0] + x[1:]) + h @ x)


def potts_star(n, K):
    """K labels on a star (variable 0 the hub) plus one bond between leaves 1 and 2 (a
    triangle: width 2), with |x_i − x_j| on the one-hot vectors (2 − 2 δ(x_i, x_j)):
    pairwise, not multilinear in code; fields per variable and label."""
    w = numpyro.param("w", jnp.zeros(n - 1))
    c = numpyro.param("c", jnp.asarray(0.0))
    h = numpyro.param("h", jnp.zeros((n, K)))
    x = numpyro.sample("x", ugm.Categorical(n, num_categories=K))
    star = w @ jnp.sum(jnp.abs(x[0] - x[1:]), -1)
    numpyro.factor("f", star + c * jnp.sum(jnp.abs(x[1] - x[2])) + jnp.sum(h * x))


def latent_chain(n):
    """Visible spins ``v`` (n) each tied to a hidden spin of ``z`` (n), the hidden spins
    a chain: the latent variables interact, so nothing sums out in closed form."""
    a = numpyro.param("a", jnp.zeros(n))
    b = numpyro.param("b", jnp.zeros(n - 1))
    c = numpyro.param("c", jnp.zeros(n))
    v = numpyro.sample("v", ugm.Spin(n))
    z = numpyro.sample("z", ugm.Spin(n))
    numpyro.factor("f", a @ (v * z) + b @ (z[:-1] * z[1:]) + c @ v)


def random_params(m, seed, scale=0.8):
    """Parameters of ``m`` drawn N(0, scale²)."""
    rng = np.random.default_rng(seed)
    p = m.init_params(jax.random.PRNGKey(0))
    return {k: jnp.asarray(scale * rng.normal(size=np.shape(v)), jnp.float32)
            for k, v in p.items()}


def random_tree(n, seed):
    """Edges of a random tree on n variables (each joins an earlier one)."""
    rng = np.random.default_rng(seed)
    return np.array([(int(rng.integers(i)), i) for i in range(1, n)])


CHAIN = [(i, i + 1) for i in range(5)]
CYCLE = CHAIN + [(0, 5)]


# --- brute force ----------------------------------------------------------------------------


class Joint:
    """Every configuration of ``m``'s state sites (flat labels, sites in order, each
    flattened) and its probability, in float64, from the model's log-potential."""

    def __init__(self, m, params):
        target = m.target()
        self.domains = target.state_sites
        self.k = num_values_of(self.domains)
        self.labels = np.stack(np.unravel_index(np.arange(np.prod(self.k)), self.k), -1)
        f = target.logdensity_fn(params)
        logw = jax.jit(jax.vmap(lambda x: f(labels_to_state(self.domains, x, jnp.float32))))(
            jnp.asarray(self.labels, jnp.int32))
        self.logw = np.asarray(logw, np.float64)
        self.log_z = logsumexp(self.logw)
        self.p = np.exp(self.logw - self.log_z)

    def flat(self, data):
        """Flat labels (N, n) of data-representation sites with a leading axis."""
        state = {s: d.to_model(data[s]) for s, d in self.domains.items()}
        return np.asarray(state_to_labels(self.domains, state))

    def marginal(self, i):
        return np.bincount(self.labels[:, i], self.p, self.k.max())

    def pair(self, i, j):
        K = self.k.max()
        return np.bincount(self.labels[:, i] * K + self.labels[:, j], self.p,
                           K * K).reshape(K, K)


def site_marginals(joint, marginals):
    """``marginals`` (dict of (*site_shape, K)) as rows (n, K), sites in order."""
    K = joint.k.max()
    rows = []
    for s in joint.domains:
        a = np.asarray(marginals[s])
        a = a.reshape(-1, a.shape[-1])
        rows.append(np.pad(a, ((0, 0), (0, K - a.shape[-1]))))
    return np.concatenate(rows)


# --- small models: elimination against enumeration ------------------------------------------


def check_core(m, params, observed):
    """The elimination module's results in one compiled program — log Z, marginals of
    every variable and interacting pair, the MAP state, draws, and log p of data whose
    variables outside the mask ``observed`` are latent — against brute force."""
    joint = Joint(m, params)
    el = elimination.prepare(m, "test")
    data = joint.labels[np.random.default_rng(0).choice(len(joint.p), 5, p=joint.p)]

    @jax.jit
    def run(p, key):
        log_z, mu, mu2 = elimination.marginals(el, p)
        best, labels = elimination.map_labels(el, p)
        draws = elimination.sample_labels(el, p, key, NUM_DRAWS)
        return (log_z, mu, mu2, best, labels, draws,
                elimination.log_probs(el, p, jnp.asarray(data), observed)[0])

    log_z, mu, mu2, best, labels, draws, log_p = run(params, jax.random.PRNGKey(7))
    np.testing.assert_allclose(log_z, joint.log_z, rtol=1e-5)
    rows = site_marginals(joint, mu)
    np.testing.assert_allclose(rows, [joint.marginal(i) for i in range(len(rows))], atol=2e-5)
    for e, (i, j) in enumerate(el.plan.edges):
        np.testing.assert_allclose(mu2[e], joint.pair(i, j), atol=2e-5)
    check_map(joint, np.asarray(labels), best)
    check_frequencies(joint, np.asarray(draws))
    hit = np.all((joint.labels[None] == data[:, None]) | ~observed, -1)
    want = logsumexp(np.where(hit, joint.logw, -np.inf), 1) - joint.log_z
    np.testing.assert_allclose(log_p, want, rtol=1e-5, atol=1e-5)


def check_map(joint, labels, best):
    """``labels`` attain the largest log-potential ``best`` (the brute-force argmax when
    it is unique)."""
    top = np.argmax(joint.logw)
    np.testing.assert_allclose(best, joint.logw[top], rtol=1e-5, atol=1e-5)
    if np.sort(joint.logw)[-2] < joint.logw[top] - 1e-4:
        np.testing.assert_array_equal(labels, joint.labels[top])
    else:
        np.testing.assert_allclose(joint.logw[np.ravel_multi_index(labels, joint.k)],
                                   joint.logw[top], atol=1e-4)


def check_frequencies(joint, labels):
    """Draws (flat labels (N, n)): frequencies of the configurations within a generous
    total-variation bound (√(C / N), about twice its expected size), and of every
    variable's values within 5 standard errors."""
    num = len(labels)
    index = np.ravel_multi_index(labels.T, joint.k)
    freq = np.bincount(index, minlength=len(joint.p)) / num
    tv = 0.5 * np.abs(freq - joint.p).sum()
    assert tv < np.sqrt(len(joint.p) / num), tv
    for i in range(labels.shape[1]):
        p = joint.marginal(i)
        f = np.bincount(labels[:, i], minlength=len(p)) / num
        np.testing.assert_array_less(np.abs(f - p), 5 * np.sqrt(p * (1 - p) / num) + 1e-9)


def test_a_potts_star_by_elimination_matches_brute_force():
    """K = 3, a hub (no narrow band: eliminated unrolled, leaf by leaf) and a triangle,
    tables by differences; the last three variables latent in the data."""
    m = ugm.UGM(potts_star, 7, 3)
    check_core(m, random_params(m, 4), np.arange(7) < 4)


@pytest.mark.slow
def test_potts_grid_by_elimination_matches_brute_force():
    """K = 3 on a 2 × 3 grid (cycles, a banded plan); the second row latent."""
    m = ugm.UGM(potts_grid, 2, 3, 3)
    check_core(m, random_params(m, 4), np.arange(6) < 3)


@pytest.mark.slow
def test_two_sites_of_different_sizes_by_elimination_match_brute_force():
    """Spins and 3-label variables in one model (tables padded to K = 3); the 3-label
    site latent in the data."""
    m = ugm.UGM(two_sites)
    check_core(m, random_params(m, 5), np.arange(5) < 3)


@pytest.mark.slow
def test_a_star_not_multilinear_in_code_by_elimination_matches_brute_force():
    m = ugm.UGM(star_abs, 9)
    check_core(m, random_params(m, 6), np.arange(9) < 4)


def check_against_enumeration(m, params, draws=True):
    """The public entry points, ``ugm.exact``'s log Z, marginals, pair marginals, MAP
    state and draws by elimination, against enumeration and brute force."""
    joint = Joint(m, params)
    log_z = exact.log_partition(m, params, method="eliminate")
    np.testing.assert_allclose(log_z, exact.log_partition(m, params, method="enumerate"),
                               rtol=1e-5)
    np.testing.assert_allclose(log_z, joint.log_z, rtol=1e-5)
    mu = exact.marginals(m, params, method="eliminate")
    enumerated = exact.marginals(m, params, method="enumerate")
    for s in mu:
        np.testing.assert_allclose(mu[s], enumerated[s], atol=2e-5)
    rows = site_marginals(joint, mu)
    np.testing.assert_allclose(rows, [joint.marginal(i) for i in range(len(rows))], atol=2e-5)
    pm = exact.pair_marginals(m, params)
    np.testing.assert_allclose(pm.log_partition, joint.log_z, rtol=1e-5)
    for e, (i, j) in enumerate(pm.edges):
        np.testing.assert_allclose(pm.probs[e], joint.pair(i, j), atol=2e-5)
    state, best = exact.map_state(m, params)
    check_map(joint, joint.flat({s: np.asarray(v)[None] for s, v in state.items()})[0], best)
    if draws:
        sample = exact.sample(m, params, jax.random.PRNGKey(7), NUM_DRAWS, method="eliminate")
        check_frequencies(joint, joint.flat(sample))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["chain", "cycle", "binary ring", "tree", "star", "potts",
                                  "potts star", "two sites"])
def test_public_entry_points_agree_with_enumeration(name):
    m = {"chain": lambda: ugm.UGM(spin_graph, 6, CHAIN),
         "cycle": lambda: ugm.UGM(spin_graph, 6, CYCLE),
         "binary ring": lambda: ugm.UGM(binary_ring, 7),
         "tree": lambda: ugm.UGM(spin_graph, 9, random_tree(9, 2)),
         "star": lambda: ugm.UGM(star_abs, 7),
         "potts": lambda: ugm.UGM(potts_grid, 2, 3, 3),
         "potts star": lambda: ugm.UGM(potts_star, 6, 3),
         "two sites": lambda: ugm.UGM(two_sites)}[name]()
    check_against_enumeration(m, random_params(m, 1))


@pytest.mark.slow
def test_grid_agrees_with_enumeration():
    m = ugm.UGM(ising_grid, 3, 4)
    check_against_enumeration(m, random_params(m, 3, 0.5), draws=False)


# --- per-example inputs and latent sites ------------------------------------------------------


def crf_examples(num, length, num_attributes, active, seed):
    """Sparse features (num, length, active) padded with ``num_attributes``, masks of
    different lengths (a prefix each), labels with 0 at padded positions."""
    rng = np.random.default_rng(seed)
    features = rng.integers(0, num_attributes, (num, length, active))
    lengths = np.array([length, length - 2, 2])[:num]
    mask = np.arange(length)[None] < lengths[:, None]
    features = np.where(mask[..., None], features, num_attributes)
    labels = np.where(mask, rng.integers(0, 3, (num, length)), 0)
    return jnp.asarray(features), jnp.asarray(mask), labels


def test_auto_counts_the_enumerations_of_every_example():
    """``method="auto"`` enumerates a CRF only while its examples' enumerations add up to
    at most ENUMERATION_PREFERRED configurations: 300 sentences of 8 words with 9 labels
    (9**4 configurations each after closed-form sums) are eliminated (enumerating them
    took 1.5 s per evaluation, the forward algorithm 2 ms)."""
    from numpyro_ugm.evaluate._engine import enumeration_sizes

    features, mask, _ = crf_examples(1, 8, 5, 2, 3)
    m = ugm.UGM(ugm.models.chain_crf, features=features[0], mask=mask[0], num_labels=9,
                num_features=5)
    target = m.target()
    assert enumeration_sizes(target, 300, per_example=True) == (9 ** 4, 300 * 9 ** 4, 300)
    assert enumeration_sizes(target, 300) == (9 ** 4, 9 ** 4, 1)  # one log Z, no inputs

    def chosen(num, model=m):
        return elimination.choose(model, "t", "auto",
                                  lambda: enumeration_sizes(target, num, per_example=True),
                                  lambda: None, target=target)

    assert chosen(4) is None
    assert chosen(300) is not None and chosen(300).plan.band is not None
    # an RBM's graph has no narrow band: its small enumeration stays, whatever the count
    rbm = ugm.UGM(ugm.models.rbm, 12, 3)
    rbm_target = rbm.target()
    assert elimination.choose(rbm, "t", "auto", lambda: (8, 8 * 10 ** 6, 10 ** 6),
                              lambda: None, target=rbm_target) is None
    # a potential with a three-variable term, counted large: enumerated, not refused
    third = ugm.UGM(third_order, 5)
    assert elimination.choose(third, "t", "auto", lambda: (16, 10 ** 6, 1), lambda: None,
                              params=third.init_params(jax.random.PRNGKey(0))) is None


@pytest.mark.slow
def test_chain_crf_with_masks_agrees_with_enumeration():
    K, F = 3, 7
    features, mask, labels = crf_examples(3, 6, F, 2, 8)
    m = ugm.UGM(ugm.models.chain_crf, features=features[0], mask=mask[0], num_labels=K,
                num_features=F)
    params = random_params(m, 9)
    inputs = {"features": features, "mask": mask}
    got = exact.log_prob(m, params, {"y": labels}, inputs=inputs, method="eliminate")
    want = exact.log_prob(m, params, {"y": labels}, inputs=inputs, method="enumerate")
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # the padding adds nothing: the last example is the unpadded 2-label chain
    W, A = np.asarray(params["W"], np.float64), np.asarray(params["A"], np.float64)
    unary = np.stack([W[np.asarray(features[2, t])].sum(0) for t in range(2)])
    f = unary[:, :, None][0] + unary[1][None] + A
    np.testing.assert_allclose(got[2], f[labels[2, 0], labels[2, 1]] - logsumexp(f),
                               rtol=1e-5)


@pytest.mark.slow
def test_chain_crf_marginals_and_map_agree_with_brute_force():
    features, mask, _ = crf_examples(2, 6, 7, 2, 10)
    m = ugm.UGM(ugm.models.chain_crf, features=features[1], mask=mask[1], num_labels=3,
                num_features=7)
    check_against_enumeration(m, random_params(m, 11), draws=False)


@pytest.mark.slow
def test_grid_crf_agrees_with_enumeration():
    rng = np.random.default_rng(12)
    num, dn, de = 3, 2, 2
    node = jnp.asarray(rng.normal(size=(num, 3, 3, dn)), jnp.float32)
    edge = jnp.asarray(rng.normal(size=(num, 12, de)), jnp.float32)
    m = ugm.UGM(ugm.models.grid_crf, node_features=node[0], edge_features=edge[0])
    params = random_params(m, 13)
    data = {"x": np.where(rng.random((num, 3, 3)) < 0.5, -1, 1)}
    inputs = {"node_features": node, "edge_features": edge}
    got = exact.log_prob(m, params, data, inputs=inputs, method="eliminate")
    want = exact.log_prob(m, params, data, inputs=inputs, method="enumerate")
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.slow
def test_log_likelihood_with_a_latent_site_agrees_with_enumeration():
    m = ugm.UGM(latent_chain, 4)
    params = random_params(m, 14)
    rng = np.random.default_rng(15)
    data = {"v": np.where(rng.random((5, 4)) < 0.5, -1, 1)}
    got = exact.log_prob(m, params, data, method="eliminate")
    np.testing.assert_allclose(got, exact.log_prob(m, params, data, method="enumerate"),
                               rtol=1e-5)
    joint = Joint(m, params)  # p(v) = Σ_z p(v, z), by brute force
    v = joint.flat({"v": data["v"], "z": np.ones((5, 4))})[:, :4]
    hit = np.all(joint.labels[None, :, :4] == v[:, None], -1)
    np.testing.assert_allclose(got, logsumexp(np.where(hit, joint.logw, -np.inf), 1)
                               - joint.log_z, rtol=1e-5)
    np.testing.assert_allclose(exact.log_likelihood(m, params, data, method="eliminate"),
                               np.mean(got), rtol=1e-5)


# --- large models: independent transfer-matrix computations ----------------------------------


def chain_forward_backward(h, J):
    """log Z and the marginals p(x_i = +1) of a spin chain Σ h_i x_i + Σ J_i x_i x_i+1,
    by forward and backward recursions over the 2-state transfer matrices (float64)."""
    s = np.array([-1.0, 1.0])
    n = len(h)
    alpha, beta = np.zeros((n, 2)), np.zeros((n, 2))
    alpha[0] = h[0] * s
    for i in range(1, n):
        alpha[i] = h[i] * s + logsumexp(alpha[i - 1][:, None] + J[i - 1] * np.outer(s, s), 0)
    for i in range(n - 2, -1, -1):
        beta[i] = logsumexp(J[i] * np.outer(s, s) + (h[i + 1] * s + beta[i + 1])[None], 1)
    log_z = logsumexp(alpha[-1])
    return log_z, np.exp(alpha[:, 1] + beta[:, 1] - log_z)


def test_1000_spin_chain_matches_the_transfer_matrix():
    n = 1000
    m = ugm.UGM(spin_graph, n, [(i, i + 1) for i in range(n - 1)])
    params = random_params(m, 16, 0.5)
    log_z, plus = chain_forward_backward(np.asarray(params["h"], np.float64),
                                         np.asarray(params["J"], np.float64))
    np.testing.assert_allclose(exact.log_partition(m, params), log_z, rtol=1e-5)
    mu = np.asarray(exact.marginals(m, params)["x"])
    np.testing.assert_allclose(mu[:, 1], plus, atol=1e-4)


def strip_log_z(height, width, beta):
    """log Z of the free-boundary Ising strip (height × width, coupling β) by the column
    transfer matrix over the 2^height states of a column (float64)."""
    cols = 1 - 2 * ((np.arange(2 ** height)[:, None] >> np.arange(height)) & 1)  # (S, h)
    inside = beta * np.sum(cols[:, :-1] * cols[:, 1:], 1)
    across = beta * (cols @ cols.T)
    alpha = inside.astype(np.float64)
    for _ in range(width - 1):
        alpha = inside + logsumexp(alpha[:, None] + across, 0)
    return logsumexp(alpha)


@pytest.mark.slow
def test_10_by_200_strip_matches_the_column_transfer_matrix():
    m = ugm.UGM(ising_grid, 10, 200)
    params = {"beta": jnp.asarray(0.44), "h": jnp.zeros((10, 200))}
    # log Z ≈ 1821: 1e-3 is 5e-7 of it, a few float32 roundings
    np.testing.assert_allclose(exact.log_partition(m, params),
                               strip_log_z(10, 200, 0.44), rtol=0, atol=1e-3)


def test_strip_transfer_matrix_matches_brute_force_on_a_small_strip():
    """The test's own transfer matrix, checked where brute force reaches (3 × 4)."""
    x = 1 - 2 * ((np.arange(2 ** 12)[:, None] >> np.arange(12)) & 1)
    x = x.reshape(-1, 3, 4)
    bonds = np.sum(x[:, :, :-1] * x[:, :, 1:], (1, 2)) + np.sum(x[:, :-1] * x[:, 1:], (1, 2))
    np.testing.assert_allclose(strip_log_z(3, 4, 0.44), logsumexp(0.44 * bonds), rtol=1e-12)


# --- errors ---------------------------------------------------------------------------------


def third_order(n):
    J = numpyro.param("J", jnp.full(n - 1, 0.3))
    T = numpyro.param("T", jnp.asarray(0.7))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("f", J @ (x[:-1] * x[1:]) + T * x[0] * x[1] * x[2])


@pytest.mark.slow
def test_a_three_variable_term_is_an_error_naming_the_sites():
    m = ugm.UGM(third_order, 5)
    with pytest.raises(ValueError, match=r"exact.log_partition: .*sites \['x'\].*three or "
                       r"more variables"):
        exact.log_partition(m, m.init_params(jax.random.PRNGKey(0)), method="eliminate")


@pytest.mark.slow
def test_a_table_above_max_table_size_is_an_error_naming_the_treewidth():
    m = ugm.UGM(ising_grid, 3, 3)
    params = {"beta": jnp.asarray(0.44), "h": jnp.zeros((3, 3))}
    with pytest.raises(ValueError, match=r"log_partition: .*table over 4 variables \(x\[.*"
                       r"treewidth 3 with 2 values per variable is 2\^4 = 16 entries, above "
                       r"max_table_size=8"):
        exact.log_partition(m, params, method="eliminate", max_table_size=8)


def test_a_plan_within_the_budget_is_not_refused_for_its_band():
    """A 4 × 5 grid: treewidth 4 (2^5 = 32 entries by min-fill); the index order's band
    is 5 wide (64 entries). A budget of 32 admits the min-fill plan."""
    edges = ugm.models.grid_edges(4, 5)
    try:
        plan = plan_elimination(20, 2, edges, max_table_size=32)
    except ValueError as error:
        k, power, entries = re.search(r"(\d+)\^(\d+) = ([\d,]+) entries", str(error)).groups()
        assert int(k) ** int(power) == int(entries.replace(",", "")), str(error)
        raise
    assert plan.table_size <= 32


def spins_and_a_real():
    w = numpyro.param("w", jnp.asarray(0.5))
    x = numpyro.sample("x", ugm.Spin(2))
    r = numpyro.sample("r", ugm.Real(1))
    numpyro.factor("f", w * x[0] * x[1] + r[0] * x[0] - 0.5 * r[0] ** 2)


@pytest.mark.slow
def test_eliminating_a_model_with_a_real_site_is_an_error():
    m = ugm.UGM(spins_and_a_real)
    with pytest.raises(ValueError, match=r"log_partition: .*finite sites; \['r'\] are "
                       r"real"):
        exact.log_partition(m, {"w": jnp.asarray(0.5)}, method="eliminate")


@pytest.mark.slow
def test_fit_exact_on_groups_of_lengths_reaches_the_brute_force_optimum():
    """``fit_exact`` with data and inputs as lists (sentences in two length buckets, padded
    and masked): its optimum is that of the MAP objective summed by brute force over each
    sentence's unpadded labelings (numpy): scipy's L-BFGS-B cannot improve it."""
    import itertools

    from scipy.optimize import minimize

    rng = np.random.default_rng(0)
    K, A = 3, 12
    groups = []
    for num, length in ((5, 3), (4, 6)):
        lengths = rng.integers(1, length + 1, num)
        mask = np.arange(length)[None] < lengths[:, None]
        feats = np.where(mask[..., None], rng.integers(0, A, (num, length, 2)), A)
        y = (rng.integers(0, K, (num, length)) * mask).astype(np.int32)
        groups.append(({"y": y}, {"features": feats.astype(np.int32), "mask": mask}))
    m = ugm.UGM(ugm.models.chain_crf, features=groups[0][1]["features"][0],
                mask=groups[0][1]["mask"][0], num_labels=K, num_features=A, prior_scale=1.0)
    fit = ugm.fit_exact(m, [d for d, _ in groups], inputs=[u for _, u in groups],
                        progress_bar=False)
    assert fit.converged

    def objective(x):
        W = np.vstack([x[:A * K].reshape(A, K), np.zeros((1, K))])
        T = x[A * K:].reshape(K, K)
        total = 0.0
        for d, u in groups:
            for y, f, mk in zip(d["y"], u["features"], u["mask"]):
                n = int(mk.sum())
                scores = W[f[:n]].sum(1)

                def value(lab):
                    return scores[np.arange(n), lab].sum() + T[lab[:-1], lab[1:]].sum()

                lz = np.logaddexp.reduce([value(np.array(c)) for c in
                                          itertools.product(range(K), repeat=n)])
                total += value(y[:n]) - lz
        return -(total - 0.5 * np.sum(x ** 2)) / 9

    x0 = np.concatenate([np.ravel(fit.params["W"]), np.ravel(fit.params["A"])]).astype(float)
    better = minimize(objective, x0, method="L-BFGS-B")
    assert objective(x0) - better.fun < 1e-5
    np.testing.assert_allclose(-objective(x0) - 45 * 0.5 * np.log(2 * np.pi) / 9,
                               fit.objective, rtol=1e-5)
