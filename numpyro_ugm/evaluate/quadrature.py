"""Reference values for models whose state is one or two real numbers, by quadrature.

This is ``ugm.quadrature`` (also ``ugm.evaluate.quadrature``): log Z, the density on a
grid, expectations and the log-likelihood of data for a model whose state sites are
real (:class:`~numpyro_ugm.domains.Real`) and hold one or two numbers in all — a site of
shape ``()``, ``(1,)`` or ``(2,)``, or two sites of shape ``()`` — such as a small
energy-based model on the plane. They play for these models the part that enumeration
(:mod:`~numpyro_ugm.evaluate.exact`) plays for small finite ones: the exact values
estimators and samplers are checked against.

The integrals use the tensor-product trapezoid rule on a box, ``num_points`` points per
coordinate (odd), given by ``bounds`` or by default the base Normal's mean ± ``width``
standard deviations per coordinate (the model's ``loc``/``scale``, standard when it gives
none; never fitted to the data: :func:`log_prob` of a point does not depend on the other
points passed). For a density that vanishes smoothly towards the box's edges
the rule converges faster than any power of the spacing. Every result carries an
``error``: the difference from the same rule on every other point (twice the spacing),
plus an estimate of the probability outside the box (the density on each face times its
decay length outwards; an upper bound for Gaussian tails), plus the rounding of the
log-potential in the float dtype — a conservative indication, not a standard error.

Parameters are checked with :meth:`ParamSpace.check <numpyro_ugm.model.params.ParamSpace.check>`;
the grid is evaluated by a program compiled once per model and number of points
(:mod:`numpyro_ugm.runtime.compile_cache`). The public functions take a model and set it up
(:func:`~numpyro_ugm.model.problem.build_problem`); the code behind them reads its target's
log-potential and state sites.
"""

import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..runtime.checks import check_count
from ..runtime.compile_cache import cached
from ..model.diagnose import non_finite_error
from ..model.ugm import UGM, as_ugm
from ..model.problem import Problem, build_problem
from ..model.target import Target
from ..model.validation import check_normalizable, validate_data

__all__ = ["Quadrature", "GridDensity", "log_partition", "density", "expectation",
           "log_prob", "log_likelihood", "box", "DEFAULT_NUM_POINTS", "DEFAULT_WIDTH",
           "ERROR_WARNING"]

#: points per coordinate by default, for one and for two coordinates
DEFAULT_NUM_POINTS = {1: 4001, 2: 401}
#: default half-width of the box, in standard deviations of the base Normal
DEFAULT_WIDTH = 8.0
_BATCH = 8192  # grid points evaluated together (bounds memory for large energies)
#: the largest ``error`` (nats) of log Z that :func:`log_prob` and :func:`log_likelihood`
#: report without a warning
ERROR_WARNING = 1e-3


class Quadrature(NamedTuple):
    """A value by quadrature and its ``error`` (see the module docstring)."""

    value: Any
    error: Any


class GridDensity(NamedTuple):
    """The normalized density on the quadrature grid.

    Attributes
    ----------
    axes : tuple of ndarray
        The grid's points along each coordinate.
    log_density : ndarray ``(n,)`` or ``(n, n)``
        log p at the grid points (``indexing="ij"``: axis k is coordinate k).
    coordinates : tuple of str
        Names of the coordinates (``"x"`` for a scalar site, ``"x[1]"`` for an entry).
    log_z : Quadrature
        log Z by the same rule.
    """

    axes: tuple
    log_density: np.ndarray
    coordinates: tuple
    log_z: Quadrature


def _coordinates(domains: dict, owner: str) -> tuple:
    """(site, flat index or None, name) of each real number of the state sites
    ``domains``, after checking that the state is one or two real numbers."""
    finite = [s for s, d in domains.items() if d.finite]
    size = sum(d.num_variables for d in domains.values() if not d.finite)
    if finite or size not in (1, 2):
        raise ValueError(
            f"quadrature.{owner}: takes models whose state is one or two real numbers "
            f"(ugm.Real sites of shape (), (1,) or (2,), or two of shape ()); this model "
            f"has state sites { {s: repr(d) for s, d in domains.items()} }"
            + (f", of which {finite} are finite" if finite else "")
            + ": use ugm.exact for small finite models and ugm.ais otherwise")
    out = []
    for s, d in domains.items():
        if d.shape_ == ():
            out.append((s, None, s))
        else:
            out.extend((s, i, f"{s}[{i}]") for i in range(d.num_variables))
    return tuple(out)


