"""What the deterministic fits (:func:`~numpyro_ugm.learn.exact_fit.fit_exact`,
:func:`~numpyro_ugm.learn.pseudo_fit.fit_pseudo_likelihood`) share: :func:`prepare_fit`
checks their settings and sets up the model's :class:`~numpyro_ugm.model.problem.Problem` on
the data (:func:`~numpyro_ugm.model.problem.build_problem`, as every learner sets up) and the
starting point; :func:`run_fit` maximizes the fit's per-example objective plus
log p(θ) / N with :func:`numpyro_ugm.runtime.runloop.minimize`."""

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

from ..runtime.checks import as_key, check_count
from ..runtime.compile_cache import cached
from ..model.problem import ParamModel, Problem, build_problem
from ..runtime.runloop import MinimizeResult, minimize

__all__ = ["FitSetup", "prepare_fit", "run_fit", "run_fit_groups", "warn_unconverged"]


class FitSetup(NamedTuple):
    """A fit's problem and starting point.

    Attributes
    ----------
    problem : Problem
        The target observing the data's sites (the rest latent), the parameters' model,
        the data (model representation) and the inputs, checked.
    params : dict
        Initial parameters (constrained space), checked.
    num_steps : int
    """

    problem: Problem
    params: dict
    num_steps: int


def prepare_fit(owner: str, model: Any, data: dict, model_args: tuple, model_kwargs: dict,
                params: dict | None, num_steps: int, rng_key: jax.Array | None,
                inputs: dict | None = None, tol: float = 0.0) -> FitSetup:
    """Check the tolerance (a number >= 0: a NaN one would never stop the fit) and the
    step count, set up the model's problem on the data, and check the initial parameters
    (default: the model's, drawn with ``rng_key or PRNGKey(0)``); errors name ``owner``."""
    try:
        valid_tol = float(tol) >= 0
    except (TypeError, ValueError):
        valid_tol = False
    if not valid_tol:
        raise ValueError(f"{owner}: tol must be a number >= 0 (the gradient norm at which "
                         f"the fit stops), got {tol!r}")
    num_steps = check_count(owner, "num_steps", num_steps, minimum=0)
    problem = build_problem(model, data, model_args, model_kwargs, inputs)
    if params is None:
        params = problem.param_model.init(jax.random.PRNGKey(0) if rng_key is None
                                          else as_key(rng_key, owner))
    problem.param_model.space.check(params)
    return FitSetup(problem, params, num_steps)


def penalized_loss(param_model: ParamModel, value: Callable) -> tuple[Callable, Callable]:
    """``loss(u, data[, inputs]) -> (−objective, value)`` in the unconstrained parameters
    u, the objective ``value(θ, data, inputs) + log p(θ) / N`` (``value``: a mean over
    the N examples); the data (and inputs) are arguments of the compiled steps, not
    constants in them. And ``aux(u, −objective, data[, inputs]) -> value``, recovered
    without evaluating it (:func:`~numpyro_ugm.runtime.runloop.minimize`'s ``aux``)."""
    def prior(u, xs):
        return param_model.log_prior(param_model.space.to_constrained(u)) / \
            jax.tree.leaves(xs)[0].shape[0]

    def loss(u, xs, us=None):
        v = value(param_model.space.to_constrained(u), xs, us)
        return -(v + prior(u, xs)), v

    return loss, lambda u, negative, xs, us=None: -negative - prior(u, xs)


