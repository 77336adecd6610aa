"""The conditional random fields (models/crf.py): the grid's bonds and the PF paper's
image features, and the potentials of the grid CRF and the multi-label CRF against their
documented formulas evaluated here in numpy. (Learning them with per-example inputs:
test_learn_crf.py; their declared blocks against the analysis: test_models.py.)"""

import jax.numpy as jnp
import numpy as np

import numpyro_ugm as ugm
from numpyro_ugm.models import grid_crf, grid_edges, image_features, multilabel_crf


def test_grid_edges_and_image_features():
    """Horizontal bonds row by row, then vertical ones; node features [1, y_i], edge
    features [1, |y_i − y_j|] in that bond order."""
    np.testing.assert_array_equal(grid_edges(2, 3), [[0, 1], [1, 2], [3, 4], [4, 5],
                                                     [0, 3], [1, 4], [2, 5]])
    y = np.array([[0.5, -1.0], [2.0, 0.0]], np.float32)
    node, edge = image_features(y)
    assert node.shape == (2, 2, 2) and edge.shape == (4, 2)
    np.testing.assert_allclose(node[..., 0], 1.0)
    np.testing.assert_allclose(node[..., 1], y)
    # bonds (0,1), (2,3), (0,2), (1,3) of the flat image [0.5, -1, 2, 0]
    np.testing.assert_allclose(edge, [[1, 1.5], [1, 2.0], [1, 1.5], [1, 1.0]])


def test_grid_crf_potential_and_checkerboard_blocks():
    rng = np.random.default_rng(0)
    node = rng.normal(size=(2, 3, 2)).astype(np.float32)
    edge = rng.normal(size=(7, 2)).astype(np.float32)
    m = ugm.UGM(grid_crf, node, edge)
    np.testing.assert_array_equal(m.target().blocks[0]["x"], [0, 2, 4])  # (row + col) even
    np.testing.assert_array_equal(m.target().blocks[1]["x"], [1, 3, 5])
    w, v = np.array([0.3, -0.7]), np.array([0.9, 0.4])
    x = np.array([[1.0, -1.0, -1.0], [1.0, 1.0, -1.0]])
    flat = x.reshape(-1)
    bonds = [(0, 1), (1, 2), (3, 4), (4, 5), (0, 3), (1, 4), (2, 5)]
    expected = sum(flat[i] * (node.reshape(-1, 2)[i] @ w) for i in range(6))
    expected += sum(flat[i] * flat[j] * (edge[e] @ v) for e, (i, j) in enumerate(bonds))
    got = m.target().log_potential({"w": jnp.asarray(w, jnp.float32), "v": jnp.asarray(v, jnp.float32)},
                          {"x": jnp.asarray(x, jnp.float32)})
    np.testing.assert_allclose(float(got), expected, rtol=1e-5)


def test_multilabel_crf_potential():
    """f(y) = Σ_{l<m} (W_E)_lm y_l y_m + yᵀ(W_v x + b); without ``bias`` no ``b``."""
    rng = np.random.default_rng(1)
    features = rng.normal(size=2).astype(np.float32)
    m = ugm.UGM(multilabel_crf, features, 3)
    W_E, W_v, b = rng.normal(size=(3, 3)), rng.normal(size=(3, 2)), rng.normal(size=3)
    y = np.array([1.0, -1.0, 1.0])
    expected = (sum(W_E[i, j] * y[i] * y[j] for i in range(3) for j in range(i + 1, 3))
                + y @ (W_v @ features + b))
    params = {k: jnp.asarray(a, jnp.float32) for k, a in (("W_E", W_E), ("W_v", W_v),
                                                           ("b", b))}
    np.testing.assert_allclose(float(m.target().log_potential(params, {"y": jnp.asarray(y)})),
                               expected, rtol=1e-5)
    assert len(m.target().blocks) == 3
    assert set(ugm.UGM(multilabel_crf, features, 3, bias=False).param_sites) == {"W_E", "W_v"}


def test_chain_crf_declares_its_chain_for_every_example():
    """``chain_crf`` declares its graph (``ugm.factor(..., edges=)``): the structure is the
    chain with its two-colour blocks, taken without analysis, and it holds for examples
    with other masks with no covering check (the model is returned as it is)."""
    features = np.array([[0, 3], [1, 3], [2, 3], [3, 3]], np.int32)  # 3 = padding id
    mask = np.array([True, True, True, False])
    m = ugm.UGM(ugm.models.chain_crf, features=features, mask=mask, num_labels=3,
                num_features=3)
    structure = m.target().structure
    assert structure.declared and structure.multilinear
    np.testing.assert_array_equal(structure.edges, [[0, 1], [1, 2], [2, 3]])
    np.testing.assert_array_equal(structure.colors, [0, 1, 0, 1])
    others = {"features": np.stack([features] * 3), "mask": np.array(
        [[True, False, False, False], [True, True, True, True], mask])}
    assert m.for_inputs(others) is m


def test_chain_crf_packs_sequences_cut_by_padding():
    """Padding cuts ``chain_crf`` wherever it is: a row holding a 2-word and a 3-word
    sentence, each followed by a padded position, has the log-likelihood of the two
    sentences apart (each alone, unpadded, from brute force over its labelings)."""
    from scipy.special import logsumexp

    K, F = 3, 4
    rng = np.random.default_rng(0)
    W, A = rng.normal(size=(F, K)), rng.normal(size=(K, K))
    ids = rng.integers(0, F, (7, 2))
    mask = np.array([True, True, False, True, True, True, False])
    ids[~mask] = F
    labels = np.where(mask, rng.integers(0, K, 7), 0)
    m = ugm.UGM(ugm.models.chain_crf, features=ids, mask=mask, num_labels=K, num_features=F)
    params = {"W": jnp.asarray(W, jnp.float32), "A": jnp.asarray(A, jnp.float32)}
    got = ugm.exact.log_prob(m, params, {"y": labels[None]},
                             inputs={"features": ids[None], "mask": mask[None]},
                             method="eliminate")

    def alone(positions):
        unary = W[ids[positions]].sum(1)
        configs = np.stack(np.meshgrid(*[np.arange(K)] * len(positions), indexing="ij"),
                           -1).reshape(-1, len(positions))
        f = unary[np.arange(len(positions)), configs].sum(1) + A[configs[:, :-1],
                                                                  configs[:, 1:]].sum(1)
        y = labels[positions]
        return unary[np.arange(len(positions)), y].sum() + A[y[:-1], y[1:]].sum() - logsumexp(f)

    np.testing.assert_allclose(got[0], alone([0, 1]) + alone([3, 4, 5]), rtol=1e-5)
