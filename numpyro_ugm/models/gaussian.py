"""Gaussian MRFs: a sparse precision matrix learned by MAP (the graphical lasso) and the
conditional autoregression on a periodic lattice, with their exact references.

* :func:`sparse_gmrf`: f(x) = −½ xᵀ Θ x with Θ = L Lᵀ, ``L`` a Cholesky factor (lower
  triangular, positive diagonal), so Θ is positive definite at every step of learning;
  with a penalty α, ``L`` gets the improper prior :class:`OffDiagonalLaplace`, a Laplace
  density on the off-diagonal entries of Θ, whose MAP is the graphical lasso at α
  (:func:`glasso_objective`).
* :func:`lattice_gmrf`: the proper CAR model on an L × L torus,
  Q = κ (I − (ρ/4) A) with A the nearest-neighbour adjacency (κ > 0, −1 < ρ < 1), its
  checkerboard colouring declared; its precision is diagonalized by the 2-D Fourier
  transform, which gives exact moments (:func:`lattice_moments`), the exact
  log-likelihood and MLE (:func:`lattice_log_likelihood`, :func:`lattice_mle`) and exact
  draws (:func:`lattice_draws`).
"""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

from ..runtime.checks import check_count
from ..domains import Real
from ..model.factors import factor

__all__ = ["OffDiagonalLaplace", "sparse_gmrf", "glasso_objective", "lattice_gmrf",
           "lattice_eigenvalues", "lattice_moments", "lattice_log_likelihood",
           "lattice_mle", "lattice_draws"]


