"""Hotelling's T² for the convergence tests of the MCMLE
(:func:`~numpyro_ugm.network.estimation.mcmle.mcmle`): its tail probability and quantiles, the
statistic itself, and the squared Mahalanobis distance from a point to the boundary of
ergm's tolerance region.
"""

import numpy as np
from scipy import optimize, stats as scipy_stats

__all__ = ["tsq_sf", "tsq_quantile", "hotelling_t2", "distance_to_ellipsoid_boundary"]


def tsq_sf(t2, dim, df):
    """P(T² > t2) for Hotelling's T² with ``dim`` variables and ``df`` degrees of freedom
    (F(dim, df − dim + 1) scaled); NaN when df <= dim."""
    if not df > dim:
        return float("nan")
    scale = (df - dim + 1) / (dim * df)
    return float(scipy_stats.f.sf(t2 * scale, dim, df - dim + 1))


def tsq_quantile(q, dim, df):
    """The ``q`` quantile of Hotelling's T² with ``dim`` variables and ``df`` degrees of
    freedom."""
    scale = (df - dim + 1) / (dim * df)
    return float(scipy_stats.f.ppf(q, dim, df - dim + 1) / scale)


def hotelling_t2(difference, mean_cov):
    """T² = dᵀ V⁻¹ d (pseudo-inverse)."""
    return float(difference @ np.linalg.pinv(mean_cov, hermitian=True) @ difference)


def distance_to_ellipsoid_boundary(point, cov, shape_inverse):
    """min over x with xᵀ A x = 1 of (x − point)ᵀ cov⁻¹ (x − point), A = ``shape_inverse``,
    for ``point`` inside the ellipsoid: the squared Mahalanobis distance (metric ``cov``)
    from the point to the boundary of the tolerance region (ergm's
    ``.ellipsoid_mahalanobis``). Both matrices are simultaneously diagonalized; the
    Lagrange condition z_i = g_i / (1 − μ b_i) is solved for μ ∈ (0, 1/b_max)."""
    chol = np.linalg.cholesky(cov)
    b_matrix = chol.T @ shape_inverse @ chol
    b, q = np.linalg.eigh((b_matrix + b_matrix.T) / 2)
    g = q.T @ np.linalg.solve(chol, point)
    b_max = b[-1]
    if b_max <= 0:
        return float("inf")

    def excess(mu):
        return np.sum(b * g ** 2 / (1.0 - mu * b) ** 2) - 1.0

    upper = (1.0 - 1e-12) / b_max
    if excess(upper) < 0:  # the point lies on the axis of least cov-scaled extent
        below = b < b_max
        z = np.zeros_like(g)
        z[below] = g[below] / (1.0 - b[below] / b_max)
        rest = max(1.0 - np.sum(b * z ** 2), 0.0)
        top = b == b_max
        z[top] = np.sqrt(rest / (b_max * top.sum()))
        return float(np.sum((z - g) ** 2))
    mu = optimize.brentq(excess, 0.0, upper, xtol=1e-14, rtol=1e-12)
    z = g / (1.0 - mu * b)
    return float(np.sum((z - g) ** 2))
