"""Maximum pseudo-likelihood (MPLE, Besag 1975): :func:`fit_pseudo_likelihood`, cheap for
any model size and a common start for the stochastic learners, on the pseudo-likelihood
of :mod:`numpyro_ugm.evaluate.pseudo`."""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from ..evaluate.pseudo import pseudo_log_likelihoods
from ..model.ugm import UGM
from .fit_setup import prepare_fit, run_fit

__all__ = ["fit_pseudo_likelihood", "PseudoFitResult"]


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
        Whether the gradient norm reached ``tol`` or the dtype's resolution
        ``16 eps max(1, |objective|)``, whichever is larger, or the optimizer stalled
        with a gradient norm at most ``sqrt(eps) max(1, |objective|)``
        (:func:`~numpyro_ugm.runtime.runloop.converged`).
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
                          progress_bar: bool = True, inputs: dict | None = None,
                          **model_kwargs: Any) -> PseudoFitResult:
    """Maximum pseudo-likelihood estimate (MPLE; or maximum penalized pseudo-likelihood
    when parameter sites have priors).

    Maximizes ``pseudo_log_likelihood(θ) + log p(θ) / N`` over the unconstrained parameters
    (log p(θ) the prior density of θ itself: no log-Jacobian of the map to the unconstrained
    space, as in :func:`~numpyro_ugm.learn.exact_fit.fit_exact`). No partition function is
    involved, so it is cheap for any model size; it is consistent but less efficient than
    maximum likelihood, and a common initialization for the stochastic learners
    (``MLE.run(..., init_params=...)``). For an exponential family without latent sites the
    objective is concave (a logistic / multinomial regression on each variable's change
    statistics). For a CRF (``inputs=``) it maximizes the conditional pseudo-likelihood:
    each example's conditionals given its own inputs.

    Parameters
    ----------
    model, data
        As in :func:`~numpyro_ugm.learn.exact_fit.fit_exact`.
    params : dict, optional
        Initial parameters (constrained space); default ``m.init_params(rng_key)``.
    num_steps : int
        Maximum number of optimizer steps.
    optimizer : optax.GradientTransformation, optional
        Minimizes the negative objective; default ``optax.lbfgs()``.
    rng_key : jax PRNGKey, optional
        For the initial parameters (default ``PRNGKey(0)``).
    tol : float
        Stop, converged, when the gradient norm of the objective falls to ``tol`` or to
        the dtype's resolution ``16 eps max(1, |objective|)`` (eps: the machine epsilon;
        float32 cannot reach 1e-6 on an objective of order 100), whichever is larger;
        the fit also stops when a step no longer moves the parameters (converged if the
        gradient norm is at most ``sqrt(eps) max(1, |objective|)`` there).
    progress_bar : bool
        Show a tqdm bar on a fit that takes longer than 3 seconds (the steps then run in
        chunks; results are identical).
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
    fit = prepare_fit("fit_pseudo_likelihood", model, data, model_args, model_kwargs,
                      params, num_steps, rng_key, inputs, tol)
    target = fit.problem.target
    out = run_fit("fit_pseudo_likelihood", fit, lambda p, xs, us: jnp.mean(
        pseudo_log_likelihoods(target, p, xs, us)), optimizer, tol, progress_bar,
        "pseudo-likelihood fit")
    return PseudoFitResult(params=fit.problem.param_model.space.to_constrained(out.params),
                           pseudo_log_likelihood=out.aux, objective=-out.value,
                           grad_norm=out.grad_norm, num_steps=out.num_steps,
                           converged=out.converged)
