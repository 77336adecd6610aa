"""The sparse chains' state (numpyro_ugm/network/sampling/chains.py): built from edge
lists with clear errors for bad input, and the toggle of a tie, written in JAX
(``toggle_writes`` / ``apply_writes``) and for numba
(:func:`~numpyro_ugm.network.sampling.compiled.toggle_tie`), leaving the same state
after the same toggles (undirected and directed, every field, every step)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numpyro_ugm.network.sampling import chains as nc
from numpyro_ugm.network.sampling.compiled import toggle_tie
from numpyro_ugm.network.sampling.views import gather_rows
from numpyro_ugm.network.terms.compiled import directed_arrays, native_chains


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


@jax.jit
def _jax_toggle(state, i, j):
    """Toggle (i, j) of a one-chain state (no chain axis) as the JAX sampler does."""
    m = state.num_edges
    last = state.edges[jnp.maximum(m - 1, 0)]
    rows = gather_rows(state, i, j, last[0], last[1])
    on = jnp.any(rows["lists"][0, :, 0] == j)
    writes, num_edges = nc.toggle_writes(state, rows, i, j, last[0], last[1], ~on, on)
    return nc.apply_writes(state, writes, num_edges)


@pytest.mark.parametrize("directed", [False, True])
def test_the_jax_and_compiled_toggles_leave_the_same_state(directed, chain_checks):
    """Random dyads toggled one after another (ties added and removed, the last edge
    moving into a freed position) from a random network: after every toggle the JAX
    writes and the compiled ``toggle_tie`` hold the same neighbours in the same slots,
    the same edge positions, degrees and edge list."""
    n = 9
    rng = np.random.default_rng(4 + directed)
    edges = chain_checks.random_edges(rng, n, 0.3, directed)
    state = nc.init_network_chains(edges, n, 1, directed=directed, statistics0=[0.0],
                                   max_degree=n - 1)
    one = jax.tree.map(lambda x: x[0], state)
    compiled = native_chains(state)
    in_lists, in_degree = directed_arrays(compiled)
    back, back_degree = (in_lists, in_degree) if directed else (compiled.lists,
                                                                compiled.degree)
    for _ in range(60):
        i, j = rng.choice(n, 2, replace=False)
        if not directed and compiled.degree[0, i] > compiled.degree[0, j]:
            i, j = j, i  # as the kernel: the pair is the same either way round
        one = _jax_toggle(one, jnp.int32(i), jnp.int32(j))
        slot = int(np.flatnonzero(compiled.lists[0, i, :compiled.degree[0, i], 0] == j)[0]) \
            if j in compiled.lists[0, i, :compiled.degree[0, i], 0] else -1
        assert toggle_tie(compiled.lists, compiled.degree, back, back_degree, compiled.edges,
                          compiled.num_edges, 0, i, j, slot)
        m = int(one.num_edges)
        assert m == int(compiled.num_edges[0])
        sides = [("lists", "degree")] + ([("in_lists", "in_degree")] if directed else [])
        for lists, degree in sides:
            ours, theirs = np.asarray(getattr(one, lists)), getattr(compiled, lists)[0]
            deg = getattr(compiled, degree)[0]
            np.testing.assert_array_equal(np.asarray(getattr(one, degree)), deg)
            np.testing.assert_array_equal(ours[..., 0], theirs[..., 0], err_msg=lists)
            # edge positions in the slots in use (the JAX writes also zero freed slots')
            used = np.arange(ours.shape[1]) < deg[:, None]
            np.testing.assert_array_equal(ours[..., 1][used], theirs[..., 1][used])
        np.testing.assert_array_equal(np.asarray(one.edges)[:m], compiled.edges[0, :m])
    chain_checks.check_consistent(jax.tree.map(lambda x: jnp.asarray(x)[None], one))
