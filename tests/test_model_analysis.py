"""How a model's structure is found (analysis.py): the colouring a factor declares is used
when it is the only declaration and every other factor is constant in the state;
otherwise the log-potential is analysed."""

import jax.numpy as jnp
import numpy as np
import numpyro

import numpyro_ugm as ugm


def chain(extra):
    """A chain of 4 spins whose factor declares the colours 0, 1, 0, 1, and a second
    factor: constant in the state, or coupling spins 0 and 2 (which the declared
    colouring puts together)."""
    J = numpyro.param("J", jnp.ones(3))
    c = numpyro.param("c", jnp.asarray(1.0))
    x = numpyro.sample("x", ugm.Spin(4))
    ugm.factor("chain", J @ (x[1:] * x[:-1]), colors={"x": np.array([0, 1, 0, 1])},
               multilinear=True)
    numpyro.factor("extra", c * x[0] * x[2] if extra == "coupling" else c * 2.0)


def test_a_declared_coloring_is_used_only_when_nothing_else_depends_on_the_state():
    declared = ugm.UGM(chain, "constant").target().structure
    np.testing.assert_array_equal(declared.colors, [0, 1, 0, 1])
    assert declared.edges is None  # declared: the graph itself is not known
    analysed = ugm.UGM(chain, "coupling").target().structure
    edges = {tuple(int(v) for v in e) for e in analysed.edges}
    assert edges == {(0, 1), (1, 2), (2, 3), (0, 2)}
    assert analysed.colors[0] != analysed.colors[2]
