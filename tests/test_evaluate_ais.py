"""AIS and pseudo-likelihood against exact enumeration."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import ais, exact


@functools.lru_cache(maxsize=None)
def small_rbm(scale=1.0):
    m = ugm.UGM(ugm.models.rbm, 12, 6).observe(["v"])
    rng = np.random.default_rng(0)
    params = {k: jnp.asarray(scale * rng.standard_normal(np.shape(v)), jnp.float32)
              for k, v in m.init_params(jax.random.PRNGKey(0)).items()}
    data = exact.sample(m, params, jax.random.PRNGKey(1), 300)
    return m, params, {"v": data["v"]}


@pytest.mark.parametrize("use_data", [False, True], ids=["uniform-base", "base-rate"])
def test_ais_log_z_within_three_standard_errors_of_exact(use_data):
    m, params, data = small_rbm()
    truth = float(exact.log_partition(m, params))
    result = ais.log_partition(m, params, jax.random.PRNGKey(2), 200, 300,
                               data=data if use_data else None)
    err = abs(float(result.log_z) - truth)
    # measured here: errors ~0.01 with standard errors ~0.02
    assert float(result.stderr) < 0.1
    assert err < 3 * float(result.stderr) + 1e-3, (err, float(result.stderr))


def test_ais_without_latent_sites_and_its_standard_error_is_honest():
    m = ugm.UGM(ugm.models.vbm, 10)
    rng = np.random.default_rng(3)
    params = {"W": jnp.asarray(0.6 * rng.standard_normal((10, 10)), jnp.float32),
              "b": jnp.asarray(0.3 * rng.standard_normal(10), jnp.float32)}
    truth = float(exact.log_partition(m, params))
    estimates, errors = [], []
    for seed in range(4):
        r = ais.log_partition(m, params, jax.random.PRNGKey(seed), 100, 50)
        estimates.append(float(r.log_z))
        errors.append(float(r.stderr))
    z = (np.array(estimates) - truth) / np.array(errors)
    assert np.all(np.abs(z) < 4), z
    # a short schedule is not exact: the test would see a wrong estimate
    assert np.mean(errors) > 1e-3


def test_ais_log_likelihood_matches_exact():
    m, params, data = small_rbm()
    truth = float(exact.log_likelihood(m, params, data))
    r = ais.log_likelihood(m, params, data, jax.random.PRNGKey(4), 200, 300)
    assert abs(float(r.log_z) - truth) < 3 * float(r.stderr) + 1e-3


def test_ais_compiles_once_for_new_parameters():
    """A second estimate with other parameters and another key reuses the compiled
    run (it used to close over the parameters and recompile on every call)."""
    calls = []

    def counted_rbm(*args):
        calls.append(1)  # runs only when the model is traced
        return ugm.models.rbm(*args)

    m = ugm.UGM(counted_rbm, 8, 3)
    params = m.init_params(jax.random.PRNGKey(0))
    first = ais.log_partition(m, params, jax.random.PRNGKey(1), 20, 30)
    traced = len(calls)
    scaled = {k: 2.0 * v for k, v in params.items()}
    second = ais.log_partition(m, scaled, jax.random.PRNGKey(2), 20, 30)
    assert len(calls) == traced
    for p, r in ((params, first), (scaled, second)):  # and the parameters are used
        assert abs(float(r.log_z) - float(exact.log_partition(m, p))) < 4 * float(
            r.stderr) + 1e-3


def test_ais_rejects_bad_schedules():
    m, params, _ = small_rbm()
    with pytest.raises(ValueError, match="betas"):
        ais.log_partition(m, params, jax.random.PRNGKey(0), 10, np.array([0.0, 0.5]))
    with pytest.raises(ValueError, match="num_chains"):
        ais.log_partition(m, params, jax.random.PRNGKey(0), 1, 10)


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


def test_pseudo_log_likelihood_of_rbm_sums_out_hidden_units():
    m, params, data = small_rbm()
    rows = np.asarray(data["v"][:10])
    got = float(ugm.pseudo_log_likelihood(m, params, {"v": rows}))
    f = lambda y: float(exact.log_prob(m, params, {"v": y[None].astype(np.int8)})[0])  # noqa
    want = np.mean([brute_pll(f, row.astype(float), [0.0, 1.0]) for row in rows])
    assert abs(got - want) < 1e-3 * max(1.0, abs(want)), (got, want)
