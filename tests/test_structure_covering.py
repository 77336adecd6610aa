"""One structure for every example of a conditional model (structure/covering.py): the
blocks found for one example are checked on the others, and the interactions found are
joined to the graph — on a bare log-potential and through ``UGM.for_inputs``."""

import jax.numpy as jnp
import numpy as np
import numpyro

from helpers.crf import adjacency

import numpyro_ugm as ugm
from numpyro_ugm.structure import analyze, cover


def edge_set(structure):
    return {tuple(int(v) for v in e) for e in structure.edges}


def coupled(params, state, inputs):
    """Spins coupled by J along the edges of an input adjacency matrix (multilinear)."""
    x = state["x"]
    return params["J"] * x @ jnp.triu(inputs["adjacency"], 1) @ x


def random_params(rng_key, rng):
    return {"J": jnp.asarray(rng.standard_normal() + 1.0, jnp.float32)}


def test_cover_joins_the_graphs_of_every_example_on_a_bare_potential():
    domains = {"x": ugm.Spin(5)}
    sparse, dense = adjacency((0, 1), (1, 2)), adjacency((0, 1), (3, 4), (2, 3))
    one = analyze(lambda p, s: coupled(p, s, {"adjacency": sparse}), domains, random_params)
    assert edge_set(one) == {(0, 1), (1, 2)}
    joined = cover(one, coupled, domains, random_params,
                   {"adjacency": np.stack([sparse, dense, sparse])})
    assert edge_set(joined) == {(0, 1), (1, 2), (2, 3), (3, 4)}
    for a, b in edge_set(joined):
        assert joined.colors[a] != joined.colors[b]
    # a structure that holds for every example comes back as it is
    assert cover(joined, coupled, domains, random_params,
                 {"adjacency": np.stack([sparse, dense])}) is joined
    # the complete graph holds for any example: nothing to check
    complete = one._replace(edges=None)
    assert cover(complete, coupled, domains, random_params,
                 {"adjacency": dense[None]}) is complete


def abs_adjacency_crf(adjacency):
    """Spins coupled along an input adjacency matrix through |.| (not multilinear)."""
    J = numpyro.param("J", 1.0)
    x = numpyro.sample("x", ugm.Spin(5))
    numpyro.factor("pairs", J * jnp.sum(jnp.triu(adjacency, 1)
                                        * jnp.abs(x[:, None] + x[None, :] + 0.5)))


def test_blocks_cover_every_example_of_a_non_multilinear_crf():
    """``for_inputs`` joins the graphs of all examples (by exact conditionals when the
    potential is not multilinear); a concrete ``bind`` checks its one example."""
    sparse, dense = adjacency((0, 1), (1, 2)), adjacency((0, 1), (3, 4))
    m = ugm.UGM(abs_adjacency_crf, adjacency=sparse)
    assert not m.target().structure.multilinear and edge_set(m.target().structure) == {(0, 1), (1, 2)}
    covered = m.for_inputs({"adjacency": np.stack([sparse, dense, sparse])})
    assert edge_set(covered.target().structure) == {(0, 1), (1, 2), (3, 4)}
    for a, b in edge_set(covered.target().structure):
        assert covered.target().structure.colors[a] != covered.target().structure.colors[b]
    assert m.for_inputs({"adjacency": sparse[None]}) is m  # nothing to add
    assert m.for_example(adjacency=dense).target().structure.colors[3] != \
        m.for_example(adjacency=dense).target().structure.colors[4]
