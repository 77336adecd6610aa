"""Pseudo-likelihood (Besag 1975): Σ_i log p(x_i | x_−i; θ), averaged over examples, and
its maximization (:func:`fit_pseudo_likelihood`: MPLE, e.g. to initialize MCMC maximum
likelihood)."""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from ..compile_cache import cached
from ..conditionals import block_logits, exact_conditional_logits
from ..model import UGM
from ..runloop import minimize
from ..target import Target
from .padding import mean_of_first, pad_examples, padded_length
from .prepare import observed_target, prepare_fit

__all__ = ["pseudo_log_likelihood", "fit_pseudo_likelihood", "PseudoFitResult"]


def _pseudo_log_likelihoods(target: Target, params: dict, x: dict,
                            inputs: dict | None = None) -> jax.Array:
    """Per example Σ_i log p(x_i | x_−i; θ) of the model-representation data ``x``
    (traceable in the parameters and the data; ``target`` observes the sites of ``x``),
    each example with its own ``inputs`` (a CRF's, leading example axis) when given."""
    domains = {s: target.state_sites[s] for s in x}
    block = {s: None for s in x}
    multilinear = target.structure.multilinear

    def one(example, example_inputs):
        bound = target.bind(**example_inputs) if example_inputs else target
        if target.latent_sites:
            logits = exact_conditional_logits(
                lambda y: bound.free_energy(params, y), example, domains, block)
        else:
            logits = block_logits(bound.logdensity_fn(params), example, domains, block,
                                  multilinear)
        total = 0.0
        for s, d in domains.items():
            labels = d.labels(example[s]).reshape(d.num_variables)
            log_probs = jax.nn.log_softmax(logits[s], axis=-1)
            total = total + jnp.sum(jnp.take_along_axis(log_probs, labels[:, None], -1))
        return total

    return jax.vmap(one)(x, {} if inputs is None else inputs)


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

    Returns
    -------
    scalar
        Data of any number of examples up to a power of two share one compiled program
        (the example axis is padded, the padding masked out).
    """
    target, x, inputs, num = observed_target(m, params, data, inputs)
    length = padded_length(num)
    names = None if inputs is None else tuple(sorted(inputs))
    fn = cached(target.cache_key, ("pseudo_log_likelihood", target.observed_sites, names),
                lambda: jax.jit(lambda p, xs, us, n: mean_of_first(
                    _pseudo_log_likelihoods(target, p, xs, us), n)))
    return fn(params, pad_examples(x, length),
              None if inputs is None else pad_examples(inputs, length),
              jnp.asarray(num, jnp.int32))


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
                          progress_bar: bool = False, inputs: dict | None = None,
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
    statistics). For a CRF (``inputs=``) it maximizes the conditional pseudo-likelihood:
    each example's conditionals given its own inputs.

    Parameters
    ----------
    model, data
        As in :func:`~numpyro_ugm.evaluate.exact.fit`.
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
    inputs : dict of str -> array, optional
        A CRF's per-example inputs (model keyword arguments with a leading example axis,
        as in learning and evaluation). A model function is traced with the first
        example's inputs.
    **model_kwargs
        Keyword arguments of ``model``.

    Returns
    -------
    PseudoFitResult
    """
    problem = prepare_fit("fit_pseudo_likelihood", model, data, model_args, model_kwargs,
                          params, num_steps, rng_key, inputs, tol)
    target, space, log_prior = problem.target, problem.param_space, problem.log_prior

    def loss(u, xs, us=None):  # the data is an argument of the compiled steps
        p = space.to_constrained(u)
        value = jnp.mean(_pseudo_log_likelihoods(target, p, xs, us))
        return -(value + log_prior(p) / jax.tree.leaves(xs)[0].shape[0]), value

    args = (problem.data,) if problem.inputs is None else (problem.data, problem.inputs)
    # one program per data length in the bounded compile cache (as exact.fit)
    key = ("fit_pseudo_likelihood", tuple(problem.data), optimizer, problem.num_examples,
           None if problem.inputs is None else tuple(sorted(problem.inputs)))
    out = minimize(loss, space.to_unconstrained(problem.params), optimizer,
                   problem.num_steps, *args, tol=tol, progress_bar=progress_bar,
                   desc="pseudo-likelihood fit",
                   cached=lambda build: cached(target.cache_key, key, build))
    return PseudoFitResult(params=space.to_constrained(out.params),
                           pseudo_log_likelihood=out.aux, objective=-out.value,
                           grad_norm=out.grad_norm, num_steps=out.num_steps,
                           converged=out.converged)
