"""The case-control MPLE of large networks (``network/estimation/sampled_mple.py``): the
non-tie sample, the MPLE against the dense one (every dyad: equal; a subsample: within its
stated Monte Carlo error)."""

import numpy as np
import pytest

from numpyro_ugm.network import change_statistics, mple
from numpyro_ugm.network.estimation.sampled_mple import (mple_samplesize, sample_dyads,
                                                         sample_non_ties, sampled_mple,
                                                         sampled_reference)
from numpyro_ugm.network.terms.structural import resolve_terms
from numpyro_ugm.network.estimation.sparse_statistics import sparse_statistics
from ergm_cases import GWESP


def test_non_ties_are_a_uniform_sample_without_repeats(attributed_network):
    _, net, ties = attributed_network(40, 0.1)
    tie_set = {tuple(t) for t in ties.tolist()}
    rng = np.random.default_rng(0)
    counts = np.zeros((40, 40))
    for _ in range(200):
        i, j = sample_non_ties(ties, 40, False, 50, rng)  # by rejection: 50 of ~700
        pairs = set(zip(i.tolist(), j.tolist()))
        assert len(pairs) == 50 and not pairs & tie_set and np.all(i < j)
        counts[i, j] += 1
    non_ties = 40 * 39 // 2 - len(ties)
    cells = counts[np.triu_indices(40, 1)]
    cells = cells[[(a, b) not in tie_set for a, b in zip(*np.triu_indices(40, 1))]]
    expected = 200 * 50 / non_ties
    assert abs(cells.mean() - expected) < 1e-9
    assert cells.var() < 2 * expected  # binomial spread, no favoured dyads
    i, j = sample_non_ties(ties, 40, True, 10 ** 6, rng)  # directed, all of them
    assert len(i) == 40 * 39 - len(ties) and len(set(zip(i.tolist(), j.tolist()))) == len(i)
    assert mple_samplesize(10 ** 8, 100) == 80_000 and mple_samplesize(100, 3) == 320


def test_case_control_mple_equals_the_dense_mple_with_every_dyad_and_is_close_without(
        gwesp_network):
    graph, net, ties, terms, _ = gwesp_network
    observed = sparse_statistics(net, terms, ties)
    dense = np.asarray(mple(graph, GWESP, network=net).params["theta"], np.float64)
    rng = np.random.default_rng(0)
    every = sampled_mple(sample_dyads(net, terms, ties, observed, 10 ** 9, rng))
    np.testing.assert_allclose(every.theta, dense, atol=1e-5)
    assert np.all(every.sampling_cov == 0) and every.converged
    part = sampled_mple(sample_dyads(net, terms, ties, observed, 1000, rng))
    error = np.sqrt(np.diag(part.sampling_cov))
    assert np.all(error > 0) and np.all(np.abs(part.theta - dense) < 4 * error), (
        part.theta, dense, error)
    # the reference: the dyad-independent part at its sampled MLE, gwesp at 0, exact log Z
    theta, log_z = sampled_reference(net, terms, part.sample)
    assert theta[3] == 0
    x = np.asarray(change_statistics(np.zeros(4950, np.float32), GWESP, network=net))[:, :3]
    assert log_z == pytest.approx(np.sum(np.logaddexp(0, x @ theta[:3])), rel=1e-6)


@pytest.mark.slow
def test_the_stated_monte_carlo_error_of_the_case_control_mple_is_its_spread(attributed_network):
    graph, net, ties = attributed_network(300, 0.02, seed=1)
    terms = resolve_terms(GWESP, net)
    observed = sparse_statistics(net, terms, ties)
    fits = [sampled_mple(sample_dyads(net, terms, ties, observed, 3000,
                                      np.random.default_rng(r))) for r in range(40)]
    spread = np.std([f.theta for f in fits], axis=0, ddof=1)
    stated = np.sqrt(np.mean([np.diag(f.sampling_cov) for f in fits], axis=0))
    assert np.all((spread > 0.6 * stated) & (spread < 1.6 * stated)), (spread, stated)
