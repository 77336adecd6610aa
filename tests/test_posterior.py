"""Posterior sampling of a UGM's parameters (ugm.posterior): the exchange algorithm,
SG-MCMC and the exact NUTS reference, checked against posteriors computed on a grid."""

import itertools

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import MCMC, NUTS

import numpyro_ugm as ugm
from numpyro_ugm.models import ergm, graph_to_edges

NUM_SPINS = 6


def ising_chain(prior_scale=1.0):
    """A chain of spins with one coupling β and one field h, both with Normal priors."""
    beta = numpyro.sample("beta", dist.Normal(0.0, prior_scale))
    h = numpyro.sample("h", dist.Normal(0.0, prior_scale))
    x = numpyro.sample("x", ugm.Spin(NUM_SPINS))
    numpyro.factor("pair", beta * jnp.sum(x[1:] * x[:-1]))
    numpyro.factor("field", h * jnp.sum(x))


def _statistics(x):
    x = np.asarray(x, float)
    return np.stack([np.sum(x[..., 1:] * x[..., :-1], -1), np.sum(x, -1)], -1)


@pytest.fixture(scope="module")
def chain_posterior():
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


def _check_agreement(samples, by_chain, mean, sd, sd_tolerance=0.15):
    """Means within 4 Monte Carlo standard errors (effective sample size from numpyro),
    standard deviations within ``sd_tolerance`` (relative)."""
    for i, site in enumerate(("beta", "h")):
        ess = float(effective_sample_size(np.asarray(by_chain[site])))
        assert ess > 200, (site, ess)
        est_mean, est_sd = float(np.mean(samples[site])), float(np.std(samples[site]))
        assert abs(est_mean - mean[i]) < 4 * sd[i] / np.sqrt(ess), (site, est_mean, mean[i])
        assert abs(est_sd / sd[i] - 1) < sd_tolerance, (site, est_sd, sd[i])


@pytest.mark.parametrize("num_aux_steps", [
    None,
    # by default the kernel path (approximate exchange) is checked on the Florentine
    # edges model (below), where one sweep is exact
    pytest.param(10, marks=pytest.mark.slow)], ids=["exact-draws", "gibbs-10"])
@pytest.mark.slow
def test_exchange_matches_the_posterior_on_a_grid(chain_posterior, num_aux_steps):
    data, mean, sd = chain_posterior
    kernel = ugm.posterior.Exchange(ising_chain, data, num_aux_steps=num_aux_steps)
    mcmc = MCMC(kernel, num_warmup=500, num_samples=2000, num_chains=4,
                chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(1), extra_fields=("accept_prob",))
    samples = mcmc.get_samples()
    _check_agreement(samples, mcmc.get_samples(group_by_chain=True), mean, sd)
    accept = float(np.mean(mcmc.get_extra_fields()["accept_prob"]))
    assert 0.15 < accept < 0.4  # tuned towards 0.25
    if num_aux_steps is None:  # the same key gives the same start; the step is reused
        step = kernel._sample_fn
        again = kernel.init(jax.random.split(jax.random.PRNGKey(1), 4), 500, None, (), {})
        assert kernel._sample_fn is step
        first = kernel.init(jax.random.split(jax.random.PRNGKey(1), 4), 500, None, (), {})
        np.testing.assert_array_equal(first.scale_tril, again.scale_tril)


@pytest.mark.slow
def test_exact_posterior_under_nuts_matches_the_grid(chain_posterior):
    data, mean, sd = chain_posterior
    mcmc = MCMC(NUTS(ugm.posterior.exact_posterior(ising_chain, data)), num_warmup=300,
                num_samples=1000, num_chains=2, chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(2))
    _check_agreement(mcmc.get_samples(), mcmc.get_samples(group_by_chain=True), mean, sd,
                     sd_tolerance=0.1)


@pytest.mark.slow  # by default, pSGLD on minibatches (below) checks the same path
def test_sgld_matches_the_posterior_on_a_grid(chain_posterior):
    data, mean, sd = chain_posterior
    sampler = ugm.posterior.SGMCMC(ising_chain, ugm.PCD(256), 5e-4)
    result = sampler.run(jax.random.PRNGKey(3), 6000, data, num_warmup=500, thinning=2,
                         progress_bar=False)
    samples = result.samples
    assert samples["beta"].shape == (6000,) and result.diagnostics["grad_norm"].shape == (6000,)
    by_chain = {k: v.reshape(3, -1) for k, v in samples.items()}  # three stretches
    _check_agreement(samples, by_chain, mean, sd, sd_tolerance=0.2)
    # a run continues from the state it is given
    more = sampler.run(None, 10, data, num_warmup=0, init_state=result.state,
                       progress_bar=False)
    assert int(more.state.step) == 500 + 2 * 6000 + 10


def test_psgld_on_minibatches_matches_the_posterior(chain_posterior):
    data, mean, sd = chain_posterior
    sampler = ugm.posterior.SGMCMC(ising_chain, ugm.PCD(64), 2e-2, preconditioned=True)
    result = sampler.run(jax.random.PRNGKey(4), 4000, data, num_warmup=500, thinning=2,
                         batch_size=25, progress_bar=False)
    by_chain = {k: v.reshape(2, -1) for k, v in result.samples.items()}
    _check_agreement(result.samples, by_chain, mean, sd, sd_tolerance=0.25)


