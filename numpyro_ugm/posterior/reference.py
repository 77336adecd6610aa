"""The exact posterior of a small model's parameters, as a numpyro model for NUTS.

With log Z(θ) enumerated (:func:`numpyro_ugm.exact.log_likelihood`, differentiable in θ),
the posterior density p(θ | x) ∝ p(θ) Π_n p(x_n; θ) is an ordinary numpyro model over the
continuous θ, which ``numpyro.infer.NUTS`` samples: the reference against which the
exchange algorithm and SG-MCMC are checked.
"""

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpyro
from numpyro import handlers

from ..evaluate import exact
from ..model.ugm import UGM
from ..model.validation import to_data
from .density import Posterior

__all__ = ["exact_posterior"]


def exact_posterior(model: Callable | UGM, data: dict, *model_args: Any,
                    params: dict | None = None, inputs: dict | None = None,
                    **model_kwargs: Any) -> Callable[[], None]:
    """A numpyro model (no arguments) whose posterior is the exact p(θ | data).

    Its sample sites are the parameter sites of ``model`` with a prior; one
    ``numpyro.factor`` adds N · mean_n log p(x_n; θ), with log Z(θ) by enumeration. The
    prior density is the model's own at the current values of every parameter
    (:meth:`~numpyro_ugm.model.UGM.log_prior`, the model traced with them), so a prior
    that depends on other parameters (``tau ~ HalfNormal(1)``, ``beta ~ Normal(0, tau)``)
    is exact: the sample sites carry the priors as traced at the initial values (for
    numpyro's init strategies), and a factor adds the difference to the current ones,
    zero unless a prior depends on another parameter. Run it with
    ``MCMC(NUTS(exact_posterior(model, data)), ...)``.

    Parameters
    ----------
    model : callable or UGM
    data : dict of str -> array
        Observed state sites, leading example axis (data representation); other state
        sites are summed out.
    *model_args, **model_kwargs
        Arguments of the model function (``params`` and ``inputs`` are taken by this
        function).
    params : dict, optional
        Fixed values of the parameter sites that are not sampled (``numpyro.param``
        sites default to their init values).
    inputs : dict of str -> array, optional
        A CRF's per-example inputs (model keyword arguments with a leading example axis,
        one row per case; trace the model with one example's, as in learning): the
        likelihood is Π_n p(x_n; θ, inputs_n), each with its own log Z.

    Returns
    -------
    callable
        The numpyro model.

    Raises
    ------
    ValueError
        If the model is too large to enumerate (then use
        :class:`~numpyro_ugm.posterior.Exchange` with ``num_aux_steps``), or if a model
        argument holds one row per example that the potential sums (give it as
        ``inputs``).
    """
    post = Posterior("exact_posterior", model, data, model_args, model_kwargs, params,
                     inputs)
    m, space = post.model, post.param_space
    priors = {n: space.sites[n].prior for n in post.sites}
    observed = to_data(post.target.state_sites, post.data)
    exact.log_likelihood(m, post.params(post.init_position()), observed,  # size check
                         inputs=post.inputs)

    def posterior_model():
        theta = {n: numpyro.sample(n, prior) for n, prior in priors.items()}
        values = {**post.fixed, **theta}
        with handlers.block():  # the model's own traces stay out of this model's trace
            log_prior = post.param_model.log_prior(values)
            log_likelihood = exact.log_likelihood(m, values, observed, inputs=post.inputs)
        traced = sum(jnp.sum(priors[n].log_prob(v)) for n, v in theta.items())
        numpyro.factor("prior_dependence", log_prior - traced)
        numpyro.factor("log_likelihood", post.num_examples * log_likelihood)

    return posterior_model