class OffDiagonalLaplace(dist.Distribution):
    """Improper prior of a Cholesky factor ``L`` with log density
    ``−Σ_{i<j} |(L Lᵀ)_ij| / scale``: a Laplace(0, scale) density on each off-diagonal entry of
    the precision Θ = L Lᵀ, flat in its diagonal. MAP uses the density of ``L`` as is (no
    Jacobian), so its mode in ``L`` is the L1-penalized mode in Θ.

    Being improper, it has no draws: :meth:`sample` returns the identity, a proper point
    (Θ = I, where the off-diagonal density is at its mode), for every requested draw.
    numpyro's initialization (``init_to_median``, the default of
    :class:`~numpyro_ugm.model.UGM`) therefore starts MAP at Θ = I, not at a uniform
    unconstrained draw (entries of Θ around 30, from which a stochastic MAP stalls).

    Parameters
    ----------
    dim : int
    scale : float
        The Laplace scale b (penalty 1 / b on ``Σ_{i<j} |Θ_ij|``).
    """

    support = constraints.lower_cholesky

    def __init__(self, dim: int, scale: float, *, validate_args=None):
        self.dim, self.scale = check_count("OffDiagonalLaplace", "dim", dim), scale
        super().__init__(batch_shape=(), event_shape=(self.dim, self.dim),
                         validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        """The identity, of shape ``sample_shape + (dim, dim)``: the start point, not a
        draw (the prior is improper)."""
        return jnp.broadcast_to(jnp.eye(self.dim), tuple(sample_shape) + self.event_shape)

    def log_prob(self, value):
        theta = value @ jnp.swapaxes(value, -1, -2)
        rows, cols = np.triu_indices(self.dim, 1)
        return -jnp.sum(jnp.abs(theta[..., rows, cols]), -1) / self.scale


def sparse_gmrf(dim: int, penalty: float | None = None,
                num_examples: int | None = None) -> None:
    """Zero-mean Gaussian MRF f(x) = −½ xᵀ Θ x on the site ``"x"`` (``Real(dim)``), with
    Θ = L Lᵀ from the parameter ``"L"`` (lower triangular, positive diagonal: Θ is
    positive definite for every value). The Gibbs blocks are the units one by one
    (declared, not analysed); each conditional is an exact Gaussian draw.

    Parameters
    ----------
    dim : int
    penalty : float, optional
        α of the graphical lasso: ``L`` gets the prior
        ``OffDiagonalLaplace(dim, 1 / (num_examples * α))``, so that MAP (the mean
        log-likelihood plus log p / N) maximizes
        ``½ log det Θ − ½ tr(SΘ) − α Σ_{i<j} |Θ_ij|``, −½ of :func:`glasso_objective`.
        Without it, ``L`` is a plain parameter (ML). Either way ``L`` starts at the
        identity (Θ = I) unless ``init_params`` says otherwise.
    num_examples : int
        N, the number of training cases (required with ``penalty``).
    """
    D = check_count("sparse_gmrf", "dim", dim)
    if penalty is None:
        L = numpyro.param("L", jnp.eye(D), constraint=constraints.lower_cholesky)
    else:
        N = check_count("sparse_gmrf", "num_examples", num_examples)
        if not penalty > 0:
            raise ValueError(f"sparse_gmrf: penalty must be positive, got {penalty}")
        L = numpyro.sample("L", OffDiagonalLaplace(D, 1.0 / (N * penalty)))
    x = numpyro.sample("x", Real(D))
    factor("gaussian", -0.5 * x @ (L @ (L.T @ x)), colors={"x": np.arange(D)})


def glasso_objective(theta, covariance, penalty: float) -> float:
    """The graphical lasso's objective at Θ (scikit-learn's):
    ``−log det Θ + tr(S Θ) + α Σ_{i≠j} |Θ_ij|`` (``inf`` unless Θ is positive definite),
    in float64."""
    theta, S = np.asarray(theta, np.float64), np.asarray(covariance, np.float64)
    sign, logdet = np.linalg.slogdet(theta)
    if sign <= 0 or not np.all(np.linalg.eigvalsh(theta) > 0):
        return float("inf")
    off = np.abs(theta).sum() - np.abs(np.diag(theta)).sum()
    return float(-logdet + np.sum(S * theta) + penalty * off)


def lattice_gmrf(size: int) -> None:
    """Conditional autoregression on a ``size × size`` torus: the site ``"x"``
    (``Real((size, size))``) with precision Q = κ (I − (ρ/4) A), A the nearest-neighbour
    adjacency, i.e. f(x) = −½ κ Σ_i x_i² + ¼ κ ρ Σ_{i~j} x_i x_j (each pair once);
    ``x_i | rest ~ N(ρ · mean of the 4 neighbours, 1/κ)``. Parameters ``"kappa"`` (> 0) and
    ``"rho"`` (in (−1, 1), where Q is positive definite). The checkerboard colouring
    (two blocks of exact Gaussian draws) is declared, so tracing analyses nothing.

    Parameters
    ----------
    size : int
        Even (the checkerboard of an odd torus is not a colouring).
    """
    L = check_count("lattice_gmrf", "size", size, minimum=2)
    if L % 2:
        raise ValueError(f"lattice_gmrf: size must be even for the checkerboard, got {L}")
    kappa = numpyro.param("kappa", 1.0, constraint=constraints.positive)
    rho = numpyro.param("rho", 0.0, constraint=constraints.interval(-1.0, 1.0))
    x = numpyro.sample("x", Real((L, L)))
    pairs = jnp.sum(x * jnp.roll(x, 1, 0) + x * jnp.roll(x, 1, 1))
    checkerboard = (np.arange(L)[:, None] + np.arange(L)[None, :]) % 2
    factor("car", -0.5 * kappa * jnp.sum(x * x) + 0.25 * kappa * rho * pairs,
           colors={"x": checkerboard.reshape(-1)})


def lattice_eigenvalues(size: int, kappa: float, rho: float) -> np.ndarray:
    """The eigenvalues of :func:`lattice_gmrf`'s precision, (size, size), float64:
    κ (1 − (ρ/2)(cos ω_k + cos ω_l)) at the Fourier frequencies ω = 2π k / size."""
    c = np.cos(2 * np.pi * np.arange(size) / size)
    return kappa * (1.0 - 0.5 * rho * (c[:, None] + c[None, :]))


def lattice_moments(size: int, kappa: float, rho: float) -> tuple:
    """Exact (variance of a site, covariance of nearest neighbours) of
    :func:`lattice_gmrf`: means over the frequencies of 1/λ and cos ω / λ."""
    lam = lattice_eigenvalues(size, kappa, rho)
    c = np.cos(2 * np.pi * np.arange(size) / size)[:, None]
    return float(np.mean(1.0 / lam)), float(np.mean(c / lam))


def _sufficient_statistics(fields):
    """(Σ x², Σ_{i~j} x_i x_j) per field, float64."""
    x = np.asarray(fields, np.float64)
    pairs = x * np.roll(x, 1, -2) + x * np.roll(x, 1, -1)
    return np.sum(x * x, (-2, -1)), np.sum(pairs, (-2, -1))


def lattice_log_likelihood(fields, kappa: float, rho: float) -> float:
    """Exact mean log-likelihood per field of ``fields`` (n, size, size) under
    :func:`lattice_gmrf`: ½ log det Q − ½ xᵀ Q x − (size²/2) log 2π."""
    fields = np.asarray(fields, np.float64)
    n = fields.shape[-1] ** 2
    squares, pairs = _sufficient_statistics(fields)
    log_det = np.sum(np.log(lattice_eigenvalues(fields.shape[-1], kappa, rho)))
    quad = kappa * (squares - 0.5 * rho * pairs)
    return float(np.mean(0.5 * log_det - 0.5 * quad - 0.5 * n * np.log(2 * np.pi)))


def lattice_mle(fields) -> dict:
    """The exact MLE of (κ, ρ) from ``fields`` (n, size, size): for a given ρ,
    κ = size² / mean(Σ x² − (ρ/2) Σ_{i~j} x_i x_j); ρ by a bounded 1-D search."""
    from scipy.optimize import minimize_scalar

    fields = np.asarray(fields, np.float64)
    size = fields.shape[-1]
    squares, pairs = (np.mean(s) for s in _sufficient_statistics(fields))

    def kappa_at(rho):
        return size * size / (squares - 0.5 * rho * pairs)

    best = minimize_scalar(lambda r: -lattice_log_likelihood(fields, kappa_at(r), r),
                           bounds=(-1 + 1e-9, 1 - 1e-9), method="bounded",
                           options={"xatol": 1e-10})
    return {"kappa": float(kappa_at(best.x)), "rho": float(best.x)}


def lattice_draws(rng_key, num_fields: int, size: int, kappa: float, rho: float):
    """Exact independent draws (num_fields, size, size) of :func:`lattice_gmrf`: white
    noise filtered by λ^(−1/2) in the Fourier domain (the covariance is Q⁻¹)."""
    lam = jnp.asarray(lattice_eigenvalues(size, kappa, rho))
    z = jax.random.normal(rng_key, (num_fields, size, size), lam.dtype)
    return jnp.real(jnp.fft.ifft2(jnp.fft.fft2(z) / jnp.sqrt(lam)))
