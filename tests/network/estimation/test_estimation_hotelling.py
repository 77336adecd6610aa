"""Hotelling's T² for the MCMLE's tests (``network/estimation/hotelling.py``): the distance
to the tolerance region's boundary against a dense parametrization of the ellipse."""

import numpy as np
import pytest

from numpyro_ugm.network.estimation.hotelling import distance_to_ellipsoid_boundary


def test_distance_to_the_tolerance_boundary_matches_a_dense_search():
    rng = np.random.default_rng(0)
    for _ in range(5):
        a = rng.normal(size=(2, 2))
        shape = a @ a.T + 0.3 * np.eye(2)  # ellipse {x : xᵀ shape⁻¹ x = 1}
        b = rng.normal(size=(2, 2))
        cov = b @ b.T + 0.1 * np.eye(2)
        point = np.linalg.cholesky(shape) @ rng.uniform(-0.5, 0.5, size=2)  # inside
        angles = np.linspace(0, 2 * np.pi, 200001)
        boundary = (np.linalg.cholesky(shape) @ np.stack([np.cos(angles), np.sin(angles)])).T
        diff = boundary - point
        brute = np.min(np.einsum("ni,ij,nj->n", diff, np.linalg.inv(cov), diff))
        got = distance_to_ellipsoid_boundary(point, cov, np.linalg.inv(shape))
        assert got == pytest.approx(brute, rel=1e-6)
    # at the centre: the smallest boundary distance along the ellipse's principal axes
    got = distance_to_ellipsoid_boundary(np.zeros(2), np.eye(2), np.diag([1 / 4, 1]))
    assert got == pytest.approx(1.0)
