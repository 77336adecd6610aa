"""``ugm.factor``: a ``numpyro.factor`` that may also give its own conditionals.

A factor whose conditionals are cheaper than a gradient of the whole log-potential (an
ERGM's change statistics: work proportional to a block of dyads, not to the graph)
declares them with ``conditionals=``; the samplers then use them
(:meth:`~numpyro_ugm.model.target.Target.logdensity_fn` returns a
:class:`~numpyro_ugm.conditionals.LogDensity`). A factor may also declare the coloring of
the state's variables into conditionally independent blocks (``colors=``), when the
structure analysis (Hessian probes, one per variable) would cost too much; the model
uses it when every other factor is constant in the state.
"""

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from numpyro.distributions import Unit

from ..conditionals import scatter

__all__ = ["factor", "own_conditionals", "check_conditionals", "CONDITIONALS", "COLORS", "EDGES",
           "MULTILINEAR"]

#: keys of the site's ``infer`` dict
CONDITIONALS = "ugm_conditionals"
COLORS = "ugm_colors"
MULTILINEAR = "ugm_multilinear"
EDGES = "ugm_edges"


def factor(name: str, log_factor: Any, *, conditionals: Callable | None = None,
           colors: Mapping[str, np.ndarray] | None = None,
           multilinear: bool = False,
           edges: Mapping[str, np.ndarray] | None = None) -> None:
    """Add ``log_factor`` to the log-potential, as ``numpyro.factor`` does.

    Parameters
    ----------
    name : str
        Site name.
    log_factor : array
        The factor's value (summed over any batch axes, like ``numpyro.factor``).
    conditionals : callable, optional
        ``conditionals(site, idx)`` -> array ``(len(idx), K)`` (``idx`` flat variable
        indices of the state site ``site``, possibly traced; ``None``: all its
        variables): this factor's conditional log-probabilities of those variables, up
        to a constant per variable, at the values the model is traced with (a closure
        over the traced state and parameters), or ``None`` when the factor does not
        depend on ``site``. They must equal the differences of ``log_factor`` between
        each variable's values, the others held fixed (samplers trust them).
    colors : dict of str -> int array, optional
        Per state site, a color for each of its variables (flat order) such that
        variables of one color are conditionally independent under this factor. The
        model takes it as its structure (no analysis) when no other factor depends on
        the state; the caller guarantees it.
    multilinear : bool
        With ``colors`` or ``edges``: whether ``log_factor`` is multilinear in each
        variable (then conditionals may also be read off a gradient, e.g. to sum out
        latent sites).
    edges : dict of str -> int array (E, 2), optional
        Per state site, the pairs of its variables (flat indices) that interact under
        this factor, for every example of a CRF: the model takes this graph (and its
        greedy colouring as Gibbs blocks) as its structure, with no analysis — for the
        first example or the others — when the declaring factors cover every state
        site and no other factor depends on the state (exact elimination checks its
        tables against the potential).
    """
    unit = Unit(log_factor)
    infer = {"is_auxiliary": True}
    if conditionals is not None:
        if not callable(conditionals):
            raise TypeError(f"factor {name!r}: conditionals must be callable, got "
                            f"{conditionals!r}")
        infer[CONDITIONALS] = conditionals
    if edges is not None:
        infer[EDGES] = {s: np.asarray(e, np.int64).reshape(-1, 2) for s, e in edges.items()}
        infer[MULTILINEAR] = bool(multilinear)
    if colors is not None:
        infer[COLORS] = {s: np.asarray(c, np.int64) for s, c in colors.items()}
        infer[MULTILINEAR] = bool(multilinear)
    numpyro.sample(name, unit, obs=unit.sample(None), infer=infer)


# --- reading the declarations back from a trace ---------------------------------------


def own_conditionals(trace, hooked, block) -> dict:
    """The summed conditional log-probabilities that the factors ``hooked`` of ``trace``
    declare for the variables of ``block`` (site -> flat indices or ``None``), scaled
    as their factors are; sites no factor declares are absent."""
    out = {}
    for name in hooked:
        site = trace[name]
        own = site["infer"][CONDITIONALS]
        for s, idx in block.items():
            logits = own(s, idx)
            if logits is None:
                continue
            if site.get("scale") is not None:
                logits = logits * site["scale"]
            out[s] = logits if s not in out else out[s] + logits
    return out


