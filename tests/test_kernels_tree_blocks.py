"""Tree-block Gibbs (kernels/tree_blocks.py, structure/forests.py): the covers put every
variable in a block and every edge inside one; the kernel leaves the exact distribution
invariant (total variation of 20,000 independent chains against enumeration, as in
test_kernels_gibbs.py) on an Ising grid and a Potts ring, draws a chain exactly in one
step, moves every variable, runs inside ``ugm.sample``, PCD, AIS and ``predict``, and
refuses real sites and potentials with terms over three variables, naming the sites."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import optax
import pytest
from helpers.models import abs7, potts5
from helpers.states import check_tv, random_params

import numpyro_ugm as ugm
from numpyro_ugm.structure.forests import block_groups, forest_covers, has_triangle


def ising_grid(height, width):
    J = numpyro.param("J", jnp.zeros(()))
    b = numpyro.param("b", jnp.zeros((height, width)))
    x = numpyro.sample("x", ugm.Spin((height, width)))
    numpyro.factor("bonds", J * (jnp.sum(x[1:] * x[:-1]) + jnp.sum(x[:, 1:] * x[:, :-1])))
    numpyro.factor("fields", jnp.sum(b * x))


@functools.lru_cache(maxsize=None)
def grid34():
    m = ugm.UGM(ising_grid, 3, 4)
    b = np.random.default_rng(0).normal(0.0, 0.3, (3, 4))
    return m, {"J": jnp.asarray(0.4, jnp.float32), "b": jnp.asarray(b, jnp.float32)}


def lattice(height, width, periodic):
    idx = np.arange(height * width).reshape(height, width)
    pairs = [np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
             np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)]
    if periodic:
        pairs += [np.stack([idx[:, 0], idx[:, -1]], 1), np.stack([idx[0], idx[-1]], 1)]
    return np.unique(np.sort(np.concatenate(pairs), 1), axis=0)


def check_cover(n, edges):
    """Every block an induced forest of non-adjacent components, every variable in a
    block, every edge inside one; returns the covers."""
    covers = forest_covers(n, edges)
    inside, seen = set(), np.zeros(n, bool)
    for cover in covers:
        for block in cover:
            members = np.concatenate(block)
            assert len(np.unique(members)) == len(members)
            seen[members] = True
            groups = block_groups(n, edges, block)  # raises if components touch
            assert sum(g.variables.shape[0] * g.variables.shape[1] for g in groups) \
                == len(members)
            mask = np.zeros(n, bool)
            mask[members] = True
            within = edges[mask[edges[:, 0]] & mask[edges[:, 1]]]
            assert len(within) == len(members) - len(block)  # a forest: E = V − components
            inside.update(map(tuple, within.tolist()))
    assert seen.all() and inside == set(map(tuple, edges.tolist()))
    return covers


def test_covers_of_grids_chains_trees_and_cycles():
    free = check_cover(12, lattice(3, 4, False))
    assert [[[c.tolist() for c in b] for b in cover] for cover in free] == [
        [[[0, 1, 2, 3], [8, 9, 10, 11]], [[4, 5, 6, 7]]],           # even rows, odd rows
        [[[0, 4, 8], [2, 6, 10]], [[1, 5, 9], [3, 7, 11]]]]         # even, odd columns
    periodic = check_cover(64, lattice(8, 8, True))
    assert len(periodic) == 4  # rows, columns, the two wrap-around strides
    rows = block_groups(64, lattice(8, 8, True), periodic[0][0])
    assert rows[0].variables.shape == (4, 7)  # 4 rows cut before the closing bond
    chain = check_cover(6, np.stack([np.arange(5), np.arange(1, 6)], 1))
    assert len(chain) == 1 and len(chain[0]) == 1 and chain[0][0][0].tolist() == list(range(6))
    tree = np.array([[0, 1], [0, 2], [1, 3], [1, 4], [2, 5]])  # and 6 alone
    assert len(check_cover(7, tree)) == 1
    triangle = np.array([[0, 1], [0, 2], [1, 2]])
    check_cover(3, triangle)
    assert has_triangle(3, triangle) and not has_triangle(64, lattice(8, 8, True))


@pytest.mark.slow
def test_invariant_on_an_ising_grid():
    m, params = grid34()
    check_tv(m, params, ugm.kernels.tree_gibbs(), 20000, 8, wrong_beta=0.75)


@pytest.mark.slow
def test_invariant_on_a_potts_ring():
    m, params = potts5()
    check_tv(m, params, ugm.kernels.tree_gibbs(), 5000, 6, wrong_beta=0.75)


def spin_chain(n):
    w = numpyro.param("w", jnp.zeros(n - 1))
    b = numpyro.param("b", jnp.zeros(n))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("bonds", jnp.sum(w * x[:-1] * x[1:]) + b @ x)


@pytest.mark.slow
@pytest.mark.parametrize("parallel", [False, True])
def test_a_chain_is_drawn_exactly_in_one_step(parallel):
    """By sequential scans or by prefix products."""
    m = ugm.UGM(spin_chain, 8)
    params = random_params(m, 2, {"w": 1.5, "b": 0.5})
    check_tv(m, params, ugm.kernels.tree_gibbs(parallel_paths=parallel), 5000, 1)


@pytest.mark.slow
def test_invariant_on_a_potential_that_is_not_multilinear_in_code():
    """|.| on the bonds and the square of a sum (pairwise on the domain): fields from
    the tables of the boundary edges, a complete graph covered by its strides, the
    tables checked against the potential (the graph has triangles)."""
    m, params = abs7()
    assert not m.target().structure.multilinear
    check_tv(m, params, ugm.kernels.tree_gibbs(), 5000, 4)


@pytest.mark.slow
def test_moves_every_variable_and_cached_tables_draw_the_same():
    """Without couplings or fields every variable is a fair coin after one step: about
    half the chains flip each one. Tables kept in the state or recomputed at each step
    give the same draws."""
    m, _ = grid34()
    target = m.target()
    start = target.random_state(jax.random.PRNGKey(0), (400,))
    keys = jax.random.split(jax.random.PRNGKey(1), 400)
    kernels = [ugm.kernels.tree_gibbs(cache_tables=c).build(target) for c in (True, False)]

    @jax.jit
    def steps(params):
        f = target.logdensity_fn(params)
        return [jax.vmap(lambda k, x: kernel.step(k, kernel.init(x, f), f)[0].position["x"])(
            keys, start) for kernel in kernels]

    draws = steps({"J": jnp.zeros(()), "b": jnp.zeros((3, 4))})
    np.testing.assert_array_equal(draws[0], draws[1])
    flipped = np.mean(np.asarray(draws[0]) != np.asarray(start["x"]), 0)
    assert np.all((flipped > 0.35) & (flipped < 0.65)), flipped


def test_runs_in_sample():
    m, params = grid34()
    x = ugm.sample(m, params, jax.random.PRNGKey(1), 200, num_chains=8,
                   kernel=ugm.kernels.tree_gibbs())["x"]
    exact = ugm.exact.marginals(m, params)["x"]
    mean = np.asarray(x).reshape(-1, 3, 4).mean(0)
    np.testing.assert_allclose(mean, exact[..., 1] - exact[..., 0], atol=0.15)


@pytest.mark.slow
def test_runs_in_pcd_ais_and_predict():
    m, params = grid34()
    spec = ugm.kernels.tree_gibbs()
    x = ugm.sample(m, params, jax.random.PRNGKey(1), 64, num_chains=1, kernel=spec)["x"]
    learner = ugm.MLE(ising_grid, ugm.PCD(16, kernel=spec), optax.sgd(0.01))
    result = learner.run(jax.random.PRNGKey(2), 3, {"x": np.asarray(x).reshape(-1, 3, 4)},
                         3, 4, progress_bar=False)
    assert np.all(np.isfinite(result.params["b"]))
    log_z = ugm.exact.log_partition(m, params)
    ais = ugm.ais.log_partition(m, params, jax.random.PRNGKey(3), 16, 50, kernel=spec)
    assert abs(float(ais.log_z) - float(log_z)) < 0.2
    best = ugm.predict(m, params, method="map", rng_key=jax.random.PRNGKey(4), num_chains=8,
                       num_samples=20, kernel=spec)
    np.testing.assert_array_equal(best.labels["x"], ugm.exact.map_state(m, params)[0]["x"])


@pytest.mark.slow
def test_refuses_real_sites():
    def mixed():
        x = numpyro.sample("x", ugm.Spin(3))
        z = numpyro.sample("z", ugm.Real(2))
        numpyro.factor("f", jnp.sum(x[:2] * z) + x[0] * x[1] - jnp.sum(z ** 2))

    with pytest.raises(ValueError, match=r"tree_gibbs: the sites \['z'\] are real"):
        ugm.sample(ugm.UGM(mixed), {}, jax.random.PRNGKey(0), 2,
                   kernel=ugm.kernels.tree_gibbs())


@pytest.mark.slow
def test_refuses_terms_over_three_variables():
    def triple():
        x = numpyro.sample("x", ugm.Spin(4))
        numpyro.factor("f", 2.0 * x[0] * x[1] * x[2] + x[2] * x[3])

    target = ugm.UGM(triple).target()
    kernel = ugm.kernels.tree_gibbs().build(target)
    with pytest.raises(Exception, match=r"tree_gibbs: the log-potential over sites \['x'\]"):
        kernel.init(target.reference_state(), target.logdensity_fn({}))


@pytest.mark.slow
def test_invariant_with_two_sites_and_an_isolated_variable():
    """An RBM (the blocks' paths run across its two sites) and a chain beside a lone
    spin (a forest: drawn exactly in one step)."""
    m = ugm.UGM(ugm.models.rbm, 4, 3)
    check_tv(m, random_params(m, 5, {"W": 1.0, "b": 0.5, "c": 0.5}),
             ugm.kernels.tree_gibbs(), 5000, 5)

    def chain_and_lone_spin():
        b = numpyro.param("b", jnp.array([0.3, -0.2, 0.5, 1.0]))
        x = numpyro.sample("x", ugm.Spin(4))
        numpyro.factor("f", 0.8 * x[0] * x[1] - 0.6 * x[1] * x[2] + b @ x)

    m = ugm.UGM(chain_and_lone_spin)
    check_tv(m, m.init_params(jax.random.PRNGKey(0)), ugm.kernels.tree_gibbs(), 5000, 1)
