"""The exchange algorithm's kernel (posterior/exchange.py) on what users hand it:
starting values, fixed parameters, pickling a run kernel, and a CRF's per-example inputs;
agreement with posteriors computed by quadrature (``helpers.posterior.ising_chain`` on a grid, the
Florentine marriages under an edges ERGM). (Agreement with NUTS on the exact posterior:
test_posterior.py.)"""

import pickle

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import MCMC
from helpers.posterior import _check_agreement, ising_chain

import numpyro_ugm as ugm
from numpyro_ugm.models import ergm
from numpyro_ugm.network import graph_to_edges
from test_posterior_reference import crf_problem, field_crf


def scaled_chain(n=4):
    """A chain with a sampled coupling and a positive fixed scale."""
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0))
    scale = numpyro.param("scale", 1.0, constraint=dist.constraints.positive)
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("pair", scale * beta * jnp.sum(x[1:] * x[:-1]))


DATA = {"x": np.array([[1, 1, -1, -1], [1, 1, 1, 1], [-1, 1, 1, -1]], np.int8)}


def _mcmc(kernel, num_chains=1, **options):
    return MCMC(kernel, num_warmup=4, num_samples=4, num_chains=num_chains,
                chain_method="vectorized", progress_bar=False, **options)


@pytest.mark.slow
def test_starting_values_of_the_wrong_shape_are_named():
    with pytest.raises(ValueError, match=r"init_params\['beta'\] has shape \(3,\); the "
                                         r"sampled site 'beta' has shape \(\)"):
        _mcmc(ugm.posterior.Exchange(scaled_chain, DATA)).run(
            jax.random.PRNGKey(0), init_params={"beta": jnp.zeros(3)})
    with pytest.raises(ValueError, match=r"expected \(2,\), with a leading axis for the 2 "
                                         "vectorized chains"):
        _mcmc(ugm.posterior.Exchange(scaled_chain, DATA), num_chains=2).run(
            jax.random.PRNGKey(0), init_params={"beta": jnp.zeros((2, 3))})
    mcmc = _mcmc(ugm.posterior.Exchange(scaled_chain, DATA), num_chains=2)
    mcmc.run(jax.random.PRNGKey(0), init_params={"beta": jnp.array([0.5, -0.5])})
    assert mcmc.get_samples()["beta"].shape == (8,)


def test_fixed_parameters_outside_their_support_are_refused():
    kernel = ugm.posterior.Exchange(scaled_chain, DATA, params={"scale": jnp.float32(-1.0)})
    with pytest.raises(ValueError, match=r"Exchange: params: parameter site 'scale' holds "
                                         r"-1\.0 .*outside its support"):
        _mcmc(kernel).run(jax.random.PRNGKey(0))


@pytest.mark.slow
@pytest.mark.parametrize("traced", [False, True], ids=["function", "UGM"])
def test_a_run_kernel_pickles_and_continues(traced):
    model = ugm.UGM(scaled_chain) if traced else scaled_chain
    mcmc = _mcmc(ugm.posterior.Exchange(model, DATA))
    mcmc.run(jax.random.PRNGKey(0))
    kernel = pickle.loads(pickle.dumps(mcmc.sampler))
    assert kernel.posterior is None and kernel.postprocess_fn((), {})(
        {"beta": jnp.float32(0.5)})["beta"] == 0.5
    again = pickle.loads(pickle.dumps(mcmc))
    np.testing.assert_array_equal(again.get_samples()["beta"], mcmc.get_samples()["beta"])
    again.post_warmup_state = again.last_state  # continue: init runs again
    again.run(again.post_warmup_state.rng_key)
    mcmc.post_warmup_state = mcmc.last_state
    mcmc.run(mcmc.post_warmup_state.rng_key)
    np.testing.assert_array_equal(again.get_samples()["beta"], mcmc.get_samples()["beta"])


@pytest.mark.parametrize("num_aux_steps", [None, pytest.param(3, marks=pytest.mark.slow)],
                         ids=["exact-draws", "gibbs-3"])
