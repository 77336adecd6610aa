"""Exact maximum likelihood (or MAP) of small models: :func:`fit_exact`, the reference the
stochastic learners are checked against, on the exact sums of
:mod:`numpyro_ugm.evaluate.exact` (log Z by enumeration, latent sites summed out)."""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np
import optax

from ..evaluate.exact import (DEFAULT_CHUNK_SIZE, MAX_CONFIGURATIONS, MAX_TABLE_SIZE,
                              objective)
from ..model.ugm import UGM, as_ugm
from ..runtime.compile_cache import cached
from .fit_setup import prepare_fit, run_fit, run_fit_groups

__all__ = ["fit_exact", "ExactFitResult"]


class ExactFitResult(NamedTuple):
    """What :func:`fit_exact` returns.

    Attributes
    ----------
    params : dict
        Final parameters (constrained space).
    log_likelihood : scalar
        Mean training log-likelihood at ``params``.
    objective : scalar
        log_likelihood + log p(θ) / N (equal to ``log_likelihood`` without priors).
    grad_norm : scalar
        Norm of the objective's gradient (unconstrained space) at ``params``.
    num_steps : int
        Optimizer steps taken (fewer than asked when the gradient norm reached ``tol``
        or a step produced non-finite values; then the last finite parameters are kept).
    converged : bool
        Whether the gradient norm reached ``tol`` or the dtype's resolution
        ``16 eps max(1, |objective|)``, whichever is larger, or the optimizer stalled
        with a gradient norm at most ``sqrt(eps) max(1, |objective|)``
        (:func:`~numpyro_ugm.runtime.runloop.converged`).
    trace : dict of str -> ndarray (num_steps asked + 1,)
        ``objective``, ``log_likelihood`` and ``grad_norm`` at the initial parameters and
        after each step taken (NaN beyond).
    """

    params: dict
    log_likelihood: jax.Array
    objective: jax.Array
    grad_norm: jax.Array
    num_steps: int
    converged: bool
    trace: dict


def fit_exact(model: Callable | UGM, data: dict, *model_args: Any, params: dict | None = None,
        num_steps: int = 500, optimizer: optax.GradientTransformation | None = None,
        rng_key: jax.Array | None = None, tol: float = 1e-6,
        chunk_size: int = DEFAULT_CHUNK_SIZE, progress_bar: bool = True,
        inputs: dict | None = None, max_configurations: int | None = MAX_CONFIGURATIONS,
        method: str = "auto", max_table_size: int | None = MAX_TABLE_SIZE,
        **model_kwargs: Any) -> ExactFitResult:
    """Exact maximum likelihood (or MAP, when parameter sites have priors) by enumeration,
    or by variable elimination on the model's graph for a larger finite model whose graph
    is thin (a linear-chain CRF: the forward algorithm; see ``method``).

    Maximizes ``mean_n log p(x_n; θ) + log p(θ) / N`` over the unconstrained parameters
    (for a CRF, the conditional ``mean_n log p(x_n; θ, inputs_n)``, each example with its
    own log Z), with exact log Z and exact latent sums (so exact gradients); a reference for the
    stochastic estimators on small models. For a prior on a constrained parameter (e.g.
    ``LogNormal``, θ > 0) this is the mode of the posterior density of θ itself: the
    optimizer runs in the unconstrained space but no log-Jacobian of that map is added
    (as in :class:`~numpyro_ugm.MLE`).

    For a fully visible model whose data never show some configuration of a pair (e.g. a
    VBM with W ~ N(0, 1) and a few hundred cases: pairs that always agree), the maximum
    likelihood estimate does not exist: the supremum of the log-likelihood is approached
    as couplings diverge. ``fit_exact`` then runs the ``num_steps`` asked (``converged`` is
    False) and returns the last parameters; compare learners by the training
    ``log_likelihood`` it reports, which approaches the supremum, not by these
    parameters — or add a prior (MAP), for which the optimum exists.

    Parameters
    ----------
    model : callable or UGM
        numpyro model function (called with ``model_args`` and ``model_kwargs``) or a
        traced :class:`~numpyro_ugm.model.UGM` (then give no model arguments).
    data : dict of str -> array, or list of them
        Observed sites (data representation), leading example axis; absent state sites
        are latent and summed out. A list: groups of examples of different shapes (a
        CRF's sentences in length buckets), each with its ``inputs`` (a list as long);
        the model is traced (and its structure found) once per group shape, with the
        group's first example (kept with the model: later fits reuse it and its
        compiled program).
    *model_args
        Positional arguments of ``model``.
    params : dict, optional
        Initial parameters (constrained space); default ``m.init_params(rng_key)``.
    num_steps : int
        Maximum number of optimizer steps.
    optimizer : optax.GradientTransformation, optional
        Minimizes the negative objective; default ``optax.lbfgs()`` (with its zoom line
        search). Plain transformations such as ``optax.adam(0.05)`` work too (use more
        steps).
    rng_key : jax PRNGKey, optional
        For the initial parameters (default ``PRNGKey(0)``).
    tol : float
        Stop, converged, when the gradient norm of the objective falls to ``tol`` or to
        the dtype's resolution ``16 eps max(1, |objective|)`` (eps: the machine epsilon;
        float32 cannot reach 1e-6 on an objective of order 100), whichever is larger;
        the fit also stops when a step no longer moves the parameters (converged if the
        gradient norm is at most ``sqrt(eps) max(1, |objective|)`` there).
    chunk_size : int
        Configurations evaluated together.
    progress_bar : bool
        Show a tqdm bar on a fit that takes longer than 3 seconds (the steps then run in
        chunks; results are identical).
    inputs : dict of str -> array, optional
        A CRF's per-example inputs (model keyword arguments with a leading example axis,
        as in learning and evaluation): exact conditional maximum likelihood. A model
        function is traced with the first example's inputs.
    max_configurations : int or None
        The largest enumeration one evaluation of the objective may run (as in
        :func:`ugm.exact.log_partition <numpyro_ugm.evaluate.exact.log_partition>`;
        latent sites, and a CRF's log Z, count once per example).
    method, max_table_size
        Enumeration or elimination, as in :func:`ugm.exact.log_partition
        <numpyro_ugm.evaluate.exact.log_partition>` (``"auto"``: elimination for a
        finite model whose enumeration over all examples would pass 65,536
        configurations and whose tables fit ``max_table_size``).
    **model_kwargs
        Keyword arguments of ``model``.

    Returns
    -------
    ExactFitResult
    """
    if isinstance(data, (list, tuple)):
        return _fit_groups(model, data, model_args, model_kwargs, params, num_steps,
                           optimizer, rng_key, tol, chunk_size, progress_bar, inputs,
                           max_configurations, method, max_table_size)
    fit = prepare_fit("fit_exact", model, data, model_args, model_kwargs, params, num_steps,
                      rng_key, inputs, tol)
    value = _objective(fit, chunk_size, max_configurations, method, max_table_size)
    out = run_fit("fit_exact", fit, value, optimizer, tol, progress_bar, "exact fit",
                  (chunk_size, method))
    return _result(fit.problem.param_model.space, out)


