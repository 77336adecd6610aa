"""The MCMLE's trust region (``network/estimation/trust_region.py``): a step into the
degenerate region rejected, the chains rewound, and the fit stopped after
``max_rejections`` losing steps."""

import jax
import numpy as np
import pytest

from numpyro_ugm.network import ErgmDegeneracyError, MCMLEControl
from numpyro_ugm.network.estimation.mcmle import mcmle
from numpyro_ugm.network.summary import mcmle_fit


def test_trust_region_rejects_a_step_into_the_degenerate_region_and_converges(five_node,
                                                                              capsys):
    """From θ0 = (−2.5, −0.5) the sample barely has triangles, so the lognormal step puts
    about 800 on the triangle term (the complete graph in every draw): without the trust
    region the fit stops there. With it, that step's estimated log-likelihood change is
    far below 0: rejected, the chains rewound, a share of the step tried; the fit reaches
    the exact MLE."""
    start = np.array([-2.5, -0.5])
    with pytest.raises(ErgmDegeneracyError, match="zero variance"):
        mcmle(five_node.exact_simulator(), five_node.observed, start, jax.random.PRNGKey(0),
              names=["edges", "triangle"], control=MCMLEControl(max_loss=None))

    exact = five_node.exact_simulator()
    calls = {"stop": 0, "rewind": 0}

    def simulate(theta, key, stop=None):
        calls["stop"] += stop is not None
        return exact(theta, key)

    def rewind():
        calls["rewind"] += 1

    fit = mcmle_fit(simulate, five_node.observed, start, jax.random.PRNGKey(0), num_dyads=10,
                    names=["edges", "triangle"], log_likelihood=False, rewind=rewind,
                    verbose=True)
    record = fit.mcmle
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == record.iterations  # one line per iteration
    assert sum("step rejected" in line for line in printed) == record.rejected.sum()
    assert fit.converged
    assert record.rejected[1] and not record.rejected[0] and not record.rejected[-1]
    assert calls["rewind"] == record.rejected.sum()
    assert calls["stop"] >= record.iterations - 1  # every sample but the first is screened
    # the rejected samples lost likelihood (by the exact log-likelihood too), and the
    # share tried next lies on the rejected step, closer to the last accepted θ
    for t in np.flatnonzero(record.rejected):
        accepted = record.theta_history[np.flatnonzero(~record.rejected[:t])[-1]]
        assert record.log_likelihood_gains[t] < -1.0
        assert (five_node.log_likelihood(record.theta_history[t])
                < five_node.log_likelihood(accepted) - 1.0)
        step, tried = record.theta_history[t] - accepted, record.theta_history[t + 1] - accepted
        share = tried @ step / (step @ step)
        assert 0.01 <= share <= 0.5 and np.allclose(tried, share * step)
        assert np.isnan(record.step_lengths[t]) and np.isnan(record.tolerance_distances[t])
    assert np.isnan(record.log_likelihood_gains[0])
    assert f"The trust region rejected {record.rejected.sum()} step(s)" in str(fit)
    assert fit.to_dict()["mcmle"]["rejected"] == record.rejected.tolist()
    mc_se = np.sqrt(np.diag(fit.cov_mcmc))
    assert np.all(np.abs(fit.estimates - five_node.theta) < 4.5 * mc_se + 0.02), (
        fit.estimates, five_node.theta)


def test_trust_region_gives_up_when_every_step_loses():
    """A sample whose mean runs far past s_obs at every θ but the start: each step is
    rejected; after max_rejections the fit stops naming the terms."""
    base = np.random.default_rng(0).normal(size=(2, 200, 2))

    def simulate(theta, key):
        if np.allclose(theta, 0.0):
            return base
        return base + 1e5 * np.sign(theta)  # the chains run away from any step

    with pytest.raises(ErgmDegeneracyError, match="steps in a row") as info:
        mcmle(simulate, [0.5, 0.5], [0.0, 0.0], jax.random.PRNGKey(0),
              names=["edges", "triangle"], control=MCMLEControl(max_rejections=3))
    record = info.value.record
    assert record.rejected.tolist() == [False, True, True, True]
    assert np.all(record.log_likelihood_gains[1:] < -1.0)
