"""The interface every negative-phase estimator implements.

An estimator is a configuration object (a frozen dataclass, like the kernel specs and
optax transformations: hashable, equal by value, validated once at construction) with

* ``init(rng_key, target, params, batch) -> state``
* ``update(rng_key, state, target, params, batch) -> (state, Particles, info)``

where ``target`` is the model's :class:`~numpyro_ugm.target.Target` (latent sites set),
``params`` the current parameters θ_t (constrained space), ``batch`` the current data
batch in the model representation, and :class:`Particles` the weighted configurations whose weighted mean of
∇θ f estimates the negative phase E_{p(·;θ_t)}[∇θ f]. ``info`` is the estimator's own
``NamedTuple`` of scalar diagnostics (``PCDInfo``, ``PFInfo``, ...), with only the fields
that apply to it.

Every estimator calls the number of kernel steps per move ``num_mcmc_steps`` (blackjax's
name) and takes its ``kernel`` by keyword.
"""

import math
from typing import Any, ClassVar, NamedTuple, Optional

import jax
import jax.numpy as jnp
from blackjax.smc import resampling as bj_resampling
from blackjax.smc.ess import ess

from .._checks import check_count
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


def distinct_log_sum(target, params: dict, position: dict) -> jax.Array:
    """log Σ_x exp F(x; θ) over the distinct configurations x among the rows of
    ``position`` (the rows' free energies, latent sites summed out): a lower bound on
    log Z(θ), however the rows were drawn.

    Rows are told apart by a hash of their values' bits (integer arithmetic, so equal
    rows hash equally); rows sharing a hash count once, so a collision only loosens
    the bound.
    """
    energy = target.free_energies(params, position)
    leaves = [jnp.asarray(leaf).reshape(energy.shape[0], -1) for leaf in
              jax.tree.leaves(position)]
    bits = jnp.concatenate([jax.lax.bitcast_convert_type(
        leaf.astype(jnp.float32) + 0.0, jnp.uint32) for leaf in leaves], axis=1)
    salts = jax.random.bits(jax.random.PRNGKey(0), (bits.shape[1],), jnp.uint32)
    mixed = bits ^ salts  # each column its own salt, then an integer mixing function
    for shift, factor in ((16, 0x7FEB352D), (15, 0x846CA68B)):
        mixed = (mixed ^ (mixed >> shift)) * jnp.uint32(factor)
    hashes = jnp.sum(mixed ^ (mixed >> 16), axis=1, dtype=jnp.uint32)
    order = jnp.argsort(hashes)
    sorted_hashes = hashes[order]
    first = jnp.concatenate([jnp.ones((1,), bool), sorted_hashes[1:] != sorted_hashes[:-1]])
    return jax.nn.logsumexp(jnp.where(first, energy[order], -jnp.inf))


def log_z_below_bound(target, params: dict, batch: dict, position: dict,
                      log_z: jax.Array, log_z_var: jax.Array) -> jax.Array:
    """Whether a running log Z is below a lower bound on log Z(θ) by more than three of
    its standard errors: an impossible estimate (the configurations seen would hold more
    than probability one).

    The bound: F(x; θ) summed over the distinct configurations among the training
    cases of ``batch`` and the particles' observed sites (:func:`distinct_log_sum`).
    Falling below it shows mass that no particle holds, which neither the ESS nor a
    kernel step can see.
    """
    rows = jax.tree.map(lambda a, b: jnp.concatenate([a, b.astype(a.dtype)]), batch,
                        {site: position[site] for site in batch})
    return distinct_log_sum(target, params, rows) > log_z + 3.0 * jnp.sqrt(log_z_var)


class Estimator:
    """Base class of the estimators (frozen dataclasses): the kernel they move particles
    with, and the validation helpers their ``__post_init__`` uses."""

    kernel: Optional[KernelSpec] = None
    #: whether the particles carry importance weights, whose ESS measures how far they
    #: collapsed (False for CD and PCD: their ESS is the number of chains)
    importance_weighted: ClassVar[bool] = True

    def build_kernel(self, target) -> Kernel:
        """The kernel (default: systematic-scan block Gibbs) bound to ``m``."""
        return as_spec(self.kernel, gibbs()).build(target)

    def init(self, rng_key: jax.Array, target, params: dict, batch: Optional[dict]) -> Any:
        """The estimator's state before the first update."""
        raise NotImplementedError

    def update(self, rng_key: jax.Array, state: Any, target, params: dict,
               batch: Optional[dict]) -> tuple[Any, "Particles", NamedTuple]:
        """Move and weight the particles for the parameters ``params``."""
        raise NotImplementedError

    def observe(self, state: Any, grads: dict) -> Any:
        """Hand the estimator the log-likelihood gradient its particles gave this update
        (unconstrained space); the state after. Default: nothing is kept (MCMC-MLE uses
        it to end a round at the importance-sampled optimum)."""
        return state

    def _impossible_log_z(self, target, params, batch, position, log_z, log_z_var
                          ) -> tuple[bool, jax.Array]:
        """Whether an update on ``batch`` checks its running log Z (static: the
        estimator's ``check_log_z`` and training cases to bound it with) and whether the
        running log Z is impossible (:func:`log_z_below_bound`; False unchecked)."""
        checks = bool(getattr(self, "check_log_z", False)) and batch is not None
        if not checks:
            return False, jnp.zeros((), bool)
        return True, log_z_below_bound(target, params, batch, position, log_z, log_z_var)

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
        """An integer setting >= ``minimum`` (see :func:`~numpyro_ugm._checks.check_count`)."""
        self._set(name, check_count(self._owner(), name, getattr(self, name), minimum))

    def _check_fraction(self, name: str, high_open: bool = True) -> None:
        """A fraction in (0, 1) (or (0, 1] when ``high_open`` is False)."""
        value = float(getattr(self, name))
        if not (0.0 < value < 1.0 or (not high_open and value == 1.0)):
            interval = "(0, 1)" if high_open else "(0, 1]"
            raise ValueError(f"{self._owner()}: {name} must be in {interval}, got {value}")
        self._set(name, value)

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


