"""The numpyro ``MCMCKernel`` of the adapters (infer/sampler.py: ``UGMSampler``): run inside
``numpyro.infer.MCMC`` it draws the exact distribution, and as a block beside NUTS
(composite ``Gibbs``) it gives the exact posterior of a model with a continuous site.
(``HMCGibbs``'s ``gibbs_fn``: test_infer_hmcgibbs.py; the refresh under new values of the
other blocks: test_infer_conditioning.py; the check of coupled parameters:
test_infer_coupling.py; starting values and representations: test_infer_values.py; the
noisy Ising chain and the MCMC runs: ``helpers``.)

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
  ``refresh`` it after NUTS moves σ (checked directly in test_infer_conditioning.py).
"""

import pickle
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import MCMC, NUTS, Gibbs
from helpers.models import potts5, potts_ring, vbm8
from helpers.posterior import COUPLING, MU, Y, check_posterior, noisy_ising, run_mcmc
from helpers.states import config_index, exact_log_probs, total_variation, tv_threshold

import numpyro_ugm as ugm
from numpyro_ugm.infer import UGMSampler

NUM_CHAINS = 20000


def tv_of(m, p, samples):
    """TV between p and the draws (data representation -> model representation)."""
    position = {s: m.target().state_sites[s].to_model(v) for s, v in samples.items()}
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


# --- beside NUTS ------------------------------------------------------------------------


@pytest.mark.slow
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


def _double_well():
    x = numpyro.sample("x", ugm.Real(()))
    numpyro.factor("f", -0.25 * x ** 4 + x ** 2 - 0.5 * x)


def test_a_gradient_kernel_adapts_during_the_warm_up_only():
    """Issue 46 sweep: ``UGMSampler`` ignored ``num_warmup`` ("the kernels have nothing to
    adapt"), so a gradient kernel on a real site kept adapting its step size at every
    draw (``adapting`` still 1 after sampling; the step size moved between draws): an
    adaptive chain that never stops adapting is not a Markov chain of the model. It now
    adapts during numpyro's warm-up only and keeps the step size it reached."""
    def last_state(num_samples):
        mcmc = MCMC(UGMSampler(_double_well, kernel=ugm.kernels.rwm()), num_warmup=300,
                    num_samples=num_samples, progress_bar=False)
        mcmc.run(jax.random.PRNGKey(0))
        return mcmc.last_state

    short, long = last_state(20), last_state(200)
    assert float(short.kernel_state.adapting) == 0.0
    assert float(short.kernel_state.step_size) == float(long.kernel_state.step_size)
    assert float(short.kernel_state.step_size) > 1.0  # adapted from 0.1 during the warm-up
    assert int(long.i) == 500
