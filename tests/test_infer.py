"""numpyro adapters (``ugm.infer``): the samplers run inside ``numpyro.infer.MCMC`` draw the
exact distribution, and as blocks beside NUTS (``HMCGibbs`` / composite ``Gibbs``) they
give the exact posterior of a model with a continuous site.

* Standalone: ``MCMC(UGMSampler(model))`` with 20000 vectorized chains, each keeping its
  state after the warmup steps, gives i.i.d. draws; their total variation from the exact
  distribution (enumeration) must stay below the i.i.d. threshold of ``test_kernels``,
  which the uniform starting states exceed, and so does the TV of the same draws from the
  distribution at the wrong temperature (β = 0.75). Sequential and vectorized chains give
  the same draws for the same key.
* Beside NUTS: y_i ~ N(μ x_i, σ) with an Ising chain prior over spins x and a log-normal
  prior over σ. The posterior mean of σ and the posterior means of the spins are computed
  exactly (sum over the 2^6 spin states, quadrature over log σ); the MCMC estimates must be
  within 4.5 Monte Carlo standard errors (from the effective sample size), while the
  exact answer of the model without the Ising prior is outside. The composite-Gibbs test
  uses the Metropolis kernel, whose state caches the log-density, so the composite has to
  ``refresh`` it after NUTS moves σ (checked directly in ``test_refresh``).
"""

import itertools
import pickle
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import MCMC, NUTS, Gibbs, HMCGibbs
from numpyro.infer.gibbs import GIBBS_SITES_KWARG, conditioned
from helpers import (config_index, exact_log_probs, potts5, potts_ring, total_variation,
                          tv_threshold, vbm8)

import numpyro_ugm as ugm
from numpyro_ugm.infer import UGMSampler

NUM_CHAINS = 20000


def run_mcmc(kernel, *args, num_warmup, num_samples, num_chains=1, method="vectorized",
             seed=0, thinning=1, **kwargs):
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                chain_method=method, thinning=thinning, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), *args, **kwargs)
    return mcmc


def tv_of(m, p, samples):
    """TV between p and the draws (data representation -> model representation)."""
    position = {s: m.state_sites[s].to_model(v) for s, v in samples.items()}
    return total_variation(p, config_index(m, position))


# --- standalone MCMC --------------------------------------------------------------------


def test_vectorized_chains_draw_the_exact_distribution():
    m, params = vbm8()
    p = np.exp(exact_log_probs(m, params))
    p_cold = np.exp(exact_log_probs(m, params, beta=0.75))
    threshold = tv_threshold(p, NUM_CHAINS)
    mcmc = run_mcmc(UGMSampler(ugm.models.vbm, params=params), 8, num_warmup=30,
                    num_samples=1, num_chains=NUM_CHAINS)
    x = mcmc.get_samples()["x"]
    assert x.shape == (NUM_CHAINS, 8) and x.dtype == jnp.int8
    assert set(np.unique(np.asarray(x))) == {-1, 1}  # data representation
    tv = tv_of(m, p, {"x": x})
    tv_start = total_variation(p, config_index(m, m.target().random_state(jax.random.PRNGKey(1),
                                                                 (NUM_CHAINS,))))
    tv_cold = tv_of(m, p_cold, {"x": x})
    print(f"vbm8: TV {tv:.4f}, threshold {threshold:.4f}; uniform starts {tv_start:.4f}; "
          f"TV of the draws from the beta=0.75 distribution {tv_cold:.4f}")
    assert tv < threshold
    assert tv_start > threshold, "uniform starts pass (test is blind)"
    assert tv_cold > threshold, "the draws pass as beta=0.75 draws (test is blind)"


def test_categorical_sites_come_back_as_labels():
    m, params = potts5()
    p = np.exp(exact_log_probs(m, params))
    threshold = tv_threshold(p, NUM_CHAINS)
    mcmc = run_mcmc(UGMSampler(potts_ring, params=params), 5, 3, num_warmup=20,
                    num_samples=1, num_chains=NUM_CHAINS)
    x = mcmc.get_samples()["x"]
    assert x.shape == (NUM_CHAINS, 5) and x.dtype == jnp.int32
    tv = tv_of(m, p, {"x": x})
    print(f"potts5: TV {tv:.4f}, threshold {threshold:.4f}")
    assert tv < threshold


