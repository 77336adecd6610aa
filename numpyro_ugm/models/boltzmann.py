"""Boltzmann machines: the restricted one (:func:`rbm`, visible and hidden layers) and the
fully visible one (:func:`vbm`, every pair of units coupled).

Both know their Gibbs blocks and declare them (:func:`numpyro_ugm.factor` with
``colors=``), so no structure analysis runs when they are traced: the analysis probes
the Hessian one variable at a time, which an RBM of thousands of units on each side
would pay for in minutes and gigabytes. The RBM's blocks are its two layers, the VBM's
are its units one by one; both potentials are multilinear. The whole potential is one
factor, as the declaration requires (:meth:`~numpyro_ugm.model.UGM.analyze`).
"""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..runtime.checks import check_count
from ..domains import Binary, Real, Spin
from ..model.factors import factor

__all__ = ["rbm", "vbm"]


def rbm(num_visible: int, num_hidden: int, *, init_scale: float = 0.01,
        prior_scale: float | None = None) -> None:
    """Binary RBM: f(v, h) = vᵀ W h + bᵀ v + cᵀ h, with sites ``"v"`` and ``"h"``.

    Give data for ``"v"`` only: ``"h"`` is then latent and summed out in closed form
    (the free energy) for the positive phase and exact evaluation. The Gibbs blocks are
    the two layers (declared, not analysed).

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
    factor("energy", v @ W @ h + b @ v + c @ h,
           colors={"v": np.zeros(V, np.int64), "h": np.ones(H, np.int64)}, multilinear=True)


def vbm(num_units: int, *, domain: str = "spin", fields: bool = True,
        prior_scale: float | None = None) -> None:
    """Fully visible Boltzmann machine: f(x) = Σ_{i<j} W_ij x_i x_j + Σ_i b_i x_i.

    Only the strict upper triangle of ``W`` is used. Every pair of units interacts, so
    Gibbs updates one unit at a time (declared, not analysed).

    Parameters
    ----------
    num_units : int
        Number of variables.
    domain : {"spin", "binary"}
        Variables in {-1, +1} (the PF paper's VBM) or {0, 1}.
    fields : bool
        Include the biases ``b``.
    prior_scale : float, optional
        If given, ``W`` and ``b`` get independent Normal(0, prior_scale) priors (MAP);
        otherwise they are ``numpyro.param`` sites initialized at 0 (maximum likelihood).
    """
    if domain not in ("spin", "binary"):
        raise ValueError(f"vbm: domain must be 'spin' or 'binary', got {domain!r}")
    n = check_count("vbm", "num_units", num_units)
    if prior_scale is None:
        W = numpyro.param("W", jnp.zeros((n, n)))
        b = numpyro.param("b", jnp.zeros(n)) if fields else None
    else:
        W = numpyro.sample("W", dist.Normal(0.0, prior_scale).expand((n, n)).to_event(2))
        b = (numpyro.sample("b", dist.Normal(0.0, prior_scale).expand((n,)).to_event(1))
             if fields else None)
    x = numpyro.sample("x", (Spin if domain == "spin" else Binary)(n))
    potential = x @ jnp.triu(W, 1) @ x
    if fields:
        potential = potential + b @ x
    factor("potential", potential, colors={"x": np.arange(n)}, multilinear=True)


def gaussian_rbm(num_visible: int, num_hidden: int, *, init_scale: float = 0.01) -> None:
    """Gaussian–Bernoulli RBM with unit variances: real visible units v, binary hidden
    units h, f(v, h) = −½ |v − b|² + vᵀ W h + cᵀ h. v | h is Gaussian, drawn exactly by
    Gibbs; h is summed out of the free energy. For learned variances write the factor
    with v / σ (``examples/gbrbm_mnist.py``).

    Parameters
    ----------
    num_visible, num_hidden : int
    init_scale : float
        ``W`` starts as Normal(0, init_scale) draws from the ``rng_key`` of
        :meth:`~numpyro_ugm.model.UGM.init_params` (``b`` and ``c`` start at 0). A start
        at W = 0 would never leave it symmetric: the hidden units are summed out exactly,
        so identical columns of ``W`` get identical gradients and stay identical forever.
        ``init_scale=0`` gives that start back.
    """
    V = check_count("gaussian_rbm", "num_visible", num_visible)
    H = check_count("gaussian_rbm", "num_hidden", num_hidden)
    v = numpyro.sample("v", Real(V))
    h = numpyro.sample("h", Binary(H))
    W = numpyro.param("W", lambda key: init_scale * jax.random.normal(key, (V, H)))
    b = numpyro.param("b", jnp.zeros(V))
    c = numpyro.param("c", jnp.zeros(H))
    numpyro.factor("e", -0.5 * jnp.sum((v - b) ** 2) + v @ W @ h + c @ h)
