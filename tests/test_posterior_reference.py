"""The exact posterior for NUTS (posterior/reference.py): priors that depend on other
parameters, the model's own traces kept out of NUTS's, and a CRF's per-example inputs.
Agreement of NUTS on it with a grid on a plain model (``helpers.posterior.ising_chain``)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import MCMC, NUTS
from numpyro.infer.util import log_density
from helpers.posterior import _check_agreement, ising_chain

import numpyro_ugm as ugm

NUM_SPINS, NUM_CASES = 6, 40


def hierarchical_chain():
    """tau ~ HalfNormal(1), beta ~ Normal(0, tau): the prior of beta depends on tau."""
    tau = numpyro.sample("tau", dist.HalfNormal(1.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, tau))
    x = numpyro.sample("x", ugm.Spin(NUM_SPINS))
    numpyro.factor("pair", beta * jnp.sum(x[1:] * x[:-1]))


@pytest.fixture(scope="module")
def uniform_cases():
    """40 cases of 6 independent uniform spins (beta = 0)."""
    x = np.random.default_rng(3).choice([-1, 1], size=(NUM_CASES, NUM_SPINS))
    return {"x": x.astype(np.int8)}


def _log_density(model, **values):
    return float(log_density(model, (), {}, {k: jnp.asarray(v, jnp.result_type(float))
                                             for k, v in values.items()})[0])


def test_a_prior_depending_on_another_parameter_is_exact(uniform_cases):
    """At beta = 0 the likelihood does not depend on tau, so the log density difference
    between tau = 0.02 and tau = 2 is the prior's: log HN(0.02) + log N(0; 0, 0.02) −
    log HN(2) − log N(0; 0, 2) = 6.605 (the priors frozen at tau's initial value gave
    2.000)."""
    model = ugm.posterior.exact_posterior(hierarchical_chain, uniform_cases)
    truth = float(dist.HalfNormal(1.0).log_prob(0.02) + dist.Normal(0.0, 0.02).log_prob(0.0)
                  - dist.HalfNormal(1.0).log_prob(2.0) - dist.Normal(0.0, 2.0).log_prob(0.0))
    got = _log_density(model, tau=0.02, beta=0.0) - _log_density(model, tau=2.0, beta=0.0)
    np.testing.assert_allclose(got, truth, rtol=1e-5)
    np.testing.assert_allclose(truth, 6.605, atol=1e-3)
    # re-traced with float64 values: the model's own trace stays out of numpyro's
    with jax.enable_x64(True):
        value = log_density(model, (), {}, {"tau": np.float64(0.5), "beta": np.float64(0.1)})
    assert np.isfinite(float(value[0]))


@pytest.mark.slow
def test_nuts_on_a_hierarchical_prior_matches_quadrature(uniform_cases):
    """The posterior mean of tau by NUTS within 4 Monte Carlo standard errors of 2-D
    quadrature (beta = tau·z on a fixed z grid, log Z = 6 log 2 + 5 log cosh beta)."""
    x = uniform_cases["x"].astype(np.float64)
    pairs = np.sum(x[:, 1:] * x[:, :-1])
    tau = np.linspace(1e-4, 6.0, 3000)[:, None]
    z = np.linspace(-8.0, 8.0, 1601)[None, :]
    beta = tau * z
    log_lik = beta * pairs - NUM_CASES * 5 * np.log(np.cosh(beta))
    log_joint = -0.5 * tau ** 2 - 0.5 * z ** 2 + log_lik  # HN(tau) N(z) L(tau z)
    w = np.exp(log_joint - log_joint.max()).sum(1)
    w /= w.sum()
    mean = float((w * tau[:, 0]).sum())
    sd = float(np.sqrt((w * tau[:, 0] ** 2).sum() - mean ** 2))
    model = ugm.posterior.exact_posterior(hierarchical_chain, uniform_cases)
    mcmc = MCMC(NUTS(model, target_accept_prob=0.95), num_warmup=500, num_samples=1500,
                num_chains=2, chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0))
    samples = np.asarray(mcmc.get_samples(group_by_chain=True)["tau"])
    ess = float(effective_sample_size(samples))
    assert ess > 100
    assert abs(samples.mean() - mean) < 4 * sd / np.sqrt(ess), (samples.mean(), mean, sd)


def field_crf(u):
    """A chain coupling beta and a field u per example (a CRF's input)."""
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0))
    x = numpyro.sample("x", ugm.Spin(4))
    numpyro.factor("f", beta * jnp.sum(x[1:] * x[:-1]) + jnp.sum(u * x))


def crf_problem(num_cases=12):
    """Cases of ``field_crf`` at beta = 0.6, one field per case, and the exact log
    posterior (but for a constant) by brute force over the 16 states."""
    rng = np.random.default_rng(0)
    u = rng.normal(size=(num_cases, 4)).astype(np.float32)
    states = np.array(list(itertools.product([-1, 1], repeat=4)), np.float64)
    pairs = np.sum(states[:, 1:] * states[:, :-1], 1)

    def log_probs(beta):  # (num_cases, 16)
        f = beta * pairs + u @ states.T
        return f - np.logaddexp.reduce(f, axis=1, keepdims=True)

    x = states[[rng.choice(16, p=np.exp(row)) for row in log_probs(0.6)]]
    index = [int(np.flatnonzero((states == row).all(1))[0]) for row in x]

    def log_posterior(beta):
        return -0.5 * beta ** 2 + log_probs(beta)[np.arange(num_cases), index].sum()

    return {"x": x.astype(np.int8)}, u, log_posterior


def test_per_example_inputs_are_each_cases_own():
    """Per-example inputs as ``inputs=`` give the exact posterior; given as a model
    argument (one row per case, summed by the potential) they are refused."""
    data, u, log_posterior = crf_problem()
    with pytest.raises(ValueError, match=r"keyword argument 'u' has shape \(12, 4\).*"
                                         r"inputs=\{'u': \.\.\.\}"):
        ugm.posterior.exact_posterior(field_crf, data, u=u)
    model = ugm.posterior.exact_posterior(field_crf, data, u=u[0], inputs={"u": u})
    got = _log_density(model, beta=0.3) - _log_density(model, beta=1.0)
    np.testing.assert_allclose(got, log_posterior(0.3) - log_posterior(1.0), rtol=1e-5)
    # a model argument with one row per case that is not summed is left alone: a
    # field per spin when there are as many cases as spins
    data4 = {"x": data["x"][:4]}
    model = ugm.posterior.exact_posterior(field_crf, data4, u=u[0])
    assert np.isfinite(_log_density(model, beta=0.3))


@pytest.mark.slow
def test_exact_posterior_under_nuts_matches_the_grid(chain_posterior):
    data, mean, sd = chain_posterior
    mcmc = MCMC(NUTS(ugm.posterior.exact_posterior(ising_chain, data)), num_warmup=300,
                num_samples=1000, num_chains=2, chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(2))
    _check_agreement(mcmc.get_samples(), mcmc.get_samples(group_by_chain=True), mean, sd,
                     sd_tolerance=0.1)
