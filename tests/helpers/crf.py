"""Small conditional random fields with per-example inputs and their data."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro

import numpyro_ugm as ugm
from numpyro_ugm.models import image_features


#: labels of every training image: an "L" (neighbours agree and disagree, so the
#: conditional ML estimate is finite; a 3×3 "X" is a checkerboard and is not)
TRUTH = np.array([[1, 1, -1], [1, 1, -1], [-1, -1, -1]], np.int8)


NUM_EXAMPLES = 10


def features(y):
    node, edge = jax.vmap(image_features)(jnp.asarray(y, jnp.float32))
    return {"node_features": node, "edge_features": edge}


def crf3(u):
    """A 3-spin chain CRF: a field ``w * u`` per spin from the inputs ``u``, fixed pairs."""
    w = numpyro.param("w", 0.3)
    x = numpyro.sample("x", ugm.Spin(3))
    numpyro.factor("nodes", w * jnp.sum(u * x))
    numpyro.factor("pairs", x[0] * x[1] + x[1] * x[2])


@functools.lru_cache(maxsize=None)
def crf_data():
    """10 noisy copies (N(0, 1) noise) of TRUTH, their features and the grid CRF traced
    with the first image's inputs."""
    rng = np.random.default_rng(0)
    y = TRUTH[None] + rng.normal(size=(NUM_EXAMPLES, 3, 3))
    inputs = features(y)
    data = {"x": np.broadcast_to(TRUTH, (NUM_EXAMPLES, 3, 3)).copy()}
    m = ugm.UGM(ugm.models.grid_crf, **{k: v[0] for k, v in inputs.items()})
    return m, inputs, data


def adjacency_crf(adjacency):
    """5 spins coupled by J along the edges of an input adjacency matrix (a CRF whose
    interaction graph is an input)."""
    J = numpyro.param("J", 0.5)
    x = numpyro.sample("x", ugm.Spin(5))
    numpyro.factor("pairs", J * x @ jnp.triu(adjacency, 1) @ x)


def adjacency(*edges):
    """5×5 symmetric 0/1 adjacency matrix of ``edges``."""
    a = np.zeros((5, 5), np.float32)
    for i, j in edges:
        a[i, j] = a[j, i] = 1.0
    return a


#: example 0 has the chain 0-1-2 only; the others add the edge 3-4, so the blocks found
#: for example 0 alone put 3 and 4 together
SPARSE, DENSE = adjacency((0, 1), (1, 2)), adjacency((0, 1), (1, 2), (3, 4))


@functools.lru_cache(maxsize=None)
def adjacency_crf_data():
    """8 examples (the first SPARSE, the others DENSE), their labels and the model
    traced with the first example's adjacency."""
    inputs = {"adjacency": np.stack([SPARSE] + [DENSE] * 7)}
    x = np.array([[1, 1, -1, 1, 1], [1, 1, 1, -1, -1], [-1, -1, -1, 1, -1],
                  [1, 1, 1, 1, 1], [-1, -1, 1, 1, 1], [1, -1, -1, -1, -1],
                  [-1, -1, -1, -1, 1], [1, 1, 1, 1, 1]], np.int8)
    return ugm.UGM(adjacency_crf, adjacency=SPARSE), inputs, {"x": x}
