"""Restricted Boltzmann machine with binary units."""

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from .._checks import check_count
from ..domains import Binary


def rbm(num_visible: int, num_hidden: int, *, init_scale: float = 0.01,
        prior_scale: float | None = None) -> None:
    """Binary RBM: f(v, h) = vᵀ W h + bᵀ v + cᵀ h, with sites ``"v"`` and ``"h"``.

    Give data for ``"v"`` only: ``"h"`` is then latent and summed out in closed form
    (the free energy) for the positive phase and exact evaluation.

    Parameters
    ----------
    num_visible, num_hidden : int
    init_scale : float
        ``W`` starts as Normal(0, init_scale) draws (maximum likelihood).
    prior_scale : float, optional
        If given, ``W`` gets a Normal(0, prior_scale) prior (MAP); biases stay params.
    """
    V = check_count("rbm", "num_visible", num_visible)
    H = check_count("rbm", "num_hidden", num_hidden)
    if prior_scale is None:
        W = numpyro.param("W", lambda key: init_scale * jax.random.normal(key, (V, H)))
    else:
        W = numpyro.sample("W", dist.Normal(0.0, prior_scale).expand((V, H)).to_event(2))
    b = numpyro.param("b", jnp.zeros(V))
    c = numpyro.param("c", jnp.zeros(H))
    v = numpyro.sample("v", Binary(V))
    h = numpyro.sample("h", Binary(H))
    numpyro.factor("energy", v @ W @ h + b @ v + c @ h)
