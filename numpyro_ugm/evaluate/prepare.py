"""What the public entry points of evaluation check and prepare before the sums, the
annealing or the optimizer run, so that the code behind them takes a
:class:`~numpyro_ugm.target.Target` and the model's
:class:`~numpyro_ugm.params.ParamSpace`, never the model:

* :func:`observed_target`: the parameters, the data and a CRF's per-example inputs,
  checked; the target observing the data's sites;
* :func:`prepare_fit`: a deterministic fit's model, data, inputs and starting point
  (:func:`~numpyro_ugm.evaluate.exact.fit`,
  :func:`~numpyro_ugm.evaluate.pseudo.fit_pseudo_likelihood`, which then hand their
  objective to :func:`numpyro_ugm.runloop.minimize`).
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from .._checks import as_key, check_count, check_inputs
from ..model import UGM, as_ugm
from ..params import ParamSpace
from ..target import Target
from ..validation import validate_data

__all__ = ["Observed", "observed_target", "FitProblem", "prepare_fit"]


class Observed(NamedTuple):
    """Checked data and the target that observes it.

    Attributes
    ----------
    target : Target
        The model's target with the data's sites observed (the others latent); for a CRF,
        its structure holds for every example's inputs.
    data : dict
        The data in the model representation.
    inputs : dict or None
        A CRF's per-example inputs, as arrays.
    num_examples : int
    """

    target: Target
    data: dict
    inputs: dict | None
    num_examples: int


def observed_target(m: UGM, params: dict, data: Any, inputs: dict | None) -> Observed:
    """Check the parameters, the data (a dict of the model's state sites, data
    representation, leading example axis) and a CRF's ``inputs`` (model keyword arguments
    with the same leading axis); the target observing the data's sites."""
    m.param_space.check(params)
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict of site name -> array, got "
                        f"{type(data).__name__}")
    observed = m.observe(data.keys())
    x = validate_data(m.state_sites, data)
    num = int(jax.tree.leaves(x)[0].shape[0])
    if inputs is not None:
        inputs, _ = check_inputs(inputs, m.kwargs, num)
        observed = observed.for_inputs(inputs)
    return Observed(observed.target(), x, inputs, num)


class FitProblem(NamedTuple):
    """A fit's target, data and starting point.

    Attributes
    ----------
    target : Target
        The model's target with the data's sites observed (the rest latent).
    param_space : ParamSpace
    log_prior : callable
        ``params -> log p(θ)`` (0 without priors).
    data : dict
        The data, checked, in the model representation.
    inputs : dict or None
        A CRF's per-example inputs, checked.
    num_examples : int
    params : dict
        Initial parameters (constrained space), checked.
    num_steps : int
    """

    target: Target
    param_space: ParamSpace
    log_prior: Callable[[dict], jax.Array]
    data: dict
    inputs: dict | None
    num_examples: int
    params: dict
    num_steps: int


def prepare_fit(owner: str, model: Any, data: dict, model_args: tuple, model_kwargs: dict,
                params: dict | None, num_steps: int, rng_key: jax.Array | None,
                inputs: dict | None = None, tol: float = 0.0) -> FitProblem:
    """Trace the model (a model function with the first example's ``inputs``, as the
    learner does), check the data, the inputs, the step count, the tolerance (a number
    >= 0: a NaN one would never stop the fit) and the initial parameters (default
    ``m.init_params(rng_key or PRNGKey(0))``); errors name ``owner``."""
    try:
        valid_tol = float(tol) >= 0
    except (TypeError, ValueError):
        valid_tol = False
    if not valid_tol:
        raise ValueError(f"{owner}: tol must be a number >= 0 (the gradient norm at which "
                         f"the fit stops), got {tol!r}")
    first = {}
    if inputs is not None and not isinstance(model, UGM):
        inputs, _ = check_inputs(inputs)
        first = {k: v[0] for k, v in inputs.items()}
    m = as_ugm(model, *model_args, **model_kwargs, **first)
    num_steps = check_count(owner, "num_steps", num_steps, minimum=0)
    if params is None:
        params = m.init_params(jax.random.PRNGKey(0) if rng_key is None
                               else as_key(rng_key, owner))
    observed = observed_target(m, params, data, inputs)
    return FitProblem(observed.target, m.param_space, m.log_prior, observed.data,
                      observed.inputs, observed.num_examples, params, num_steps)
