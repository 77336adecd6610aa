"""The greedy colouring of structure/graph.py is proper. (The structure found from a
model: test_structure_discovery.py.)"""

import numpy as np

from numpyro_ugm.structure import greedy_coloring


def test_greedy_coloring_is_proper_on_random_graphs():
    rng = np.random.default_rng(0)
    for n in [1, 5, 30]:
        pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)
                          if rng.random() < 0.3], np.int64).reshape(-1, 2)
        colors = greedy_coloring(n, pairs)
        assert colors.shape == (n,) and colors.min() == 0
        assert np.all(colors[pairs[:, 0]] != colors[pairs[:, 1]])
        assert colors.max() <= (np.bincount(pairs.ravel(), minlength=n).max() if n > 1 else 0)
