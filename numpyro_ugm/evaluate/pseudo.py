"""Pseudo-likelihood (Besag 1975): Σ_i log p(x_i | x_−i; θ), averaged over examples, and
its maximization (:func:`fit_pseudo_likelihood`: MPLE, e.g. to initialize MCMC maximum
likelihood)."""

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from .._checks import check_inputs
from ..model import UGM
from ..conditionals import block_logits, exact_conditional_logits
from ..runloop import minimize
from .fitting import prepare_fit
from ..validation import validate_data
from ..compile_cache import cached

__all__ = ["pseudo_log_likelihood", "fit_pseudo_likelihood", "PseudoFitResult"]


def _pseudo_log_likelihood(m, params, x, inputs=None):
    """Mean pseudo-log-likelihood of the model-representation data ``x`` (traceable in
    the parameters and the data; ``m`` observes the sites of ``x``), each example with
    its own ``inputs`` (a CRF's, leading example axis) when given."""
    domains = {s: m.state_sites[s] for s in x}
    block = {s: None for s in x}
    multilinear = m.structure.multilinear

    def one(example, example_inputs):
        mb = m.bind(**example_inputs) if example_inputs else m
        if m.latent_sites:
            logits = exact_conditional_logits(
                lambda y: mb.target().free_energy(params, y), example, domains, block)
        else:
            logits = block_logits(mb.logdensity_fn(params), example, domains, block,
                                  multilinear)
        total = 0.0
        for s, d in domains.items():
            labels = d.labels(example[s]).reshape(d.num_variables)
            log_probs = jax.nn.log_softmax(logits[s], axis=-1)
            total = total + jnp.sum(jnp.take_along_axis(log_probs, labels[:, None], -1))
        return total

    return jnp.mean(jax.vmap(one)(x, {} if inputs is None else inputs))


def pseudo_log_likelihood(m: UGM, params: dict, data: dict, *,
                          inputs: dict | None = None) -> jax.Array:
    """Mean over examples of Σ_i log p(x_i | x_−i; θ) over the observed variables.

    Latent sites are summed out first (each conditional is then one of the observed
    marginal, computed by evaluating the free energy at each value of the variable);
    without latent sites, a multilinear potential gives all conditionals from one
    gradient.

    Parameters
    ----------
    m : UGM
    params : dict
        Parameters (constrained space).
    data : dict of str -> array
        Observed sites with a leading example axis (data representation).
    inputs : dict of str -> array, optional
        A CRF's per-example inputs (model keyword arguments with a leading example axis,
        as in learning): each example's conditionals given its own inputs.
    """
    m = m.observe(tuple(data))
    x = validate_data(m.state_sites, data)
    m.param_space.check(params)
    if inputs is None:
        fn = cached(m.cache_key, ("pseudo_log_likelihood", m.observed_sites),
                      lambda: jax.jit(functools.partial(_pseudo_log_likelihood, m)))
        return fn(params, x)
    inputs, _ = check_inputs(inputs, m.kwargs, int(jax.tree.leaves(x)[0].shape[0]))
    m = m.for_inputs(inputs)
    fn = cached(m.cache_key, ("pseudo_log_likelihood", m.observed_sites, tuple(sorted(inputs))),
                  lambda: jax.jit(functools.partial(_pseudo_log_likelihood, m)))
    return fn(params, x, inputs)


class PseudoFitResult(NamedTuple):
    """What :func:`fit_pseudo_likelihood` returns.

    Attributes
    ----------
    params : dict
        Final parameters (constrained space).
    pseudo_log_likelihood : scalar
        Mean pseudo-log-likelihood of the data at ``params``.
    objective : scalar
        pseudo_log_likelihood + log p(θ) / N (equal to it without priors).
    grad_norm : scalar
        Norm of the objective's gradient (unconstrained space) at ``params``.
    num_steps : int
        Optimizer steps taken.
    converged : bool
        Whether the gradient norm reached ``tol``.
    """

    params: dict
    pseudo_log_likelihood: jax.Array
    objective: jax.Array
    grad_norm: jax.Array
    num_steps: int
    converged: bool


def fit_pseudo_likelihood(model: Callable | UGM, data: dict, *model_args: Any,
                          params: dict | None = None, num_steps: int = 200,
                          optimizer: optax.GradientTransformation | None = None,
                          rng_key: jax.Array | None = None, tol: float = 1e-6,
                          progress_bar: bool = False,
                          **model_kwargs: Any) -> PseudoFitResult:
    """Maximum pseudo-likelihood estimate (MPLE; or maximum penalized pseudo-likelihood
    when parameter sites have priors).

    Maximizes ``pseudo_log_likelihood(θ) + log p(θ) / N`` over the unconstrained parameters
    (log p(θ) the prior density of θ itself: no log-Jacobian of the map to the unconstrained
    space, as in :func:`~numpyro_ugm.evaluate.exact.fit`). No partition function is
    involved, so it is cheap for any model size; it is consistent but less efficient than
    maximum likelihood, and a common initialization for the stochastic learners
    (``MLE.run(..., init_params=...)``). For an exponential family without latent sites the
    objective is concave (a logistic / multinomial regression on each variable's change
    statistics).

    Parameters
    ----------
    model : callable or UGM
        numpyro model function (called with ``model_args`` and ``model_kwargs``) or a
        traced :class:`~numpyro_ugm.model.UGM` (then give no model arguments).
    data : dict of str -> array
        Observed sites (data representation), leading example axis.
    params : dict, optional
        Initial parameters (constrained space); default ``m.init_params(rng_key)``.
    num_steps : int
        Maximum number of optimizer steps.
    optimizer : optax.GradientTransformation, optional
        Minimizes the negative objective; default ``optax.lbfgs()``.
    rng_key : jax PRNGKey, optional
        For the initial parameters (default ``PRNGKey(0)``).
    tol : float
        Stop when the gradient norm of the objective falls to ``tol``.
    progress_bar : bool
        Show a tqdm bar (the steps then run in chunks; results are identical).

    Returns
    -------
    PseudoFitResult
    """
    m, mo, x, _, params, num_steps = prepare_fit(
        "fit_pseudo_likelihood", model, data, model_args, model_kwargs, params, num_steps,
        rng_key)

    def loss(u, xs):  # the data is an argument of the compiled steps, not a constant
        p = m.param_space.to_constrained(u)
        value = _pseudo_log_likelihood(mo, p, xs)
        return -(value + m.log_prior(p) / jax.tree.leaves(xs)[0].shape[0]), value

    key = ("fit_pseudo_likelihood", tuple(x), optimizer)
    out = minimize(loss, m.param_space.to_unconstrained(params), optimizer, num_steps, x, tol=tol,
                   progress_bar=progress_bar, desc="pseudo-likelihood fit",
                   cached=lambda build: cached(m.cache_key, key, build))
    return PseudoFitResult(params=m.param_space.to_constrained(out.params),
                           pseudo_log_likelihood=out.aux, objective=-out.value,
                           grad_norm=out.grad_norm, num_steps=out.num_steps,
                           converged=out.converged)
