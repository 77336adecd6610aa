"""Pseudo-likelihood (evaluate/pseudo.py) against brute force: every conditional by
evaluating the potential at each value."""

import jax.numpy as jnp
import numpy as np
from helpers import small_rbm

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact


def brute_pll(log_f, x, values):
    """Σ_i log p(x_i | x_−i) with every conditional by evaluating log_f at each value."""
    total = 0.0
    for i in range(len(x)):
        scores = []
        for v in values:
            y = x.copy()
            y[i] = v
            scores.append(log_f(y))
        scores = np.array(scores)
        total += scores[values.index(x[i])] - np.logaddexp.reduce(scores)
    return total


def test_pseudo_log_likelihood_of_spin_vbm_matches_brute_force():
    m = ugm.UGM(ugm.models.vbm, 6)
    rng = np.random.default_rng(5)
    params = {"W": jnp.asarray(rng.standard_normal((6, 6)), jnp.float32),
              "b": jnp.asarray(rng.standard_normal(6), jnp.float32)}
    data = rng.choice([-1, 1], size=(20, 6)).astype(np.int8)
    got = float(ugm.pseudo_log_likelihood(m, params, {"x": data}))
    f = lambda y: float(m.log_potential(params, {"x": jnp.asarray(y, jnp.float32)}))  # noqa
    want = np.mean([brute_pll(f, row.astype(float), [-1.0, 1.0]) for row in data])
    assert abs(got - want) < 1e-4 * max(1.0, abs(want))
    # a second call, with other parameters and data of the same layout, does not retrace
    other = ugm.pseudo_log_likelihood(m, {k: 0.5 * v for k, v in params.items()},
                                      {"x": -data})
    compiled = m.observe(("x",)).cached(("pseudo_log_likelihood", ("x",)), lambda: None)
    assert compiled._cache_size() == 1 and float(other) != got


def test_pseudo_log_likelihood_of_rbm_sums_out_hidden_units():
    m, params, data = small_rbm()
    rows = np.asarray(data["v"][:10])
    got = float(ugm.pseudo_log_likelihood(m, params, {"v": rows}))
    f = lambda y: float(exact.log_prob(m, params, {"v": y[None].astype(np.int8)})[0])  # noqa
    want = np.mean([brute_pll(f, row.astype(float), [0.0, 1.0]) for row in rows])
    assert abs(got - want) < 1e-3 * max(1.0, abs(want)), (got, want)
