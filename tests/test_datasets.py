"""The data sets (datasets.py) that need no download: the PF paper's VBM problem has the
documented shapes, dtypes and parameters, is reproducible for a key, and its cases are
draws of its model (the pair statistics of many cases match the exact expectations)."""

import jax
import numpy as np

import numpyro_ugm as ugm
from numpyro_ugm.datasets import vbm_problem
from numpyro_ugm.evaluate import exact


def test_vbm_problem_shapes_reproducibility_and_distribution():
    params, train, test = vbm_problem(jax.random.PRNGKey(0), 5, 3000, 7, scale=0.8)
    assert set(params) == {"W"} and params["W"].shape == (5, 5)
    W = np.asarray(params["W"])
    np.testing.assert_array_equal(np.tril(W), 0.0)  # couplings i < j only, no fields
    assert np.all(np.triu(W, 1)[np.triu_indices(5, 1)] != 0.0)
    assert set(train) == set(test) == {"x"}
    assert train["x"].shape == (3000, 5) and test["x"].shape == (7, 5)
    assert train["x"].dtype == test["x"].dtype == np.int8
    assert set(np.unique(train["x"])) == {-1, 1}
    again = vbm_problem(jax.random.PRNGKey(0), 5, 3000, 7, scale=0.8)
    np.testing.assert_array_equal(again[1]["x"], train["x"])
    np.testing.assert_array_equal(again[0]["W"], W)
    other = vbm_problem(jax.random.PRNGKey(1), 5, 3000, 7, scale=0.8)
    assert not np.array_equal(other[1]["x"], train["x"])
    # the cases follow the model: E[x_i x_j] within 4 standard errors of the exact one
    m = ugm.UGM(ugm.models.vbm, 5, fields=False)
    pairs = exact.expectation(m, params, lambda s: s["x"][:, None] * s["x"][None, :])
    x = train["x"].astype(np.float64)
    empirical = x.T @ x / len(x)
    i, j = np.triu_indices(5, 1)
    assert np.all(np.abs(empirical[i, j] - np.asarray(pairs)[i, j]) < 4 / np.sqrt(len(x)))
    assert np.max(np.abs(np.asarray(pairs)[i, j])) > 0.2  # not blind: spins correlated
