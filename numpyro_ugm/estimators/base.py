"""The interface every negative-phase estimator implements.

An estimator is a configuration object (a frozen dataclass, like the kernel specs and
optax transformations: hashable, equal by value, validated once at construction) with

* ``init(rng_key, target, params, batch) -> state``
* ``update(rng_key, state, target, params, batch) -> (state, Particles, info)``
* optionally ``record_gradients(state, grads) -> state``: the learner hands it the
  gradient each update took (MCMC-MLE ends a round on it)

where ``target`` is the model's :class:`~numpyro_ugm.model.target.Target` (latent sites set),
``params`` the current parameters θ_t (constrained space), ``batch`` the current data
batch in the model representation, and :class:`Particles` the weighted configurations
whose weighted mean of ∇θ f estimates the negative phase E_{p(·;θ_t)}[∇θ f]. ``info`` is
the estimator's own ``NamedTuple`` of scalar diagnostics (``PCDInfo``, ``PFInfo``, ...),
with only the fields that apply to it.

Every estimator calls the number of kernel steps per move ``num_mcmc_steps`` (blackjax's
name; a kernel's own sweeps per step are its ``num_sweeps``), takes ``num_particles`` as
its only positional argument (CD, which has no particles, none) and every other setting,
``kernel`` among them, by keyword.
"""

from typing import Any, ClassVar, NamedTuple, Optional

import jax
import jax.numpy as jnp
from blackjax.smc import resampling as bj_resampling

from ..runtime.checks import check_count
from ..conditionals import block_logits, scatter
from ..kernels import gibbs
from ..kernels.base import (Kernel, KernelSpec, as_spec, bound_kernel, init_chains,
                            refresh_chains, sample_labels, step_chains)


class ChainInfo(NamedTuple):
    """Diagnostics of an update by equally weighted chains (CD, PCD).

    Attributes
    ----------
    ess : the number of chains (uniform weights)
    acceptance : mean kernel acceptance (1 for Gibbs)
    """

    ess: jax.Array
    acceptance: jax.Array


class Particles(NamedTuple):
    """Weighted configurations.

    Attributes
    ----------
    position : dict of str -> array (S, ...)
        Model-representation values of every state site.
    log_weights : array (S,)
        Normalized log-weights (``logsumexp(log_weights) == 0``).
    """

    position: dict
    log_weights: jax.Array


def uniform_log_weights(num_particles: int) -> jax.Array:
    """Normalized log-weights of ``num_particles`` equally weighted particles."""
    return jnp.full((num_particles,), -jnp.log(num_particles))


def normalize(log_weights: jax.Array) -> jax.Array:
    """Log-weights shifted so that ``logsumexp == 0``.

    NaN weights count as zero; if no weight is left (all zero, or an infinite one),
    the particles fall back to equal weights rather than NaN (the ESS then reports the
    collapse on the step that caused it).
    """
    log_weights = jnp.where(jnp.isnan(log_weights), -jnp.inf, log_weights)
    total = jax.nn.logsumexp(log_weights)
    uniform = jnp.full_like(log_weights, -jnp.log(log_weights.shape[0]))
    return jnp.where(jnp.isfinite(total), log_weights - total, uniform)


#: resampling schemes of ``blackjax.smc.resampling`` by name
RESAMPLING = ("systematic", "stratified", "multinomial", "residual")


def resample(rng_key: jax.Array, position: dict, log_weights: jax.Array,
             method: str = "systematic", num_samples: Optional[int] = None) -> dict:
    """Resample ``num_samples`` particles (default: as many as there are) in proportion
    to their weights (blackjax's schemes).

    Equally weighted particles are returned unchanged (a random subset of
    ``num_samples`` of them, if fewer): resampling them would only add noise (and this
    keeps PF with unit weights identical to PCD).
    """
    num = log_weights.shape[0]
    num_samples = num if num_samples is None else num_samples
    weights = jnp.exp(normalize(log_weights))
    idx = getattr(bj_resampling, method)(rng_key, weights, num_samples)
    uniform = jnp.all(log_weights == log_weights[0])
    kept = (jnp.arange(num) if num_samples == num
            else jax.random.permutation(jax.random.fold_in(rng_key, 1), num)[:num_samples])
    idx = jnp.where(uniform, kept, idx)
    return jax.tree.map(lambda a: a[idx], position)


def resample_where(low: jax.Array, rng_key: jax.Array, position: dict,
                   log_weights: jax.Array, method: str = "systematic"
                   ) -> tuple[dict, jax.Array]:
    """Weighted particles resampled (equal weights after) where ``low`` is true, else
    kept with their weights: a move by a kernel that leaves their target invariant keeps
    either set proper, and resampling even weights would only add noise."""
    drawn = resample(rng_key, position, log_weights, method)
    position = jax.tree.map(lambda a, b: jnp.where(low, a, b), drawn, position)
    uniform = uniform_log_weights(log_weights.shape[0]).astype(log_weights.dtype)
    return position, jnp.where(low, uniform, log_weights)




