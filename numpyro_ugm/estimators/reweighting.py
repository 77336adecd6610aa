"""The reweighting estimators (PF, MCMC-MLE): particles drawn at reference parameters
carry importance weights to the current ones, with a running estimate of log Z.

Both run one update (:meth:`ReweightingEstimator.reweight_or_renew`): reweight the
particles to θ_t (:func:`reweight`), check the running log Z against a lower bound that
the training cases give (:func:`log_z_below_bound`), then keep the particles, renew them
(:func:`resample_and_move`) or re-anneal (draw particles and log Z afresh). What is each
estimator's own: when it renews and what keeping and renewing make of its state. PF's
reference moves to θ_t at every update, and a forced move is checked for equilibrium;
MCMC-MLE's stays at the θ_0 of its round, which a vanishing gradient also ends.
"""

import math
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
from blackjax.smc.ess import ess

from ..kernels.base import Kernel
from .base import Estimator, move, normalize, resample_where, uniform_log_weights
from .tempering import anneal_from_base


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


class Draw(NamedTuple):
    """Particles that refer to the current parameters θ: drawn afresh (an estimator's
    start, a re-anneal) or renewed (:func:`resample_and_move`).

    Attributes
    ----------
    position : dict of (S, ...) arrays
    log_weights : (S,) normalized log-weights at θ
    free_energy : (S,) F(x_s; θ)
    log_z : estimate of log Z(θ) (a renewal's: the running one)
    log_z_var : its approximate variance
    acceptance : mean kernel acceptance of the draw
    """

    position: dict
    log_weights: jax.Array
    free_energy: jax.Array
    log_z: jax.Array
    log_z_var: jax.Array
    acceptance: jax.Array


def resample_and_move(kernel: Kernel, rng_key: jax.Array, target, params: dict,
                      position: dict, reweighted: Reweighted, low: Optional[jax.Array],
                      num_mcmc_steps: int, resampling: str = "systematic") -> Draw:
    """Renew reweighted particles: resample them where ``low`` (else keep their weights:
    :func:`~.base.resample_where`; ``None``: give them equal weights, unresampled), then
    run ``num_mcmc_steps`` kernel steps at ``params``. ``log_z`` stays the running one."""
    if low is None:
        num = reweighted.log_weights.shape[0]
        log_weights = uniform_log_weights(num).astype(reweighted.log_weights.dtype)
    else:
        position, log_weights = resample_where(low, jax.random.fold_in(rng_key, 1), position,
                                               reweighted.log_weights, resampling)
    position, acceptance = move(kernel, rng_key, position, target.logdensity_fn(params),
                                num_mcmc_steps)
    return Draw(position, log_weights, target.free_energies(params, position),
                reweighted.log_z, reweighted.log_z_var,
                acceptance.astype(reweighted.free_energy.dtype))


class Renewal(NamedTuple):
    """What one update of :meth:`ReweightingEstimator.reweight_or_renew` did.

    Attributes
    ----------
    reweighted : Reweighted
        The particles reweighted to the current parameters, before any renewal.
    renewed : bool array
        Whether the particles were renewed (resampled and moved, or re-annealed).
    reannealed : bool array
        Whether the running log Z was impossible, so that they were re-annealed.
    low_ess : bool array or None
        Whether a renewal resamples them (their ESS is low; ``None``: it gives them equal
        weights instead).
    outcome : the output of the estimator's function for the branch taken
    """

    reweighted: Reweighted
    renewed: jax.Array
    reannealed: jax.Array
    low_ess: Optional[jax.Array]
    outcome: Any


