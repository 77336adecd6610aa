"""Stochastic-gradient MCMC on the parameters of a UGM: Langevin dynamics whose gradient
of log p(θ | data) comes from any negative-phase estimator, on minibatches.

In the unconstrained space u of the parameters, with θ = T(u)::

    ∇ log p(u | x) = ∇ log p(θ) + ∇ log |det ∂θ/∂u|
                     + N (mean_batch ∇F(x_n; θ) − E_θ[∇F]),

where the estimator supplies E_θ[∇F] from its weighted particles, as in learning (the
update of :class:`~numpyro_ugm.MLE`). SGLD (Welling & Teh 2011) moves

    u ← u + ε/2 · ∇ log p(u | x) + N(0, ε),

and the RMSprop-preconditioned variant (pSGLD, Li et al. 2016) scales both terms by
G = 1 / (λ + sqrt(V)), V a running mean of the squared gradient (the term of the
drift from the change of G is left out, as in that paper). With a step size that decays
to 0, the chain targets the posterior; with a constant one, a nearby distribution whose
error grows with ε and with the gradient's noise (minibatch and estimator).
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..runtime.checks import as_key, check_count
from ..learn.checkpoints import DEFAULT_KEEP
from ..learn.core import LearnerCore, LearnState
from ..learn.mle import MLE

#: recorded parameters among the per-sample diagnostics (and in checkpoints)
PREFIX = "params/"


class SGLDState(NamedTuple):
    """State of :func:`sgld`: the step count, the running mean of squared
    gradients (preconditioned variant) and the key of the noise."""

    count: jax.Array
    mean_square: Any
    rng_key: jax.Array


def sgld(rng_key: jax.Array, step_size: float | Callable, *,
         preconditioned: bool = False, decay: float = 0.99,
         eps: float = 1e-5) -> optax.GradientTransformation:
    """The stochastic-gradient Langevin move (SGLD; pSGLD when ``preconditioned``) as an
    optax transformation of the gradient of −log p(u | x); not the sampler of the state
    :func:`ugm.kernels.langevin <numpyro_ugm.kernels.langevin>`.

    Parameters
    ----------
    rng_key : jax PRNGKey
        Key of the injected noise.
    step_size : float or callable
        ε, or an optax schedule ``count -> ε_t`` (e.g. ``a (b + t)^−γ`` with γ in
        (0.5, 1]).
    preconditioned : bool
        RMSprop preconditioning (pSGLD) with running-mean ``decay`` and ``eps`` (λ).

    Returns
    -------
    optax.GradientTransformation
        ``update(g, state)`` with g = −∇ log p(u | x) returns
        −ε/2 · G g + sqrt(ε G) ξ (G = 1 without preconditioning).
    """
    schedule = step_size if callable(step_size) else (lambda count: step_size)

    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params) if preconditioned else None
        return SGLDState(jnp.zeros((), jnp.int32), zeros, as_key(rng_key, "sgld"))

    def update(grads, state, params=None):
        eps_t = schedule(state.count)
        key, noise_key = jax.random.split(state.rng_key)
        leaves, tree = jax.tree.flatten(grads)
        keys = jax.random.split(noise_key, len(leaves))
        noise = tree.unflatten([jax.random.normal(k, g.shape, g.dtype)
                                for k, g in zip(keys, leaves)])
        mean_square = state.mean_square
        if preconditioned:
            mean_square = jax.tree.map(lambda v, g: decay * v + (1.0 - decay) * g * g,
                                       mean_square, grads)
            scale = jax.tree.map(lambda v: 1.0 / (eps + jnp.sqrt(v)), mean_square)
        else:
            scale = jax.tree.map(jnp.ones_like, grads)
        updates = jax.tree.map(
            lambda g, G, z: -0.5 * eps_t * G * g + jnp.sqrt(eps_t * G) * z,
            grads, scale, noise)
        return updates, SGLDState(state.count + 1, mean_square, key)

    return optax.GradientTransformation(init, update)


class PosteriorCore(LearnerCore):
    """The learning update with the log posterior density in the unconstrained space
    as its objective (N times the log-likelihood, the log prior and the log-Jacobian),
    so that its gradient is the drift of Langevin dynamics."""

    def objective(self, unconstrained, params, positive, negative):
        return (self.num_examples * (positive - negative)
                + self.param_model.log_prior(params)
                + self.param_space.log_abs_det_jacobian(unconstrained))


def record_params(core: LearnerCore, state: LearnState) -> dict:
    """The parameters of ``state`` (constrained), named ``params/<site>``: what
    :meth:`SGMCMC.run` records with each sample (``MLE.run``'s ``record``)."""
    return {PREFIX + name: value for name, value in core.get_params(state).items()}


class SGMCMCResult(NamedTuple):
    """What :meth:`SGMCMC.run` returns.

    Attributes
    ----------
    samples : dict of str -> array ``(num_samples, *site_shape)``
        Every parameter site, constrained (sites without a prior under a flat prior).
    state : LearnState
        The final state (pass as ``init_state`` to continue).
    diagnostics : dict of str -> array ``(num_samples,)``
        The diagnostics of the update that produced each sample (``grad_norm``, the
        estimator's ESS, ...).
    """

    samples: dict
    state: Any
    diagnostics: dict


class SGMCMC(MLE):
    """Stochastic-gradient Langevin dynamics on a UGM's parameters.

    The learner :class:`~numpyro_ugm.MLE` built with :class:`PosteriorCore` (the log
    posterior density in the unconstrained space as objective) and the Langevin step of
    :func:`sgld` as optimizer, and run with the parameters recorded: same estimators,
    minibatches, device mesh, checkpoints and step API (CRF ``inputs`` pass through to the
    learner but have not been checked against an exact posterior).

    Parameters
    ----------
    model : callable or UGM
        numpyro model; parameters with a prior are sampled under it, ``numpyro.param``
        sites under a flat prior.
    estimator : Estimator
        Negative-phase estimator, e.g. ``ugm.PCD(100)``.
    step_size : float or callable
        ε or a schedule ``count -> ε_t`` (counted over warmup and sampling).
    preconditioned : bool
        RMSprop-preconditioned SGLD (pSGLD).
    decay, eps : float
        pSGLD's running-mean decay and λ.
    mesh : jax.sharding.Mesh, optional
        As for :class:`~numpyro_ugm.MLE`.

    Examples
    --------
    >>> sampler = ugm.posterior.SGMCMC(model, ugm.PCD(100), 1e-4)
    >>> result = sampler.run(jax.random.PRNGKey(0), 2000, {"x": x}, num_warmup=1000)
    >>> result.samples["W"].shape                              # doctest: +SKIP
    """

    def __init__(self, model, estimator, step_size, *, preconditioned: bool = False,
                 decay: float = 0.99, eps: float = 1e-5, mesh=None):
        if not callable(step_size) and not (np.isfinite(step_size) and step_size > 0):
            raise ValueError(f"SGMCMC: step_size must be a positive number or a schedule, "
                             f"got {step_size!r}")
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"SGMCMC: decay must be in [0, 1), got {decay!r}")
        if not eps > 0.0:
            raise ValueError(f"SGMCMC: eps must be > 0, got {eps!r}")
        self.step_size, self.preconditioned = step_size, bool(preconditioned)
        self.decay, self.eps = float(decay), float(eps)
        # the noise key is a placeholder: init() gives every run its own
        step = sgld(jax.random.PRNGKey(0), step_size, preconditioned=self.preconditioned,
                    decay=self.decay, eps=self.eps)
        super().__init__(model, estimator, step, mesh=mesh, core_class=PosteriorCore)

    def init(self, rng_key, data, *model_args, inputs=None, batch_size=None,
             init_params=None, **model_kwargs):
        """As :meth:`MLE.init <numpyro_ugm.MLE.init>`; the Langevin noise draws from a
        key split off ``rng_key``."""
        rng_key, noise_key = jax.random.split(as_key(rng_key, "SGMCMC.init"))
        state = super().init(rng_key, data, *model_args, inputs=inputs,
                             batch_size=batch_size, init_params=init_params, **model_kwargs)
        return state._replace(opt_state=state.opt_state._replace(rng_key=noise_key))

    def run(self, rng_key, num_samples, data, *model_args, num_warmup=1000, thinning=1,
            inputs=None, batch_size=None, progress_bar=True, init_state=None,
            init_params=None, checkpoint_every=None, checkpoint_dir=None,
            checkpoint_keep=DEFAULT_KEEP, **model_kwargs) -> SGMCMCResult:
        """Warm up for ``num_warmup`` updates, then record ``num_samples`` parameters,
        one every ``thinning`` updates: two runs of :meth:`MLE.run
        <numpyro_ugm.MLE.run>`, the second with ``thinning`` and :func:`record_params`.

        Parameters
        ----------
        rng_key : jax PRNGKey
        num_samples : int
        data : dict of str -> array
            Observed state sites with a leading example axis (data representation).
        *model_args, **model_kwargs
            Arguments of the model function.
        num_warmup : int
            Updates before the first sample (their diagnostics are not returned).
        thinning : int
            Updates per sample.
        inputs, batch_size, init_params, progress_bar
            As for :meth:`MLE.run <numpyro_ugm.MLE.run>`.
        init_state : LearnState, optional
            Continue from this state (e.g. ``result.state``, or one from
            :meth:`~numpyro_ugm.MLE.restore`).
        checkpoint_every, checkpoint_dir, checkpoint_keep
            As for :meth:`MLE.run <numpyro_ugm.MLE.run>`: every ``checkpoint_every``
            updates (a multiple of ``thinning``) of the warm-up and of the sampling. A
            checkpoint's diagnostics (:meth:`~numpyro_ugm.MLE.restore`) are indexed by
            update: the samples so far are the ``params/<site>`` entries of the updates
            that produced them (NaN elsewhere).

        Returns
        -------
        SGMCMCResult

        Raises
        ------
        NonFiniteError
            When an update produces non-finite values (the step size is too large for
            the gradient's scale, or the estimator failed); it carries the last good
            state.
        """
        num_samples = check_count("SGMCMC.run", "num_samples", num_samples)
        num_warmup = check_count("SGMCMC.run", "num_warmup", num_warmup, minimum=0)
        thinning = check_count("SGMCMC.run", "thinning", thinning)
        if checkpoint_every is not None and check_count(
                "SGMCMC.run", "checkpoint_every", checkpoint_every) % thinning:
            raise ValueError(f"SGMCMC.run: checkpoint_every ({checkpoint_every}) must be a "
                             f"multiple of thinning ({thinning})")
        settings = dict(inputs=inputs, batch_size=batch_size, progress_bar=progress_bar,
                        checkpoint_every=checkpoint_every, checkpoint_dir=checkpoint_dir,
                        checkpoint_keep=checkpoint_keep)
        state = super().run(rng_key, num_warmup, data, *model_args, init_state=init_state,
                            init_params=init_params, **settings, **model_kwargs).state
        result = super().run(None, num_samples * thinning, data, *model_args,
                             init_state=state, thinning=thinning, record=record_params,
                             **settings, **model_kwargs)
        recorded = dict(result.diagnostics)
        samples = {n[len(PREFIX):]: recorded.pop(n) for n in list(recorded)
                   if n.startswith(PREFIX)}
        return SGMCMCResult(samples, result.state, recorded)
