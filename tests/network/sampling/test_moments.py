"""Moments of sampled statistics (network/sampling/moments.py): the Geweke test, the
stationary start and the multivariate effective size."""

import numpy as np


def test_geweke_test_accepts_stationary_draws_and_rejects_a_trend():
    from numpyro_ugm.network.sampling.moments import geweke_p_value, stationary_start

    rng = np.random.default_rng(3)
    p_values = [geweke_p_value(rng.normal(size=(4, 200, 3))) for _ in range(200)]
    # uniform under stationarity: about 20 % below 0.2
    assert 0.1 < np.mean(np.less(p_values, 0.2)) < 0.3, np.mean(np.less(p_values, 0.2))
    trend = rng.normal(size=(4, 200, 3))
    trend[:, :40, 0] += np.linspace(3, 0, 40)
    assert geweke_p_value(trend) < 1e-3
    assert stationary_start(trend) in (40, 60)  # the cuts 0.2 and 0.3 of 200 draws
    assert geweke_p_value(rng.normal(size=(4, 7, 3))) == 1.0  # too short to test


def test_multivariate_effective_size_is_the_geometric_mean_over_directions():
    from numpyro_ugm.network.sampling.moments import multivariate_effective_size

    rng = np.random.default_rng(1)
    iid = rng.normal(size=(4, 2048, 3))
    assert 0.8 * 8192 < multivariate_effective_size(iid) <= 8192
    # one statistic of three made 64 times slower (each value repeated 64 times): about
    # 8192 / 64^(1/3) = 2048, where the per-direction minimum would say 128
    slow = iid.copy()
    slow[..., 0] = np.repeat(iid[:, ::64, 0], 64, axis=1)
    got = multivariate_effective_size(slow)
    assert 1200 < got < 3000, got
    constant = iid.copy()
    constant[..., 2] = 1.0
    assert 0.8 * 8192 < multivariate_effective_size(constant) <= 8192
