"""What a change function of the sparse samplers sees of a dyad
(numpyro_ugm/network/sampling/views.py): the dyad views against brute force on dense
adjacency matrices (random graphs, every ordered pair, so dyads both on and off),
undirected and directed, through the neighbour lists (D² compares and the (n + 1,) mark
array) and the adjacency bit sets; the change functions built from them against
s(y, on) − s(y, off) by their definitions (sampling/conftest.py)."""

import numpy as np
import pytest

from numpyro_ugm.network.sampling import chains as nc
from numpyro_ugm.network.sampling import views as nv


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("capacity, bits", [(None, False), (40, False), (None, True)])
def test_views_and_change_functions_match_brute_force(directed, capacity, bits, chain_checks,
                                                      sparse_models):
    """Every ordered pair of random graphs (so dyads on and off, and for undirected
    graphs both orientations); the change functions built from the views equal
    s(y, on) − s(y, off) by definition (so the distribution tests check the sampler).
    Capacity 40 takes the partner sums' mark-array path (D > COMPARE_MAX_DEGREE);
    ``bits`` the adjacency bit sets' popcounts (37 nodes: two words per row)."""
    assert 16 <= nv.COMPARE_MAX_DEGREE < 40
    rng = np.random.default_rng(1 + directed)
    n = 37 if bits else 9
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    for density in ((0.1, 0.3) if bits else (0.25, 0.6)):
        edges = chain_checks.random_edges(rng, n, density, directed)
        state = nc.init_network_chains(edges, n, 1, directed=directed, statistics0=[0.0],
                                       max_degree=capacity, adjacency_bits=bits)
        chain_checks.check_consistent(state)
        sparse_models.check_views(state, 0, i, j,
                                  check_change=density > 0.5 or (bits and density > 0.2))
