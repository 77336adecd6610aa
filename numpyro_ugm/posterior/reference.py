"""The exact posterior of a small model's parameters, as a numpyro model for NUTS.

With log Z(θ) enumerated (:func:`numpyro_ugm.exact.log_likelihood`, differentiable in θ),
the posterior density p(θ | x) ∝ p(θ) Π_n p(x_n; θ) is an ordinary numpyro model over the
continuous θ, which ``numpyro.infer.NUTS`` samples: the reference against which the
exchange algorithm and SG-MCMC are checked.
"""

from collections.abc import Callable
from typing import Any

import numpyro

from ..evaluate import exact
from ..model import UGM
from .target import Posterior
from ..validation import to_data


def exact_posterior(model: Callable | UGM, data: dict, *model_args: Any,
                    params: dict | None = None, **model_kwargs: Any) -> Callable[[], None]:
    """A numpyro model (no arguments) whose posterior is the exact p(θ | data).

    Its sample sites are the parameter sites of ``model`` with a prior, drawn from those
    priors; one ``numpyro.factor`` adds N · mean_n log p(x_n; θ), with log Z(θ) by
    enumeration. Run it with ``MCMC(NUTS(exact_posterior(model, data)), ...)``.

    Parameters
    ----------
    model : callable or UGM
    data : dict of str -> array
        Observed state sites, leading example axis (data representation); other state
        sites are summed out.
    *model_args, **model_kwargs
        Arguments of the model function (``params`` is taken by this function).
    params : dict, optional
        Fixed values of the parameter sites that are not sampled (``numpyro.param``
        sites default to their init values).

    Returns
    -------
    callable
        The numpyro model.

    Raises
    ------
    ValueError
        If the model is too large to enumerate (then use
        :class:`~numpyro_ugm.posterior.Exchange` with ``num_aux_steps``).
    """
    post = Posterior("exact_posterior", model, data, model_args, model_kwargs, params)
    m, priors = post.m, {n: post.m.param_sites[n].prior for n in post.sites}
    observed = to_data(m.state_sites, post.data)
    exact.log_likelihood(m, post.params(post.init_position()), observed)  # size check

    def posterior_model():
        theta = {n: numpyro.sample(n, prior) for n, prior in priors.items()}
        numpyro.factor("log_likelihood", post.num_examples * exact.log_likelihood(
            m, {**post.fixed, **theta}, observed))

    return posterior_model
