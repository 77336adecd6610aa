"""Finiteness of a model's potential where samplers and evaluation go: the compiled test
(:func:`potential_is_finite`) and the host-side error that names the factors and sites at
fault (:func:`check_finite`, :func:`non_finite_error`)."""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .conditionals import block_logits

__all__ = ["non_finite_error", "potential_is_finite", "check_finite"]


def non_finite_error(owner: str, what: str, params: dict, details=()) -> FloatingPointError:
    """The error for a result that is not finite under ``params``: ``what`` happened
    (with ``details``), the largest magnitude of each parameter site, and what to look
    for."""
    largest = ", ".join(
        f"{n!r}: {max((float(np.max(np.abs(np.asarray(a)), initial=0.0)) for a in jax.tree.leaves(v)), default=0.0):.3g}"
        for n, v in params.items())
    dtype = jnp.result_type(float)
    return FloatingPointError(
        f"{owner}: {what} under the given params ({'; '.join([*details, ''])}largest "
        f"|value| per parameter site: {{{largest}}}), so the results would be meaningless: "
        f"look for parameters large enough to overflow {dtype.name} (above about "
        f"{float(jnp.finfo(dtype).max):.1e} in a factor) or factors that are NaN")


def _all_conditionals(target, params, state):
    """Conditional log-odds of every variable at ``state``, as the samplers get them."""
    return block_logits(target.logdensity_fn(params), state, target.state_sites,
                        {s: None for s in target.state_sites}, target.structure.multilinear)


def potential_is_finite(target, params: dict, state: dict) -> jax.Array:
    """Whether f(state; params) and the conditional log-odds of every variable at
    ``state`` are finite (a log-odds of −inf, a value of probability zero, is allowed):
    where they are not, a sampler's draws mean nothing. Traceable; one configuration."""
    ok = jnp.isfinite(target.log_potential(params, state))
    for v in _all_conditionals(target, params, state).values():
        ok = ok & jnp.all(~jnp.isnan(v) & (v < jnp.inf))
    return ok


def check_finite(target, owner: str, params: dict, ok: Any, states: dict,
                 where: Callable[[tuple], str], inputs: dict | None = None) -> None:
    """Raise ``FloatingPointError`` at the first ``False`` of ``ok``
    (:func:`potential_is_finite` at a batch of ``states``, leading axes those of ``ok``),
    naming the factors and the sites whose log-odds are not finite there and the largest
    parameter magnitudes.

    ``where(index)`` says which state it is, in words; ``inputs`` (per-example model
    keyword arguments, leading axis the first of ``ok``) bind the target there.
    """
    ok = np.asarray(ok)
    if ok.all():
        return
    index = tuple(int(i) for i in np.argwhere(~ok)[0])
    state = {n: jnp.asarray(v)[index] for n, v in states.items()}
    t = target if inputs is None else target.bind(
        **{k: jnp.asarray(v)[index[0]] for k, v in inputs.items()})
    details = ([f"factor {n!r} = {float(v):g}" for n, _, v in t.terms(params, state)
                if not np.isfinite(v)] if t.terms is not None else [])
    details = details or [f"conditional log-odds of site {n!r} NaN or +inf"
                          for n, v in _all_conditionals(t, params, state).items()
                          if np.any(np.isnan(v) | (np.asarray(v) == np.inf))]
    details = details or ["f and its log-odds are finite there, the results from it "
                          "are not"]
    raise non_finite_error(owner, "the log-potential or its conditional log-odds are "
                           f"not finite at {where(index)}", params, details)
