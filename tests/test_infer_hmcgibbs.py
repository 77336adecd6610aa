"""The ``gibbs_fn`` of ``numpyro.infer.HMCGibbs`` (infer/hmcgibbs.py): beside NUTS it
gives the exact posterior of the noisy Ising chain (``helpers.posterior.noisy_ising``: the spins'
posterior means and that of the noise scale σ computed exactly, by a sum over the 2^6
spin states and quadrature over log σ), and the function names what it was handed
wrong. (The sampler as a block of numpyro's composite ``Gibbs``: test_infer_sampler.py.)"""

import warnings

import pytest
from numpyro.infer import NUTS, HMCGibbs
from helpers.posterior import COUPLING, MU, Y, check_posterior, noisy_ising, run_mcmc

import numpyro_ugm as ugm


@pytest.mark.slow
def test_hmcgibbs_with_nuts_matches_exact_posterior():
    with warnings.catch_warnings():  # sigma is a site of the likelihood: no warning
        warnings.filterwarnings("error", message=".*1/Z")
        fn = ugm.infer.gibbs_fn(noisy_ising, Y, COUPLING, MU)
    assert fn.sites == ("x",) and list(fn.ugm.param_sites) == ["sigma"]
    kernel = HMCGibbs(NUTS(noisy_ising), gibbs_fn=fn, gibbs_sites=fn.sites)
    mcmc = run_mcmc(kernel, Y, COUPLING, MU, num_warmup=400, num_samples=2500, seed=1)
    check_posterior(mcmc.get_samples())
