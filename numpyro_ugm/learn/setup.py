"""From the user's model function and data to a learner set up for them: the model's
problem on the data (:func:`~numpyro_ugm.model.problem.build_problem`: the traced model, the
data checked, the sites it lacks latent, blocks valid for every CRF example), the
:class:`~numpyro_ugm.learn.core.LearnerCore` on its target and parameters' model, its
compiled steps, and the data placed.

:func:`set_up` rebuilds the core only when what it depends on changes (model arguments,
batch size, the data's layout, the inputs' values): new data of the same layout reuses
the compiled steps.
"""

import hashlib
from typing import Any, NamedTuple, Optional

import jax
import numpy as np

from ..runtime import distributed
from ..runtime.checks import check_count
from ..estimators.per_example import PerExample
from ..model.problem import Problem, build_problem, check_free_energy
from ..model.validation import validate_data
from .data import Minibatches, Placement, check_inputs
from .exact_estimator import exact_negative
from .steps import Steps


def _layout(tree):
    """Names, shapes and dtypes of a dict of arrays (None stays None)."""
    if tree is None:
        return None
    return tuple(sorted((n, np.shape(v), str(np.asarray(v).dtype) if not hasattr(v, "dtype")
                         else str(v.dtype)) for n, v in tree.items()))


def _fingerprint(tree):
    """A digest of the values of a dict of arrays (None stays None): CRF inputs shape the
    traced model, so new values mean a new setup."""
    if tree is None:
        return None
    digest = hashlib.blake2b(digest_size=16)
    for name in sorted(tree):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(np.asarray(tree[name])).tobytes())
    return digest.hexdigest()


class Setup(NamedTuple):
    """A learner set up for a data set.

    Attributes
    ----------
    core : LearnerCore
    problem : Problem
        The model set up on the data (the target and parameters' model the core holds).
    steps : Steps
        The core's compiled steps on minibatches.
    data : dict
        The data (model representation), placed on the mesh.
    inputs : dict or None
        CRF inputs, placed on the mesh.
    key : tuple
        What ``core`` and ``steps`` depend on.
    """

    core: Any
    problem: Problem
    steps: Steps
    data: dict
    inputs: Any
    key: tuple

    def all(self):
        """The core's batch of every example."""
        return self.steps.batch(None, self.data, self.inputs)


def set_up(previous: Optional[Setup], model, estimator, optimizer, core_class,
           placement: Placement, data, model_args, model_kwargs, inputs,
           batch_size) -> Setup:
    """The learner set up for ``data`` (checked and taken every time), reusing the core
    and steps of ``previous`` when what they depend on is unchanged."""
    if not isinstance(data, dict):  # the error of build_problem, naming the state sites
        build_problem(model, data, model_args, model_kwargs, inputs)
    checked = check_settings(data, model_args, model_kwargs, inputs, batch_size)
    if previous is not None and same_key(checked.key, previous.key):
        core, problem, steps = previous.core, previous.problem, previous.steps
        data = validate_data(problem.target.state_sites, data)
    else:
        core, batches, problem = build_core(model, estimator, optimizer, core_class, data,
                                            model_args, model_kwargs, checked.inputs,
                                            checked.batch_size)
        data, steps = problem.data, Steps(core, batches, placement)
    num_examples = steps.batches.num_examples
    distributed.check_identical((data, checked.inputs), "the data (and inputs)")
    return Setup(core, problem, steps, placement.shard(data, num_examples),
                 placement.shard(checked.inputs, num_examples), checked.key)


class Checked(NamedTuple):
    """The settings of a call, checked: ``inputs`` as arrays, ``batch_size`` a count (or
    None), and ``key``, what the core built from them depends on."""

    inputs: object
    batch_size: object
    key: tuple


def check_settings(data, model_args, model_kwargs, inputs, batch_size) -> Checked:
    """Check the CRF ``inputs`` and ``batch_size`` and compute the setup key."""
    if batch_size is not None:
        batch_size = check_count("MLE", "batch_size", batch_size)
    inputs = check_inputs(inputs, data)
    key = (model_args, tuple(sorted(model_kwargs.items())), batch_size, _layout(data),
           _layout(inputs), _fingerprint(inputs))
    return Checked(inputs, batch_size, key)


def same_key(a, b) -> bool:
    """Whether two setup keys are equal (array-valued model arguments: never)."""
    try:
        return a is not None and bool(a == b)
    except (TypeError, ValueError):  # array-valued model arguments: compare no further
        return False


def build_core(model, estimator, optimizer, core_class, data, model_args, model_kwargs,
               inputs, batch_size):
    """Set up the model's problem on the data (:func:`~numpyro_ugm.model.problem.build_problem`)
    and build the core on its target and parameters' model.

    Returns
    -------
    core : LearnerCore (an instance of ``core_class``)
    batches : Minibatches
    problem : Problem
        The target, the parameters' model and the data in the model representation.
    """
    problem = build_problem(model, data, model_args, model_kwargs, inputs)
    check_free_energy(problem, problem.param_model.init(jax.random.PRNGKey(0)))
    num_examples = problem.num_examples
    batch = num_examples if batch_size is None else batch_size
    if batch > num_examples:
        raise ValueError(f"MLE: batch_size must be in [1, {num_examples}] (the number of "
                         f"examples), got {batch_size}")
    if inputs is not None and exact_negative(estimator) is None:  # particles per example
        estimator = PerExample(estimator)
    core = core_class(problem.target, problem.param_model, estimator, optimizer,
                      num_examples)
    return core, Minibatches(num_examples, batch), problem