def test_sequential_equals_vectorized_and_reproducible():
    """The same key gives the same draws on two code paths (a loop over chains and a
    vmapped kernel); chains get different keys."""
    _, params = vbm8()
    sampler = UGMSampler(ugm.models.vbm, params=params)
    seq, vec = (np.asarray(run_mcmc(sampler, 8, num_warmup=5, num_samples=50, num_chains=2,
                                    method=method).get_samples(group_by_chain=True)["x"])
                for method in ("sequential", "vectorized"))
    assert seq.shape == (2, 50, 8)
    np.testing.assert_array_equal(seq, vec)
    assert np.mean(seq[0] != seq[1]) > 0.3


def test_init_params_in_either_representation():
    sampler = UGMSampler(potts_ring, params=potts5()[1])
    key = jax.random.PRNGKey(0)
    labels = np.array([0, 1, 2, 1, 0])
    for start in (labels, np.eye(3, dtype=np.float32)[labels]):
        state = sampler.init(key, 0, {"x": start}, (5, 3), {})
        np.testing.assert_array_equal(state.z["x"], np.eye(3)[labels])
    batched = sampler.init(jax.random.split(key, 4), 0, {"x": np.tile(labels, (4, 1))},
                           (5, 3), {})
    assert batched.z["x"].shape == (4, 5, 3) and batched.rng_key.shape[0] == 4
    with pytest.raises(ValueError, match="outside the domain"):
        sampler.init(key, 0, {"x": labels + 1}, (5, 3), {})
    with pytest.raises(ValueError, match="has shape"):
        sampler.init(key, 0, {"x": labels[:4]}, (5, 3), {})


# --- beside NUTS ------------------------------------------------------------------------

Y = np.array([1.2, 0.3, -0.2, 0.9, -1.1, 0.1], np.float32)
COUPLING, MU = 0.7, 1.0
TOLERANCE = 4.5  # Monte Carlo standard errors


def noisy_ising(y, coupling, mu):
    """Ising chain prior over spins x, y_i ~ N(mu x_i, sigma), sigma ~ LogNormal."""
    sigma = numpyro.sample("sigma", dist.LogNormal(-0.5, 0.5))
    x = numpyro.sample("x", ugm.Spin(y.shape[0]))
    numpyro.factor("ising", coupling * jnp.sum(x[:-1] * x[1:]))
    numpyro.sample("y", dist.Normal(mu * x, sigma), obs=y)


def exact_posterior(y, coupling, mu):
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
    """MCMC means within TOLERANCE standard errors of the exact ones; the exact answer
    without the Ising prior is not."""
    sigma, x = np.asarray(samples["sigma"]), np.asarray(samples["x"], np.float64)
    mean_sigma, mean_x = exact_posterior(Y, COUPLING, MU)
    free_sigma, free_x = exact_posterior(Y, 0.0, MU)
    se_sigma = sigma.std() / np.sqrt(effective_sample_size(sigma[None]))
    se_x = x.std(0) / np.sqrt(effective_sample_size(x[None]))
    z_sigma = (sigma.mean() - mean_sigma) / se_sigma
    z_x = (x.mean(0) - mean_x) / se_x
    print(f"E[sigma]: MCMC {sigma.mean():.4f} ± {se_sigma:.4f}, exact {mean_sigma:.4f} "
          f"(z {z_sigma:+.2f}; without the prior {free_sigma:.4f}); E[x] z-scores "
          f"{np.round(z_x, 2)}, max |E[x] - exact| {np.max(np.abs(x.mean(0) - mean_x)):.4f}")
    assert abs(z_sigma) < TOLERANCE
    assert np.all(np.abs(z_x) < TOLERANCE)
    assert abs(free_sigma - mean_sigma) > TOLERANCE * se_sigma, "test is blind"
    assert np.max(np.abs((free_x - mean_x) / se_x)) > TOLERANCE, "test is blind"


