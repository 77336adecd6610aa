"""Annealed importance sampling (evaluate/ais.py) against exact enumeration."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import small_rbm, spins3

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import ais, exact


@pytest.mark.parametrize("use_data", [pytest.param(False, marks=pytest.mark.slow), True],
                         ids=["uniform-base", "base-rate"])
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
    with pytest.raises(ValueError, match="^ais: num_chains must be an integer >= 2, got 2.5"):
        ais.log_partition(m, params, jax.random.PRNGKey(0), 2.5, 10)
    with pytest.raises(ValueError, match=r"^ais: betas \(a number\) must be an integer >= 2"):
        ais.log_partition(m, params, jax.random.PRNGKey(0), 10, 1)


def test_ais_checks_params_before_it_runs():
    """A misspelled parameter is named, with the site meant, by both estimates (the
    log-likelihood's data term used to take the init value of the missing site)."""
    m, params, _, data = spins3()
    key = jax.random.PRNGKey(0)
    misspelled = {"hh": params["h"], "J": params["J"]}
    with pytest.raises(KeyError, match=r"\['hh'\] that are not parameter sites of the model "
                                       r"\(did you mean 'h' for 'hh'\?\)"):
        ais.log_partition(m, misspelled, key, 2, 3)
    with pytest.raises(KeyError, match=r"did you mean 'h' for 'hh'\?"):
        ais.log_likelihood(m, misspelled, data, key, 2, 3)