def check_conditionals(trace_at, term_at, domains, hooked, points, rng,
                       max_variables: int = 16) -> None:
    """Check the conditionals each factor of ``hooked`` declares against the factor's
    own value: at every ``(params, state)`` of ``points``, for up to ``max_variables``
    random variables of each state site, the declared log-probabilities of each value
    must equal the differences of the factor between those values, the rest held fixed.

    ``trace_at(values)`` traces the model with parameters and state substituted;
    ``term_at(name, values)`` is the factor ``name``'s summed value there.

    Raises
    ------
    ValueError
        Naming the factor, the site and the variable, with both sets of numbers (or the
        shape or dtype that is wrong).
    """
    for params, state in points:
        trace = trace_at({**params, **state})
        for name in hooked:
            own = trace[name]["infer"][CONDITIONALS]
            scale = trace[name].get("scale")
            for s, domain in domains.items():
                n = domain.num_variables
                idx = np.sort(rng.choice(n, size=min(n, max_variables), replace=False))
                got = own(s, jnp.asarray(idx))
                expected = _value_differences(
                    lambda x: term_at(name, {**params, **x}), state, s, domain, idx)
                _compare(name, s, idx, got, expected, scale, domain)


def _value_differences(value_at, state, site, domain, idx):
    """(len(idx), K): the factor's value with each variable of ``idx`` set to each of
    its values, the rest of ``state`` held fixed."""
    k = domain.num_values
    dtype = state[site].dtype
    rows = []
    for label in range(k):
        value = domain.label_to_model(jnp.full((1,), label, jnp.int32), dtype)
        rows.append(jnp.stack([scatter(state[site], domain, jnp.asarray([j]), value)
                               for j in idx]))
    stacked = jnp.stack(rows, axis=1)  # (len(idx), K, *site shape)
    flat = stacked.reshape((-1,) + state[site].shape)
    values = jax.vmap(lambda x: value_at({**state, site: x}))(flat)
    return np.asarray(values).reshape(len(idx), k)


def _compare(name, site, idx, got, expected, scale, domain):
    """Raise unless ``got`` (declared) and ``expected`` agree up to a constant per row."""
    where = f"factor {name!r}: its declared conditionals for site {site!r}"
    spread = np.ptp(expected, axis=1)
    if got is None:
        if np.nanmax(spread) > 1e-5 * max(1.0, np.nanmax(np.abs(expected))):
            j = int(np.argmax(spread))
            raise ValueError(f"{where} are None, but the factor's value depends on "
                             f"variable {int(idx[j])} of the site (its values differ by "
                             f"{spread[j]:.4g} between the site's values)")
        return
    got = np.asarray(got)
    shape = (len(idx), domain.num_values)
    if got.shape != shape:
        raise ValueError(f"{where} have shape {got.shape} for {len(idx)} variables; "
                         f"expected {shape} (one log-probability per variable and value)")
    if not np.issubdtype(got.dtype, np.floating):
        raise ValueError(f"{where} have dtype {got.dtype}: return floating-point "
                         "log-probabilities (integer results are truncated)")
    if scale is not None:
        got = got * np.asarray(scale)
    with np.errstate(invalid="ignore"):
        got_rel = got - got[:, :1]
        want_rel = expected - expected[:, :1]
    tol = 1e-4 * max(1.0, float(np.nanmax(np.abs(expected), initial=0.0)))
    bad = ~np.isclose(got_rel, want_rel, rtol=1e-3, atol=tol, equal_nan=True)
    if bad.any():
        j = int(np.argwhere(bad)[0][0])
        raise ValueError(
            f"{where} disagree with the factor's own value at variable {int(idx[j])} "
            f"(at a random state and parameters): declared "
            f"{np.array2string(got_rel[j], precision=4)}, differences of the factor "
            f"{np.array2string(want_rel[j], precision=4)} (relative to the first value); "
            "conditionals(site, idx) must return, per variable of idx, the factor's "
            "change between the site's values, the other variables held fixed")
