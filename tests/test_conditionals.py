"""Conditionals in closed form (conditionals.py), against brute force: the log-odds of a
block from one gradient equal those from evaluating the potential at each value; a
block of non-interacting variables summed out (and the free energy of an RBM) equals
the sum over its configurations written out here."""

import itertools
import types

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from helpers.models import potts5, vbm8
from helpers.states import random_params

import numpyro_ugm as ugm
from numpyro_ugm.model.target import free_energy
from numpyro_ugm.conditionals import (LogDensity, conditional_logits,
                                      exact_conditional_logits, gather,
                                      scatter, sum_out)


def brute_logits(m, params, state, site, i):
    """f at each value of variable i of ``site`` (the others as in ``state``)."""
    domain = m.target().state_sites[site]
    flat = np.asarray(state[site]).reshape((domain.num_variables,) + domain.event_shape)
    out = []
    for value in np.asarray(domain.model_values()):
        y = flat.copy()
        y[i] = value
        out.append(float(m.target().log_potential(params, {**state, site: jnp.asarray(
            y.reshape(np.shape(state[site])))})))
    return np.array(out)


def centred(logits):
    logits = np.asarray(logits, np.float64)
    return logits - logits[..., :1]


@pytest.mark.parametrize("make", [vbm8, potts5], ids=["spin-vbm8", "potts5"])
def test_gradient_logits_equal_brute_force(make):
    m, params = make()
    state = m.target().random_state(jax.random.PRNGKey(0))
    f = lambda x: m.target().log_potential(params, x)  # noqa: E731
    for block in m.target().blocks:
        fast = conditional_logits(f, state, m.target().state_sites, block)
        slow = exact_conditional_logits(f, state, m.target().state_sites, block)
        for s, idx in block.items():
            idx = range(m.target().state_sites[s].num_variables) if idx is None else idx
            want = np.stack([centred(brute_logits(m, params, state, s, int(i)))
                             for i in idx])
            np.testing.assert_allclose(centred(fast[s]), want, atol=1e-4)
            np.testing.assert_allclose(centred(slow[s]), want, atol=1e-4)
    # the test can fail: the log-odds are not all zero
    assert np.abs(want).max() > 0.1


def test_gather_and_scatter():
    domain = ugm.Categorical((2, 3), num_categories=4)
    x = domain.sample(jax.random.PRNGKey(1))
    idx = np.array([4, 0, 2])
    np.testing.assert_array_equal(gather(x, domain, idx), x.reshape(6, 4)[idx])
    new = jnp.eye(4)[jnp.array([3, 3, 1])]
    y = scatter(x, domain, idx, new)
    assert y.shape == x.shape
    np.testing.assert_array_equal(y.reshape(6, 4)[idx], new)
    rest = np.setdiff1d(np.arange(6), idx)
    np.testing.assert_array_equal(y.reshape(6, 4)[rest], x.reshape(6, 4)[rest])
    np.testing.assert_array_equal(scatter(x, domain, None, gather(x, domain, None)), x)


def rbm53():
    m = ugm.UGM(ugm.models.rbm, 5, 3)
    return m, random_params(m, 5, {"W": 1.2, "b": 0.5, "c": 0.5})


def test_sum_out_and_free_energy_equal_the_sum_over_hidden_states():
    m, params = rbm53()
    latent = m.observe(["v"])
    v = np.array([1.0, 0.0, 1.0, 1.0, 0.0], np.float32)
    hs = np.array(list(itertools.product([0.0, 1.0], repeat=3)), np.float32)
    f = np.array([float(m.target().log_potential(params, {"v": v, "h": h})) for h in hs])
    want = float(np.logaddexp.reduce(f))
    state = {"v": jnp.asarray(v), "h": jnp.zeros(3)}
    got = sum_out(lambda x: m.target().log_potential(params, x), state, m.target().state_sites, {"h": None})
    np.testing.assert_allclose(float(got), want, rtol=1e-5)
    np.testing.assert_allclose(float(latent.target().free_energy(params, {"v": jnp.asarray(v)})),
                               want, rtol=1e-5)
    # ∇θ F = E_q[∇θ f] = ∇θ of the summed-out value (the envelope theorem)
    g_free = jax.grad(lambda p: latent.target().free_energy(p, {"v": jnp.asarray(v)}))(params)
    g_sum = jax.grad(lambda p: sum_out(lambda x: m.target().log_potential(p, x), state,
                                       m.target().state_sites, {"h": None}))(params)
    for k in params:
        np.testing.assert_allclose(g_free[k], g_sum[k], atol=1e-5, err_msg=k)
    # the test can fail: the sum is not just f at one hidden state
    assert np.min(np.abs(f - want)) > 0.05
    # nothing latent: the free energy is f
    np.testing.assert_allclose(
        float(m.target().free_energy(params, {"v": jnp.asarray(v), "h": jnp.asarray(hs[5])})),
        f[5], rtol=1e-6)



