"""The check behind the adapters' warning (infer/coupling.py): which continuous sites a
factor couples with the state (parameters of the undirected model, whose 1/Z(θ) another
kernel would miss), and the warning the adapters give when another kernel samples one."""

import warnings

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer.gibbs import GIBBS_SITES_KWARG, conditioned
from helpers.posterior import Y

import numpyro_ugm as ugm
from numpyro_ugm.infer import UGMSampler


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