def test_per_example_inputs_match_quadrature(num_aux_steps):
    """Each case's potential and auxiliary draw under its own inputs: the posterior mean
    of beta within 4 Monte Carlo standard errors of quadrature; the inputs given as a
    model argument (summed by the potential) are refused."""
    data, u, log_posterior = crf_problem(num_cases=30)
    grid = np.linspace(-2.0, 3.0, 2001)
    w = np.exp(np.array([log_posterior(b) for b in grid]) - log_posterior(0.6))
    w /= w.sum()
    mean = (w * grid).sum()
    sd = np.sqrt((w * grid ** 2).sum() - mean ** 2)
    with pytest.raises(ValueError, match=r"keyword argument 'u' .* inputs="):
        _mcmc(ugm.posterior.Exchange(field_crf, data)).run(jax.random.PRNGKey(0), u=u)
    kernel = ugm.posterior.Exchange(field_crf, data, inputs={"u": u},
                                    num_aux_steps=num_aux_steps)
    mcmc = MCMC(kernel, num_warmup=300, num_samples=1000, num_chains=4,
                chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(1), u=u[0])
    beta = np.asarray(mcmc.get_samples(group_by_chain=True)["beta"])
    ess = float(effective_sample_size(beta))
    assert ess > 150
    assert abs(beta.mean() - mean) < 4 * sd / np.sqrt(ess), (beta.mean(), mean, sd, ess)


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


def _real_precision_problem():
    """A Gaussian with an unknown precision a ~ LogNormal(0, 1) over 3 real variables,
    100 cases, and the exact posterior mean and sd of a by quadrature."""
    def gaussian():
        x = numpyro.sample("x", ugm.Real(3))
        a = numpyro.sample("a", dist.LogNormal(0.0, 1.0))
        numpyro.factor("q", -0.5 * a * jnp.sum(x ** 2))

    x = np.random.default_rng(0).normal(size=(100, 3)) * 0.5
    grid = np.linspace(0.01, 15.0, 20000)
    log_post = (-np.log(grid) - 0.5 * np.log(grid) ** 2 + 150 * np.log(grid)
                - 0.5 * grid * np.sum(x ** 2))
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    mean = float(np.sum(grid * w))
    return gaussian, {"x": x}, mean, float(np.sqrt(np.sum((grid - mean) ** 2 * w)))


def test_exact_exchange_on_a_non_gaussian_real_site_asks_for_auxiliary_steps():
    def quartic():
        x = numpyro.sample("x", ugm.Real(2))
        a = numpyro.sample("a", dist.LogNormal(0.0, 1.0))
        numpyro.factor("q", -a * jnp.sum(x ** 4))

    mcmc = MCMC(ugm.posterior.Exchange(quartic, {"x": np.ones((5, 2))}), num_warmup=1,
                num_samples=1, progress_bar=False)
    with pytest.raises(ValueError, match=r"not quadratic in the real site.*num_aux_steps"):
        mcmc.run(jax.random.PRNGKey(0))


@pytest.mark.slow
@pytest.mark.parametrize("num_aux_steps", [None, 20], ids=["exact", "approximate"])
def test_exchange_on_real_sites_matches_the_exact_posterior(num_aux_steps):
    """Auxiliary cases drawn exactly (a Gaussian: ``exact.sampler``) or by 20 sweeps of
    exact Gaussian conditionals from the data at the proposed a give the posterior of a
    within Monte Carlo error."""
    gaussian, data, mean, sd = _real_precision_problem()
    mcmc = MCMC(ugm.posterior.Exchange(gaussian, data, num_aux_steps=num_aux_steps),
                num_warmup=500, num_samples=2000, num_chains=4,
                chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0))
    a = np.asarray(mcmc.get_samples()["a"])
    assert abs(a.mean() - mean) < 0.25 * sd, (a.mean(), mean)
    assert abs(a.std() - sd) < 0.15 * sd, (a.std(), sd)