def run_fit(owner: str, fit: FitSetup, value: Callable, optimizer: Any, tol: float,
            progress_bar: bool, desc: str, static: tuple = ()) -> MinimizeResult:
    """Maximize ``value(θ, data, inputs) + log p(θ) / N`` from the fit's starting point
    (:func:`penalized_loss`, :func:`~numpyro_ugm.runtime.runloop.minimize`; ``aux`` is
    ``value``). One compiled program per data length, kept in the bounded compile cache
    under the target's key, ``owner``, ``static`` (what else ``value`` depends on) and
    the optimizer (no padding: the padded examples would be computed at every step).

    Warns
    -----
    RuntimeWarning
        If the fit ends unconverged (:func:`warn_unconverged`).

    Raises
    ------
    TypeError
        If ``optimizer`` is neither None nor an optax ``GradientTransformation``.
    """
    if optimizer is not None and not (hasattr(optimizer, "init")
                                      and hasattr(optimizer, "update")):
        raise TypeError(f"{owner}: optimizer must be an optax GradientTransformation")
    problem = fit.problem
    args = (problem.data,) if problem.inputs is None else (problem.data, problem.inputs)
    key = (owner, tuple(problem.data), *static, optimizer, problem.num_examples,
           None if problem.inputs is None else tuple(sorted(problem.inputs)))
    loss, aux = penalized_loss(problem.param_model, value)
    out = minimize(loss, problem.param_model.space.to_unconstrained(fit.params), optimizer,
                   fit.num_steps, *args, tol=tol, progress_bar=progress_bar, desc=desc,
                   cached=lambda build: cached(problem.target.cache_key, key, build),
                   aux=aux)
    warn_unconverged(owner, out, fit.num_steps, tol)
    return out


def run_fit_groups(owner: str, fits: list, values: list, optimizer: Any, tol: float,
                   progress_bar: bool, desc: str, static: tuple = ()) -> MinimizeResult:
    """:func:`run_fit` over groups of examples of different shapes (a CRF's sentences in
    length buckets: one problem each, the same parameters): maximize
    ``Σ_g N_g value_g(θ, data_g, inputs_g) / N + log p(θ) / N`` from the first fit's
    starting point, one compiled program for all the groups."""
    first = fits[0].problem
    sizes = [f.problem.num_examples for f in fits]
    total = sum(sizes)

    def prior(u):
        return first.param_model.log_prior(first.param_model.space.to_constrained(u)) / total

    def loss(u, *groups):
        p = first.param_model.space.to_constrained(u)
        v = sum(n / total * value(p, xs, us)
                for n, value, (xs, us) in zip(sizes, values, groups))
        return -(v + prior(u)), v

    args = tuple((f.problem.data, f.problem.inputs) for f in fits)
    shapes = tuple(tuple(np.shape(v) for v in jax.tree.leaves(a)) for a in args)
    key = (owner, "groups", *static, optimizer, shapes)
    out = minimize(loss, first.param_model.space.to_unconstrained(fits[0].params), optimizer,
                   fits[0].num_steps, *args, tol=tol, progress_bar=progress_bar, desc=desc,
                   cached=lambda build: cached(first.target.cache_key, key, build),
                   aux=lambda u, negative, *groups: -negative - prior(u))
    warn_unconverged(owner, out, fits[0].num_steps, tol)
    return out


def warn_unconverged(owner: str, out: MinimizeResult, num_steps: int, tol: float) -> None:
    """Warn (``RuntimeWarning``) when a fit ended unconverged, saying where it stopped
    and what to do: more ``num_steps`` when it ran them all; when it stopped early, that
    the line search found no better point (a flat objective: an estimate at infinity,
    float32's resolution, or a non-smooth prior's kink) or that the objective became
    non-finite."""
    if out.converged:
        return
    where = (f"{owner}: not converged: the gradient norm of the objective is "
             f"{float(out.grad_norm):.3g} (tol {tol:g}) after {out.num_steps} of the "
             f"{num_steps} steps asked")
    values = out.trace["value"][:out.num_steps + 1]
    if out.num_steps >= num_steps:
        why = ("; raise num_steps (or, when the maximum likelihood estimate does not "
               "exist, e.g. data that never show some configuration, add a prior)")
    elif not np.all(np.isfinite(values)):
        why = ("; the objective became non-finite at the next step and the last finite "
               "parameters are returned: start elsewhere (params=) or use a smaller step")
    else:
        why = ("; the line search found no better point the dtype can represent: the "
               "objective is flat there, as when the maximum likelihood estimate lies at "
               "infinity (some coupling growing without bound; add a prior) or float32 "
               "cannot resolve it (enable float64: jax.config.update('jax_enable_x64', "
               "True)); a non-smooth prior (e.g. the L1 penalty of "
               "ugm.models.sparse_gmrf) stalls L-BFGS at a kink, near the optimum, not at "
               "it (compare with a dedicated solver, e.g. scikit-learn's graphical_lasso)")
    warnings.warn(where + why + "; the result's converged is False", RuntimeWarning,
                  stacklevel=4)
