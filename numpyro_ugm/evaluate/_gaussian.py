"""Gaussian integrals over real sites: the closed form that lets exact evaluation handle
real sites whose potential is quadratic in them jointly (Gaussian MRFs, the visibles of a
Gaussian–Bernoulli RBM given its hiddens).

For one configuration h of the finite sites, a log-potential that is quadratic in the
real variables x (flattened, site by site) is, around any point x₀,

    f(x, h) = f(x₀, h) + gᵀ(x − x₀) − ½ (x − x₀)ᵀ P (x − x₀),

with g = ∇ₓf(x₀, h) and the precision P = −∇²ₓf (constant in x, it may depend on h).
When P is positive definite, x | h ~ N(x₀ + P⁻¹g, P⁻¹) and

    log ∫ exp f(x, h) dx = f(x₀, h) + ½ gᵀP⁻¹g + (n/2) log 2π − ½ log det P

(:func:`log_integral`); otherwise the integral diverges, the potential is not
normalizable at these parameters, and :func:`log_integral` is +inf. A potential that is
not quadratic gives NaN: :func:`log_integral` checks the quadratic model at a second
point, x₀ + δ. The enumeration engine (:mod:`~numpyro_ugm.evaluate._engine`) sums these
integrals over the configurations of the finite sites; :func:`normalizability_error` is
the host-side diagnosis when the sum is not finite.

Everything here takes a log-density function ``state -> scalar``, the domains and the
names of the real sites integrated; the state's values of those sites are x₀.
"""

from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["flat_values", "quadratic_terms", "log_integral", "conditional_moments", "draw",
           "integrated_size", "not_gaussian_error", "normalizability_error"]


def integrated_size(domains: Mapping, sites: tuple) -> int:
    """Number of real variables of ``sites`` (the dimension n of the integral)."""
    return sum(domains[s].num_variables for s in sites)


def flat_values(state: dict, sites: tuple) -> jax.Array:
    """The values of ``sites`` in ``state``, flattened and concatenated site by site."""
    return jnp.concatenate([jnp.ravel(state[s]) for s in sites])


def _unflat(y, state, sites):
    """``state`` with ``sites`` set from the flat vector ``y``."""
    out, start = dict(state), 0
    for s in sites:
        size = int(np.prod(jnp.shape(state[s]), dtype=int))
        out[s] = y[start:start + size].reshape(jnp.shape(state[s])).astype(state[s].dtype)
        start += size
    return out


def _shift(domains, sites, dtype):
    """The fixed second point's offset δ: each variable moved by its base scale, signs
    alternating (a constant of the compiled program)."""
    scales = np.concatenate([np.broadcast_to(domains[s].scale, domains[s].shape_).ravel()
                             for s in sites])
    signs = np.where(np.arange(scales.size) % 2 == 0, 1.0, -1.0)
    return jnp.asarray(scales * signs, dtype)


def quadratic_terms(logdensity_fn: Callable[[dict], jax.Array], state: dict,
                    domains: Mapping, sites: tuple):
    """f(x₀), g = ∇ₓf(x₀), the precision P = −∇²ₓf (symmetrized) and whether f is
    quadratic in the real variables of ``sites`` (its quadratic model checked at
    x₀ + δ, to a relative tolerance of 10·sqrt(eps)).

    Returns
    -------
    value : scalar
    grad : array (n,)
    precision : array (n, n)
    quadratic : bool scalar
    """
    x0 = flat_values(state, sites)

    def phi(y):
        return logdensity_fn(_unflat(y, state, sites))

    value, grad = jax.value_and_grad(phi)(x0)
    hessian = jax.jacfwd(jax.grad(phi))(x0)
    precision = -0.5 * (hessian + hessian.T)
    delta = _shift(domains, sites, x0.dtype)
    linear, curvature = grad @ delta, 0.5 * delta @ precision @ delta
    error = phi(x0 + delta) - (value + linear - curvature)
    tol = 10 * float(np.sqrt(jnp.finfo(x0.dtype).eps))
    quadratic = jnp.abs(error) <= tol * (1 + jnp.abs(value) + jnp.abs(linear)
                                         + jnp.abs(curvature))
    return value, grad, precision, quadratic


