"""The update PF and MCMC-MLE share (estimators/reweighting.py): the reweighting step
and its running log Z with a calibrated standard error, the choice between keeping,
renewing and re-annealing the particles, the renewal's resampling, and the log Z
check's bound and re-anneal."""

import dataclasses
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers.paths import vbm8_path as vbm8

import numpyro_ugm as ugm
from numpyro_ugm.estimators.base import normalize
from numpyro_ugm.estimators.reweighting import (Draw, ReweightingEstimator, distinct_log_sum,
                                                resample_and_move, reweight)
from numpyro_ugm.evaluate import exact


def four_spins():
    """The 4-spin VBM (16 states) with every parameter 0.3."""
    m = ugm.UGM(ugm.models.vbm, 4).observe(["x"])
    return m, jax.tree.map(lambda a: 0.3 * jnp.ones_like(a),
                           m.init_params(jax.random.PRNGKey(0)))


# --- the reweighting step -------------------------------------------------------------


def test_reweight_with_and_without_carried_weights():
    """PF's recursive weights from uniform ones equal MCMC-MLE's weights from its sample
    (up to rounding), and both triggers (ESS, count) fire as documented."""
    m, params = four_spins()
    position = m.target().random_state(jax.random.PRNGKey(3), (32,))
    reference = jax.tree.map(lambda a: 0.5 * a, params)
    energy = m.target().free_energies(reference, position)
    uniform = jnp.full((32,), -jnp.log(32.0))
    sample = reweight(m.target(), params, position, energy, jnp.asarray(1.0), threshold=0.5,
                      count=jnp.asarray(1))
    carried = reweight(m.target(), params, position, energy, jnp.asarray(1.0), threshold=0.5,
                       count=jnp.asarray(1), log_weights=uniform)
    np.testing.assert_allclose(sample.log_weights, carried.log_weights, rtol=1e-5)
    np.testing.assert_allclose(sample.log_z, carried.log_z, rtol=1e-6)
    np.testing.assert_allclose(sample.log_weights,
                               normalize(m.target().free_energies(params, position) - energy))
    assert float(sample.ess) == pytest.approx(float(
        1.0 / jnp.sum(jnp.exp(sample.log_weights) ** 2)), rel=1e-4)
    assert bool(reweight(m.target(), params, position, energy, 0.0, threshold=2.0,
                         count=1).triggered)
    assert not bool(reweight(m.target(), params, position, energy, 0.0, threshold=0.0,
                             count=1, every=2).triggered)
    assert bool(reweight(m.target(), params, position, energy, 0.0, threshold=0.0,
                         count=2, every=2).triggered)
    unit = reweight(m.target(), params, position, energy, 0.0, threshold=0.0, count=1,
                    log_weights=uniform, temperature=float("inf"))
    np.testing.assert_allclose(unit.log_weights, uniform)


def test_reweight_log_z_standard_error_is_calibrated():
    """The reported variance of the running log Z matches the spread of the estimate
    over independent exact samples (400 replicates of 50), and carrying the weights over
    two steps reports the variance of the one-step estimate it telescopes to."""
    m, _ = four_spins()
    start = jax.tree.map(lambda a: 0.3 * jnp.ones_like(a), m.init_params(jax.random.PRNGKey(0)))
    end = jax.tree.map(lambda a: a + 2.0 * jax.random.normal(jax.random.PRNGKey(1), a.shape),
                       start)
    middle = jax.tree.map(lambda a, b: 0.5 * (a + b), start, end)
    log_z_start, log_z_end = (float(exact.log_partition(m, p)) for p in (start, end))
    draws = exact.sample(m, start, jax.random.PRNGKey(2), 400 * 50)
    position = jax.tree.map(lambda a: a.reshape((400, 50) + a.shape[1:]), draws)
    uniform = jnp.full((50,), -jnp.log(50.0))

    def one(x):
        energy = m.target().free_energies(start, x)
        direct = reweight(m.target(), end, x, energy, log_z_start, threshold=0.0, count=1)
        half = reweight(m.target(), middle, x, energy, log_z_start, threshold=0.0, count=1,
                        log_weights=uniform)
        carried = reweight(m.target(), end, x, half.free_energy, half.log_z, threshold=0.0, count=2,
                           log_weights=half.log_weights)  # same segment: var banked 0
        return direct, carried

    direct, carried = jax.jit(jax.vmap(one))(position)
    np.testing.assert_allclose(carried.log_z, direct.log_z, rtol=1e-5)
    np.testing.assert_allclose(carried.log_z_var, direct.log_z_var, rtol=1e-3, atol=1e-7)
    spread, reported = np.var(direct.log_z), np.mean(direct.log_z_var)
    assert 0.01 < reported < 0.5  # a change the estimate feels
    assert 0.75 < spread / reported < 1.33, (spread, reported)
    assert abs(np.mean(direct.log_z) - log_z_end) < 4 * np.sqrt(reported / 400)