class Estimator:
    """Base class of the estimators (frozen dataclasses): the kernel they move particles
    with, and the validation helpers their ``__post_init__`` uses."""

    kernel: Optional[KernelSpec] = None
    #: whether the particles carry importance weights, whose ESS measures how far they
    #: collapsed (False for CD and PCD: their ESS is the number of chains)
    importance_weighted: ClassVar[bool] = True

    def build_kernel(self, target) -> Kernel:
        """The kernel (default: systematic-scan block Gibbs) bound to ``target``, built
        once per target and kernel spec (:func:`~numpyro_ugm.kernels.base.bound_kernel`)."""
        return bound_kernel(as_spec(self.kernel, gibbs()), target)

    def init(self, rng_key: jax.Array, target, params: dict, batch: Optional[dict]) -> Any:
        """The estimator's state before the first update."""
        raise NotImplementedError

    def update(self, rng_key: jax.Array, state: Any, target, params: dict,
               batch: Optional[dict]) -> tuple[Any, "Particles", NamedTuple]:
        """Move and weight the particles for the parameters ``params``."""
        raise NotImplementedError

    def record_gradients(self, state: Any, grads: dict) -> Any:
        """Hand the estimator the log-likelihood gradient its particles gave this update
        (unconstrained space); the state after. Default: nothing is kept (MCMC-MLE uses
        it to end a round at the importance-sampled optimum)."""
        return state

    # --- validation, once, in __post_init__ --------------------------------------------
    def _owner(self) -> str:
        return type(self).__name__

    def _set(self, name: str, value: Any) -> None:
        """Store a validated (normalized) setting on the frozen instance."""
        object.__setattr__(self, name, value)

    def _check_kernel(self) -> None:
        try:
            as_spec(self.kernel, None)
        except TypeError as error:
            raise TypeError(f"{self._owner()}: {error}") from None

    def _check_count(self, name: str, minimum: int = 1) -> None:
        """An integer setting >= ``minimum`` (see :func:`~numpyro_ugm.runtime.checks.check_count`)."""
        self._set(name, check_count(self._owner(), name, getattr(self, name), minimum))

    def _check_number(self, name: str, accepts, expected: str) -> None:
        """A real setting that ``accepts(value)`` (NaN fails every comparison), stored as
        a float; else a ``ValueError`` saying it must be ``expected``."""
        value = float(getattr(self, name))
        if not accepts(value):
            raise ValueError(f"{self._owner()}: {name} must be {expected}, got "
                             f"{getattr(self, name)}")
        self._set(name, value)

    def _check_fraction(self, name: str, high_open: bool = True) -> None:
        """A fraction in (0, 1) (or (0, 1] when ``high_open`` is False)."""
        self._check_number(name, lambda v: 0.0 < v < 1.0 or (not high_open and v == 1.0),
                           "in (0, 1)" if high_open else "in (0, 1]")

    def _check_resampling(self) -> None:
        if self.resampling not in RESAMPLING:
            raise ValueError(f"{self._owner()}: resampling must be one of {RESAMPLING}, "
                             f"got {self.resampling!r}")


def move(kernel: Kernel, rng_key: jax.Array, position: dict, logdensity_fn,
         num_mcmc_steps: int) -> tuple[dict, jax.Array]:
    """Run ``num_mcmc_steps`` kernel steps on every particle (vmapped), from fresh kernel
    states.

    Returns
    -------
    position : dict of (S, ...) arrays
    acceptance : scalar, mean kernel acceptance (1 for Gibbs)
    """
    states = init_chains(kernel, position, logdensity_fn)
    states, acceptance = move_states(kernel, rng_key, states, logdensity_fn,
                                     num_mcmc_steps)
    return states.position, acceptance


def move_states(kernel: Kernel, rng_key: jax.Array, states: Any, logdensity_fn,
                num_mcmc_steps: int) -> tuple[Any, jax.Array]:
    """Run ``num_mcmc_steps`` kernel steps on a batch of kernel states (kept between
    updates by persistent estimators, so that e.g. parallel tempering's replicas persist),
    carried over to ``logdensity_fn`` first (``kernel.refresh``)."""
    states = refresh_chains(kernel, states, logdensity_fn)

    def body(states, key):
        states, info = step_chains(kernel, key, states, logdensity_fn)
        return states, jnp.mean(info.acceptance_rate)

    states, acceptance = jax.lax.scan(body, states,
                                      jax.random.split(rng_key, num_mcmc_steps))
    return states, jnp.mean(acceptance) if num_mcmc_steps else jnp.ones(())


def sample_latent(target, params: dict, rng_key: jax.Array, position: dict) -> dict:
    """Draw the latent sites exactly from p(latent | observed) for each particle.

    Requires latent sites that do not interact with each other (the learner checks);
    their conditional then factorizes and is read off one gradient.
    """
    if not target.latent_sites:
        return position
    domains = target.state_sites
    block = {s: None for s in target.latent_sites}

    def one(key, x):
        logits = block_logits(target.logdensity_fn(params), x, domains, block,
                              target.structure.multilinear)
        keys = jax.random.split(key, len(block))
        for k, s in zip(keys, block):
            labels = sample_labels(k, logits[s])
            x = {**x, s: scatter(x[s], domains[s], None,
                                 domains[s].label_to_model(labels, x[s].dtype))}
        return x

    num = jax.tree.leaves(position)[0].shape[0]
    return jax.vmap(one)(jax.random.split(rng_key, num), position)


def with_latent(target, rng_key: jax.Array, batch: dict) -> dict:
    """Complete an observed batch with uniformly random latent sites."""
    num = jax.tree.leaves(batch)[0].shape[0]
    keys = jax.random.split(rng_key, max(len(target.latent_sites), 1))
    out = dict(batch)
    for k, s in zip(keys, target.latent_sites):
        out[s] = target.state_sites[s].sample(k, (num,))
    return out
