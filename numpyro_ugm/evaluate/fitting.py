"""What the deterministic fits (:func:`~numpyro_ugm.evaluate.exact.fit`,
:func:`~numpyro_ugm.evaluate.pseudo.fit_pseudo_likelihood`) check and prepare before
they hand their objective to :func:`numpyro_ugm.runloop.minimize`."""

from typing import Any, NamedTuple

import jax

from .._checks import as_key, check_count
from ..model import UGM, as_ugm
from ..validation import validate_data


class FitProblem(NamedTuple):
    """A fit's model, data and starting point.

    Attributes
    ----------
    m : UGM
    observed : UGM
        ``m`` with the data's sites observed (the rest latent).
    data : dict
        The data, checked, in the model representation.
    num_examples : int
    params : dict
        Initial parameters (constrained space), checked.
    num_steps : int
    """

    m: UGM
    observed: UGM
    data: dict
    num_examples: int
    params: dict
    num_steps: int


def prepare_fit(owner: str, model: Any, data: dict, model_args: tuple, model_kwargs: dict,
                params: dict | None, num_steps: int, rng_key: jax.Array | None) -> FitProblem:
    """Trace the model, check the data, the step count and the initial parameters
    (default ``m.init_params(rng_key or PRNGKey(0))``); errors name ``owner``."""
    m = as_ugm(model, *model_args, **model_kwargs)
    num_steps = check_count(owner, "num_steps", num_steps, minimum=0)
    x = validate_data(m.state_sites, data)
    observed = m.observe(x.keys())
    if params is None:
        params = m.init_params(jax.random.PRNGKey(0) if rng_key is None
                               else as_key(rng_key, owner))
    m.param_space.check(params)
    return FitProblem(m, observed, x, int(jax.tree.leaves(x)[0].shape[0]), params, num_steps)