def _objective(fit, chunk_size, max_configurations, method, max_table_size):
    return objective(fit.problem.model, fit.problem.target, "fit_exact", method,
                     chunk_size=chunk_size, max_configurations=max_configurations,
                     max_table_size=max_table_size, num_examples=fit.problem.num_examples,
                     per_example=fit.problem.inputs is not None, params=fit.params,
                     inputs=fit.problem.inputs)


def _fit_groups(model, data, model_args, model_kwargs, params, num_steps, optimizer,
                rng_key, tol, chunk_size, progress_bar, inputs, max_configurations, method,
                max_table_size):
    """:func:`fit_exact` on groups of examples of different shapes (see ``data``)."""
    if not isinstance(inputs, (list, tuple)) or len(inputs) != len(data) or not data:
        raise ValueError("fit_exact: with data a list of groups, inputs must be a list of "
                         f"as many groups' inputs (got {len(data)} data groups and "
                         f"{type(inputs).__name__} inputs)")
    m, fits = as_ugm(model, *model_args, **model_kwargs), []
    for group, group_inputs in zip(data, inputs):
        first = {k: np.asarray(v)[0] for k, v in group_inputs.items()}
        shapes = tuple((k, np.shape(v), np.asarray(v).dtype.str) for k, v in sorted(first.items()))
        traced = cached(m.target().cache_key, ("fit_exact.group", shapes), lambda: UGM(
            m.model, *m.args, init_strategy=m.init_strategy, **{**m.kwargs, **first}))
        fits.append(prepare_fit("fit_exact", traced, group, (), {},
                                fits[0].params if fits else params, num_steps, rng_key,
                                group_inputs, tol))
    values = [_objective(f, chunk_size, max_configurations, method, max_table_size)
              for f in fits]
    out = run_fit_groups("fit_exact", fits, values, optimizer, tol, progress_bar,
                         "exact fit", (chunk_size, method))
    return _result(fits[0].problem.param_model.space, out)


def _result(space, out):
    trace = {"objective": -out.trace["value"], "log_likelihood": out.trace["aux"],
             "grad_norm": out.trace["grad_norm"]}
    return ExactFitResult(params=space.to_constrained(out.params), log_likelihood=out.aux,
                          objective=-out.value, grad_norm=out.grad_norm,
                          num_steps=out.num_steps, converged=out.converged, trace=trace)
