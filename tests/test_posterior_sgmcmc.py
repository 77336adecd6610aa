"""Stochastic-gradient MCMC (posterior/sgmcmc.py): SGLD and pSGLD on minibatches against
the posterior of ``helpers.posterior.ising_chain`` computed by quadrature on a grid (the
``chain_posterior`` fixture of conftest.py), and runs that checkpoint and resume
bit-identically. (Agreement with NUTS on the exact posterior: test_posterior.py.)"""

import jax
import numpy as np
import pytest
from helpers.posterior import _check_agreement, ising_chain

import numpyro_ugm as ugm


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
    log_prior = float(sampler.core.param_model.log_prior(params))
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
                        checkpoint_every=4, checkpoint_dir=tmp_path, checkpoint_keep=None)
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
    # by default the newest three checkpoints, the samples of every update in the newest
    sampler.run(key, 10, data, num_warmup=5, thinning=2, progress_bar=False,
                checkpoint_every=4, checkpoint_dir=tmp_path / "kept")
    assert [p.name for p in sorted((tmp_path / "kept").glob("*.npz"))] == [
        f"step_{s:09d}.npz" for s in (17, 21, 25)]
    _, diagnostics = sampler.restore(ugm.checkpoint.latest(tmp_path / "kept"), data)
    np.testing.assert_array_equal(diagnostics["params/beta"][6::2], whole.samples["beta"])
