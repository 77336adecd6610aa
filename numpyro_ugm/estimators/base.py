"""The interface every negative-phase estimator implements.

An estimator is a configuration object (like an optax transformation) with

* ``init(rng_key, m, params, batch) -> state``
* ``update(rng_key, state, m, params, batch) -> (state, Particles, info)``

where ``m`` is the :class:`~numpyro_ugm.model.UGM` (observed sites set), ``params`` the
current parameters θ_t (constrained space), ``batch`` the current data batch in the model
representation, and :class:`Particles` the weighted configurations whose weighted mean of
∇θ f estimates the negative phase E_{p(·;θ_t)}[∇θ f]. ``info`` is a dict of scalars;
keys it lacks among :data:`INFO_KEYS` are filled with NaN by the learner.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from blackjax.smc import resampling as bj_resampling

from ..kernels import gibbs
from ..kernels.base import as_spec, sample_labels, step_chains
from ..conditionals import conditional_logits, free_energy, scatter

#: per-step diagnostics reported by every estimator (NaN where not applicable)
INFO_KEYS = ("ess", "resampled", "rejuvenated", "num_betas", "acceptance", "log_z")


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


def uniform_log_weights(num_particles):
    """Normalized log-weights of ``num_particles`` equally weighted particles."""
    return jnp.full((num_particles,), -jnp.log(num_particles))


def ess(log_weights):
    """Effective sample size (Σ w)² / Σ w² of (possibly unnormalized) log-weights."""
    return jnp.exp(2.0 * jax.nn.logsumexp(log_weights) - jax.nn.logsumexp(2.0 * log_weights))


def normalize(log_weights):
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


def check_resampling(owner, resampling):
    """Validate a resampling scheme name at construction."""
    if resampling not in RESAMPLING:
        raise ValueError(f"{owner}: resampling must be one of {RESAMPLING}, got "
                         f"{resampling!r}")
    return resampling


def check_fraction(owner, name, value, high_open=True):
    """Validate a fraction in (0, 1) (or (0, 1] when ``high_open`` is False)."""
    value = float(value)
    if not (0.0 < value < 1.0 or (not high_open and value == 1.0)):
        interval = "(0, 1)" if high_open else "(0, 1]"
        raise ValueError(f"{owner}: {name} must be in {interval}, got {value}")
    return value


def check_count(owner, name, value, minimum=1):
    """Validate an integer setting at construction."""
    if int(value) != value or int(value) < minimum:
        raise ValueError(f"{owner}: {name} must be an integer >= {minimum}, got {value}")
    return int(value)


def resample(rng_key, position, log_weights, method="systematic"):
    """Resample particles in proportion to their weights (blackjax's schemes).

    Equally weighted particles are returned unchanged: resampling them would only add
    noise (and this keeps PF with unit weights identical to PCD).
    """
    num = log_weights.shape[0]
    weights = jnp.exp(normalize(log_weights))
    idx = getattr(bj_resampling, method)(rng_key, weights, num)
    uniform = jnp.all(log_weights == log_weights[0])
    idx = jnp.where(uniform, jnp.arange(num), idx)
    return jax.tree.map(lambda a: a[idx], position)


def shard_particles(tree):
    """Split the leading (particle) axis over the first axis of the mesh set by the
    learner (``MLE(..., mesh=...)``); a no-op without one."""
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty:
        return tree
    axis = mesh.axis_names[0]
    count = mesh.shape[axis]
    spec = jax.sharding.PartitionSpec(axis)
    return jax.tree.map(
        lambda a: jax.lax.with_sharding_constraint(a, spec)
        if jnp.ndim(a) and a.shape[0] % count == 0 else a, tree)


def free_energies(m, params, position):
    """F(x_s; θ) for every particle: the log-potential with latent sites summed out."""
    return jax.vmap(free_energy, (None, None, 0))(m, params, position)


class Estimator:
    """Base class: holds the kernel spec and the particle-moving helpers."""

    kernel = None

    def build_kernel(self, m):
        """The kernel (default: systematic-scan block Gibbs) bound to ``m``."""
        return as_spec(self.kernel, gibbs()).build(m)

    def init(self, rng_key, m, params, batch):
        raise NotImplementedError

    def update(self, rng_key, state, m, params, batch):
        raise NotImplementedError


def move(kernel, rng_key, position, logdensity_fn, num_steps):
    """Run ``num_steps`` kernel steps on every particle (vmapped), from fresh kernel
    states.

    Returns
    -------
    position : dict of (S, ...) arrays
    acceptance : scalar, mean kernel acceptance (1 for Gibbs)
    """
    states = jax.vmap(lambda x: kernel.init(x, logdensity_fn))(position)
    states, acceptance = move_states(kernel, rng_key, states, logdensity_fn, num_steps)
    return states.position, acceptance


def move_states(kernel, rng_key, states, logdensity_fn, num_steps):
    """Run ``num_steps`` kernel steps on a batch of kernel states (kept between updates
    by persistent estimators, so that e.g. parallel tempering's replicas persist),
    carried over to ``logdensity_fn`` first (``kernel.refresh``)."""
    if kernel.refresh is None:
        states = jax.vmap(lambda x: kernel.init(x, logdensity_fn))(states.position)
    else:
        states = jax.vmap(lambda s: kernel.refresh(s, logdensity_fn))(states)

    def body(states, key):
        states, info = step_chains(kernel, key, states, logdensity_fn)
        return states, jnp.mean(info.acceptance_rate)

    states, acceptance = jax.lax.scan(body, states, jax.random.split(rng_key, num_steps))
    return states, jnp.mean(acceptance) if num_steps else jnp.ones(())


def sample_latent(m, params, rng_key, position):
    """Draw the latent sites exactly from p(latent | observed) for each particle.

    Requires latent sites that do not interact with each other (the learner checks);
    their conditional then factorizes and is read off one gradient.
    """
    if not m.latent_sites:
        return position
    domains = m.state_sites
    block = {s: None for s in m.latent_sites}

    def one(key, x):
        logits = conditional_logits(m.logdensity_fn(params), x, domains, block)
        keys = jax.random.split(key, len(block))
        for k, s in zip(keys, block):
            labels = sample_labels(k, logits[s])
            x = {**x, s: scatter(x[s], domains[s], None,
                                 domains[s].label_to_model(labels, x[s].dtype))}
        return x

    num = jax.tree.leaves(position)[0].shape[0]
    return jax.vmap(one)(jax.random.split(rng_key, num), position)


def with_latent(m, rng_key, batch):
    """Complete an observed batch with uniformly random latent sites."""
    num = jax.tree.leaves(batch)[0].shape[0]
    keys = jax.random.split(rng_key, max(len(m.latent_sites), 1))
    out = dict(batch)
    for k, s in zip(keys, m.latent_sites):
        out[s] = m.state_sites[s].sample(k, (num,))
    return out
