"""MCMC diagnostics of sampled statistics (``network/diagnostics/mcmc.py``) against the
closed-form ESS of AR(1) chains."""

import numpy as np

from numpyro_ugm.network.diagnostics.mcmc import mcmc_diagnostics


def ar1_chains(rho, num_chains, num_draws, k, seed):
    """Stationary AR(1) chains (unit marginal variance), (num_chains, num_draws, k)."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(size=(num_chains, num_draws, k)) * np.sqrt(1 - rho ** 2)
    x = np.empty_like(noise)
    x[:, 0] = rng.normal(size=(num_chains, k))
    for t in range(1, num_draws):
        x[:, t] = rho * x[:, t - 1] + noise[:, t]
    return x


def test_mcmc_diagnostics_effective_sample_size_of_ar1_chains(pyplot_agg):
    plt = pyplot_agg

    C, D = 4, 5000
    iid = np.random.default_rng(1).normal(size=(C, D, 1))
    sticky = ar1_chains(0.8, C, D, 1, seed=2)
    samples = np.concatenate([iid, sticky], axis=-1) + np.array([50.0, 20.0])
    result = mcmc_diagnostics(samples, [50.0, 20.0], ["edges", "triangle"], max_lag=30)
    N = C * D
    assert 0.85 * N < result.effective_sample_size[0] < 1.15 * N
    expected = N * (1 - 0.8) / (1 + 0.8)  # 2222
    assert 0.75 * expected < result.effective_sample_size[1] < 1.25 * expected
    np.testing.assert_allclose(result.autocorrelation[1], [0.0, 0.8], atol=0.03)
    np.testing.assert_allclose(result.autocorrelation[5, 1], 0.8 ** 5, atol=0.05)
    np.testing.assert_allclose(result.r_hat, 1.0, atol=0.02)
    np.testing.assert_allclose(result.monte_carlo_se,
                               result.sd / np.sqrt(result.effective_sample_size))
    assert np.all(np.abs(result.z_scores) < 4)
    # the observed triangle count off by 10 Monte Carlo standard errors
    shifted = mcmc_diagnostics(samples, [50.0, 20.0 - 10 * result.monte_carlo_se[1]],
                               ["edges", "triangle"])
    np.testing.assert_allclose(shifted.z_scores[1], result.z_scores[1] + 10, rtol=1e-6)
    assert shifted.p_values[1] < 1e-10
    assert "triangle" in shifted.table() and "ESS" in shifted.table()
    fig = result.plot(max_lag=20)
    assert len(fig.axes) == 4  # trace and autocorrelation per term
    plt.close(fig)
