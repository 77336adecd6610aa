"""Synthetic problems drawn exactly from a model (no download)."""

import jax
import jax.numpy as jnp
import numpy as np


def vbm_problem(rng_key: jax.Array, num_units: int = 15, num_train: int = 500,
                num_test: int = 100, *, scale: float = 1.0) -> tuple[dict, dict, dict]:
    """The PF paper's VBM study (Asuncion et al. 2010, sec. 4.1): couplings
    θ_ij ~ N(0, scale²) for i < j, spins in {-1, +1}, no fields, and training and test
    cases drawn exactly (by enumeration).

    Returns
    -------
    params : dict
        True parameters of ``ugm.models.vbm(num_units, fields=False)``.
    train, test : dict
        ``{"x": int8 array (num_cases, num_units)}``.
    """
    from ..evaluate import exact
    from ..model.ugm import UGM
    from ..models import vbm

    key_w, key_data = jax.random.split(rng_key)
    W = jnp.triu(scale * jax.random.normal(key_w, (num_units, num_units)), 1)
    params = {"W": W}
    m = UGM(vbm, num_units, fields=False)
    draws = exact.sample(m, params, key_data, num_train + num_test)
    x = np.asarray(draws["x"])
    return params, {"x": x[:num_train]}, {"x": x[num_train:]}
