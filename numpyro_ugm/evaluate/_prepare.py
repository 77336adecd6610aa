"""What the public entry points of evaluation check and prepare before the sums or the
annealing run, so that the code behind them takes a
:class:`~numpyro_ugm.model.target.Target`, never the model: :func:`observed_problem`, the
parameters checked and the model's :class:`~numpyro_ugm.model.problem.Problem` on the data (the
one set-up of :func:`~numpyro_ugm.model.problem.build_problem`)."""

from typing import Any

from ..model.ugm import UGM, as_ugm
from ..model.problem import Problem, build_problem

__all__ = ["observed_problem"]


def observed_problem(m: UGM, params: dict, data: Any, inputs: dict | None) -> Problem:
    """Check the parameters, then the model's problem on ``data`` (a dict of the model's
    state sites, data representation, leading example axis) under a CRF's ``inputs``
    (model keyword arguments with the same leading axis): the target observing the
    data's sites, the data in the model representation, the inputs as arrays."""
    m = as_ugm(m)
    m.param_space.check(params)
    return build_problem(m, data, inputs=inputs)
