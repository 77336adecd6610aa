"""Conditional random fields: labels given per-example inputs (features).

* :func:`grid_crf`: a pairwise binary CRF on an image grid (the PF paper's image CRF),
  with the features of :func:`image_features` over the bonds of :func:`grid_edges`;
* :func:`multilabel_crf`: a fully connected pairwise CRF over L labels given a feature
  vector (the PSMC paper's multi-label CRF).

Pass the features as per-example ``inputs=`` to the learner, evaluation and prediction.
Both models declare their Gibbs blocks (:func:`numpyro_ugm.factor` with ``colors=``), the
same for every example: the grid's checkerboard, and the labels one by one. The inputs
change the potential's weights, never its interaction graph, so no structure analysis
runs, for the first example or the others.
"""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.typing import ArrayLike

from ..runtime.checks import check_count
from ..domains import Spin
from ..model.factors import factor

__all__ = ["grid_crf", "grid_edges", "image_features", "multilabel_crf"]


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

    Parameters: ``w`` (Dn,) and ``v`` (De,), initialized at 0. The Gibbs blocks are the
    checkerboard's two colours (declared, not analysed).
    """
    height, width, dn = node_features.shape
    de = edge_features.shape[-1]
    w = numpyro.param("w", jnp.zeros(dn))
    v = numpyro.param("v", jnp.zeros(de))
    x = numpyro.sample("x", Spin((height, width)))
    edges = grid_edges(height, width)
    flat = x.reshape(-1)
    nodes = jnp.sum(x * (node_features @ w))
    bonds = jnp.sum(flat[edges[:, 0]] * flat[edges[:, 1]] * (edge_features @ v))
    rows, cols = np.indices((height, width))
    factor("potential", nodes + bonds, colors={"x": ((rows + cols) % 2).reshape(-1)},
           multilinear=True)


def multilabel_crf(features: jax.Array, num_labels: int, *, bias: bool = True,
                   prior_scale: float | None = None) -> None:
    """Labels y ∈ {−1, +1}^L (site ``"y"``) given a feature vector x (``features``, (d,)):

        f(y; W_E, W_v, b) = Σ_{l<m} (W_E)_lm y_l y_m + yᵀ (W_v x + b).

    Pass the features as per-example ``inputs={"features": X}`` to the learner. Every
    pair of labels interacts, so Gibbs updates one label at a time (declared, not
    analysed).

    Parameters
    ----------
    features : array (d,)
    num_labels : int
    bias : bool
        Include per-label biases ``b`` (the paper's eq. 34 has none; scene features
        carry no constant).
    prior_scale : float, optional
        Gaussian priors N(0, prior_scale²) on every weight: the L2 regularization
        ½‖θ‖²/prior_scale² of the paper, as MAP. Without it, maximum likelihood.
    """
    L, d = check_count("multilabel_crf", "num_labels", num_labels), features.shape[-1]

    def weight(name, shape):
        if prior_scale is None:
            return numpyro.param(name, jnp.zeros(shape))
        return numpyro.sample(name, dist.Normal(0.0, prior_scale).expand(shape)
                              .to_event(len(shape)))

    W_E = weight("W_E", (L, L))
    W_v = weight("W_v", (L, d))
    b = weight("b", (L,)) if bias else jnp.zeros(L)
    y = numpyro.sample("y", Spin(L))
    factor("potential", y @ jnp.triu(W_E, 1) @ y + y @ (W_v @ features + b),
           colors={"y": np.arange(L)}, multilinear=True)
