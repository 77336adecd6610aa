"""The bridge-sampled log-likelihood (``network/estimation/log_likelihood.py``) against the
enumerated 5-node model."""

import math

import jax
import numpy as np
import pytest

from numpyro_ugm.network.estimation.log_likelihood import log_likelihood_bridge


def test_bridge_log_likelihood_matches_the_enumeration(five_node):
    theta = np.array([-0.4, 0.6])
    bridge = log_likelihood_bridge(five_node.exact_simulator(2, 500, seed=2), theta,
                                   five_node.observed, 10, jax.random.PRNGKey(3))
    assert abs(bridge.log_likelihood - five_node.log_likelihood(theta)) < 4 * bridge.stderr
    assert 0 < bridge.stderr < 0.05
    assert bridge.log_normalizer == pytest.approx(five_node.moments(theta)[2],
                                                  abs=4 * bridge.stderr)
    # θ = 0: log Z(0) = N log 2 exactly
    zero = log_likelihood_bridge(five_node.exact_simulator(1, 50), np.zeros(2),
                                 five_node.observed, 10, jax.random.PRNGKey(3), num_bridges=2)
    assert zero.log_likelihood == pytest.approx(-10 * math.log(2)) and zero.stderr == 0