def test_a_diverging_step_size_stops_where_the_density_is_no_longer_finite(chain_posterior):
    """Issue 34 item 8: with step size 10, SGLD's samples grew to ±2.5e38 (finite
    float32) for 60 steps before a NonFiniteError; their log prior was −inf from about
    1e19 on. The run now stops at the first such step, keeping the last good state."""
    data, _, _ = chain_posterior
    sampler = ugm.posterior.SGMCMC(ising_chain, ugm.PCD(16), 10.0)
    with pytest.raises(ugm.NonFiniteError) as err:
        sampler.run(jax.random.PRNGKey(0), 200, data, num_warmup=0, progress_bar=False)
    state = err.value.state
    params = sampler.core.get_params(state)
    log_prior = float(sampler.core.m.log_prior(params))
    assert np.isfinite(log_prior), log_prior
    assert max(abs(float(v)) for v in params.values()) < 2e19


def test_sgmcmc_checkpoints_and_resumes_bit_identically(chain_posterior, tmp_path):
    """Issue 34 item 7: ``SGMCMC.run(..., checkpoint_every=5)`` once passed the keyword to
    the model (``TypeError: ising_chain() got an unexpected keyword argument``). SGMCMC
    now runs the learner's one ``run``: checkpoints of the warm-up and of the sampling
    (indexed by update, the samples at the updates that produced them), and a restored
    state continues to the samples of a run never interrupted."""
    data, _, _ = chain_posterior
    sampler = ugm.posterior.SGMCMC(ising_chain, ugm.PCD(16), 1e-3)
    key = jax.random.PRNGKey(5)
    whole = sampler.run(key, 10, data, num_warmup=5, thinning=2, progress_bar=False)
    saved = sampler.run(key, 10, data, num_warmup=5, thinning=2, progress_bar=False,
                        checkpoint_every=4, checkpoint_dir=tmp_path)
    for name in whole.samples:
        np.testing.assert_array_equal(saved.samples[name], whole.samples[name])
    steps = sorted(int(p.stem[len("step_"):]) for p in tmp_path.glob("*.npz"))
    assert steps == [4, 5, 9, 13, 17, 21, 25]  # warm-up: 4 and its end; then every 4
    state, diagnostics = ugm.posterior.SGMCMC(ising_chain, ugm.PCD(16), 1e-3).restore(
        tmp_path / "step_000000013.npz", data)
    assert int(state.step) == 13 and len(diagnostics["grad_norm"]) == 13
    beta = diagnostics["params/beta"]
    np.testing.assert_array_equal(beta[[6, 8, 10, 12]], whole.samples["beta"][:4])
    assert np.all(np.isnan(np.delete(beta, [6, 8, 10, 12])))
    assert np.all(np.isfinite(diagnostics["grad_norm"][:5]))  # the warm-up, every update
    resumed = sampler.run(None, 6, data, num_warmup=0, thinning=2, init_state=state,
                          progress_bar=False)
    for name in whole.samples:
        np.testing.assert_array_equal(resumed.samples[name], whole.samples[name][4:])
    np.testing.assert_array_equal(resumed.diagnostics["grad_norm"],
                                  whole.diagnostics["grad_norm"][4:])
    with pytest.raises(ValueError, match="multiple of thinning"):
        sampler.run(key, 10, data, num_warmup=5, thinning=2, checkpoint_every=5,
                    checkpoint_dir=tmp_path)


@pytest.mark.slow
def test_exchange_on_florentine_edges_matches_quadrature():
    """flomarriage ~ edges (20 marriages among 120 pairs) with a Normal(0, 5) prior on θ:
    every edge is independent (one block), so one Gibbs sweep from the data draws the
    auxiliary graph exactly: the kernel path of models too large to enumerate, checked
    against quadrature."""
    graph = nx.florentine_families_graph()
    graph.add_node("Pucci")
    data = {"y": graph_to_edges(graph, nodelist=sorted(graph.nodes))[None]}
    kernel = ugm.posterior.Exchange(ergm, data, num_aux_steps=1)
    mcmc = MCMC(kernel, num_warmup=500, num_samples=3000, num_chains=4,
                chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(5), 16, ("edges",), prior_scale=5.0)
    theta = np.asarray(mcmc.get_samples()["theta"])[:, 0]
    grid = np.linspace(-4.0, 0.0, 4001)
    log_post = 20 * grid - 120 * np.log1p(np.exp(grid)) - grid ** 2 / 50
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    mean = (w * grid).sum()
    sd = np.sqrt((w * grid ** 2).sum() - mean ** 2)
    ess = float(effective_sample_size(np.asarray(
        mcmc.get_samples(group_by_chain=True)["theta"])[..., 0]))
    assert abs(theta.mean() - mean) < 4 * sd / np.sqrt(ess)
    assert abs(theta.std() / sd - 1) < 0.15


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
