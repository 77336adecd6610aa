"""Exact moments of the real sites of a model Gaussian in them given its finite sites
(:func:`moments`), on the enumeration engine of :mod:`~numpyro_ugm.evaluate._enumeration`:
the finite sites enumerated, the real ones integrated in closed form."""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..runtime.checks import check_count
from ..model.ugm import UGM
from ._engine import (DEFAULT_CHUNK_SIZE, cached_jit, check_enumeration, check_size,
                      make_plan, weighted_mean)
from ._enumeration import finite_result
from ._gaussian import conditional_moments, flat_values
from ._prepare import model_of
from ._size import MAX_CONFIGURATIONS

__all__ = ["moments", "Moments"]


class Moments(NamedTuple):
    """What :func:`moments` returns.

    Attributes
    ----------
    mean : dict of str -> array ``site_shape``
        E[x] of each real site.
    covariance : array (n, n)
        Cov[x] of the real variables jointly, flattened site by site in the model's
        order of the sites (``sites``).
    sites : tuple of str
        The real sites, in that order.
    """

    mean: dict
    covariance: jax.Array
    sites: tuple


def _moments(target, params, chunk_size):
    plan = make_plan(target, tuple(target.state_sites))
    check_size(plan, chunk_size, "moments")
    domains, sites = target.state_sites, plan.integrated
    f = target.logdensity_fn(params)

    def centered(state):  # moments of x − x₀ (x₀: the base means), for less cancellation
        mean, covariance = conditional_moments(f, state, domains, sites)
        shift = mean - flat_values(state, sites)
        return shift, covariance + jnp.outer(shift, shift)

    base = target.reference_state()
    shift, second = weighted_mean(target, params, plan, base, centered, chunk_size)
    mean, start = {}, 0
    for s in sites:
        size = domains[s].num_variables
        mean[s] = (shift[start:start + size].reshape(domains[s].shape_)
                   + base[s].astype(shift.dtype))
        start += size
    return mean, second - jnp.outer(shift, shift)


def moments(m: UGM, params: dict, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
            max_configurations: int | None = MAX_CONFIGURATIONS) -> Moments:
    """Exact mean and covariance of the real sites of a model that is Gaussian in them
    given the finite sites (see the module docstring).

    Given each configuration h of the finite sites, x | h ~ N(x*_h, P_h⁻¹); the moments
    are their mixture over the configurations, weighted by p(h) (for a Gaussian MRF,
    one configuration: the mean P⁻¹b and the covariance P⁻¹). The finite sites'
    marginals are :func:`marginals`.

    Parameters
    ----------
    m, params, chunk_size, max_configurations
        As in :func:`log_partition`.

    Returns
    -------
    Moments

    Raises
    ------
    ValueError
        If the model has no real site, or the potential is not quadratic in them.
    FloatingPointError
        If the potential is not normalizable at ``params`` (a precision that is not
        positive definite), naming the real sites.
    """
    chunk_size = check_count("moments", "chunk_size", chunk_size)
    m = model_of("exact.moments", m)
    m.param_space.check(params)
    target = m.target()
    if not target.real_sites:
        raise ValueError("moments: the model has no real site (for finite sites see "
                         "exact.marginals)")
    check_enumeration(target, chunk_size, "moments", max_configurations)
    fn = cached_jit(target, ("moments", chunk_size),
                    lambda: lambda p: _moments(target, p, chunk_size))
    mean, covariance = finite_result("moments", fn(params), params, target=target,
                               chunk_size=chunk_size)
    return Moments(mean, covariance, tuple(target.real_sites))
