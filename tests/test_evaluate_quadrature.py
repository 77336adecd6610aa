"""Quadrature references for models of one or two real numbers
(evaluate/quadrature.py, ``ugm.quadrature``): log Z against closed forms and scipy's
adaptive quadrature, log-likelihoods against f − log Z computed here, and the gradient
kernels (``ugm.kernels.mala``, ``hmc``, ``rwm``) checked against the quadrature moments of a
non-Gaussian 2-D energy, with a wrong parameter rejected by the same test."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from scipy import integrate

import numpyro_ugm as ugm


def gaussian_1d():
    x = numpyro.sample("x", ugm.Real())
    s = numpyro.param("s", 1.0)
    numpyro.factor("e", -0.5 * (x / s) ** 2)


def double_well():
    """A quartic double well in x[0] coupled to a Gaussian x[1]: not Gaussian, two
    modes, a closed form for neither log Z nor the moments. The base Normal (where chains
    start) is narrow in x[0]: MALA with one step size for all chains never moves a chain
    that starts far out in the quartic tail (its proposals overshoot and are rejected)."""
    x = numpyro.sample("x", ugm.Real(2, loc=0.0, scale=np.array([0.5, 1.0])))
    a = numpyro.param("a", 1.0)
    c = numpyro.param("c", 0.0)
    numpyro.factor("e", -a * (x[0] ** 2 - 1) ** 2 - 0.5 * x[1] ** 2 - c * x[0] * x[1])


def scipy_log_z(a, c, box=8.0):
    value, err = integrate.dblquad(
        lambda y, x: np.exp(-a * (x ** 2 - 1) ** 2 - 0.5 * y ** 2 - c * x * y),
        -box, box, -box, box, epsabs=1e-13, epsrel=1e-12)
    return np.log(value), err / value


def test_log_z_of_a_gaussian_and_the_error_for_other_models():
    s, m = 0.7, ugm.as_ugm(gaussian_1d)
    r = ugm.quadrature.log_partition(m, {"s": jnp.asarray(s)}, num_points=201)
    exact = 0.5 * np.log(2 * np.pi * s ** 2)
    assert 0 < r.error < 1e-4 and abs(r.value - exact) <= r.error
    # a box that cuts off mass: the error estimate covers the mass lost
    cut = ugm.quadrature.log_partition(m, {"s": jnp.asarray(s)}, num_points=201,
                                       bounds=(-2.0, 2.0))
    assert abs(cut.value - exact) > 1e-3 and abs(cut.value - exact) <= cut.error

    def three():
        numpyro.sample("x", ugm.Real(3))

    with pytest.raises(ValueError, match=r"one or two real numbers.*'x': 'Real\(\(3,\)\)'"):
        ugm.quadrature.log_partition(three, {})


@pytest.mark.slow
def test_log_z_density_and_likelihood_of_a_double_well_against_scipy():
    a, c = 2.0, 0.3
    params = {"a": jnp.asarray(a), "c": jnp.asarray(c)}
    ref, ref_err = scipy_log_z(a, c)
    r = ugm.quadrature.log_partition(double_well, params, bounds=(-8.0, 8.0))
    assert r.error < 1e-5 and abs(r.value - ref) <= r.error + ref_err
    coarse = ugm.quadrature.log_partition(double_well, params, num_points=61, bounds=(-8.0, 8.0))
    assert abs(coarse.value - ref) <= coarse.error
    d = ugm.quadrature.density(double_well, params, num_points=201)
    h = [ax[1] - ax[0] for ax in d.axes]
    assert d.coordinates == ("x[0]", "x[1]") and d.log_density.shape == (201, 201)
    np.testing.assert_allclose(np.sum(np.exp(d.log_density)) * h[0] * h[1], 1.0, atol=1e-6)
    x = np.random.default_rng(0).normal(size=(40, 2))
    f = -a * (x[:, 0] ** 2 - 1) ** 2 - 0.5 * x[:, 1] ** 2 - c * x[:, 0] * x[:, 1]
    ll = ugm.quadrature.log_likelihood(double_well, params, {"x": x})
    assert abs(ll.value - (f.mean() - ref)) <= ll.error + ref_err + 1e-5


def two_sites():
    u = numpyro.sample("u", ugm.Real())
    v = numpyro.sample("v", ugm.Real())
    p = numpyro.param("p", 0.5)
    numpyro.factor("e", -0.5 * (u ** 2 + v ** 2) + p * u * v)


@pytest.mark.slow
def test_log_z_of_two_scalar_sites_is_that_of_the_gaussian():
    p = 0.5
    r = ugm.quadrature.log_partition(two_sites, {"p": jnp.asarray(p)})
    precision = np.array([[1.0, -p], [-p, 1.0]])
    exact = 0.5 * np.log(np.linalg.det(2 * np.pi * np.linalg.inv(precision)))
    assert abs(r.value - exact) <= r.error < 1e-5
    e = ugm.quadrature.expectation(two_sites, {"p": jnp.asarray(p)},
                                   lambda s: s["u"] * s["v"])
    np.testing.assert_allclose(e.value, np.linalg.inv(precision)[0, 1], atol=1e-5)


def _features(state):
    x = state["x"]
    return jnp.stack([x[0] ** 2, x[1] ** 2, x[0] * x[1], x[0] ** 4])


@pytest.mark.slow
@pytest.mark.parametrize("kernel", [ugm.kernels.mala(), ugm.kernels.hmc(),
                                    ugm.kernels.rwm()], ids=["mala", "hmc", "rwm"])
def test_gradient_kernels_match_the_quadrature_moments_of_a_double_well(kernel):
    """E[x0²], E[x1²], E[x0 x1], E[x0⁴] of 512 independent chains against quadrature,
    in standard errors from the spread of the chains' means; the moments at a wrong
    well depth must be rejected by the same test."""
    m = ugm.as_ugm(double_well)
    truth = {"a": jnp.asarray(1.5), "c": jnp.asarray(0.4)}
    chains, draws = 512, 100
    x = ugm.sample(m, truth, jax.random.PRNGKey(3), draws, num_chains=chains,
                   num_warmup=500, thinning=5, kernel=kernel)["x"]
    x = np.asarray(x, np.float64).reshape(chains, draws, 2)
    feats = np.stack([x[..., 0] ** 2, x[..., 1] ** 2, x[..., 0] * x[..., 1],
                      x[..., 0] ** 4], -1)
    per_chain = feats.mean(1)
    mean, se = per_chain.mean(0), per_chain.std(0, ddof=1) / np.sqrt(chains)

    def z(params):
        e = ugm.quadrature.expectation(m, params, _features, num_points=201)
        return (mean - e.value) / np.sqrt(se ** 2 + e.error ** 2)

    assert np.max(np.abs(z(truth))) < 4.0, z(truth)
    wrong = {**truth, "a": jnp.asarray(2.5)}
    assert np.max(np.abs(z(wrong))) > 6.0, z(wrong)


def tilted_well():
    """f = −x⁴/4 + x² − x/2, a site declared without loc/scale (issue 46, F4)."""
    x = numpyro.sample("x", ugm.Real())
    numpyro.factor("e", -x ** 4 / 4 + x ** 2 - x / 2)


def test_log_prob_of_a_point_does_not_depend_on_the_batch():
    """log p(0.3) of the tilted double well is f(0.3) − log Z whatever other points come
    with it (log Z = 2.2251590 by scipy's quad, here recomputed): the default box was the
    base Normal fitted to the batch, ±8 s.d. of [0.3, 1.0, 1.1, 0.9] cut off the left
    well, and log_prob(0.3) was −2.0538 (true −2.2872) with an error estimate of 0.94 and
    no warning. A box that cuts off mass now warns."""
    f = lambda x: -x ** 4 / 4 + x ** 2 - x / 2  # noqa: E731
    log_z = np.log(integrate.quad(lambda x: np.exp(f(x)), -np.inf, np.inf,
                                  epsabs=1e-13, epsrel=1e-12)[0])
    assert abs(log_z - 2.2251590) < 1e-6
    for batch in ([0.3, 1.0], [0.3, -2.0], [0.3, 1.0, 1.1, 0.9], [0.3]):
        lp = ugm.quadrature.log_prob(tilted_well, {}, {"x": np.array(batch)})
        assert lp.error < 1e-6
        np.testing.assert_allclose(lp.value, f(np.array(batch)) - log_z, atol=1e-6)
    assert abs(f(0.3) - log_z - -2.2872) < 1e-4
    with pytest.warns(RuntimeWarning, match=r"^quadrature.log_prob: the error estimate "
                      r"of log Z is [0-9.e-]+ nats \(above 0.001\).*give bounds="):
        ugm.quadrature.log_likelihood(tilted_well, {}, {"x": np.array([0.3])},
                                      bounds=(-1.0, 3.0))
