"""The particle-filtered estimator (estimators/pf.py): a collapsing ESS recovers and
warns, never NaN; with ``ess_threshold > 1`` PF is PCD-n (unit weights) or the PF paper's
resample-then-PCD (Sec. 3.2) bit for bit."""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from blackjax.smc import resampling as bj_resampling
from helpers.paths import PATH_STEPS, at, path, schedule
from helpers.paths import vbm8_path as vbm8

import numpyro_ugm as ugm
from numpyro_ugm.datasets import vbm_problem
from numpyro_ugm.estimators import PCDState, PFState
from numpyro_ugm.estimators.base import normalize, uniform_log_weights


@pytest.mark.slow
def test_collapsing_ess_recovers_and_warns():
    _, train, _ = vbm_problem(jax.random.PRNGKey(0), 10, 200, 10)
    # a huge step makes the weights of consecutive parameters degenerate
    learner = ugm.MLE(ugm.models.vbm, ugm.PF(20, resample_threshold=0.5), optax.sgd(3.0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = learner.run(jax.random.PRNGKey(1), 30, train, 10, progress_bar=False)
    messages = [str(w.message) for w in caught if w.category is RuntimeWarning]
    assert any("collapsed" in text for text in messages), messages
    d = result.diagnostics
    # the running log Z such steps leave is impossible: PF re-anneals (without the check
    # the learner's warning reports it: tests/test_learn_diagnostics.py)
    assert np.sum(d["reannealed"]) > 0
    assert np.min(d["ess"]) < 1.5
    assert np.all(np.isfinite(d["grad_norm"]))
    assert all(np.all(np.isfinite(np.asarray(v))) for v in jax.tree.leaves(result.params))
    # the collapsed step resampled and rejuvenated, and the weights were sound after
    assert d["rejuvenated"][np.argmin(d["ess"])] == 1
    assert np.all(d["ess"][np.argmin(d["ess"]) + 1:] >= 1.0)


def pf_from_pcd(m, pcd_state, params):
    """PF's state over PCD's initial particles (uniform weights, F at θ_0)."""
    position = pcd_state.position
    num = jax.tree.leaves(position)[0].shape[0]
    return PFState(position, uniform_log_weights(num), m.target().free_energies(params, position),
                   jnp.zeros(()), jnp.zeros((), jnp.int32), jnp.zeros(()),
                   uniform_log_weights(num), jnp.ones((), jnp.int32))


@functools.lru_cache(maxsize=None)
def pcd_n():
    """PCD-2 with 64 particles on vbm8: the estimator, its kernel and its jitted update."""
    m, _, _ = vbm8()
    pcd = ugm.PCD(64, num_mcmc_steps=2)
    update = jax.jit(lambda k, s, p: pcd.update(k, s, m.target(), p, None))
    return pcd, pcd.build_kernel(m.target()), update


@pytest.mark.slow
def test_pf_with_unit_weights_is_pcd_n():
    m, start, end = vbm8()
    params_path = path(start, end, schedule(0))
    pcd, _, pcd_update = pcd_n()
    pf = ugm.PF(64, resample_threshold=1.5, num_mcmc_steps=2, temperature=float("inf"))
    pcd_state = pcd.init(jax.random.PRNGKey(0), m.target(), start, None)
    pf_state = pf_from_pcd(m, pcd_state, start)
    pf_update = jax.jit(lambda k, s, p: pf.update(k, s, m.target(), p, None))
    previous = pcd_state.position["x"]
    for t in range(PATH_STEPS):
        key = jax.random.fold_in(jax.random.PRNGKey(1), t)
        params = at(params_path, t)
        pcd_state, pcd_particles, _ = pcd_update(key, pcd_state, params)
        pf_state, pf_particles, info = pf_update(key, pf_state, params)
        x = np.asarray(pcd_particles.position["x"])
        np.testing.assert_array_equal(np.asarray(pf_particles.position["x"]), x)
        np.testing.assert_array_equal(np.asarray(pf_particles.log_weights),
                                      np.asarray(pcd_particles.log_weights))
        assert float(info.rejuvenated) == 1.0
        assert np.mean(x != np.asarray(previous)) > 0.1  # the particles do move
        previous = x


@pytest.mark.slow
def test_pf_at_unit_temperature_is_resample_then_pcd_n():
    """The PF paper's Sec. 3.2: every update resamples by the weights
    p(x; θ_t) / p(x; θ_{t−1}) (blackjax systematic, key fold_in(key, 1)), then moves as
    PCD-n with ``key``."""
    m, start, end = vbm8()
    params_path = path(start, end, schedule(0))
    num = 64
    pcd, kernel, pcd_update = pcd_n()
    pf = ugm.PF(num, resample_threshold=1.5, num_mcmc_steps=2)
    pcd_state = pcd.init(jax.random.PRNGKey(0), m.target(), start, None)
    pf_state = pf_from_pcd(m, pcd_state, start)

    @jax.jit
    def resampled(key, x, previous_params, params):
        delta = (m.target().free_energies(params, {"x": x})
                 - m.target().free_energies(previous_params, {"x": x}))
        log_weights = normalize(uniform_log_weights(num) + delta)
        idx = bj_resampling.systematic(jax.random.fold_in(key, 1), jnp.exp(log_weights),
                                       num)
        return x[idx], jnp.any(idx != jnp.arange(num))

    def pcd_move(key, x, params):
        state = PCDState(jax.vmap(lambda y: kernel.init(y, None))({"x": x}))
        return np.asarray(pcd_update(key, state, params)[0].position["x"])

    pf_update = jax.jit(lambda k, s, p: pf.update(k, s, m.target(), p, None))
    x, previous_params, differs_from_pcd, moved_steps = pcd_state.position["x"], start, 0, 0
    for t in range(PATH_STEPS):
        key = jax.random.fold_in(jax.random.PRNGKey(1), t)
        params = at(params_path, t)
        y, moved = resampled(key, x, previous_params, params)
        expected = pcd_move(key, y, params)
        pf_state, particles, info = pf_update(key, pf_state, params)
        np.testing.assert_array_equal(np.asarray(particles.position["x"]), expected)
        assert float(info.resampled) == 1.0
        moved_steps += int(moved)
        # the resampling matters: plain PCD-n from the same particles and key differs
        differs_from_pcd += int(np.any(pcd_move(key, x, params) != expected))
        x, previous_params = expected, params
    # (identical configurations among the 64, or weights close to uniform, can make a
    # resampling a no-op)
    assert moved_steps >= PATH_STEPS - 3 and differs_from_pcd >= PATH_STEPS - 3


# --- the equilibrium check and the adaptive forced interval ---------------------------


def test_equilibrium_check_flags_particles_the_parameters_left_behind():
    """Exact draws at θ_1 against exact draws at θ_1 (a kernel leaving p(·; θ_1)
    invariant): a mean squared z of about 1 or less; exact draws at θ_0 against draws at
    θ_1 (what one kernel step does to particles the parameters have left): far above the
    threshold."""
    from numpyro_ugm.estimators.pf import equilibrium_z, statistics
    from numpyro_ugm.evaluate import exact

    m, start, end = vbm8()
    far = jax.tree.map(lambda a, b: a + 3.0 * (b - a), start, end)
    num = 200
    draw = lambda params, seed: exact.sample(m, params, jax.random.PRNGKey(seed), num)  # noqa: E731
    stats = lambda x: statistics(m.target(), far, x)  # noqa: E731
    weights = uniform_log_weights(num)
    same = [float(equilibrium_z(weights, stats(draw(far, s)), stats(draw(far, s + 10))))
            for s in range(5)]
    left = float(equilibrium_z(weights, stats(draw(start, 0)), stats(draw(far, 10))))
    threshold = ugm.PF(num).equilibrium_threshold
    assert max(same) < 1.6 and np.mean(same) < 1.3, same
    assert left > 5 * threshold, left


def test_adaptive_interval_doubles_at_equilibrium_and_falls_back_when_left_behind():
    m, start, end = vbm8()
    pf = ugm.PF(64, rejuvenate_every=8)
    assert pf.checking and not ugm.PF(64).checking
    update = jax.jit(lambda k, s, p: pf.update(k, s, m.target(), p, None))
    state = jax.jit(lambda k: pf.init(k, m.target(), start, None))(jax.random.PRNGKey(0))
    intervals, rejuvenated = [], []
    for t in range(40):
        state, _, info = update(jax.random.PRNGKey(t), state, start)
        intervals.append(int(info.interval))
        rejuvenated.append(int(info.rejuvenated))
    # at fixed parameters the weights stay uniform: only the forced interval rejuvenates,
    # after 1, 2, 4, 8, 8, ... updates as each check passes
    assert np.flatnonzero(rejuvenated).tolist() == [0, 2, 6, 14, 22, 30, 38], rejuvenated
    assert intervals[:7] == [2, 2, 4, 4, 4, 4, 8] and set(intervals[6:]) == {8}, intervals
    # particles that collapsed onto one configuration (what resampling under strong
    # couplings leaves): even weights, an ESS of 64, yet one kernel sweep spreads them —
    # the check fails and the interval falls back to 1
    one = jax.tree.map(lambda a: jnp.broadcast_to(a[:1], a.shape), state.position)
    state = state._replace(position=one, log_weights=uniform_log_weights(64),
                           free_energy=m.target().free_energies(start, one),
                           since_rejuvenation=jnp.asarray(7, jnp.int32))
    state, _, info = update(jax.random.PRNGKey(99), state, start)
    assert float(info.ess) > 63 and int(info.rejuvenated) == 1
    assert float(info.equilibrium_z) > 2 * pf.equilibrium_threshold
    assert int(info.interval) == 1


# --- moves that keep the weights -----------------------------------------------------


def test_moves_keep_even_weights_and_resample_only_on_a_low_ess():
    m, start, end = vbm8()
    pf = ugm.PF(64)
    update = jax.jit(lambda k, s: pf.update(k, s, m.target(), start, None))
    state = jax.jit(lambda k: pf.init(k, m.target(), start, None))(jax.random.PRNGKey(0))
    tilted = normalize(0.01 * jnp.arange(64.0))  # an ESS near 64
    state = state._replace(log_weights=tilted)
    state, particles, info = update(jax.random.PRNGKey(1), state)
    assert float(info.rejuvenated) == 1 and float(info.resampled) == 0
    np.testing.assert_allclose(np.asarray(particles.log_weights), np.asarray(tilted),
                               atol=1e-5)
    uneven = normalize(jnp.where(jnp.arange(64) < 8, 0.0, -30.0))  # an ESS of 8
    state = state._replace(log_weights=uneven)
    state, particles, info = update(jax.random.PRNGKey(2), state)
    assert float(info.resampled) == 1
    np.testing.assert_allclose(np.asarray(particles.log_weights), -np.log(64.0), atol=1e-5)
