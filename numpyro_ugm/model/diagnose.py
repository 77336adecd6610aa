"""Finiteness of a model's potential where samplers and evaluation go: the compiled test
(:func:`potential_is_finite`) and the host-side error that names the factors and sites at
fault (:func:`check_finite`, :func:`non_finite_error`)."""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..conditionals import block_logits

__all__ = ["non_finite_error", "potential_is_finite", "check_finite", "DIVERGED",
           "chain_spread", "diverged_sites", "check_diverged"]

#: chains of a real site this many base scales from the base mean (or NaN) have diverged:
#: the potential is not normalizable in that site at the parameters (a precision that is
#: not positive definite), and no sampler or estimator result from them means anything
DIVERGED = 1e6


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


def chain_spread(target, positions: dict) -> dict:
    """Per real site, the largest |x − loc| / scale over a batch of positions (leading
    axis) and the site's variables, in base scales (NaN becomes +inf). Traceable."""
    out = {}
    for s in target.real_sites:
        d, x = target.state_sites[s], positions[s]
        z = jnp.abs((x - jnp.asarray(d.loc, x.dtype)) / jnp.asarray(d.scale, x.dtype))
        out[s] = jnp.max(jnp.where(jnp.isnan(z), jnp.inf, z)).astype(jnp.float32)
    return out


def diverged_sites(spread: dict) -> str | None:
    """Words naming the real sites whose chains diverged (``spread`` from
    :func:`chain_spread`, past :data:`DIVERGED` or NaN), or None if none did."""
    bad = {s: float(v) for s, v in spread.items() if not float(v) <= DIVERGED}
    if not bad:
        return None
    sites = ", ".join(f"{s!r} (|x - loc| / scale reached {v:.3g})" for s, v in bad.items())
    return (f"chains of the real site(s) {sites} diverged: the potential is not "
            "normalizable in them (e.g. a precision matrix that is not positive definite, "
            "or a quadratic term that lost its sign)")


def check_diverged(target, owner: str, params: dict, positions: dict) -> None:
    """Raise ``FloatingPointError`` naming the real sites whose chains diverged at
    ``positions`` (a batch, leading axis) and the largest parameter magnitudes."""
    text = diverged_sites(chain_spread(target, positions))
    if text is not None:
        raise non_finite_error(owner, text, params)