# --- keep, renew or re-anneal ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Probe(ReweightingEstimator):
    """A reweighting estimator with the settings the shared update reads; its renewal
    only resamples (no kernel steps) and its fresh draw is the reference state (cheap
    to compile: the branches' outcomes, not their draws, are under test)."""

    num_particles: int = 32
    num_mcmc_steps: int = 0
    resample_threshold: Optional[float] = 0.5
    check_log_z: bool = True

    def _fresh(self, kernel, rng_key, target, params):
        position = jax.tree.map(lambda a: jnp.stack([a] * self.num_particles),
                                target.reference_state())
        uniform = jnp.full((self.num_particles,), -jnp.log(self.num_particles))
        return Draw(position, uniform, target.free_energies(params, position),
                    jnp.zeros(()), jnp.zeros(()), jnp.ones(()))


def never(new, draw):
    raise AssertionError("the re-anneal was traced")


@pytest.mark.slow  # by default the renewal and re-anneal tests check the parts
def test_the_update_keeps_renews_or_reanneals_as_its_triggers_say():
    """Unchanged parameters (even weights): kept below the ESS threshold, renewed above
    it or on the estimator's own trigger, re-annealed when the running log Z is
    impossible (far below the bound: log Z(θ) < 8 log 2 + max |F| < 100); without a
    batch or the check no re-anneal is even compiled."""
    m, start, _ = vbm8()
    target = m.target()
    position = target.random_state(jax.random.PRNGKey(0), (32,))
    batch = target.random_state(jax.random.PRNGKey(1), (50,))
    energy, log_z = target.free_energies(start, position), jnp.asarray(100.0)

    def run(probe, log_z, batch, reanneal=lambda new, draw: jnp.int32(2), **settings):
        done = jax.jit(lambda log_z: probe.reweight_or_renew(  # one compilation a call
            jax.random.PRNGKey(2), target, start, batch, position, energy, log_z,
            keep=lambda new: jnp.int32(0), renew=lambda new, draw: jnp.int32(1),
            reanneal=reanneal, count=1, **settings))(log_z)
        return int(done.outcome), bool(done.renewed), bool(done.reannealed), done

    assert run(Probe(), log_z, batch, threshold=0.0)[:3] == (0, False, False)
    outcome, renewed, reannealed, done = run(Probe(), log_z, batch, threshold=2.0)
    assert (outcome, renewed, reannealed) == (1, True, False)
    assert float(done.reweighted.ess) == pytest.approx(32.0)
    assert not bool(done.low_ess)  # even weights: the renewal only moves them
    assert run(Probe(), log_z, batch, threshold=0.0,
               also_renew=jnp.asarray(True))[:3] == (1, True, False)
    stale = -log_z
    assert run(Probe(), stale, batch, threshold=0.0)[:3] == (2, True, True)
    assert run(Probe(), stale, None, never, threshold=0.0)[:3] == (0, False, False)
    assert run(Probe(check_log_z=False), stale, batch, never,
               threshold=0.0)[:3] == (0, False, False)
    assert run(Probe(resample_threshold=None), log_z, batch, threshold=2.0)[3].low_ess is None


