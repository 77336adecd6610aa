"""The sparse chains' state (numpyro_ugm/network/sampling/chains.py): built from edge
lists with clear errors for bad input, and the toggle of a tie, written in JAX
(``toggle_writes`` / ``apply_writes``) and inline in the compiled kernel
(numpyro_ugm/network/sampling/compiled.py), leaving the same state after the same
toggles (undirected and directed, every field, every step)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numpyro_ugm.network.sampling import chains as nc
from numpyro_ugm.network.sampling.compiled import native_run
from numpyro_ugm.network.sampling.views import gather_rows
from numpyro_ugm.network.terms.compiled import native_chains, native_program
from numpyro_ugm.network.terms.structural import resolve_terms
from numpyro_ugm.network.terms.term import Network


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



@pytest.mark.parametrize("directed", [False, True])
def test_host_chains_are_the_jax_chains_in_numpy(directed):
    """``host=True`` (the compiled sampler's chains, no JAX program compiled) holds the
    same arrays as the JAX chains, field by field, and the same once made native."""
    edges = [[0, 1], [2, 1], [3, 0], [1, 3]]
    kwargs = dict(directed=directed, statistics0=[4.0, 0.1], adjacency_bits=True)
    jax_state = nc.init_network_chains(edges, 5, 3, **kwargs)
    host = nc.init_network_chains(edges, 5, 3, host=True, **kwargs)
    for name, a, b in zip(host._fields, jax_state, host):
        assert (a is None) == (b is None), name
        if b is not None:
            assert isinstance(b, np.ndarray), name
            assert b.dtype == a.dtype and b.shape == a.shape, name
            np.testing.assert_array_equal(b, np.asarray(a), err_msg=name)
    for a, b in zip(native_chains(jax_state), native_chains(host)):
        if a is not None:
            np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="host must be True or False"):
        nc.init_network_chains(edges, 5, 1, directed=directed, statistics0=[1.0], host=1)


@jax.jit
def _jax_toggle(state, i, j):
    """Toggle (i, j) of a one-chain state (no chain axis) as the JAX sampler does."""
    m = state.num_edges
    last = state.edges[jnp.maximum(m - 1, 0)]
    rows = gather_rows(state, i, j, last[0], last[1])
    on = jnp.any(rows["lists"][0, :, 0] == j)
    writes, num_edges = nc.toggle_writes(state, rows, i, j, last[0], last[1], ~on, on)
    return nc.apply_writes(state, writes, num_edges)


def _toggled(before, after):
    """The tie (i, j) that one proposal of the kernel added (in the orientation it wrote
    it) or removed, or None."""
    m, m_after = int(before.num_edges[0]), int(after.num_edges[0])
    if m_after == m + 1:
        return tuple(after.edges[0, m])
    if m_after == m - 1:
        old = {tuple(e) for e in before.edges[0, :m].tolist()}
        gone = old - {tuple(e) for e in after.edges[0, :m_after].tolist()}
        return gone.pop()
    return None


@pytest.mark.parametrize("directed", [False, True])
def test_the_kernel_and_the_jax_writes_toggle_alike(directed, chain_checks):
    """The compiled kernel run one proposal at a time (a new key each) from a random
    network, and each tie it adds or removes toggled by the JAX writes too: after every
    toggle both hold the same neighbours in the same slots, the same edge positions,
    degrees and edge list (the last edge moving into a freed position alike)."""
    n = 9
    rng = np.random.default_rng(4 + directed)
    edges = chain_checks.random_edges(rng, n, 0.3, directed)
    state = nc.init_network_chains(edges, n, 1, directed=directed, statistics0=[0.0],
                                   max_degree=n - 1)
    one = jax.tree.map(lambda x: x[0], state)
    compiled = native_chains(state)
    program = native_program(resolve_terms("edges", Network(n, directed)), n)
    toggles = 0
    for step in range(120):
        after = native_run(compiled, program, [0.0], (step, 7), 0, 1, 0, 1, 0.0)[0]
        tie = _toggled(compiled, after)
        compiled = after
        if tie is None:
            continue
        toggles += 1
        one = _jax_toggle(one, jnp.int32(tie[0]), jnp.int32(tie[1]))
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
    assert toggles > 40
    chain_checks.check_consistent(jax.tree.map(lambda x: jnp.asarray(x)[None], one))