@pytest.mark.slow
def test_hmcgibbs_with_nuts_matches_exact_posterior():
    with warnings.catch_warnings():  # sigma is a site of the likelihood: no warning
        warnings.filterwarnings("error", message=".*1/Z")
        fn = ugm.infer.gibbs_fn(noisy_ising, Y, COUPLING, MU)
    assert fn.sites == ("x",) and list(fn.ugm.param_sites) == ["sigma"]
    kernel = HMCGibbs(NUTS(noisy_ising), gibbs_fn=fn, gibbs_sites=fn.sites)
    mcmc = run_mcmc(kernel, Y, COUPLING, MU, num_warmup=400, num_samples=2500, seed=1)
    check_posterior(mcmc.get_samples())


def test_sampler_is_a_block_of_composite_gibbs():
    """UGMSampler (with Metropolis) beside NUTS in numpyro's composite Gibbs."""
    kernel = Gibbs([(UGMSampler(noisy_ising, kernel=ugm.kernels.metropolis()), ["x"]),
                    (NUTS(noisy_ising), None)])
    with warnings.catch_warnings():  # sigma is a site of the likelihood: no warning
        warnings.filterwarnings("error", message=".*1/Z")
        mcmc = run_mcmc(kernel, Y, COUPLING, MU, num_warmup=400, num_samples=2500, seed=2)
    samples = mcmc.get_samples()
    assert samples["x"].dtype == jnp.float32  # composites keep the model representation
    assert ugm.infer.to_data(noisy_ising, samples, Y, COUPLING, MU)["x"].dtype == jnp.int8
    check_posterior(samples)


def test_refresh_keeps_the_kernel_state():
    """Carrying a state over to a new conditioning keeps the position; block Metropolis
    holds nothing else (its state is rebuilt), parallel tempering keeps its replicas."""
    args = (Y, COUPLING, MU)
    moved = {GIBBS_SITES_KWARG: {"sigma": jnp.asarray(2.0)}}
    for kernel in (ugm.kernels.metropolis(),
                   ugm.kernels.parallel_tempering(kernel=ugm.kernels.metropolis(), betas=3)):
        sampler = UGMSampler(noisy_ising, kernel=kernel).wrap_model(conditioned)
        state = sampler.init(jax.random.PRNGKey(0), 0, None, args,
                             {GIBBS_SITES_KWARG: {"sigma": jnp.asarray(0.5)}})
        refreshed = sampler.refresh(state, args, moved)
        np.testing.assert_array_equal(refreshed.z["x"], state.z["x"])
        assert type(refreshed.kernel_state) is type(state.kernel_state)
        jax.tree.map(np.testing.assert_array_equal, refreshed.kernel_state,
                     state.kernel_state)


# --- errors -----------------------------------------------------------------------------


def two_sites():
    x = numpyro.sample("x", ugm.Spin(2))
    h = numpyro.sample("h", ugm.Spin(2))
    s = numpyro.sample("s", dist.Normal())
    numpyro.factor("f", s * x @ h)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"site\(s\) \['h'\] are owned by another block"):
        kernel = Gibbs([(UGMSampler(two_sites), ["x"]),
                        (UGMSampler(two_sites), ["h"]), (NUTS(two_sites), None)])
        run_mcmc(kernel, num_warmup=1, num_samples=1)
    with pytest.raises(KeyError, match="not parameter sites"):
        ugm.infer.gibbs_fn(two_sites, params={"t": 1.0})
    # s couples x and h (see below); the warning points to the posterior samplers
    with pytest.warns(UserWarning, match=r"1/Z.*ugm\.posterior\.Exchange"):
        fn = ugm.infer.gibbs_fn(two_sites)
    with pytest.raises(KeyError, match="not parameter sites"):
        run_mcmc(UGMSampler(two_sites, params={"t": 1.0}), num_warmup=1, num_samples=1)
    with pytest.raises(ValueError, match="HMCGibbs gave"):
        fn(jax.random.PRNGKey(0), {"x": jnp.ones(2)}, {"s": 1.0})
    with pytest.raises(TypeError, match="kernel must be"):
        UGMSampler(two_sites, kernel="gibbs")


