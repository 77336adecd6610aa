"""The :class:`Structure` type and the colourings that make its blocks
(structure/graph.py): the greedy colouring is proper, a declared colouring becomes blocks
with colours renumbered 0..C−1, and pairs of variables are normalized. (The structure
found from a model: test_structure_discovery.py.)"""

import numpy as np
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.structure import from_colors, greedy_coloring
from numpyro_ugm.structure.graph import unique_pairs


def test_declared_colors_become_blocks_numbered_from_zero():
    """Colours 5, 2, 9 declared over two sites are renumbered 0, 1, 2 in sorted order;
    each block lists, per site, the flat indices of its variables (``None``: the whole
    site); with several colours the graph is unknown, so two variables of different
    colours are not taken as independent, while one colour declares no interaction."""
    domains = {"s": ugm.Spin(3), "y": ugm.Binary(2)}
    st = from_colors(domains, {"s": [5, 2, 5], "y": [2, 9]}, multilinear=True)
    assert st.sites == ("s", "y") and st.multilinear
    np.testing.assert_array_equal(st.offsets, [0, 3, 5])
    np.testing.assert_array_equal(st.colors, [1, 0, 1, 0, 2])
    assert st.edges is None and st.num_variables == 5
    assert len(st.blocks) == 3
    np.testing.assert_array_equal(st.blocks[0]["s"], [1])
    np.testing.assert_array_equal(st.blocks[0]["y"], [0])
    np.testing.assert_array_equal(st.blocks[1]["s"], [0, 2])
    assert set(st.blocks[1]) == {"s"}
    assert set(st.blocks[2]) == {"y"} and list(st.blocks[2]["y"]) == [1]
    np.testing.assert_array_equal(st.global_indices("y", [1]), [4])
    assert not st.independent(["y"])  # colours 0 and 2: the graph is unknown
    one = from_colors({"x": ugm.Spin(4)}, {"x": np.zeros(4)}, multilinear=False)
    assert one.edges.shape == (0, 2) and one.independent(["x"])
    assert one.blocks == [{"x": None}]
    with pytest.raises(ValueError, match=r"declared colors of site 'y': expected 2"):
        from_colors(domains, {"s": [0, 1, 0], "y": [0, 1, 0]}, multilinear=True)


def test_unique_pairs_sorts_deduplicates_and_drops_self_pairs():
    pairs = np.array([[2, 1], [1, 2], [3, 3], [4, 0], [0, 4], [1, 3]])
    np.testing.assert_array_equal(unique_pairs(pairs), [[0, 4], [1, 2], [1, 3]])
    assert unique_pairs(np.zeros((0, 2), np.int64)).shape == (0, 2)


def test_greedy_coloring_is_proper_on_random_graphs():
    rng = np.random.default_rng(0)
    for n in [1, 5, 30]:
        pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)
                          if rng.random() < 0.3], np.int64).reshape(-1, 2)
        colors = greedy_coloring(n, pairs)
        assert colors.shape == (n,) and colors.min() == 0
        assert np.all(colors[pairs[:, 0]] != colors[pairs[:, 1]])
        assert colors.max() <= (np.bincount(pairs.ravel(), minlength=n).max() if n > 1 else 0)