class ReweightingEstimator(Estimator):
    """Base of the estimators whose particles carry importance weights from reference
    parameters to the current ones (PF, MCMC-MLE); their update is
    :meth:`reweight_or_renew`.

    Subclasses (frozen dataclasses) set ``num_particles``, ``num_mcmc_steps`` (kernel
    steps per renewal), ``resample_threshold`` (a renewal resamples the particles when
    their ESS is below this fraction of S, else keeps their weights; ``None``: it gives
    them equal weights), ``check_log_z`` and, optionally, ``resampling`` (the scheme).
    """

    def _fresh(self, kernel: Kernel, rng_key: jax.Array, target, params: dict) -> Draw:
        """Particles and log Z(θ) drawn afresh (the first draw, a re-anneal): tempering
        uniform draws to p(·; θ) (:func:`~.tempering.anneal_from_base`)."""
        result = anneal_from_base(target, kernel, rng_key, params, self.num_particles)
        return Draw(result.position, result.log_weights,
                    target.free_energies(params, result.position), result.log_z_increment,
                    result.log_z_var, result.acceptance)

    def reweight_or_renew(self, rng_key: jax.Array, target, params: dict,
                          batch: Optional[dict], position: dict,
                          reference_free_energy: jax.Array, log_z: jax.Array, *,
                          keep: Callable, renew: Callable, reanneal: Callable,
                          also_renew: Optional[jax.Array] = None, **reweighting) -> Renewal:
        """One update: reweight the particles to ``params`` (:func:`reweight`), check the
        running log Z (:func:`log_z_below_bound`, with ``check_log_z`` and a batch), then
        keep them, renew them (:func:`resample_and_move`) or re-anneal (:meth:`_fresh`).

        Parameters
        ----------
        rng_key, target, params, batch : those of ``update``
        position, reference_free_energy, log_z : the particles, their F(x; θ_ref) and the
            running log Z(θ_ref) (see :func:`reweight`)
        keep : callable ``(reweighted) -> outcome``
            No renewal: the weights alone carry the particles to θ_t.
        renew : callable ``(reweighted, draw) -> outcome``
            A renewal, when :func:`reweight` triggers or ``also_renew`` holds; ``draw``
            is the :class:`Draw` of :func:`resample_and_move`.
        reanneal : callable ``(reweighted, draw) -> outcome``
            When the running log Z is impossible; ``draw`` is :meth:`_fresh`'s (in the
            dtypes of the reweighted particles'). This branch is compiled only where the
            check runs.
        also_renew : bool array, optional
            The estimator's own trigger of a renewal (MCMC-MLE's gradient test).
        **reweighting
            Keyword arguments of :func:`reweight` (``threshold``, ``count``, ...).

        The three functions return outcomes of one structure and dtypes
        (``jax.lax.switch``).
        """
        kernel = self.build_kernel(target)
        new = reweight(target, params, position, reference_free_energy, log_z, **reweighting)
        checks = self.check_log_z and batch is not None
        impossible = (log_z_below_bound(target, params, batch, position, new.log_z,
                                        new.log_z_var) if checks else jnp.zeros((), bool))
        renewing = new.triggered if also_renew is None else new.triggered | also_renew
        renewing = renewing | impossible
        # outside the branches: inside, it changed the rounding of PF's equilibrium check
        low = (None if self.resample_threshold is None
               else new.ess < self.resample_threshold * self.num_particles)

        def renewal(_):
            return renew(new, resample_and_move(
                kernel, rng_key, target, params, position, new, low, self.num_mcmc_steps,
                getattr(self, "resampling", "systematic")))

        def reannealing(_):
            fresh = self._fresh(kernel, jax.random.fold_in(rng_key, 2), target, params)
            return reanneal(new, fresh._replace(
                log_weights=fresh.log_weights.astype(new.log_weights.dtype),
                log_z=fresh.log_z.astype(new.log_z.dtype),
                log_z_var=fresh.log_z_var.astype(new.log_z_var.dtype),
                acceptance=fresh.acceptance.astype(new.free_energy.dtype)))

        branches = (lambda _: keep(new), renewal)
        if checks:  # the re-anneal is compiled only where the check can ask for it
            branches += (reannealing,)
        branch = jnp.where(impossible, 2, renewing.astype(jnp.int32))
        return Renewal(new, renewing, impossible, low,
                       jax.lax.switch(branch, branches, None))