def test_the_renewal_resamples_only_where_told_and_carries_the_running_log_z():
    """With no kernel steps the renewal is its resampling alone: uneven weights are
    kept (``low`` false), resampled to even ones (true), or set even (None)."""
    m, start, _ = vbm8()
    target = m.target()
    kernel = ugm.kernels.gibbs().build(target)
    position = target.random_state(jax.random.PRNGKey(0), (32,))
    energy = target.free_energies(start, position)
    uneven = normalize(jnp.where(jnp.arange(32) < 4, 0.0, -30.0))  # all on the first 4
    new = reweight(target, start, position, energy, jnp.asarray(1.5), threshold=0.5,
                   count=1, log_weights=uneven, log_z_var=jnp.asarray(0.25))
    even = np.full(32, -np.log(32.0))

    def renew(low):
        return resample_and_move(kernel, jax.random.PRNGKey(1), target, start, position, new,
                                 low, 0)

    kept, resampled, reset = renew(jnp.asarray(False)), renew(jnp.asarray(True)), renew(None)
    np.testing.assert_array_equal(kept.position["x"], position["x"])
    np.testing.assert_allclose(kept.log_weights, new.log_weights)
    np.testing.assert_array_equal(reset.position["x"], position["x"])
    np.testing.assert_allclose(reset.log_weights, even, rtol=1e-6)
    np.testing.assert_allclose(resampled.log_weights, even, rtol=1e-6)
    rows = {tuple(r) for r in np.asarray(position["x"][:4])}
    assert {tuple(r) for r in np.asarray(resampled.position["x"])} <= rows
    for draw in (kept, resampled, reset):
        assert float(draw.log_z) == float(new.log_z)
        assert float(draw.log_z_var) == float(new.log_z_var)
        np.testing.assert_allclose(draw.free_energy, target.free_energies(start, draw.position))
    moved = resample_and_move(kernel, jax.random.PRNGKey(1), target, start, position, new,
                              jnp.asarray(False), 1)
    assert not np.array_equal(moved.position["x"], position["x"])


# --- the log Z check ----------------------------------------------------------------


@pytest.mark.slow
def test_distinct_log_sum_is_log_z_over_all_configurations_and_counts_each_once():
    m, start, end = vbm8()
    x = exact.sample(m, end, jax.random.PRNGKey(0), 4000)
    distinct = np.unique(np.asarray(x["x"]), axis=0)
    assert len(distinct) < 4000  # repeats to be counted once
    by_hand = float(jax.nn.logsumexp(m.target().free_energies(end, {"x": jnp.asarray(distinct)})))
    assert float(distinct_log_sum(m.target(), end, x)) == pytest.approx(by_hand, abs=1e-4)
    # every configuration, each many times over: the bound is log Z itself
    everything = {"x": jnp.asarray(np.repeat(np.array(
        [[1.0 if b == "1" else -1.0 for b in np.binary_repr(i, 8)] for i in range(256)]), 3, 0))}
    assert float(distinct_log_sum(m.target(), end, everything)) == pytest.approx(
        float(exact.log_partition(m, end)), abs=1e-4)


@pytest.mark.parametrize("name", ["PF", pytest.param("MCMCMLE", marks=pytest.mark.slow)])
def test_an_impossible_running_log_z_reanneals_to_an_estimate_of_the_exact_one(name):
    """A running log Z 5 nats low (what particles that miss the model's mass report) is
    below the bound the training cases give: the estimator draws its particles and
    log Z afresh; a sound estimate is kept, and without the check the low one runs on."""
    m, _, end = vbm8()
    m = m.observe(["x"])
    batch = exact.sample(m, end, jax.random.PRNGKey(3), 200)
    truth = float(exact.log_partition(m, end))
    make = {"PF": ugm.PF, "MCMCMLE": ugm.MCMCMLE}[name]
    estimator = make(256)
    update = jax.jit(lambda k, s: estimator.update(k, s, m.target(), end, batch))
    sound = jax.jit(lambda k: estimator.init(k, m.target(), end, batch))(jax.random.PRNGKey(0))
    log_z = "log_z" if name == "PF" else "anchor_log_z"
    assert abs(float(getattr(sound, log_z)) - truth) < 0.3
    _, _, info = update(jax.random.PRNGKey(1), sound)
    assert float(info.reannealed) == 0 and abs(float(info.log_z) - truth) < 0.3
    stale = sound._replace(**{log_z: getattr(sound, log_z) - 5.0})
    state, _, info = update(jax.random.PRNGKey(1), stale)
    assert float(info.reannealed) == 1 and float(info.rejuvenated) == 1
    assert abs(float(info.log_z) - truth) < 0.3
    assert abs(float(getattr(state, log_z)) - truth) < 0.3
    unchecked = make(256, check_log_z=False)
    _, _, info = jax.jit(lambda k, s: unchecked.update(k, s, m.target(), end, batch))(
        jax.random.PRNGKey(1), stale)
    assert float(info.reannealed) == 0 and float(info.log_z) < truth - 4
