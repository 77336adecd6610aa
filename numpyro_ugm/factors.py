"""``ugm.factor``: a ``numpyro.factor`` that may also give its own conditionals.

A factor whose conditionals are cheaper than a gradient of the whole log-potential (an
ERGM's change statistics: work proportional to a block of dyads, not to the graph)
declares them with ``conditionals=``; the samplers then use them
(:meth:`~numpyro_ugm.model.UGM.logdensity_fn` returns a
:class:`~numpyro_ugm.conditionals.LogDensity`). A factor may also declare the coloring of
the state's variables into conditionally independent blocks (``colors=``), when the
structure analysis (Hessian probes, one per variable) would cost too much; the model
uses it when every other factor is constant in the state.
"""

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpyro
from numpyro.distributions import Unit

__all__ = ["factor", "CONDITIONALS", "COLORS", "MULTILINEAR"]

#: keys of the site's ``infer`` dict
CONDITIONALS = "ugm_conditionals"
COLORS = "ugm_colors"
MULTILINEAR = "ugm_multilinear"


def factor(name: str, log_factor: Any, *, conditionals: Callable | None = None,
           colors: Mapping[str, np.ndarray] | None = None,
           multilinear: bool = False) -> None:
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
        With ``colors``: whether ``log_factor`` is multilinear in each variable (then
        conditionals may also be read off a gradient, e.g. to sum out latent sites).
    """
    unit = Unit(log_factor)
    infer = {"is_auxiliary": True}
    if conditionals is not None:
        if not callable(conditionals):
            raise TypeError(f"factor {name!r}: conditionals must be callable, got "
                            f"{conditionals!r}")
        infer[CONDITIONALS] = conditionals
    if colors is not None:
        infer[COLORS] = {s: np.asarray(c, np.int64) for s, c in colors.items()}
        infer[MULTILINEAR] = bool(multilinear)
    numpyro.sample(name, unit, obs=unit.sample(None), infer=infer)
