"""What a deterministic fit (:func:`~numpyro_ugm.learn.exact.fit_exact`,
:func:`~numpyro_ugm.learn.pseudo.fit_pseudo_likelihood`) checks and prepares before its
optimizer runs: its settings, the model's :class:`~numpyro_ugm.problem.Problem` on the
data (:func:`~numpyro_ugm.problem.build_problem`, as every learner sets up) and its
starting point. The fits then hand their objective to :func:`numpyro_ugm.runloop.minimize`."""

from typing import Any, NamedTuple

import jax

from .._checks import as_key, check_count
from ..problem import Problem, build_problem

__all__ = ["FitSetup", "prepare_fit"]


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