class SpinsWithLabels:
    """The surface of a model that :func:`free_energy` uses, without tracing: 3 observed
    spins coupled to 2 latent labels (Categorical with K labels, or Binary, which is K=2
    written as a scalar)."""

    def __init__(self, num_categories):
        latent = (ugm.Binary(2) if num_categories is None
                  else ugm.Categorical(2, num_categories=num_categories))
        self.state_sites = {"v": ugm.Spin(3), "h": latent}
        self.latent_sites = ("h",)
        self.structure = types.SimpleNamespace(multilinear=True, independent=lambda s: True)
        self.one_hot = (lambda h: jnp.stack([1.0 - h, h], -1)) if num_categories is None \
            else (lambda h: h)

    def log_potential(self, params, x):
        return jnp.einsum("i,ijk,jk->", x["v"], params["W"], self.one_hot(x["h"]))

    def logdensity_fn(self, params):
        return lambda x: self.log_potential(params, x)


@pytest.mark.parametrize("num_categories", [2, 3])
def test_latent_categorical_is_summed_out_exactly(num_categories):
    """A latent Categorical, two labels included (once taken for a scalar site: a reshape
    error), sums out to the brute-force sum; with two labels it equals the same model
    with a Binary latent site."""
    K = num_categories
    params = {"W": jax.random.normal(jax.random.PRNGKey(0), (3, 2, K))}
    m = SpinsWithLabels(K)
    v = jnp.array([1.0, -1.0, 1.0])
    hs = np.eye(K, dtype=np.float32)[np.array(list(itertools.product(range(K), repeat=2)))]
    want = np.logaddexp.reduce([float(m.log_potential(params, {"v": v, "h": h}))
                                for h in hs])
    got = jax.jit(lambda p, x: free_energy(m, p, x))(params, {"v": v})
    np.testing.assert_allclose(float(got), want, rtol=1e-5)
    if K == 2:
        binary = SpinsWithLabels(None)
        np.testing.assert_allclose(float(free_energy(binary, params, {"v": v})), want,
                                   rtol=1e-5)
    # the test can fail: the sum is not f at one latent configuration
    assert np.min(np.abs(want - np.array([float(m.log_potential(params, {"v": v, "h": h}))
                                          for h in hs]))) > 0.05


def _hooked_chain(with_field):
    """A spin chain whose coupling factor gives its own conditionals (``ugm.factor``),
    with or without ordinary factors beside it, and a site ``z`` the hook ignores."""
    def model():
        J = numpyro.param("J", 0.7)
        x = numpyro.sample("x", ugm.Spin(4))
        z = numpyro.sample("z", ugm.Spin(2))

        def conditionals(site, idx):
            if site != "x":
                return None
            zero = jnp.zeros(1, x.dtype)
            grad = J * (jnp.concatenate([zero, x[:-1]]) + jnp.concatenate([x[1:], zero]))
            return ugm.Spin(4).conditional_logits(grad if idx is None else grad[idx])

        ugm.factor("chain", J * jnp.sum(x[:-1] * x[1:]), conditionals=conditionals)
        if with_field:
            numpyro.factor("field", 0.3 * jnp.sum(x) - 0.5 * z[0] * x[0])
    return model


@pytest.mark.parametrize("with_field", [pytest.param(True, marks=pytest.mark.slow), False])
def test_a_factors_own_conditionals_join_those_of_the_other_factors(with_field):
    m = ugm.UGM(_hooked_chain(with_field))
    params = {"J": jnp.asarray(0.7)}
    f = m.target().logdensity_fn(params)
    assert isinstance(f, LogDensity)
    state = m.target().random_state(jax.random.PRNGKey(3))
    for block in ({"x": None, "z": None}, {"x": np.array([2, 0]), "z": np.array([1])}):
        got = f.conditional_logits(state, m.target().state_sites, block)
        want = exact_conditional_logits(f, state, m.target().state_sites, block)
        for s in block:
            np.testing.assert_allclose(got[s][:, 1] - got[s][:, 0],
                                       want[s][:, 1] - want[s][:, 0], rtol=1e-5, atol=1e-5)
