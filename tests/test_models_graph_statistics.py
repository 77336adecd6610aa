"""The ERGM statistics (models/graph_statistics.py): every statistic and its change
statistics against their definitions (``helpers.brute_statistics``: loops over nodes and
triples), decays and aliases, and the errors for unknown statistics."""

import numpy as np
import pytest
from helpers import brute_statistics

from numpyro_ugm.network import STATISTICS, change_statistics, edges_to_adjacency, ergm_statistics


def test_statistics_and_change_statistics_match_definitions():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, (6, 21)).astype(np.int8)  # 7 nodes
    A = edges_to_adjacency(y)
    expected = np.array([[brute_statistics(a)[s] for s in STATISTICS] for a in A])
    got = np.asarray(ergm_statistics(y, STATISTICS))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)
    # change statistics: toggle each pair on / off
    change = np.asarray(change_statistics(y, STATISTICS))
    for g in range(2):
        for e in range(21):
            on, off = y[g].copy(), y[g].copy()
            on[e], off[e] = 1, 0
            delta = [brute_statistics(edges_to_adjacency(on))[s]
                     - brute_statistics(edges_to_adjacency(off))[s] for s in STATISTICS]
            np.testing.assert_allclose(change[g, e], delta, rtol=1e-5, atol=1e-4)
    # gwesp with its own decay, aliases
    a = np.asarray(ergm_statistics(y, ["triangle", ("gwesp", 0.25), "kstar2"]))
    np.testing.assert_allclose(a[:, 1], [brute_statistics(x, 0.25)["gwesp"] for x in A],
                               rtol=1e-5)
    with pytest.raises(ValueError, match="unknown term 'cycles'"):
        ergm_statistics(y, ["edges", "cycles"])
    with pytest.raises(TypeError, match=r"edges\(0.3\) takes at most 0 positional"):
        ergm_statistics(y, [("edges", 0.3)])
