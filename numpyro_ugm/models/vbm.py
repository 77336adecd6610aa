"""Visible Boltzmann machine (fully connected pairwise model)."""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from .._checks import check_count
from ..domains import Binary, Spin


def vbm(num_units: int, *, domain: str = "spin", fields: bool = True,
        prior_scale: float | None = None) -> None:
    """Fully visible Boltzmann machine: f(x) = Σ_{i<j} W_ij x_i x_j + Σ_i b_i x_i.

    Only the strict upper triangle of ``W`` is used.

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
    numpyro.factor("couplings", x @ jnp.triu(W, 1) @ x)
    if fields:
        numpyro.factor("fields", b @ x)