def box(m: UGM | Target, width: float = DEFAULT_WIDTH) -> np.ndarray:
    """The default box of a model (or its target): the base Normal's mean ± ``width``
    standard deviations per coordinate, an array ``(num_coordinates, 2)`` of (low, high).

    Raises
    ------
    ValueError
        If the model's state is not one or two real numbers.
    """
    if not (np.isfinite(width) and width > 0):
        raise ValueError(f"quadrature: width must be positive, got {width}")
    domains = (m.target() if isinstance(m, UGM) else m).state_sites
    rows = []
    for s, i, _ in _coordinates(domains, "box"):
        d = domains[s]
        loc = np.broadcast_to(d.loc, d.shape_).reshape(-1)[0 if i is None else i]
        scale = np.broadcast_to(d.scale, d.shape_).reshape(-1)[0 if i is None else i]
        rows.append((loc - width * scale, loc + width * scale))
    return np.asarray(rows, float)


def _bounds(target: Target, coords: tuple, bounds, width) -> np.ndarray:
    """``bounds`` as an array ``(num_coordinates, 2)``, checked; default :func:`box`."""
    if bounds is None:
        return box(target, width)
    b = np.asarray(bounds, float)
    if b.shape == (2,):
        b = np.tile(b, (len(coords), 1))
    if b.shape != (len(coords), 2) or not np.all(np.isfinite(b)) or np.any(b[:, 1] <= b[:, 0]):
        raise ValueError(f"quadrature: bounds must be (low, high) with low < high, finite, "
                         f"for each of the coordinates {[c[2] for c in coords]} (or one pair "
                         f"for all), got {bounds!r}")
    return b


def _num_points(num_points, num_coords) -> int:
    n = DEFAULT_NUM_POINTS[num_coords] if num_points is None else num_points
    n = check_count("quadrature", "num_points", n, minimum=5)
    if n % 2 == 0:
        raise ValueError(f"quadrature: num_points must be odd (the error estimate uses "
                         f"every other point), got {n}")
    return n


def _states(domains: dict, coords: tuple, points: jax.Array) -> dict:
    """The state of each row of ``points`` ``(num_points, num_coordinates)``."""
    out = {}
    for s, d in domains.items():
        cols = [k for k, c in enumerate(coords) if c[0] == s]
        out[s] = points[:, cols].reshape((points.shape[0],) + d.shape_)
    return out


def _grid_program(target: Target, coords: tuple, n: int, fn: Optional[Callable]):
    """The compiled evaluation of the grid: ``run(params, bounds) -> (f, g)``, f the
    log-potential on the ``n``^k grid (shape ``(n,) * k``) and g the values of ``fn`` at
    the grid points (leading axes ``(n,) * k``; None without ``fn``)."""
    k = len(coords)

    def run(params, bounds):
        axes = [jnp.linspace(bounds[j, 0], bounds[j, 1], n) for j in range(k)]
        mesh = jnp.stack([a.reshape(-1) for a in jnp.meshgrid(*axes, indexing="ij")], -1)
        states = _states(target.state_sites, coords, mesh)

        def one(state):
            value = target.log_potential(params, state)
            return value, (None if fn is None else fn(state))

        f, g = jax.lax.map(one, states, batch_size=_BATCH)
        reshape = lambda v: v.reshape((n,) * k + v.shape[1:])  # noqa: E731
        return reshape(f), (None if fn is None else jax.tree.map(reshape, g))

    return jax.jit(run)


def _log_weights(n: int, k: int, bounds: np.ndarray, stride: int) -> np.ndarray:
    """log of the trapezoid weights on every ``stride``-th point of the ``n``^k grid."""
    out = np.zeros((len(range(0, n, stride)),) * k)
    for j in range(k):
        m = out.shape[j]
        w = np.full(m, (bounds[j, 1] - bounds[j, 0]) / (m - 1))
        w[[0, -1]] *= 0.5
        shape = [1] * k
        shape[j] = m
        out = out + np.log(w).reshape(shape)
    return out


def _logsumexp(a: np.ndarray) -> float:
    top = np.max(a)
    return float(top + np.log(np.sum(np.exp(a - top)))) if np.isfinite(top) else float(top)


