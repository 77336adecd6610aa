"""Posteriors of parameters by quadrature, and checks of samplers against them."""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import MCMC

import numpyro_ugm as ugm


def run_mcmc(kernel, *args, num_warmup, num_samples, num_chains=1, method="vectorized",
             seed=0, thinning=1, **kwargs):
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                chain_method=method, thinning=thinning, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), *args, **kwargs)
    return mcmc


Y = np.array([1.2, 0.3, -0.2, 0.9, -1.1, 0.1], np.float32)


COUPLING, MU = 0.7, 1.0


POSTERIOR_TOLERANCE = 4.5  # Monte Carlo standard errors


def noisy_ising(y, coupling, mu):
    """Ising chain prior over spins x, y_i ~ N(mu x_i, sigma), sigma ~ LogNormal."""
    sigma = numpyro.sample("sigma", dist.LogNormal(-0.5, 0.5))
    x = numpyro.sample("x", ugm.Spin(y.shape[0]))
    numpyro.factor("ising", coupling * jnp.sum(x[:-1] * x[1:]))
    numpyro.sample("y", dist.Normal(mu * x, sigma), obs=y)


def noisy_ising_posterior(y, coupling, mu):
    """E[sigma | y] and E[x | y]: all 2^n spin states, quadrature over log sigma."""
    xs = np.array(list(itertools.product([-1.0, 1.0], repeat=len(y))))
    log_s = np.linspace(np.log(0.02), np.log(8.0), 8001)
    s = np.exp(log_s)
    log_prior = -0.5 * ((log_s + 0.5) / 0.5) ** 2  # LogNormal(-0.5, 0.5) in log sigma
    resid = np.asarray(y, np.float64)[None, None, :] - mu * xs[None]
    log_lik = (-0.5 * (resid / s[:, None, None]) ** 2 - np.log(s)[:, None, None]).sum(-1)
    ising = coupling * (xs[:, :-1] * xs[:, 1:]).sum(1)
    log_joint = log_prior[:, None] + ising[None, :] + log_lik
    w = np.exp(log_joint - log_joint.max())
    w /= w.sum()
    return float(w.sum(1) @ s), w.sum(0) @ xs


def check_posterior(samples):
    """MCMC means within POSTERIOR_TOLERANCE standard errors of the exact ones; the exact answer
    without the Ising prior is not."""
    sigma, x = np.asarray(samples["sigma"]), np.asarray(samples["x"], np.float64)
    mean_sigma, mean_x = noisy_ising_posterior(Y, COUPLING, MU)
    free_sigma, free_x = noisy_ising_posterior(Y, 0.0, MU)
    se_sigma = sigma.std() / np.sqrt(effective_sample_size(sigma[None]))
    se_x = x.std(0) / np.sqrt(effective_sample_size(x[None]))
    z_sigma = (sigma.mean() - mean_sigma) / se_sigma
    z_x = (x.mean(0) - mean_x) / se_x
    print(f"E[sigma]: MCMC {sigma.mean():.4f} ± {se_sigma:.4f}, exact {mean_sigma:.4f} "
          f"(z {z_sigma:+.2f}; without the prior {free_sigma:.4f}); E[x] z-scores "
          f"{np.round(z_x, 2)}, max |E[x] - exact| {np.max(np.abs(x.mean(0) - mean_x)):.4f}")
    assert abs(z_sigma) < POSTERIOR_TOLERANCE
    assert np.all(np.abs(z_x) < POSTERIOR_TOLERANCE)
    assert abs(free_sigma - mean_sigma) > POSTERIOR_TOLERANCE * se_sigma, "test is blind"
    assert np.max(np.abs((free_x - mean_x) / se_x)) > POSTERIOR_TOLERANCE, "test is blind"


#: spins of ``ising_chain``
NUM_SPINS = 6


def ising_chain(prior_scale=1.0):
    """A chain of spins with one coupling β and one field h, both with Normal priors."""
    beta = numpyro.sample("beta", dist.Normal(0.0, prior_scale))
    h = numpyro.sample("h", dist.Normal(0.0, prior_scale))
    x = numpyro.sample("x", ugm.Spin(NUM_SPINS))
    numpyro.factor("pair", beta * jnp.sum(x[1:] * x[:-1]))
    numpyro.factor("field", h * jnp.sum(x))


def _statistics(x):
    """The chain's sufficient statistics: Σ x_i x_(i+1) and Σ x_i."""
    x = np.asarray(x, float)
    return np.stack([np.sum(x[..., 1:] * x[..., :-1], -1), np.sum(x, -1)], -1)


def _check_agreement(samples, by_chain, mean, sd, sd_tolerance=0.15):
    """Means within 4 Monte Carlo standard errors (effective sample size from numpyro),
    standard deviations within ``sd_tolerance`` (relative)."""
    for i, site in enumerate(("beta", "h")):
        ess = float(effective_sample_size(np.asarray(by_chain[site])))
        assert ess > 200, (site, ess)
        est_mean, est_sd = float(np.mean(samples[site])), float(np.std(samples[site]))
        assert abs(est_mean - mean[i]) < 4 * sd[i] / np.sqrt(ess), (site, est_mean, mean[i])
        assert abs(est_sd / sd[i] - 1) < sd_tolerance, (site, est_sd, sd[i])


@functools.lru_cache(maxsize=None)
def chain_posterior_data():
    """50 cases from β = 0.5, h = −0.2, and the posterior's mean and standard deviation
    by quadrature on a grid (log Z by brute force over the 64 states)."""
    m = ugm.UGM(ising_chain)
    data = ugm.exact.sample(m, {"beta": jnp.float32(0.5), "h": jnp.float32(-0.2)},
                            jax.random.PRNGKey(0), 50)
    states = np.array(list(itertools.product([-1, 1], repeat=NUM_SPINS)))
    s_all, s_data = _statistics(states), _statistics(data["x"]).sum(0)
    grid = np.linspace(-1.5, 1.5, 601)
    B, H = np.meshgrid(grid, grid, indexing="ij")
    theta = np.stack([B, H], -1)
    energies = theta @ s_all.T  # (601, 601, 64)
    top = energies.max(-1)
    log_z = top + np.log(np.exp(energies - top[..., None]).sum(-1))
    log_post = theta @ s_data - 50 * log_z - 0.5 * (B ** 2 + H ** 2)
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    mean = np.array([(w * B).sum(), (w * H).sum()])
    sd = np.sqrt(np.array([(w * B ** 2).sum(), (w * H ** 2).sum()]) - mean ** 2)
    return data, mean, sd
