"""The seam between a model and the algorithms: :func:`build_problem` turns a model (a
numpyro model function with its arguments, or a traced :class:`~numpyro_ugm.model.UGM`),
optional data and a CRF's per-example inputs into a :class:`Problem`: the
:class:`~numpyro_ugm.model.target.Target` the algorithms read and the parameters' model
(:class:`ParamModel`: space, initial values, log prior).

It is the one place where a model meets data: learning, evaluation, the posterior
samplers, :func:`~numpyro_ugm.sample` and :func:`~numpyro_ugm.predict` all set
themselves up through it, so a model function is traced with the first example's
inputs, the data is checked against the domains, the sites the data lacks are latent,
the blocks hold for every example and the real sites' base is fitted to the data in the
same way wherever data is given.
"""

from collections.abc import Callable
from typing import NamedTuple

import jax

from ..runtime.checks import check_inputs
from .ugm import UGM, as_ugm
from .params import ParamSpace
from .target import Target
from .validation import validate_data

__all__ = ["ParamModel", "Problem", "build_problem", "check_free_energy"]


class ParamModel(NamedTuple):
    """What an algorithm needs of the parameters.

    Attributes
    ----------
    space : ParamSpace
        The parameter sites, their transforms and checks.
    init : callable
        ``rng_key -> params``: initial parameters (constrained space).
    log_prior : callable
        ``params -> log p(θ)`` (0 without priors; no log-Jacobian).
    """

    space: ParamSpace
    init: Callable[[jax.Array], dict]
    log_prior: Callable[[dict], jax.Array]


class Problem(NamedTuple):
    """A model set up for the algorithms, with its data (if any).

    Attributes
    ----------
    model : UGM
        The traced model the target was built from (the data's sites observed, the
        real sites' base fitted to the data): for entry points that take a model.
    target : Target
        What the algorithms read: the state sites (the data's observed, the others
        latent), the structure (valid for every example of ``inputs``) and the
        log-density.
    param_model : ParamModel
    data : dict or None
        The data checked against the domains, model representation.
    inputs : dict or None
        A CRF's per-example inputs, checked, as arrays.
    num_examples : int or None
        The examples of the data (or of the inputs).
    """

    model: UGM
    target: Target
    param_model: ParamModel
    data: dict | None
    inputs: dict | None
    num_examples: int | None


def build_problem(model: Callable | UGM, data: dict | None = None, model_args: tuple = (),
                  model_kwargs: dict | None = None, inputs: dict | None = None) -> Problem:
    """The :class:`Problem` of ``model`` observing ``data`` under per-example ``inputs``.

    Parameters
    ----------
    model : callable or UGM
        A numpyro model function (traced here with ``model_args``, ``model_kwargs`` and,
        for a CRF, the first example's ``inputs``) or a traced ``UGM`` (no arguments).
    data : dict of str -> array, optional
        Observed state sites (data representation, leading example axis); the state
        sites it lacks are latent. ``None``: every state site as the model declares it.
    model_args, model_kwargs
        Arguments of the model function.
    inputs : dict of str -> array, optional
        A CRF's per-example model keyword arguments (leading example axis, shared with
        ``data``): the structure is made valid for every example.

    Raises
    ------
    TypeError, KeyError, ValueError
        Data that is not a dict of the model's state sites or disagrees with the domains,
        inputs that are not arrays of the traced keyword arguments with one row per
        example, or a model function that cannot be traced with the first example's
        inputs.
    """
    m = _traced(model, model_args, dict(model_kwargs or {}), inputs)
    if data is not None and not isinstance(data, dict):
        raise TypeError(f"data must be a dict of site name -> array, {{\"site\": array}} "
                        f"with a leading example axis (this model's state sites: "
                        f"{list(m.target().state_sites)}), got {type(data).__name__}")
    x = num_examples = None
    if data is not None:
        x = validate_data(m.target().state_sites, data)
        num_examples = int(jax.tree.leaves(x)[0].shape[0])
        m = m.observe(x.keys())
    if inputs is not None:
        inputs, num_examples = check_inputs(inputs, m.kwargs, num_examples)
        m = m.for_inputs(inputs)  # blocks valid for every example, not the first only
    if x is not None:
        m = m.with_fitted_base(x)
    return Problem(m, m.target(), ParamModel(m.param_space, m.init_params, m.log_prior),
                   x, inputs, num_examples)


def _traced(model, model_args, model_kwargs, inputs) -> UGM:
    """The model as a UGM: a model function traced with its arguments and, given
    ``inputs``, the first example's (in place of keyword arguments of the same name)."""
    if inputs is None or isinstance(model, UGM) or not callable(model):
        return as_ugm(model, *model_args, **model_kwargs)
    first = {k: v[0] for k, v in check_inputs(inputs)[0].items()}
    try:
        return as_ugm(model, *model_args, **{**model_kwargs, **first})
    except TypeError as error:
        raise TypeError(f"tracing the model with the first example's inputs "
                        f"{list(inputs)} failed: {error}") from error


def check_free_energy(problem: Problem, params: dict) -> None:
    """Raise ``NotImplementedError`` when the problem's latent sites cannot be summed
    out in closed form (what the learners and posterior samplers need), by evaluating
    the free energy of the first example at ``params``."""
    target = problem.target
    if not target.latent_sites:
        return
    if problem.inputs is not None:
        target = target.bind(**{k: v[0] for k, v in problem.inputs.items()})
    target.free_energy(params, {n: v[0] for n, v in problem.data.items()})