def _tail_mass(f: np.ndarray, log_w: np.ndarray, log_z: float, bounds: np.ndarray) -> float:
    """The probability beyond the box's faces, estimated face by face as the density on
    the face times its decay length outwards (1 / the outward slope of −log p between the
    last two points; the box's width where the density does not decay), which bounds a
    Gaussian tail from above (Mills' ratio)."""
    k = f.ndim
    total = 0.0
    for j in range(k):
        n = f.shape[j]
        h = (bounds[j, 1] - bounds[j, 0]) / (n - 1)
        for edge, inner in ((0, 1), (n - 1, n - 2)):
            at = lambda i, a: np.take(a, i, axis=j)  # noqa: E731
            decay = (at(inner, f) - at(edge, f)) / h
            length = np.where(decay > 0, 1.0 / np.maximum(decay, 1e-300),
                              bounds[j, 1] - bounds[j, 0])
            log_face = at(edge, f) + at(edge, log_w) - np.log(h / 2) - log_z
            total += float(np.sum(np.exp(log_face) * length))
    return total


class _Grid(NamedTuple):
    """The log-potential on the grid and what :func:`_integrate` derives from it."""

    axes: tuple
    f: np.ndarray
    g: Any
    log_z: Quadrature
    log_w: np.ndarray
    coordinates: tuple


def _integrate(owner: str, problem: Problem, params: dict, bounds, width, num_points,
               fn: Optional[Callable] = None) -> _Grid:
    """Evaluate the grid and log Z with its error estimate."""
    target = problem.target
    problem.param_model.space.check(params)
    coords = _coordinates(target.state_sites, owner)
    check_normalizable(target, params, f"quadrature.{owner}")
    k = len(coords)
    n = _num_points(num_points, k)
    b = _bounds(target, coords, bounds, width)
    run = cached(target.cache_key, ("quadrature", coords, n, fn),
                 lambda: _grid_program(target, coords, n, fn))
    f, g = run(params, jnp.asarray(b, jnp.result_type(float)))
    f = np.asarray(f, np.float64)
    if np.any(np.isnan(f) | (f == np.inf)):
        raise non_finite_error(f"quadrature.{owner}", "the log-potential is NaN or +inf "
                               "at a grid point", params)
    log_w = _log_weights(n, k, b, 1)
    fine = _logsumexp(f + log_w)
    if not np.isfinite(fine):
        raise non_finite_error(f"quadrature.{owner}", "the density is 0 on the whole box",
                               params)
    coarse = _logsumexp(f[(slice(None, None, 2),) * k] + _log_weights(n, k, b, 2))
    rounding = np.finfo(jnp.result_type(float)).eps * (
        float(np.sum(np.exp(f + log_w - fine) * np.abs(f))) + abs(fine))
    error = float(abs(fine - coarse) + _tail_mass(f, log_w, fine, b) + rounding)
    axes = tuple(np.linspace(b[j, 0], b[j, 1], n) for j in range(k))
    return _Grid(axes, f, g, Quadrature(fine, error), log_w, tuple(c[2] for c in coords))


def log_partition(model: Callable | UGM, params: dict, *model_args: Any,
                  bounds: Optional[Sequence] = None, num_points: Optional[int] = None,
                  width: float = DEFAULT_WIDTH, **model_kwargs: Any) -> Quadrature:
    """log Z(θ) = log ∫ exp f(x; θ) dx by the trapezoid rule on a box.

    Parameters
    ----------
    model : callable or UGM
        numpyro model function (with ``model_args``, ``model_kwargs``) or a traced
        :class:`~numpyro_ugm.model.UGM`; its state must be one or two real numbers.
    params : dict
        Parameters (constrained space), concrete.
    bounds : array-like, optional
        (low, high) per coordinate, ``(num_coordinates, 2)``, or one pair for all;
        default :func:`box` of the model with ``width``.
    num_points : int, optional
        Odd number of points per coordinate (default :data:`DEFAULT_NUM_POINTS`).
    width : float
        Half-width of the default box in standard deviations of the base Normal.

    Returns
    -------
    Quadrature
        ``value`` log Z (a float) and its ``error``.

    Raises
    ------
    ValueError
        If the state is not one or two real numbers, or for bad bounds or points.
    FloatingPointError
        If the log-potential is NaN or +inf on the grid, or −inf everywhere.
    """
    problem = build_problem(model, None, model_args, model_kwargs)
    return _integrate("log_partition", problem, params, bounds, width, num_points).log_z


def density(model: Callable | UGM, params: dict, *model_args: Any,
            bounds: Optional[Sequence] = None, num_points: Optional[int] = None,
            width: float = DEFAULT_WIDTH, **model_kwargs: Any) -> GridDensity:
    """The normalized density log p(x; θ) = f(x; θ) − log Z(θ) on the grid of
    :func:`log_partition` (same arguments), e.g. for a contour plot.

    Returns
    -------
    GridDensity
    """
    problem = build_problem(model, None, model_args, model_kwargs)
    grid = _integrate("density", problem, params, bounds, width, num_points)
    return GridDensity(grid.axes, grid.f - grid.log_z.value, grid.coordinates, grid.log_z)


