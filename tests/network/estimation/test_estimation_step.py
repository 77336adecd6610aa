"""The MCMLE's step (``network/estimation/step.py``): the Hummel step length against a
convex hull membership test (monotone chain); the lognormal and Geyer–Thompson steps on
normal statistics."""

import numpy as np
import pytest

from numpyro_ugm.network import MCMLEControl
from numpyro_ugm.network.estimation.step import (geyer_thompson_step, hummel_step_length,
                                                 lognormal_step)


def _convex_hull_2d(points):
    """Vertices of the convex hull of 2-D points, counter-clockwise (Andrew's monotone
    chain)."""
    pts = sorted(map(tuple, points))

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


def _hull_step_by_bisection(points, observed, margin):
    """The largest γ in [0, 1] with mean + (1 + margin) γ (observed − mean) in the hull of
    ``points`` (inside every edge's half-plane), by bisection."""
    vertices = _convex_hull_2d(points)
    edges = np.roll(vertices, -1, axis=0) - vertices
    mean = points.mean(axis=0)

    def inside(gamma):
        x = mean + (1 + margin) * gamma * (observed - mean) - vertices
        return np.all(edges[:, 0] * x[:, 1] - edges[:, 1] * x[:, 0] >= 0)

    if inside(1.0):
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if inside(middle) else (low, middle)
    return low


@pytest.mark.parametrize("observed", [[0.3, -0.2], [2.5, 0.4], [-4.0, -3.0], [0.0, 6.0]])
def test_hummel_step_length_matches_a_convex_hull_bisection(observed):
    rng = np.random.default_rng(3)
    points = rng.normal(size=(300, 2)) @ np.array([[1.0, 0.6], [0.0, 0.8]]) + [5.0, 1.0]
    observed = np.asarray(observed) + [5.0, 1.0]
    expected = _hull_step_by_bisection(points, observed, 0.05)
    gamma = hummel_step_length(points[None], observed, margin=0.05)
    assert gamma == pytest.approx(expected, abs=1e-6)
    if np.linalg.norm(observed - points.mean(0)) > 3:
        assert gamma < 0.9  # far points are out of the hull: a real restriction


def test_hummel_step_length_is_zero_outside_a_flat_sample():
    points = np.column_stack([np.arange(10.0), 2 * np.arange(10.0)])  # a segment
    assert hummel_step_length(points, [4.0, 9.0]) == 0.0
    assert hummel_step_length(points, [4.0, 8.0]) == 1.0


def test_lognormal_step_is_exact_for_normal_statistics():
    """Statistics s ~ N(μ, Σ) under θ are N(μ + Σ Δθ, Σ) under θ + Δθ, so the lognormal
    step to a target ξ is Σ⁻¹ (ξ − μ); the Geyer–Thompson step estimates the same."""
    rng = np.random.default_rng(3)
    mu, root = np.array([5.0, -1.0, 2.0]), np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0],
                                                     [0.2, -0.3, 0.5]])
    sigma = root @ root.T
    stats = (mu + rng.normal(size=(4, 50_000, 3)) @ root.T)
    target = mu + np.array([0.3, -0.2, 0.1])
    expected = np.linalg.solve(sigma, target - mu)
    np.testing.assert_allclose(lognormal_step(stats, target), expected, atol=0.03)
    np.testing.assert_allclose(geyer_thompson_step(stats, target)[0], expected, atol=0.05)
    with pytest.raises(ValueError, match="metric must be one of"):
        MCMLEControl(metric="Hummel")