def test_a_sampler_that_ran_can_be_pickled():
    """What ``init`` built (closures) is not pickled: the unpickled sampler sets itself
    up again at its next ``init`` and draws the same chain."""
    sampler = UGMSampler(ugm.models.vbm, kernel=ugm.kernels.metropolis())
    state = sampler.init(jax.random.PRNGKey(0), 0, None, (4,), {})
    copy = pickle.loads(pickle.dumps(sampler))
    assert copy.ugm is None and copy.params is None
    again = copy.init(jax.random.PRNGKey(0), 0, None, (4,), {})
    np.testing.assert_array_equal(copy.sample(again, (4,), {}).z["x"],
                                  sampler.sample(state, (4,), {}).z["x"])


# --- a sampled parameter of the undirected model ----------------------------------------


def ising_beta(y, likelihood="obs", beta=None):
    """An Ising chain whose coupling beta is a sample site (or, given, a constant), with
    pixels y_i ~ N(x_i, sigma), sigma sampled: as an observed site or as a mixture factor."""
    if beta is None:
        beta = numpyro.sample("beta", dist.HalfNormal(1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    x = numpyro.sample("x", ugm.Spin(y.shape[0]))
    numpyro.factor("ising", beta * jnp.sum(x[:-1] * x[1:]))
    if likelihood == "obs":
        numpyro.sample("y", dist.Normal(x, sigma), obs=y)
    else:
        up, down = dist.Normal(1.0, sigma).log_prob(y), dist.Normal(-1.0, sigma).log_prob(y)
        numpyro.factor("likelihood", jnp.sum(0.5 * (1 + x) * up + 0.5 * (1 - x) * down))


def test_a_sampled_parameter_of_the_undirected_model_is_found():
    """Issue 13: NUTS beside the adapters sampling beta targets prior(beta)·exp f(x; beta)
    without 1/Z(beta) (here E[beta | y] 4.99 instead of the exact 0.66); the adapters
    find the sites a factor couples with the state, and only those."""
    m = ugm.UGM(ising_beta, Y, "mixture")
    assert ugm.infer.coupled_factors(m, ["beta", "sigma"]) == {
        "beta": ["ising"], "sigma": ["likelihood"]}
    assert ugm.infer.coupled_factors(m, ["beta", "sigma"], ["likelihood"]) == {
        "beta": ["ising"]}
    assert ugm.infer.coupled_factors(ugm.UGM(ising_beta, Y, "obs", 0.7), ["sigma"]) == {}
    with pytest.raises(ValueError, match=r"likelihood_factors \['lik'\] are not numpyro"):
        ugm.infer.coupled_factors(m, ["sigma"], ["lik"])


def test_adapters_warn_when_another_kernel_samples_a_parameter_of_the_ugm():
    """The warning is given when the adapter is set up (gibbs_fn: when built; UGMSampler:
    at init in a composite Gibbs), naming the site, the factor and the remedy."""
    with pytest.raises(UserWarning, match=r"gibbs_fn: another kernel .* samples 'beta' "
                                          r"\(coupled by factor\(s\) \['ising'\]\).*"
                                          r"without the 1/Z\(θ\).*ugm.MLE"):
        with warnings.catch_warnings():  # an error: stop before the blocks are found
            warnings.simplefilter("error", UserWarning)
            ugm.infer.gibbs_fn(ising_beta, Y)
    sampler = UGMSampler(ising_beta, likelihood_factors=["likelihood"]).wrap_model(conditioned)
    conditioning = {GIBBS_SITES_KWARG: {"beta": jnp.asarray(0.5), "sigma": jnp.asarray(1.0)}}
    with pytest.warns(UserWarning, match=r"UGMSampler: .* samples 'beta' \(coupled by "
                                         r"factor\(s\) \['ising'\]\)") as record:
        sampler.init(jax.random.PRNGKey(0), 0, None, (Y, "mixture"), conditioning)
    assert len([w for w in record if "1/Z" in str(w.message)]) == 1
    with warnings.catch_warnings():  # once per sampler
        warnings.filterwarnings("error", message=".*1/Z")
        sampler.init(jax.random.PRNGKey(0), 0, None, (Y, "mixture"), conditioning)