def expectation(model: Callable | UGM, params: dict, fn: Callable[[dict], Any],
                *model_args: Any, bounds: Optional[Sequence] = None,
                num_points: Optional[int] = None, width: float = DEFAULT_WIDTH,
                **model_kwargs: Any) -> Quadrature:
    """E_p[fn(x)] by the rule of :func:`log_partition` (same arguments).

    Parameters
    ----------
    fn : callable
        ``state -> array or pytree``: one configuration (dict of every state site, model
        representation, no batch axis), traceable; keep the same function object across
        calls to reuse the compiled grid.

    Returns
    -------
    Quadrature
        ``value`` the expectation (fn's pytree of arrays) and ``error`` (its difference
        from the rule on every other point, per entry).
    """
    problem = build_problem(model, None, model_args, model_kwargs)
    grid = _integrate("expectation", problem, params, bounds, width, num_points, fn)
    k = grid.f.ndim
    coarse = (slice(None, None, 2),) * k
    b = np.stack([[a[0], a[-1]] for a in grid.axes])

    def mean(f, log_w, g):
        p = np.exp(f + log_w - _logsumexp(f + log_w))
        return np.tensordot(p, np.asarray(g, np.float64), axes=k)

    def both(g):
        fine = mean(grid.f, grid.log_w, g)
        rough = mean(grid.f[coarse], _log_weights(grid.f.shape[0], k, b, 2), g[coarse])
        return fine, np.abs(fine - rough)

    pairs = jax.tree.map(both, grid.g)
    value = jax.tree.map(lambda p: p[0], pairs, is_leaf=lambda x: isinstance(x, tuple))
    error = jax.tree.map(lambda p: p[1], pairs, is_leaf=lambda x: isinstance(x, tuple))
    return Quadrature(value, error)


def _warn_inaccurate(owner: str, error: float) -> None:
    """Warn when log Z's error estimate exceeds :data:`ERROR_WARNING` nats: every
    log-probability is then off by up to that much."""
    if not error <= ERROR_WARNING:
        warnings.warn(f"quadrature.{owner}: the error estimate of log Z is {error:.3g} "
                      f"nats (above {ERROR_WARNING:g}): the box misses probability or the "
                      f"grid is too coarse; give bounds= covering the density (see "
                      f"quadrature.density) or more num_points", RuntimeWarning,
                      stacklevel=3)


def log_prob(model: Callable | UGM, params: dict, data: dict, *model_args: Any,
             bounds: Optional[Sequence] = None, num_points: Optional[int] = None,
             width: float = DEFAULT_WIDTH, **model_kwargs: Any) -> Quadrature:
    """log p(x_n; θ) = f(x_n; θ) − log Z(θ) of each example.

    Parameters
    ----------
    data : dict of str -> array
        Every state site, leading example axis (the data representation).
    model, params, bounds, num_points, width
        As in :func:`log_partition` (log Z is the model's: the default box does not
        depend on the data).

    Returns
    -------
    Quadrature
        ``value`` an array ``(N,)``; ``error`` that of log Z.

    Warns
    -----
    RuntimeWarning
        If log Z's ``error`` exceeds :data:`ERROR_WARNING` nats.
    """
    m = as_ugm(model, *model_args, **model_kwargs)
    problem = build_problem(m, data)
    target, x = problem.target, problem.data
    if target.latent_sites:  # the error of a missing site
        validate_data(target.state_sites, data, allow_missing=False)
    # log Z of the model alone (its base unfitted: the box does not depend on the data)
    log_z = _integrate("log_prob", build_problem(m), params, bounds, width,
                       num_points).log_z
    _warn_inaccurate("log_prob", log_z.error)
    f = cached(target.cache_key, ("quadrature.log_prob",), lambda: jax.jit(jax.vmap(
        target.log_potential, in_axes=(None, 0))))(params, x)
    return Quadrature(np.asarray(f, np.float64) - log_z.value, log_z.error)


def log_likelihood(model: Callable | UGM, params: dict, data: dict, *model_args: Any,
                   bounds: Optional[Sequence] = None, num_points: Optional[int] = None,
                   width: float = DEFAULT_WIDTH, **model_kwargs: Any) -> Quadrature:
    """Mean log-likelihood of ``data``: the mean of :func:`log_prob` (same arguments),
    with the error of log Z.

    Returns
    -------
    Quadrature
    """
    lp = log_prob(model, params, data, *model_args, bounds=bounds, num_points=num_points,
                  width=width, **model_kwargs)
    return Quadrature(float(np.mean(lp.value)), lp.error)
