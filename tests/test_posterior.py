"""Posterior sampling of a UGM's parameters (ugm.posterior) across its samplers: the
exchange algorithm and SGLD agree with NUTS on the exact posterior of two models, and
bad input is named by each. (Each sampler against a posterior computed on a grid:
test_posterior_exchange.py, test_posterior_sgmcmc.py, test_posterior_reference.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import MCMC, NUTS

import numpyro_ugm as ugm

NUM_SPINS = 6

VBM_PAIRS = np.triu_indices(NUM_SPINS, 1)


def vbm6():
    """Six fully connected spins: 15 couplings and 6 fields, Normal(0, 1) priors."""
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand((len(VBM_PAIRS[0]),)).to_event(1))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand((NUM_SPINS,)).to_event(1))
    x = numpyro.sample("x", ugm.Spin(NUM_SPINS))
    W = jnp.zeros((NUM_SPINS, NUM_SPINS)).at[VBM_PAIRS].set(w)
    numpyro.factor("couplings", x @ W @ x)
    numpyro.factor("fields", b @ x)


def potts3x3():
    """3×3 grid, 3 labels: a coupling β and the fields of labels 1 and 2."""
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0))
    h = numpyro.sample("h", dist.Normal(0.0, 1.0).expand((2,)).to_event(1))
    x = numpyro.sample("x", ugm.Categorical((3, 3), 3))
    numpyro.factor("coupling", beta * (jnp.sum(x[1:] * x[:-1]) + jnp.sum(x[:, 1:] * x[:, :-1])))
    numpyro.factor("fields", jnp.sum(x[..., 1:] @ h))


@pytest.mark.slow
@pytest.mark.parametrize("model, truth, num_cases", [
    (vbm6, {"w": np.random.default_rng(0).normal(0, 0.5, 15),
            "b": np.random.default_rng(1).normal(0, 0.3, 6)}, 100),
    (potts3x3, {"beta": 0.6, "h": np.array([0.3, -0.2])}, 50)], ids=["vbm6", "potts3x3"])
def test_exchange_and_sgld_agree_with_the_exact_posterior(model, truth, num_cases):
    """Posterior means within 4 Monte Carlo standard errors of NUTS on the exact
    posterior, standard deviations within 4 / sqrt(2 ESS) (+ 10% for SGLD's step)."""
    truth = {k: jnp.asarray(v, jnp.float32) for k, v in truth.items()}
    data = ugm.exact.sample(ugm.UGM(model), truth, jax.random.PRNGKey(1), num_cases)
    ref = MCMC(NUTS(ugm.posterior.exact_posterior(model, data)), num_warmup=500,
               num_samples=2500, num_chains=4, chain_method="vectorized", progress_bar=False)
    ref.run(jax.random.PRNGKey(0))
    reference = {k: np.asarray(v).reshape(len(v), -1) for k, v in ref.get_samples().items()}

    def check(samples, by_chain, sd_slack):
        for site, r in reference.items():
            s = np.asarray(samples[site]).reshape(len(samples[site]), -1)
            chains = np.asarray(by_chain[site])
            ess = np.atleast_1d(effective_sample_size(chains.reshape(chains.shape[:2] + (-1,))))
            assert ess.min() > 30, (site, ess.min())
            z = np.abs(s.mean(0) - r.mean(0)) / np.sqrt(s.var(0) / ess + r.var(0) / 2000)
            assert z.max() < 4.5, (site, z.max())
            sd_err = np.abs(s.std(0) / r.std(0) - 1)
            assert np.all(sd_err < 4 / np.sqrt(2 * ess) + sd_slack), (site, sd_err.max())

    mcmc = MCMC(ugm.posterior.Exchange(model, data), num_warmup=3000, num_samples=6000,
                num_chains=8, chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(2))
    check(mcmc.get_samples(), mcmc.get_samples(group_by_chain=True), 0.0)
    result = ugm.posterior.SGMCMC(model, ugm.PCD(100), 2e-4).run(
        jax.random.PRNGKey(3), 20000, data, num_warmup=2000, thinning=5, progress_bar=False)
    by_chain = {k: v.reshape((4, -1) + v.shape[1:]) for k, v in result.samples.items()}
    check(result.samples, by_chain, 0.1)


def test_bad_input_is_named(monkeypatch):
    m = ugm.UGM(ugm.models.vbm, 4)
    x = {"x": np.ones((3, 4), np.int8)}
    with pytest.raises(ValueError, match="no parameter to sample"):
        MCMC(ugm.posterior.Exchange(ugm.models.vbm, x), num_warmup=1, num_samples=1,
             progress_bar=False).run(jax.random.PRNGKey(0), 4)
    with pytest.raises(ValueError, match="no parameter to sample"):
        ugm.posterior.exact_posterior(m, x)
    monkeypatch.setattr(ugm.posterior.exchange, "MAX_EXACT_CONFIGURATIONS", 1)
    with pytest.raises(ValueError,
                       match=r"configurations \(more than 1\); give num_aux_steps"):
        MCMC(ugm.posterior.Exchange(ugm.models.vbm, x), num_warmup=1, num_samples=1,
             progress_bar=False).run(jax.random.PRNGKey(0), 4, prior_scale=1.0)
    monkeypatch.undo()
    with pytest.raises(KeyError, match="not sampled sites"):
        MCMC(ugm.posterior.Exchange(ugm.models.vbm, x), num_warmup=1, num_samples=1,
             progress_bar=False).run(jax.random.PRNGKey(0), 4, prior_scale=1.0,
                                     init_params={"c": jnp.zeros(4)})
    with pytest.raises(ValueError, match="outside the domain"):
        ugm.posterior.exact_posterior(ugm.models.vbm, {"x": np.full((3, 4), 2)}, 4,
                                      prior_scale=1.0)
    with pytest.raises(ValueError, match="step_size"):
        ugm.posterior.SGMCMC(ugm.models.vbm, ugm.PCD(8), -1.0)
    with pytest.raises(ValueError, match="decay"):
        ugm.posterior.SGMCMC(ugm.models.vbm, ugm.PCD(8), 1e-3, preconditioned=True, decay=1.0)
    with pytest.raises(ValueError, match="eps"):
        ugm.posterior.SGMCMC(ugm.models.vbm, ugm.PCD(8), 1e-3, preconditioned=True, eps=0.0)
    with pytest.raises(ValueError, match="step_size"):
        ugm.posterior.Exchange(ugm.models.vbm, x, step_size=0.0)