class Reweighted(NamedTuple):
    """Particles reweighted to new parameters by :func:`reweight`.

    Attributes
    ----------
    log_weights : (S,) normalized log-weights at the new parameters
    ess : effective sample size of ``log_weights`` (a count, blackjax's ``smc.ess``)
    log_z : running estimate of log Z at the new parameters
    log_z_var : its approximate variance (see :func:`reweight`)
    free_energy : (S,) F(x_s; θ_t) at the new parameters
    triggered : whether the ESS fell below the threshold or the count reached ``every``
    """

    log_weights: jax.Array
    ess: jax.Array
    log_z: jax.Array
    log_z_var: jax.Array
    free_energy: jax.Array
    triggered: jax.Array


def reweight(target, params: dict, position: dict, reference_free_energy: jax.Array,
             log_z: jax.Array, *, threshold: float, count: jax.Array,
             every: Optional[int] = None, log_weights: Optional[jax.Array] = None,
             temperature: float = 1.0, log_z_var: jax.Array = 0.0,
             segment_log_weights: Optional[jax.Array] = None) -> Reweighted:
    """Importance-reweight particles from reference parameters to ``params``, and decide
    whether they need renewing (PF's resampling, MCMC-MLE's new round).

    The increments F(x_s; θ_t) − F(x_s; θ_ref) (latent sites summed out) multiply the
    weights; their weighted mean estimates Z(θ_t) / Z(θ_ref), added to ``log_z``.

    Parameters
    ----------
    target : Target
    params : parameters θ_t
    position : dict of (S, ...) arrays, the particles
    reference_free_energy : (S,) array
        F(x_s; θ_ref) at the parameters the weights (and ``log_z``) refer to.
    log_z : running estimate of log Z(θ_ref)
    threshold : float
        Trigger when the ESS falls below ``threshold``·S.
    count : int array
        Updates since the particles were last renewed, this one included.
    every : int, optional
        Also trigger when ``count`` reaches it.
    log_weights : (S,) array, optional
        Normalized log-weights at θ_ref (carried recursively by PF, and into
        MCMC-MLE's rounds). ``None``: the particles are an unweighted sample from θ_ref
        (the paper's MCMC-MLE rounds).
    temperature : float > 0
        The weights (not ``log_z``) use the increments divided by it (``inf``: unit
        weights).
    log_z_var : float array
        Variance of the running ``log_z`` when the particles were last renewed.
    segment_log_weights : (S,) array, optional
        Normalized log-weights W⁰ the particles had when they were last renewed
        (``None``: uniform).

    Notes
    -----
    Since the particles were last renewed, the running estimate is one importance
    sampling estimate with the weights W⁰, whose delta-method variance is
    Σ_s (W_s − W⁰_s)² (1/ESS − 1/S for uniform W⁰); ``log_z_var`` adds it to the
    variance banked at the renewal. It treats the particles as independent draws and
    cannot see mass that no particle holds: a lower bound on the error, in practice.
    """
    current = target.free_energies(params, position)
    delta = current - reference_free_energy
    num = delta.shape[0]
    if log_weights is None:
        log_z = log_z + jax.nn.logsumexp(delta) - jnp.log(jnp.asarray(num, delta.dtype))
        log_weights = normalize(delta)
    else:
        log_z = log_z + jax.nn.logsumexp(log_weights + delta)
        scaled = delta if temperature == 1.0 else (
            jnp.zeros_like(delta) if math.isinf(temperature) else delta / temperature)
        log_weights = normalize(log_weights + scaled)
    start = (jnp.full((num,), 1.0 / num, log_weights.dtype) if segment_log_weights is None
             else jnp.exp(segment_log_weights))
    log_z_var = log_z_var + jnp.sum((jnp.exp(log_weights) - start) ** 2)
    ess_value = ess(log_weights)
    triggered = ess_value < threshold * num
    if every is not None:
        triggered = triggered | (count >= every)
    return Reweighted(log_weights, ess_value, log_z, log_z_var, current, triggered)


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
