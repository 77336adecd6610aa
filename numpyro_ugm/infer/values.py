"""Values the numpyro adapters exchange with numpyro: the starting state of a chain
(``init_params`` of ``MCMC.run``, data or model representation), the fixed values of
``numpyro.param`` sites, and samples converted back to the data representation."""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..model.ugm import UGM, as_ugm

__all__ = ["to_data", "as_model_values", "param_defaults"]


def param_defaults(m: UGM) -> dict:
    """Initial values of the model's ``numpyro.param`` sites (no prior)."""
    names = [n for n, s in m.param_sites.items() if s.prior is None]
    if not names:
        return {}
    init = m.init_params(jax.random.PRNGKey(0))
    return {n: init[n] for n in names}


def as_model_values(state_sites: dict, values: dict, batch_ndim: int) -> dict:
    """Initial state values (data or model representation) -> model representation,
    checked against the domains ``state_sites``. ``batch_ndim`` leading axes (chains) are
    allowed."""
    out = {}
    unknown = [s for s in values if s not in state_sites]
    if unknown:
        raise KeyError(f"init_params has site(s) {unknown} that are not state sites of the "
                       f"model; its state sites are {list(state_sites)}")
    for s, d in state_sites.items():
        if s not in values:
            continue
        v = jnp.asarray(values[s])
        data_shape = tuple(d.shape_)
        model_shape = tuple(d.batch_shape) + tuple(d.event_shape)
        shape = tuple(v.shape[batch_ndim:])
        if shape == model_shape and (d.event_shape or v.dtype.kind == "f"):
            concrete = not isinstance(v, jax.core.Tracer)
            if concrete and not bool(np.all(np.asarray(d.support(v)))):
                raise ValueError(f"init_params: site {s!r} has values outside the domain "
                                 f"{d!r} (model representation)")
            out[s] = v.astype(jnp.result_type(float))
        elif shape == data_shape:
            if not isinstance(v, jax.core.Tracer) and not bool(np.all(np.asarray(
                    d.in_domain(v)))):
                values_text = ", ".join(f"{x:g}" for x in d.values)
                raise ValueError(f"init_params: site {s!r} has values outside the domain "
                                 f"{type(d).__name__} {{{values_text}}}")
            out[s] = d.to_model(v)
        else:
            raise ValueError(f"init_params: site {s!r} has shape {tuple(v.shape)}; expected "
                             f"{data_shape} (data) or {model_shape} (model representation)"
                             + (" after the leading chain axis" if batch_ndim else ""))
    return out


def to_data(model: Callable | UGM, samples: dict, *model_args: Any,
            **model_kwargs: Any) -> dict:
    """Convert state-site samples from the model to the data representation.

    Sites of ``samples`` that are not state sites of ``model`` (continuous sites,
    deterministic sites) are returned unchanged.

    Parameters
    ----------
    model : callable or UGM
        The numpyro model (traced with ``model_args`` / ``model_kwargs`` to find its
        domains) or a :class:`~numpyro_ugm.model.UGM`.
    samples : dict of str -> array
        E.g. ``MCMC(HMCGibbs(...)).get_samples()``; any leading batch axes.

    Returns
    -------
    dict of str -> array
    """
    domains = as_ugm(model, *model_args, **model_kwargs).target().state_sites
    return {k: domains[k].from_model(v) if k in domains else v for k, v in samples.items()}
