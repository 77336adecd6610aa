"""The structure found from the model itself (structure/discovery.py): interaction graph,
coloring into blocks, multilinearity, ``independent()``, and the error for a potential
that is not finite. (Models that cannot be traced at all: test_model_ugm.py; the greedy
coloring and declared colorings: test_structure_graph.py; the structure of a CRF's every
example: test_structure_covering.py.)"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest

import numpyro_ugm as ugm

# --- models -----------------------------------------------------------------------------


def grid(L):
    """Periodic L×L Ising grid, written with rolls."""
    J = numpyro.param("J", 0.3)
    h = numpyro.param("h", 0.1)
    x = numpyro.sample("x", ugm.Spin((L, L)))
    numpyro.factor("couplings", J * jnp.sum(x * jnp.roll(x, 1, 0) + x * jnp.roll(x, 1, 1)))
    numpyro.factor("field", h * jnp.sum(x))


def plain_rbm(V, H):
    """An RBM written with ``numpyro.factor`` (``ugm.models.rbm`` declares its blocks, so
    nothing would be analysed)."""
    W = numpyro.param("W", jnp.full((V, H), 0.1))
    v = numpyro.sample("v", ugm.Binary(V))
    h = numpyro.sample("h", ugm.Binary(H))
    numpyro.factor("energy", v @ W @ h + jnp.sum(v) - jnp.sum(h))


def plain_vbm(n):
    """A fully connected spin model written with ``numpyro.factor`` (see plain_rbm)."""
    W = numpyro.param("W", jnp.zeros((n, n)))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("couplings", x @ jnp.triu(W, 1) @ x)


def potts_chain(n, K):
    """Open chain of K-label variables with one K×K coupling matrix per bond."""
    J = numpyro.param("J", jnp.zeros((n - 1, K, K)))
    h = numpyro.param("h", jnp.zeros((n, K)))
    x = numpyro.sample("x", ugm.Categorical(n, num_categories=K))
    numpyro.factor("bonds", jnp.einsum("ia,iab,ib->", x[:-1], J, x[1:]))
    numpyro.factor("fields", jnp.sum(h * x))


def abs_chain(n):
    """A spin chain written with |.| (not multilinear) plus a square on the first three
    spins (a triangle)."""
    J = numpyro.param("J", jnp.ones(n - 1))
    c = numpyro.param("c", 0.5)
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("chain", jnp.sum(J * jnp.abs(x[:-1] + x[1:] + 0.5)))
    numpyro.factor("triangle", c * (x[0] + x[1] + x[2]) ** 2)


def third_order():
    """Binary variables with one third-order factor and one pairwise factor."""
    T = numpyro.param("T", 1.0)
    W = numpyro.param("W", 1.0)
    x = numpyro.sample("x", ugm.Binary(5))
    numpyro.factor("triple", T * x[0] * x[1] * x[2])
    numpyro.factor("pair", W * x[3] * x[4])


def two_sites():
    """A spin site and a categorical site, coupled through one pair."""
    A = numpyro.param("A", jnp.ones(3))
    s = numpyro.sample("s", ugm.Spin(4))
    y = numpyro.sample("y", ugm.Categorical(2, num_categories=3))
    numpyro.factor("link", s[0] * (A @ y[1]) + s[1] * s[2])


def edge_set(structure):
    return {tuple(int(v) for v in e) for e in structure.edges}


# --- graphs and blocks ------------------------------------------------------------------


def test_rbm_two_blocks():
    m = ugm.UGM(plain_rbm, 5, 3)
    st = m.target().structure
    assert st.multilinear
    assert st.sites == ("v", "h")
    assert m.target().blocks == [{"v": None}, {"h": None}]
    expected = {(i, 5 + j) for i in range(5) for j in range(3)}  # complete bipartite
    assert edge_set(st) == expected
    assert st.independent(["v"]) and st.independent(["h"])
    assert not st.independent(["v", "h"])


@pytest.mark.parametrize("L", [4, 6])
def test_even_periodic_grid_checkerboard(L):
    m = ugm.UGM(grid, L)
    st = m.target().structure
    assert st.multilinear
    i, j = np.divmod(np.arange(L * L), L)
    expected = set()
    for a, b in [(1, 0), (0, 1)]:
        nb = ((i + a) % L) * L + (j + b) % L
        expected |= {(min(p, q), max(p, q)) for p, q in zip(range(L * L), nb)}
    assert edge_set(st) == expected
    np.testing.assert_array_equal(st.colors, (i + j) % 2)
    assert len(m.target().blocks) == 2
    np.testing.assert_array_equal(m.target().blocks[0]["x"], np.nonzero((i + j) % 2 == 0)[0])
    np.testing.assert_array_equal(m.target().blocks[1]["x"], np.nonzero((i + j) % 2 == 1)[0])
    assert not st.independent(["x"])


def test_fully_connected_one_variable_per_block():
    m = ugm.UGM(plain_vbm, 6)
    st = m.target().structure
    assert st.multilinear
    assert edge_set(st) == {(i, j) for i in range(6) for j in range(i + 1, 6)}
    assert len(m.target().blocks) == 6
    for c, block in enumerate(m.target().blocks):
        np.testing.assert_array_equal(block["x"], [c])


def test_a_large_model_shows_its_analysis_and_finds_the_same_graph(monkeypatch, capsys):
    """Issue 34 item 6: a large model's analysis says what it is doing and how to skip it
    (a progress bar naming ``colors=``); the edges, gathered point by point without
    copies, are the same."""
    from numpyro_ugm.structure import discovery
    monkeypatch.setattr(discovery, "LARGE_MODEL", 4)  # 8 + 3 = 11 state values here
    m = ugm.UGM(plain_rbm, 8, 3)
    assert edge_set(m.target().structure) == {(i, 8 + j) for i in range(8) for j in range(3)}
    err = capsys.readouterr().err
    assert "structure of 11 variables" in err and "colors=" in err
    monkeypatch.setattr(discovery, "LARGE_MODEL", 11)
    assert edge_set(ugm.UGM(plain_rbm, 8, 3).target().structure) == edge_set(m.target().structure)
    assert "structure of" not in capsys.readouterr().err


def test_potts_chain_alternating():
    m = ugm.UGM(potts_chain, 7, 3)
    st = m.target().structure
    assert st.multilinear  # one-hot representation keeps x_i J x_j multilinear
    assert edge_set(st) == {(i, i + 1) for i in range(6)}
    np.testing.assert_array_equal(st.colors, np.arange(7) % 2)
    np.testing.assert_array_equal(m.target().blocks[0]["x"], [0, 2, 4, 6])
    np.testing.assert_array_equal(m.target().blocks[1]["x"], [1, 3, 5])


def test_third_order_factor_gives_a_triangle():
    m = ugm.UGM(third_order)
    st = m.target().structure
    assert st.multilinear
    assert edge_set(st) == {(0, 1), (0, 2), (1, 2), (3, 4)}
    assert len(m.target().blocks) == 3  # the triangle needs three colors
    for a, b in edge_set(st):
        assert st.colors[a] != st.colors[b]


def gated(multilinear):
    """Binary model whose 1-2 interaction is switched off whenever x0 = 0: at domain
    points it is invisible half the time, so probes must not rely on them alone."""
    c = numpyro.param("c", 1.0)
    x = numpyro.sample("x", ugm.Binary(5))
    pair = x[1] * x[2] if multilinear else jnp.abs(x[1] + x[2] - 0.5)
    numpyro.factor("gated", c * x[0] * pair)
    numpyro.factor("pair", c * x[3] * x[4])


@pytest.mark.parametrize("multilinear", [True, False])
def test_interactions_masked_at_domain_points_are_found(multilinear):
    m = ugm.UGM(gated, multilinear)
    for seed in range(3):
        st = m.analyze(rng_key=jax.random.PRNGKey(seed))
        assert st.multilinear == multilinear
        assert edge_set(st) == {(0, 1), (0, 2), (1, 2), (3, 4)}, seed


def test_several_sites_global_numbering():
    m = ugm.UGM(two_sites)
    st = m.target().structure
    assert st.sites == ("s", "y")
    np.testing.assert_array_equal(st.offsets, [0, 4, 6])
    assert edge_set(st) == {(0, 5), (1, 2)}  # s[0]-y[1], s[1]-s[2]
    np.testing.assert_array_equal(st.global_indices("y"), [4, 5])
    np.testing.assert_array_equal(st.global_indices("y", [1]), [5])
    # every variable appears in exactly one block, and blocks hold no edge
    seen = np.zeros(st.num_variables, int)
    for block in m.target().blocks:
        members = []
        for s, idx in block.items():
            members.extend(st.global_indices(s, idx))
        seen[members] += 1
        members = set(int(v) for v in members)
        assert not any(a in members and b in members for a, b in edge_set(st))
    np.testing.assert_array_equal(seen, 1)
    assert not st.independent(["s", "y"])
    assert st.independent(["y"])


def test_non_multilinear_detected_and_graph_found_by_flips():
    m = ugm.UGM(abs_chain, 6)
    st = m.target().structure
    assert not st.multilinear
    assert edge_set(st) == {(i, i + 1) for i in range(5)} | {(0, 2)}
    assert len(m.target().blocks) == 3  # the triangle 0-1-2
    for a, b in edge_set(st):
        assert st.colors[a] != st.colors[b]


def test_non_multilinear_too_large_falls_back_to_single_sites():
    m = ugm.UGM(abs_chain, 6)
    with pytest.warns(UserWarning, match="not multilinear"):
        st = m.analyze(max_flip_variables=4)
    assert not st.multilinear and st.edges is None
    np.testing.assert_array_equal(st.colors, np.arange(6))
    assert not st.independent(["x"])


def test_square_of_sum_is_not_multilinear():
    def model():
        w = numpyro.param("w", jnp.ones(4))
        x = numpyro.sample("x", ugm.Spin(4))
        numpyro.factor("sq", (w @ x) ** 2)

    st = ugm.UGM(model).target().structure
    assert not st.multilinear
    assert len(st.edges) == 6 and len(st.blocks) == 4  # complete graph


def test_independent_unknown_graph_and_singletons():
    m = ugm.UGM(two_sites)
    st = m.target().structure._replace(edges=None)
    assert not st.independent(["s"])
    one = ugm.UGM(lambda: numpyro.factor("f", numpyro.sample("z", ugm.Spin(1)).sum()))
    assert one.target().structure._replace(edges=None).independent(["z"])


@pytest.mark.parametrize("model", [plain_rbm, ugm.models.rbm], ids=["found", "declared"])
def test_structure_found_inside_a_trace(model):
    m = ugm.UGM(model, 3, 2)

    @jax.jit
    def f(x):
        return x + len(m.target().blocks)

    assert int(f(0)) == 2


# --- errors -----------------------------------------------------------------------------


def test_non_finite_potential_is_an_error():
    def model():
        x = numpyro.sample("x", ugm.Binary(3))
        numpyro.factor("f", jnp.log(x[0]) + x[1] * x[2])  # -inf at x[0] = 0

    m = ugm.UGM(model)
    with warnings.catch_warnings(), pytest.raises(FloatingPointError, match="not finite"):
        warnings.simplefilter("ignore")
        m.target().structure
