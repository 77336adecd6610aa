"""Pairwise multi-label CRF (the PSMC paper's eq. 34)."""

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from .._checks import check_count
from ..domains import Spin


def multilabel_crf(features: jax.Array, num_labels: int, *, bias: bool = True,
                   prior_scale: float | None = None) -> None:
    """Labels y ∈ {−1, +1}^L (site ``"y"``) given a feature vector x (``features``, (d,)):

        f(y; W_E, W_v, b) = Σ_{l<m} (W_E)_lm y_l y_m + yᵀ (W_v x + b).

    Pass the features as per-example ``inputs={"features": X}`` to the learner.

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
    numpyro.factor("pairs", y @ jnp.triu(W_E, 1) @ y)
    numpyro.factor("unary", y @ (W_v @ features + b))
