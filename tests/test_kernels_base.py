"""The kernel contract every discrete kernel follows (kernels/base.py): blackjax's
``init`` / ``step`` with NamedTuple states, ``jit``- and ``vmap``-able, usable as the
inner kernel of blackjax's adaptive tempered SMC; spec validation; the label sampler."""

import functools
from typing import NamedTuple

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers.models import potts5, vbm8
from helpers.states import GIBBS, GIBBS_RANDOM, METROPOLIS, all_states, config_index, exact_log_probs

import numpyro_ugm as ugm


def adaptive_smc(m, params, spec, num_particles, seed=0, num_mcmc_steps=2):
    """blackjax adaptive tempered SMC from uniform particles to p(·; θ) with our kernel
    as the move; returns (final particles, normalized weights, log Z estimate, steps)."""
    kernel = spec.build(m.target())
    algorithm = blackjax.adaptive_tempered_smc(
        logprior_fn=lambda x: 0.0,
        loglikelihood_fn=lambda x: m.target().log_potential(params, x),
        mcmc_step_fn=kernel.step, mcmc_init_fn=kernel.init, mcmc_parameters={},
        resampling_fn=blackjax.smc.resampling.systematic, target_ess=0.5,
        num_mcmc_steps=num_mcmc_steps)

    @jax.jit
    def run(rng_key):
        init_key, key = jax.random.split(rng_key)
        state = algorithm.init(m.target().random_state(init_key, (num_particles,)))

        def cond(carry):
            return carry[0].tempering_param < 1.0

        def body(carry):
            state, key, log_z, steps = carry
            key, step_key = jax.random.split(key)
            state, info = algorithm.step(step_key, state)
            return state, key, log_z + info.log_likelihood_increment, steps + 1

        state, _, log_z, steps = jax.lax.while_loop(
            cond, body, (state, key, jnp.zeros(()), jnp.zeros((), jnp.int32)))
        return state.particles, state.weights, log_z + m.target().log_num_states, steps

    return jax.device_get(run(jax.random.PRNGKey(seed)))


@pytest.mark.parametrize("spec", [GIBBS, METROPOLIS])
def test_inner_kernel_of_blackjax_adaptive_tempered_smc(spec):
    m, params = vbm8()
    f = jax.vmap(m.target().log_potential, in_axes=(None, 0))(params, all_states(m))
    log_z = float(np.logaddexp.reduce(np.asarray(f, np.float64)))
    p = np.exp(exact_log_probs(m, params))
    x = all_states(m)["x"].astype(np.float64)
    mean, second = p @ x, np.einsum("s,si,sj->ij", p, x, x)

    particles, weights, log_z_hat, steps = adaptive_smc(m, params, spec, 8000)
    assert steps > 2  # really tempered
    assert abs(log_z_hat - log_z) < 0.05, (log_z_hat, log_z)
    xs = particles["x"].astype(np.float64)
    assert np.all(np.isin(xs, (-1.0, 1.0)))
    w = weights / weights.sum()
    err = np.concatenate([w @ xs - mean, (np.einsum("n,ni,nj->ij", w, xs, xs) - second)
                          [np.triu_indices(8, 1)]])
    assert np.max(np.abs(err)) < 0.05, np.max(np.abs(err))
    # the tolerance is tight enough to reject the distribution at another temperature
    q = np.exp(exact_log_probs(m, params, 0.75))
    wrong = np.concatenate([q @ x - mean, (np.einsum("s,si,sj->ij", q, x, x) - second)
                            [np.triu_indices(8, 1)]])
    assert np.max(np.abs(wrong)) > 0.1


def test_kernel_contract_and_jit_vmap():
    m, params = potts5()
    logdensity = functools.partial(m.target().log_potential, params)
    for spec in (GIBBS, GIBBS_RANDOM, METROPOLIS):
        kernel = spec.build(m.target())
        position = m.target().random_state(jax.random.PRNGKey(0))
        state = kernel.init(position, logdensity)
        new, info = jax.jit(kernel.step, static_argnums=2)(jax.random.PRNGKey(1), state,
                                                           logdensity)
        assert type(new) is type(state) and set(new.position) == {"x"}
        assert new.position["x"].shape == (5, 3) and new.position["x"].dtype == jnp.float32
        assert info.acceptance_rate.shape == ()
        config_index(m, jax.tree.map(lambda a: a[None], new.position))  # one-hot check


def test_spec_validation():
    with pytest.raises(ValueError, match="scan"):
        ugm.kernels.gibbs(scan="sequential")
    with pytest.raises(ValueError, match="num_sweeps"):
        ugm.kernels.gibbs(num_sweeps=0)
    with pytest.raises(ValueError, match="num_sweeps"):
        ugm.kernels.metropolis(num_sweeps=0)


def test_sample_labels_distribution():
    from numpyro_ugm.kernels.base import sample_labels

    n = 200000
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    for probs in ([[0.2, 0.8], [0.9, 0.1]], [[0.1, 0.2, 0.3, 0.4], [0.0, 0.5, 0.5, 0.0]]):
        logits = jnp.log(jnp.array(probs))
        draws = np.asarray(jax.vmap(lambda k, lg=logits: sample_labels(k, lg))(keys))
        for row, p in enumerate(probs):
            freq = np.bincount(draws[:, row], minlength=len(p)) / n
            np.testing.assert_allclose(freq, p, atol=5 * np.sqrt(0.25 / n))
            assert np.all(freq[np.asarray(p) == 0] == 0)  # impossible labels never drawn


class _Cached(NamedTuple):
    """A toy kernel state that caches the log-density at its position."""

    position: dict
    value: jax.Array
    refreshed: jax.Array


def test_init_and_refresh_of_a_batch_of_chains():
    """``init_chains`` initializes every chain at its position; ``refresh_chains`` hands
    each state to ``kernel.refresh`` when the kernel has one (it keeps the state), and
    otherwise initializes a new state at the same position under the new log-density."""
    from numpyro_ugm.kernels.base import Kernel, init_chains, refresh_chains, refresh_state

    def init(position, logdensity_fn):
        return _Cached(position, logdensity_fn(position), jnp.zeros((), bool))

    def step(rng_key, state, logdensity_fn):
        raise AssertionError("not stepped")

    position = {"x": jnp.arange(6.0).reshape(3, 2)}
    old, new = (lambda s: jnp.sum(s["x"])), (lambda s: -2.0 * jnp.sum(s["x"]))
    plain = Kernel(init, step)
    states = init_chains(plain, position, old)
    np.testing.assert_array_equal(states.value, [1.0, 5.0, 9.0])
    rebuilt = refresh_chains(plain, states, new)
    np.testing.assert_array_equal(rebuilt.position["x"], position["x"])
    np.testing.assert_array_equal(rebuilt.value, [-2.0, -10.0, -18.0])
    keeping = Kernel(init, step, refresh=lambda s, f: s._replace(refreshed=jnp.ones((), bool)))
    kept = refresh_chains(keeping, states, new)
    np.testing.assert_array_equal(kept.value, states.value)  # the kernel's refresh decides
    assert np.all(kept.refreshed)
    one = refresh_state(plain, jax.tree.map(lambda a: a[1], states), new)
    assert float(one.value) == -10.0
