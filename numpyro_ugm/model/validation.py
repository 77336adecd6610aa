"""Data checked against the state sites' domains, and converted between the data
representation (labels) and the model representation the potentials see."""

from collections.abc import Mapping

import jax
import numpy as np

from ..runtime.compile_cache import cached
from ..domains import Domain

__all__ = ["validate_data", "to_data", "observed_sites", "check_normalizable",
           "PROBE_LIMIT", "PROBE_DISTANCE"]

#: :func:`check_normalizable` probes models with at most this many real variables (a
#: dense Hessian of that size); larger ones are left to the chains' divergence check.
PROBE_LIMIT = 256

#: How far out (in multiples of 1 + the largest |coordinate| of the probe point) the
#: probe looks along each direction.
PROBE_DISTANCE = 1e3


def observed_sites(state_sites: Mapping[str, Domain], names) -> tuple:
    """``names`` as a tuple of state sites, with an error naming any unknown site (or
    none given)."""
    names = tuple(names)
    unknown = [n for n in names if n not in state_sites]
    if unknown:
        raise KeyError(f"data has site(s) {unknown} that are not state sites of the "
                       f"model; its state sites are {list(state_sites)}")
    if not names:
        raise ValueError(f"data has none of the model's state sites {list(state_sites)}")
    return names


def validate_data(state_sites: Mapping[str, Domain], data: dict, *,
                  allow_missing: bool = True) -> dict:
    """Check data against the domains and return it in the model representation.

    Parameters
    ----------
    state_sites : dict of str -> Domain
        The model's state sites.
    data : dict of str -> array
        Observed state sites, each with a leading example axis.
    allow_missing : bool
        Whether state sites may be missing from ``data`` (latent sites).

    Returns
    -------
    dict of str -> jax.Array
        The same sites in the model representation.

    Raises
    ------
    KeyError, ValueError, TypeError
        Naming the site and the problem: unknown site, empty data, a shape that
        disagrees with the domain, examples counts that disagree, complex data, the
        first value outside the domain, or a finite value whose square overflows the
        floating-point type.
    """
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict of site name -> array, got "
                        f"{type(data).__name__}")
    observed_sites(state_sites, data.keys())
    if not allow_missing and set(data) != set(state_sites):
        missing = [n for n in state_sites if n not in data]
        raise KeyError(f"data is missing state site(s) {missing}")
    out, num_examples = {}, None
    for name, value in data.items():
        domain = state_sites[name]
        if isinstance(value, jax.Array) and not value.is_fully_addressable:
            raise TypeError(
                f"site {name!r}: data is a jax.Array split over several processes; pass "
                "the whole data set as a NumPy array on every process (the mesh then "
                "gives each device its part): data loaded per process is not supported")
        value = np.asarray(value)
        expected = tuple(domain.shape_)
        if value.ndim != len(expected) + 1 or value.shape[1:] != expected:
            raise ValueError(
                f"site {name!r}: data has shape {value.shape}; expected (num_examples, "
                f"{', '.join(map(str, expected))}) for {domain!r}")
        if value.shape[0] == 0:
            raise ValueError(f"site {name!r}: data has no examples")
        if num_examples is None:
            num_examples = value.shape[0]
        elif value.shape[0] != num_examples:
            raise ValueError(f"site {name!r} has {value.shape[0]} examples but other "
                             f"sites have {num_examples}")
        if not (np.issubdtype(value.dtype, np.number) or value.dtype == bool):
            raise TypeError(f"site {name!r}: data has dtype {value.dtype}, expected numbers")
        if np.iscomplexobj(value):
            raise TypeError(f"site {name!r}: data is complex ({value.dtype}); the sites are "
                            "real-valued, and the imaginary part would be dropped: pass the "
                            "real part (or both parts as separate variables)")
        with jax.ensure_compile_time_eval():  # concrete data inside a user's jit too
            inside = (np.asarray(domain.in_domain(value)) if value.size
                      else np.ones(0, bool))
        if not inside.all():
            where = tuple(int(i) for i in np.argwhere(~inside)[0])
            raise ValueError(
                f"site {name!r}: value {value[where].item()!r} at example {where[0]}, index "
                f"{where[1:]} is outside the domain {domain.describe()}")
        _check_square_fits(name, value)
        out[name] = domain.to_model(value)
    return out


