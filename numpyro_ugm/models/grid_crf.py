"""Pairwise conditional random field on an image grid (the PF paper's image CRF)."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from jax.typing import ArrayLike

from ..domains import Spin


def grid_edges(height: int, width: int) -> np.ndarray:
    """(E, 2) flat pixel indices of the 4-neighbour bonds: horizontal bonds row by row,
    then vertical bonds."""
    idx = np.arange(height * width).reshape(height, width)
    horizontal = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], -1)
    vertical = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], -1)
    return np.concatenate([horizontal, vertical]).astype(np.int32)


def image_features(y: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """The PF paper's features of a noisy image y (H, W) (its sec. 4.3):
    node ``h_i(y) = [1, y_i]`` and edge ``h_ij(y) = [1, |y_i − y_j|]`` over :func:`grid_edges`.

    Returns
    -------
    node_features : (H, W, 2)
    edge_features : (E, 2)
    """
    y = jnp.asarray(y)
    flat = y.reshape(-1)
    edges = grid_edges(*y.shape)
    node = jnp.stack([jnp.ones_like(y), y], -1)
    diff = jnp.abs(flat[edges[:, 0]] - flat[edges[:, 1]])
    return node, jnp.stack([jnp.ones_like(diff), diff], -1)


def grid_crf(node_features: jax.Array, edge_features: jax.Array) -> None:
    """Binary image CRF: labels x ∈ {−1, +1}^(H×W) (site ``"x"``) given features,

        f(x; w, v) = Σ_i x_i w·h_i + Σ_(i,j) x_i x_j v·h_ij,

    with node features h_i (``node_features``, (H, W, Dn)) and edge features h_ij
    (``edge_features``, (E, De), bonds in :func:`grid_edges` order). Pass the features as
    per-example ``inputs`` to the learner (``inputs={"node_features": ...,
    "edge_features": ...}``) and the model is conditioned on each image's features.

    Parameters: ``w`` (Dn,) and ``v`` (De,), initialized at 0.
    """
    height, width, dn = node_features.shape
    de = edge_features.shape[-1]
    w = numpyro.param("w", jnp.zeros(dn))
    v = numpyro.param("v", jnp.zeros(de))
    x = numpyro.sample("x", Spin((height, width)))
    edges = grid_edges(height, width)
    flat = x.reshape(-1)
    numpyro.factor("nodes", jnp.sum(x * (node_features @ w)))
    numpyro.factor("edges", jnp.sum(flat[edges[:, 0]] * flat[edges[:, 1]]
                                    * (edge_features @ v)))
