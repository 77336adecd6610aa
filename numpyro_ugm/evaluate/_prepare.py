"""What the public entry points of evaluation check and prepare before the sums or the
annealing run, so that the code behind them takes a
:class:`~numpyro_ugm.model.target.Target`, never the model: :func:`model_of`, the model as a
:class:`~numpyro_ugm.model.UGM` (a model function without arguments is traced; one that
needs arguments is refused with what to pass), and :func:`observed_problem`, the
parameters checked and the model's :class:`~numpyro_ugm.model.problem.Problem` on the data
(the one set-up of :func:`~numpyro_ugm.model.problem.build_problem`)."""

from typing import Any

from ..model.ugm import UGM, as_ugm
from ..model.problem import Problem, build_problem

__all__ = ["model_of", "observed_problem"]


def model_of(owner: str, m: Any) -> UGM:
    """``m`` as a UGM: a UGM as it is, a model function traced without arguments.

    Raises
    ------
    TypeError
        Naming ``owner``, when ``m`` is a model function that cannot be traced without
        arguments (pass ``ugm.UGM(model, *model_args)``), or neither a UGM nor callable.
    """
    if isinstance(m, UGM):
        return m
    name = getattr(m, "__name__", type(m).__name__)
    if not callable(m):
        raise TypeError(f"{owner}: the model must be a ugm.UGM (ugm.UGM(model, "
                        f"*model_args)), got {type(m).__name__}")
    try:
        return as_ugm(m)
    except TypeError as error:
        raise TypeError(f"{owner}: takes a traced model, ugm.UGM(model, *model_args), or a "
                        f"model function without arguments; tracing {name}() without "
                        f"arguments failed ({error}): pass ugm.UGM({name}, ...) with its "
                        f"arguments") from error


def observed_problem(owner: str, m: Any, params: dict, data: Any,
                     inputs: dict | None) -> Problem:
    """Check the model (:func:`model_of`) and the parameters, then the model's problem on
    ``data`` (a dict of the model's state sites, data representation, leading example
    axis) under a CRF's ``inputs`` (model keyword arguments with the same leading axis):
    the target observing the data's sites, the data in the model representation, the
    inputs as arrays."""
    m = model_of(owner, m)
    m.param_space.check(params)
    return build_problem(m, data, inputs=inputs)
