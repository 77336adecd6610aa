"""Tracing and site roles (numpyro_ugm/sites.py): models traced from several threads at
once get their own sites and values (numpyro's handler stack is global to the process)."""

import threading

import jax
import jax.numpy as jnp
import numpyro
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.model.sites import find_sites, trace_model


def ising(n, scale):
    J = numpyro.param("J", scale * jnp.ones((n, n)))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("pairs", x @ jnp.triu(J, 1) @ x)


def test_threads_that_trace_at_once_get_their_own_sites_and_values():
    """Before tracing took a lock, two threads tracing at once (even on separate models)
    failed in 15 of 18 runs ('all sites must have unique names', IndexError, ...)."""
    errors, results = [], {}
    state = {"x": jnp.ones(4)}  # sum over pairs i < j of x_i x_j = 6

    def work(i):
        try:
            for _ in range(15):
                m = ugm.UGM(ising, 4, float(i + 1))
                params = m.init_params(jax.random.PRNGKey(i))
                results.setdefault(i, set()).add(float(m.target().log_potential(params, state)))
        except Exception as error:  # noqa: BLE001 - any failure of a thread is the bug
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(4):  # each thread saw its own model's value, every time
        assert results[i] == {6.0 * (i + 1)}


def test_sites_by_role_and_errors_naming_the_site():
    def model():
        numpyro.param("w", jnp.zeros(3))
        numpyro.sample("s", numpyro.distributions.HalfNormal(1.0))
        x = numpyro.sample("x", ugm.Binary(3))
        numpyro.factor("f", jnp.sum(x))

    sites = find_sites(trace_model(model, (), {}, jax.random.PRNGKey(0)))
    assert list(sites.params) == ["w", "s"] and sites.params["s"].prior is not None
    assert list(sites.state) == ["x"] and sites.hooked == () and sites.declared == {}

    def discrete_prior():
        numpyro.sample("k", numpyro.distributions.Poisson(2.0))
        numpyro.sample("x", ugm.Spin(2))

    with pytest.raises(TypeError, match="site 'k' has the discrete distribution Poisson"):
        find_sites(trace_model(discrete_prior, (), {}, jax.random.PRNGKey(0)))
    with pytest.raises(ValueError, match="no state site"):
        find_sites(trace_model(lambda: numpyro.param("w", 1.0), (), {}, jax.random.PRNGKey(0)))
