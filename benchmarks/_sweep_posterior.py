"""Checks of ``defaults_sweep.py``: the posterior samplers of ``ugm.posterior`` as the
docs call them (``exact_posterior`` under NUTS, ``Exchange``, ``SGMCMC``) on the docs'
6-spin chain with Normal(0, 1) priors on its coupling β and field h, against the exact
posterior on a grid (log Z(β, h) by own enumeration of the 64 states)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS

import numpyro_ugm as ugm

import _sweep_reference as ref
from _sweep_rows import check, close, zcheck

N_SPINS, N_CASES = 6, 50


def chain():
    beta = numpyro.sample("beta", dist.Normal(0, 1))
    h = numpyro.sample("h", dist.Normal(0, 1))
    x = numpyro.sample("x", ugm.Spin(N_SPINS))
    numpyro.factor("pair", beta * jnp.sum(x[1:] * x[:-1]))
    numpyro.factor("field", h * jnp.sum(x))


@functools.lru_cache(maxsize=1)
def chain_problem():
    """(data (N, 6) int8 drawn exactly at β = 0.5, h = 0.2; posterior means and standard
    deviations of (β, h) by a 401 × 401 grid)."""
    x = ref.states(N_SPINS)
    T = np.stack([np.sum(x[:, 1:] * x[:, :-1], 1), x.sum(1)], 1)
    rng = np.random.default_rng(21)
    data = x[rng.choice(len(x), N_CASES, p=ref.probabilities(T @ [0.5, 0.2]))]
    S = np.stack([np.sum(data[:, 1:] * data[:, :-1], 1), data.sum(1)], 1).sum(0)
    beta, h = np.meshgrid(np.linspace(-0.5, 1.5, 401), np.linspace(-0.8, 1.2, 401),
                          indexing="ij")
    theta = np.stack([beta.ravel(), h.ravel()], 1)
    log_post = (theta @ S - N_CASES * ref.logsumexp(theta @ T.T, 1)
                - 0.5 * np.sum(theta ** 2, 1))
    w = ref.probabilities(log_post)
    mean = w @ theta
    sd = np.sqrt(w @ theta ** 2 - mean ** 2)
    assert np.all(np.abs(mean - theta.min(0)) > 8 * sd)  # the grid holds the posterior
    assert np.all(np.abs(theta.max(0) - mean) > 8 * sd)
    return data.astype(np.int8), mean, sd


def pooled(samples, num_chains=1):
    """(means, standard errors by batch means within each chain, sd) of β and h."""
    draws = np.stack([np.asarray(samples["beta"]), np.asarray(samples["h"])], -1)
    draws = draws.reshape(num_chains, -1, 2).astype(np.float64)
    se = np.sqrt(np.sum([ref.batch_means_se(c) ** 2 for c in draws], 0)) / num_chains
    return draws.reshape(-1, 2).mean(0), se, draws.reshape(-1, 2).std(0)


def rows_of(call, defaults, samples, num_chains=1, bias_sd=0.0, note=""):
    """A z-row of the means and a row of the standard deviations (within 15 %, or
    ``bias_sd`` more for a sampler with a documented step-size error)."""
    data, mean, sd = chain_problem()
    ours, se, ours_sd = pooled(samples, num_chains)
    if bias_sd:
        mean_row = close(call + ": E[β], E[h]", defaults, ours, mean,
                         float(np.max(4 * se + bias_sd * sd)),
                         note=f"tol 4 s.e. + {bias_sd} sd (documented SG-MCMC bias)")
    else:
        mean_row = zcheck(call + ": E[β], E[h]", defaults, ours, mean, (ours - mean) / se,
                          note=note)
    return [mean_row, close(call + ": sd(β), sd(h) / exact", defaults, ours_sd / sd,
                            [1.0, 1.0], 0.15 + bias_sd)]


@check("posterior")
def exact_posterior_nuts(quick):
    data, _, _ = chain_problem()
    num = 1000 if quick else 2000
    mcmc = MCMC(NUTS(ugm.posterior.exact_posterior(chain, {"x": data})), num_warmup=500,
                num_samples=num, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0))
    return rows_of(f"MCMC(NUTS(posterior.exact_posterior(chain6, 50 cases))), {num}",
                   "NUTS defaults, 1 chain", mcmc.get_samples())


@check("posterior")
def exchange(quick):
    data, _, _ = chain_problem()
    warmup, num = (500, 1000) if quick else (1000, 2000)
    mcmc = MCMC(ugm.posterior.Exchange(chain, {"x": data}), num_warmup=warmup,
                num_samples=num, num_chains=4, chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0))
    return rows_of(f"MCMC(posterior.Exchange(chain6, data)), 4 x {num}",
                   "exact auxiliary draws, target_accept_prob=0.25", mcmc.get_samples(), 4)


@check("posterior")
def sgmcmc(quick):
    data, _, _ = chain_problem()
    num = 2000 if quick else 4000
    result = ugm.posterior.SGMCMC(chain, ugm.PCD(100), 1e-2, preconditioned=True).run(
        jax.random.PRNGKey(1), num, {"x": data}, num_warmup=500, thinning=2, batch_size=25,
        progress_bar=False)
    return rows_of(f"posterior.SGMCMC(chain6, PCD(100), 1e-2, preconditioned=True), {num}",
                   "decay=0.99, eps=1e-5; docs' run", result.samples, bias_sd=0.15)
