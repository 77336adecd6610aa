"""Small models for the tests: chains, rings, Potts models, third-order and non-multilinear models, small RBMs, and random parameters."""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact

from .states import random_params


def potts_ring(n, K):
    """K-label Potts ring with one K×K coupling matrix per bond and fields."""
    J = numpyro.param("J", jnp.zeros((n, K, K)))
    h = numpyro.param("h", jnp.zeros((n, K)))
    x = numpyro.sample("x", ugm.Categorical(n, num_categories=K))
    numpyro.factor("bonds", jnp.einsum("ia,iab,ib->", x, J, jnp.roll(x, -1, axis=0)))
    numpyro.factor("fields", jnp.sum(h * x))


def spin_chain(n):
    """``n`` spins in a chain with one coupling ``w`` per bond (0.5 to start)."""
    w = numpyro.param("w", 0.5 * jnp.ones(n - 1))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("pairs", jnp.sum(w * x[:-1] * x[1:]))


def chain3():
    """Three spins in a chain: fields ``h`` and one coupling ``J``."""
    h = numpyro.param("h", jnp.zeros(3))
    J = numpyro.param("J", jnp.zeros(()))
    x = numpyro.sample("x", ugm.Spin(3))
    numpyro.factor("f", h @ x + J * (x[0] * x[1] + x[1] * x[2]))


@functools.lru_cache(maxsize=None)
def spins3():
    """``chain3`` traced, its parameters, their exact log Z (brute force, float64) and
    two examples: the tiny model of the checks of bad input."""
    m = ugm.UGM(chain3)
    h, J = np.array([0.5, -1.0, 0.25]), 0.75
    x = np.array(list(itertools.product([-1.0, 1.0], repeat=3)))
    log_z = np.logaddexp.reduce(x @ h + J * (x[:, 0] * x[:, 1] + x[:, 1] * x[:, 2]))
    params = {"h": jnp.asarray(h, jnp.float32), "J": jnp.asarray(J, jnp.float32)}
    return m, params, float(log_z), {"x": np.array([[1, -1, 1], [1, 1, 1]], np.int8)}


@functools.lru_cache(maxsize=None)
def vbm8():
    m = ugm.UGM(ugm.models.vbm, 8)
    return m, random_params(m, 1, {"W": 0.5, "b": 0.4})


@functools.lru_cache(maxsize=None)
def potts5():
    m = ugm.UGM(potts_ring, 5, 3)
    return m, random_params(m, 3, {"J": 0.9, "h": 0.5})


def binary_third_order(n, triples):
    """Binary ring with pairwise couplings, fields and third-order factors."""
    W = numpyro.param("W", jnp.zeros(n))
    b = numpyro.param("b", jnp.zeros(n))
    T = numpyro.param("T", jnp.zeros(len(triples)))
    x = numpyro.sample("x", ugm.Binary(n))
    numpyro.factor("ring", jnp.sum(W * x * jnp.roll(x, -1)))
    numpyro.factor("fields", b @ x)
    i, j, k = (np.array(t) for t in zip(*triples))
    numpyro.factor("triples", jnp.sum(T * x[i] * x[j] * x[k]))


def abs_model(n):
    """Spins with |.| on chain bonds and the square of a sum (not multilinear in code,
    though the square is a sum of pairs on the domain)."""
    J = numpyro.param("J", jnp.zeros(n - 1))
    a = numpyro.param("a", jnp.zeros(n - 1))
    c = numpyro.param("c", jnp.zeros(()))
    b = numpyro.param("b", jnp.zeros(n))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("bonds", jnp.sum(J * jnp.abs(x[:-1] + x[1:] + a)))
    numpyro.factor("square", c * (x[0] + x[3] + x[n - 1]) ** 2)
    numpyro.factor("fields", b @ x)


@functools.lru_cache(maxsize=None)
def binary3():
    m = ugm.UGM(binary_third_order, 7, ((0, 2, 4), (1, 3, 5), (2, 5, 6), (0, 1, 2)))
    return m, random_params(m, 2, {"W": 1.0, "b": 0.6, "T": 1.5})


@functools.lru_cache(maxsize=None)
def abs7():
    m = ugm.UGM(abs_model, 7)
    return m, random_params(m, 4, {"J": 0.8, "a": 0.6, "c": 0.3, "b": 0.4})


@functools.lru_cache(maxsize=None)
def small_rbm(scale=1.0):
    m = ugm.UGM(ugm.models.rbm, 12, 6).observe(["v"])
    rng = np.random.default_rng(0)
    params = {k: jnp.asarray(scale * rng.standard_normal(np.shape(v)), jnp.float32)
              for k, v in m.init_params(jax.random.PRNGKey(0)).items()}
    data = exact.sample(m, params, jax.random.PRNGKey(1), 300)
    return m, params, {"v": data["v"]}


def normal_params(m, seed, scale):
    """N(0, scale²) draws for every parameter (numpy: no compilation per shape)."""
    rng = np.random.default_rng(seed)
    return {n: jnp.asarray(scale * rng.standard_normal(s.shape), jnp.float32)
            for n, s in m.param_sites.items()}


def potts_chain(n, k):
    """A chain of n variables with k labels: pairwise couplings J and fields h."""
    J = numpyro.param("J", jnp.zeros((k, k)))
    h = numpyro.param("h", jnp.zeros((n, k)))
    x = numpyro.sample("x", ugm.Categorical(n, num_categories=k))
    numpyro.factor("pairs", jnp.einsum("ik,kl,il->", x[:-1], J, x[1:]))
    numpyro.factor("fields", jnp.sum(h * x))