def _factor(precision):
    """The Cholesky factor L of P = L Lᵀ and whether P is positive definite."""
    chol = jnp.linalg.cholesky(precision)
    return chol, jnp.all(jnp.isfinite(chol)) & jnp.all(jnp.diagonal(chol) > 0)


def log_integral(logdensity_fn: Callable[[dict], jax.Array], state: dict,
                 domains: Mapping, sites: tuple) -> jax.Array:
    """log ∫ exp f dx over the real variables of ``sites``, the other sites held at their
    values in ``state``: +inf when the precision is not positive definite (the integral
    diverges), NaN when f is not quadratic in them."""
    value, grad, precision, quadratic = quadratic_terms(logdensity_fn, state, domains, sites)
    chol, definite = _factor(precision)
    y = jax.scipy.linalg.solve_triangular(chol, grad, lower=True)
    n = grad.shape[0]
    out = (value + 0.5 * y @ y + 0.5 * n * float(np.log(2 * np.pi))
           - jnp.sum(jnp.log(jnp.diagonal(chol))))
    return jnp.where(quadratic, jnp.where(definite, out, jnp.inf), jnp.nan)


def conditional_moments(logdensity_fn: Callable[[dict], jax.Array], state: dict,
                        domains: Mapping, sites: tuple):
    """Mean ``(n,)`` and covariance ``(n, n)`` of the real variables of ``sites`` given the
    other sites' values in ``state``: x₀ + P⁻¹g and P⁻¹ (NaN where P is not positive
    definite)."""
    _, grad, precision, _ = quadratic_terms(logdensity_fn, state, domains, sites)
    chol = jnp.linalg.cholesky(precision)
    covariance = jax.scipy.linalg.cho_solve((chol, True), jnp.eye(grad.shape[0],
                                                                  dtype=grad.dtype))
    return flat_values(state, sites) + covariance @ grad, covariance


def draw(rng_key: jax.Array, logdensity_fn: Callable[[dict], jax.Array], state: dict,
         domains: Mapping, sites: tuple) -> dict:
    """``state`` with the real variables of ``sites`` drawn jointly from their Gaussian
    conditional N(x₀ + P⁻¹g, P⁻¹) given the other sites."""
    _, grad, precision, _ = quadratic_terms(logdensity_fn, state, domains, sites)
    chol = jnp.linalg.cholesky(precision)
    z = jax.random.normal(rng_key, grad.shape, grad.dtype)
    mean = flat_values(state, sites) + jax.scipy.linalg.cho_solve((chol, True), grad)
    x = mean + jax.scipy.linalg.solve_triangular(chol.T, z, lower=False)
    return _unflat(x, state, sites)


def not_gaussian_error(owner: str, sites) -> ValueError:
    """The error for real sites whose potential is not quadratic (given the finite
    sites): no closed form, so no exact evaluation."""
    return ValueError(
        f"{owner}: the potential is not quadratic in the real site(s) {list(sites)} given "
        "the finite sites, so its integral over them has no closed form and exact "
        "evaluation does not apply; estimate log Z with annealed importance sampling "
        "(ugm.ais), or integrate a low-dimensional model by quadrature on a grid")


def normalizability_error(owner: str, sites, params: dict, min_eigenvalue: float,
                          quadratic: bool, where: str) -> Exception:
    """The error for a configuration at which the Gaussian integral over ``sites`` does
    not exist: the precision −∇²ₓf has eigenvalue ``min_eigenvalue`` ≤ 0 (the
    potential is not normalizable at ``params``) or f is not quadratic there; ``where``
    (e.g. ``" at configuration 3 of the finite sites (h = [0, 1])"``) says where."""
    if not quadratic:
        return not_gaussian_error(owner, sites)
    largest = ", ".join(f"{n!r}: {float(np.max(np.abs(np.asarray(v)), initial=0.0)):.3g}"
                        for n, v in params.items())
    return FloatingPointError(
        f"{owner}: the potential is not normalizable in the real site(s) {list(sites)} at "
        f"these parameters: its precision matrix in them (minus the Hessian of the "
        f"log-potential) is not positive definite{where} (smallest eigenvalue "
        f"{min_eigenvalue:.4g}), so the integral over them diverges and log Z = +inf "
        f"(e.g. a Gaussian MRF whose precision parameter is not positive definite; "
        f"largest |value| per parameter site: {{{largest}}})")
