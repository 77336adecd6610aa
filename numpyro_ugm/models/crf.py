"""Conditional random fields: labels given per-example inputs (features).

* :func:`grid_crf`: a pairwise binary CRF on an image grid (the PF paper's image CRF),
  with the features of :func:`image_features` over the bonds of :func:`grid_edges`;
* :func:`multilabel_crf`: a fully connected pairwise CRF over L labels given a feature
  vector (the PSMC paper's multi-label CRF);
* :func:`chain_crf`: a linear-chain CRF over K labels given sparse per-position features
  (sequence labelling: named entities, parts of speech), learned and decoded exactly
  (``ugm.exact``: the forward-backward recursions and Viterbi on its chain).

Pass the features as per-example ``inputs=`` to the learner, evaluation and prediction.
The first two declare their Gibbs blocks (:func:`numpyro_ugm.factor` with ``colors=``), the
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
from ..domains import Categorical, Spin
from ..model.factors import factor

__all__ = ["chain_crf", "grid_crf", "grid_edges", "image_features", "multilabel_crf"]

#: the log-potential of a label other than 0 at a padded position (exp of it is 0 in
#: float32 and float64 alike, so padding adds exactly nothing to log Z)
PADDING_PENALTY = -1e4


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

    W_E = _weight("W_E", (L, L), prior_scale)
    W_v = _weight("W_v", (L, d), prior_scale)
    b = _weight("b", (L,), prior_scale) if bias else jnp.zeros(L)
    y = numpyro.sample("y", Spin(L))
    factor("potential", y @ jnp.triu(W_E, 1) @ y + y @ (W_v @ features + b),
           colors={"y": np.arange(L)}, multilinear=True)


def _weight(name, shape, prior_scale, l1_scale=None):
    """A weight of the CRFs: Normal(0, prior_scale) (L2, MAP) or Laplace(0, l1_scale)
    (L1) priors, else a parameter initialized at 0."""
    if prior_scale is not None:
        return numpyro.sample(name, dist.Normal(0.0, prior_scale).expand(shape)
                              .to_event(len(shape)))
    if l1_scale is not None:
        return numpyro.sample(name, dist.Laplace(0.0, l1_scale).expand(shape)
                              .to_event(len(shape)))
    return numpyro.param(name, jnp.zeros(shape))


def chain_crf(features: jax.Array, mask: jax.Array, num_labels: int, num_features: int, *,
              prior_scale: float | None = None, l1_scale: float | None = None) -> None:
    """Linear-chain CRF: labels y ∈ {0, …, K−1}^T (site ``"y"``) given sparse features,

        f(y; W, A) = Σ_t Σ_{a ∈ features[t]} W[a, y_t] + Σ_t A[y_t, y_{t+1}],

    the weight table ``W`` (num_features, K) of attribute × label and the transition
    table ``A`` (K, K), as CRFsuite's first-order CRF with every attribute–label and
    label–label pair a feature. Pass per-example ``inputs={"features": ..., "mask":
    ...}``: sequences of different lengths share one padded length T; position t is
    real where ``mask[t]``, and a padded position is held at label 0 (its other labels
    get :data:`PADDING_PENALTY`; no weight or transition reaches it), so it adds nothing to
    f or to log Z and the likelihood is that of the unpadded sequence (give label 0
    there in the data). Padding cuts the chain wherever it is: a row may hold several
    sequences, each followed by a padded position (packing: one row's likelihood is
    the product of its sequences', and a few long rows run faster than many short
    ones).

    Parameters
    ----------
    features : int array (T, F)
        Per position, the ids of its active attributes, padded with ``num_features``
        (an id with no weight).
    mask : bool array (T,)
        Real positions (a prefix, or several runs separated by padding).
    num_labels, num_features : int
        K and the number of attributes.
    prior_scale : float, optional
        Normal(0, prior_scale) priors on ``W`` and ``A``: L2 regularization
        ‖θ‖² / (2 prior_scale²) of the summed log-likelihood, as MAP.
    l1_scale : float, optional
        Laplace(0, l1_scale) priors instead: L1 regularization ‖θ‖₁ / l1_scale.
    """
    K = check_count("chain_crf", "num_labels", num_labels, minimum=2)
    F = check_count("chain_crf", "num_features", num_features)
    W = _weight("W", (F, K), prior_scale, l1_scale)
    A = _weight("A", (K, K), prior_scale, l1_scale)
    y = numpyro.sample("y", Categorical(features.shape[0], num_categories=K))
    rows = jnp.concatenate([W, jnp.zeros((1, K), W.dtype)])
    scores = jnp.sum(rows[jnp.clip(features, 0, F)], axis=-2)  # (T, K)
    pinned = jnp.where(jnp.arange(K) == 0, 0.0, PADDING_PENALTY).astype(scores.dtype)
    unary = jnp.where(mask[:, None], scores, pinned)
    # the transitions run over every bond, padded or not, so that the pairwise part of f
    # is the same for every example (tabulated once per batch, not once per example);
    # into a padded position (held at 0) A[y_t, 0] is cancelled in y_t's unary term,
    # out of one A[0, y_t]
    into_padding = (~mask[1:]).astype(scores.dtype)[:, None] * A[:, 0]
    out_of_padding = (~mask[:-1] & mask[1:]).astype(scores.dtype)[:, None] * A[0]
    unary = unary.at[:-1].add(-into_padding).at[1:].add(-out_of_padding)
    value = jnp.sum(y * unary) + jnp.einsum("ta,ab,tb->", y[:-1], A, y[1:])
    bonds = np.stack([np.arange(features.shape[0] - 1), np.arange(1, features.shape[0])], 1)
    factor("potential", value, edges={"y": bonds}, multilinear=True)