def _check_square_fits(name: str, value: np.ndarray) -> None:
    """Raise when finite data's square overflows the floating-point type JAX computes
    in (float32 unless x64 is enabled): every quadratic potential of it would be
    infinite, which learning would report later as a divergence of its own."""
    if not np.issubdtype(value.dtype, np.floating) or not value.size:
        return
    dtype = jax.numpy.result_type(float)
    finite = value[np.isfinite(value)]
    largest = float(np.max(np.abs(finite), initial=0.0))
    if largest ** 2 > float(np.finfo(dtype).max):
        where = tuple(int(i) for i in np.argwhere(np.abs(value) == largest)[0])
        raise ValueError(
            f"site {name!r}: value {largest:.3g} at example {where[0]}, index {where[1:]} "
            f"is finite but its square overflows {np.dtype(dtype).name} (largest "
            f"{float(np.finfo(dtype).max):.3g}), so any quadratic potential of the data is "
            "infinite: rescale (standardize) the data, or enable float64 "
            "(jax.config.update('jax_enable_x64', True))")


def check_normalizable(target, params: dict, owner: str) -> None:
    """Raise ``FloatingPointError`` when the potential is visibly not normalizable in its
    real sites at ``params``: it does not decrease far out along a direction in which it
    is not concave (as exact evaluation finds for a Gaussian MRF whose precision is not
    positive definite; also a potential growing like +x⁴, or a flat one).

    At a base draw x₀ of every site, the eigenvectors of the precision −∇²f (over the
    real variables) whose eigenvalue is not clearly positive, and the one of the
    smallest, are followed both ways to distance R = :data:`PROBE_DISTANCE`·(1 +
    max|x₀|): if f(x₀ ± R v) ≥ f(x₀) the density does not decay there and its integral
    diverges. A heuristic for what a sampler would otherwise run off to silently: a
    model that passes may still be improper; models with more than
    :data:`PROBE_LIMIT` real variables are not probed (the samplers' divergence check
    remains)."""
    real = tuple(getattr(target, "real_sites", ()))
    domains = target.state_sites
    if not real or sum(domains[s].num_variables for s in real) > PROBE_LIMIT:
        return
    try:
        value, precision, y0, far_fn = cached(target.cache_key, ("normalizable-probe",),
                                              lambda: _probe_program(target, real))(params)
    except (TypeError, ValueError, KeyError, NotImplementedError):
        return  # a model the probe cannot evaluate alone (e.g. one that needs inputs)
    value, precision = float(value), np.asarray(precision, np.float64)
    if not (np.isfinite(value) and np.all(np.isfinite(precision))):
        return
    eigenvalues, vectors = np.linalg.eigh(0.5 * (precision + precision.T))
    scale = max(float(np.max(np.abs(eigenvalues))), 1e-30)
    pick = sorted(set(np.flatnonzero(eigenvalues <= 1e-6 * scale).tolist()) | {0})
    distance = PROBE_DISTANCE * (1.0 + float(np.max(np.abs(np.asarray(y0)))))
    directions = np.concatenate([vectors[:, pick].T, -vectors[:, pick].T]) * distance
    far = np.asarray(far_fn(params, np.asarray(directions, np.asarray(y0).dtype)))
    worst = int(np.nanargmax(np.where(np.isnan(far), -np.inf, far)))
    if far[worst] >= value:
        i = pick[worst % len(pick)]
        sites = ", ".join(repr(s) for s in real)
        raise FloatingPointError(
            f"{owner}: chains of the real site(s) {sites} would have diverged: the "
            f"potential is not normalizable in them at these parameters: it does not "
            f"decay along a direction in which its "
            f"precision (minus the Hessian of the log-potential) has eigenvalue "
            f"{eigenvalues[i]:.4g} (f rises from {value:.4g} to {far[worst]:.4g} at "
            f"distance {distance:.3g}), so its integral diverges and no sample, AIS or "
            "quadrature estimate means anything (e.g. a Gaussian MRF whose precision is "
            "not positive definite, or a term growing like +x^4)")


def _probe_program(target, real):
    """The jitted pieces of :func:`check_normalizable`: ``params -> (f(x₀), −∇²f(x₀), y₀,
    far)``, y₀ the real variables of x₀ flattened and ``far(params, steps)`` f at
    y₀ + each row of ``steps``."""
    x0 = jax.tree.map(lambda v: v[0], target.random_state(jax.random.PRNGKey(0), (1,)))
    shapes = [x0[s].shape for s in real]
    splits = np.cumsum([int(np.prod(sh)) for sh in shapes])[:-1]
    y0 = jax.numpy.concatenate([x0[s].reshape(-1) for s in real])

    def g(params, y):
        parts = jax.numpy.split(y, splits)
        f = target.logdensity_fn(params)
        return f({**x0, **{s: p.reshape(sh) for s, p, sh in zip(real, parts, shapes)}})

    start = jax.jit(lambda params: (g(params, y0), -jax.hessian(g, 1)(params, y0)))
    far = jax.jit(lambda params, steps: jax.vmap(lambda d: g(params, y0 + d))(steps))
    return lambda params: (*start(params), y0, far)


def to_data(state_sites: Mapping[str, Domain], state: dict) -> dict:
    """Model-representation state -> data representation (labels), site by site."""
    return {n: state_sites[n].from_model(v) for n, v in state.items()}
