"""The roles of a numpyro model's sites: tracing the model function, and telling
parameters, state sites (domains) and the terms of the log-potential apart in a trace."""

import threading
from typing import NamedTuple

import jax.numpy as jnp
from numpyro import handlers
from numpyro.distributions import ExpandedDistribution, Independent, Unit, constraints

from ..domains import Domain
from .factors import COLORS, CONDITIONALS, EDGES, MULTILINEAR
from .params import ParamSite, value_shape

__all__ = ["trace_model", "find_sites", "Sites", "log_terms", "domain_of", "TRACE_LOCK"]

#: numpyro's handler stack is global to the process: models are traced one at a time
#: (re-entrant, so a model traced while another is being traced in the same thread works)
TRACE_LOCK = threading.RLock()


def trace_model(model, args, kwargs, rng_key, values=None, substitute_fn=None):
    """numpyro's trace of ``model(*args, **kwargs)``, seeded with ``rng_key`` and with
    ``values`` (parameters and state) substituted (or ``substitute_fn``, an init
    strategy); an integer-indexing error inside the model is explained (state sites are
    floating-point arrays in the model). Threads trace one at a time (:data:`TRACE_LOCK`)."""
    seeded = handlers.seed(model, rng_key)
    if values is not None or substitute_fn is not None:
        seeded = handlers.substitute(seeded, data=values, substitute_fn=substitute_fn)
    try:
        with TRACE_LOCK:
            return handlers.trace(seeded).get_trace(*args, **kwargs)
    except (TypeError, ValueError, IndexError) as error:
        text = str(error)
        if "integer" in text and ("ndex" in text or "indices" in text):
            raise TypeError(
                f"the model failed with {type(error).__name__}: {text}. Inside the "
                "model, state sites are floating-point arrays, not integer labels: "
                "Spin ±1, Binary 0/1, and Categorical one-hot vectors of length K (a "
                "site of shape s is an array of shape (*s, K)). Select a table's rows "
                "with x @ table (or jnp.einsum), not table[x]; jnp.argmax(x, -1) gives "
                "the labels, at the price of a potential that is no longer "
                "multilinear (slower sampling)") from error
        raise


def innermost(fn):
    """The distribution inside ``.expand()`` / ``.to_event()`` / ``.mask()`` wrappers."""
    while hasattr(fn, "base_dist"):
        fn = fn.base_dist
    return fn


def domain_of(site):
    """The domain of a state site over the site's whole shape, or None for other sites.

    A domain inside plates (or ``.expand()``, ``.to_event()``) is the same domain with
    the site's shape: ``with numpyro.plate("i", n): numpyro.sample("x", Spin())`` is
    ``numpyro.sample("x", Spin(n))``.
    """
    if site["type"] != "sample":
        return None
    fn = site["fn"]
    if isinstance(fn, Domain):
        return fn
    base = fn
    while isinstance(base, (ExpandedDistribution, Independent)):
        base = base.base_dist
    if not isinstance(base, Domain):
        return None
    shape = tuple(fn.batch_shape) + tuple(fn.event_shape)
    return base.with_shape(shape[:len(shape) - len(base.event_shape)])


class Sites(NamedTuple):
    """The sites of a traced model by role.

    Attributes
    ----------
    params : dict of str -> ParamSite
    state : dict of str -> Domain
    hooked : tuple of str
        Factors that declare their own conditionals (:func:`numpyro_ugm.factor`).
    declared : dict of str -> (colors, multilinear)
        Factors that declare a colouring of the state's variables.
    """

    params: dict
    state: dict
    hooked: tuple
    declared: dict


def _prior_site(name, site):
    """The ParamSite of a continuous ``numpyro.sample`` site with a prior."""
    fn = site["fn"]
    if fn.is_discrete:
        base = innermost(fn)
        if isinstance(base, Domain):
            raise TypeError(
                f"site {name!r}: a {type(base).__name__} domain inside "
                f"{type(fn).__name__} (a mask handler or .mask()) is not supported; "
                "declare the state site with its shape on the domain, e.g. "
                f"numpyro.sample({name!r}, ugm.Spin(shape))")
        raise TypeError(f"site {name!r} has the discrete distribution "
                        f"{type(base).__name__}: declare discrete state with ugm.Spin, "
                        "ugm.Binary or ugm.Categorical")
    return ParamSite(name, value_shape(site["value"]), fn.support, fn)


def find_sites(trace) -> Sites:
    """Parameters, state sites and factor declarations of a model's trace, with an error
    naming the site for a model this package cannot take."""
    params, state = {}, {}
    for name, site in trace.items():
        if site["type"] == "param":
            constraint = site["kwargs"].get("constraint", constraints.real)
            params[name] = ParamSite(name, value_shape(site["value"]), constraint, None)
        elif domain_of(site) is not None:
            if site["is_observed"]:
                raise ValueError(f"state site {name!r} has obs=...: pass its values as "
                                 "data to the learner instead")
            if site.get("scale") is not None:
                raise ValueError(
                    f"state site {name!r} is in a subsampled plate (or under a scale "
                    "handler): the state is never subsampled; use a plate without "
                    "subsample_size, or give the shape to the domain")
            state[name] = domain_of(site)
        elif site["type"] == "sample" and not site["is_observed"]:
            params[name] = _prior_site(name, site)
    if not state:
        raise ValueError("the model has no state site: declare discrete variables with "
                         "numpyro.sample(name, domain), the domain ugm.Spin(shape), "
                         "ugm.Binary(shape), ugm.Categorical(shape, num_categories=K) "
                         "or ugm.Real(shape)")
    infers = {name: site.get("infer") or {} for name, site in trace.items()
              if site["type"] == "sample" and site["is_observed"]}
    hooked = tuple(name for name, infer in infers.items() if CONDITIONALS in infer)
    declared = {name: (infer.get(COLORS) or {}, infer[MULTILINEAR], infer.get(EDGES))
                for name, infer in infers.items() if COLORS in infer or EDGES in infer}
    return Sites(params, state, hooked, declared)


def log_terms(trace, state_names):
    """(name, whether a ``numpyro.factor``, summed log-factor) of each observed site of a
    trace, in the order the model declares them; a state site missing from
    ``state_names`` (the state substituted into the trace) is an error."""
    for name, site in trace.items():
        if site["type"] != "sample":
            continue
        if not site["is_observed"]:
            if domain_of(site) is not None and name not in state_names:
                raise KeyError(f"state site {name!r} is missing from the state")
            continue
        log_factor = site["fn"].log_prob(site["value"])
        if site.get("scale") is not None:
            log_factor = log_factor * site["scale"]
        yield name, isinstance(innermost(site["fn"]), Unit), jnp.sum(log_factor)
