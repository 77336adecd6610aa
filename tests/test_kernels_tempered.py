"""Tempered transitions and parallel tempering: they leave the target invariant (total
variation against enumeration) and cross between the modes of a bimodal model where
plain Gibbs does not."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from helpers.models import vbm8
from helpers.states import GIBBS, GIBBS_RANDOM, METROPOLIS, check_tv, exact_log_probs

import numpyro_ugm as ugm
from numpyro_ugm.kernels import parallel_tempering, tempered_transitions


def curie_weiss(n, coupling):
    """Fully connected ferromagnet: two modes (all +1, all −1) with a barrier."""
    b = numpyro.param("b", jnp.zeros(n))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("pairs", coupling / n * (jnp.sum(x) ** 2 - n) / 2)
    numpyro.factor("fields", b @ x)


#: the default run covers tempered transitions and parallel tempering over Gibbs; the
#: slow run adds the other base kernels and tempered transitions every third step
@pytest.mark.parametrize("spec", [
    tempered_transitions(kernel=GIBBS, betas=(0.2, 0.5, 0.8, 1.0)),
    pytest.param(tempered_transitions(kernel=GIBBS_RANDOM, betas=(0.3, 0.7, 1.0)),
                 marks=pytest.mark.slow),
    pytest.param(tempered_transitions(kernel=METROPOLIS, betas=(0.5, 1.0)), marks=pytest.mark.slow),
    pytest.param(tempered_transitions(kernel=GIBBS, betas=(0.5, 1.0), every=3),
                 marks=pytest.mark.slow),
    parallel_tempering(kernel=GIBBS, betas=(0.0, 0.4, 0.7, 1.0)),
    pytest.param(parallel_tempering(kernel=METROPOLIS, betas=(0.5, 1.0)), marks=pytest.mark.slow),
], ids=["tt-gibbs", "tt-random", "tt-metropolis", "tt-every3", "pt-gibbs", "pt-metropolis"])
def test_tempered_kernels_leave_target_invariant(spec):
    m, params = vbm8()
    tv, threshold, acceptance = check_tv(m, params, spec, 4000, 20, wrong_beta=0.5)
    assert 0.0 < acceptance <= 1.0


def magnetization_switches(spec, m, params, num_chains=64, num_steps=200, seed=0):
    """Fraction of steps on which a chain's magnetization changes sign (chains start in
    the + mode)."""
    kernel = spec.build(m.target())
    logdensity = lambda x: m.target().log_potential(params, x)  # noqa: E731
    start = {"x": jnp.ones((num_chains, 12), jnp.float32)}
    states = jax.vmap(kernel.init, (0, None))(start, logdensity)

    def body(states, key):
        keys = jax.random.split(key, num_chains)
        states, info = jax.vmap(lambda k, s: kernel.step(k, s, logdensity))(keys, states)
        return states, (jnp.sign(jnp.sum(states.position["x"], -1)), info)

    _, (signs, info) = jax.jit(lambda k: jax.lax.scan(
        body, states, jax.random.split(k, num_steps)))(jax.random.PRNGKey(seed))
    signs = np.asarray(signs)
    signs = np.where(signs == 0, 1, signs)  # ties (even n) count as +
    return float(np.mean(signs[1:] != signs[:-1])), info


@pytest.mark.slow  # invariance of TT and PT is checked by default above
def test_tempered_kernels_switch_modes_where_gibbs_does_not():
    m = ugm.UGM(curie_weiss, 12, 3.0)
    params = {"b": jnp.zeros(12)}
    p = np.exp(exact_log_probs(m, params))
    assert p.max() > 0.1  # strongly bimodal: the two aligned states dominate
    gibbs_rate, _ = magnetization_switches(GIBBS, m, params)
    tt_rate, tt_info = magnetization_switches(
        tempered_transitions(kernel=GIBBS, betas=np.linspace(0.1, 1.0, 10)), m, params)
    pt_rate, pt_info = magnetization_switches(
        parallel_tempering(kernel=GIBBS, betas=np.linspace(0.0, 1.0, 8)), m, params)
    # measured here (seed 0): Gibbs 0.000, TT 0.122 (acceptance 0.25), PT 0.220
    # (swap rates 0.57-0.94)
    assert gibbs_rate < 0.002, gibbs_rate
    assert tt_rate > 0.05 and pt_rate > 0.05, (tt_rate, pt_rate)
    assert 0.0 < float(np.mean(tt_info.acceptance_rate)) < 1.0
    swaps = np.asarray(pt_info.swap_accepted).sum((0, 1)) / np.maximum(
        np.asarray(pt_info.swap_attempted).sum((0, 1)), 1)
    assert np.all(swaps > 0.3), swaps


@pytest.mark.parametrize("bad", [(0.5,), (0.5, 0.9), (0.0, 0.7, 0.6, 1.0), (-0.1, 1.0), 1])
def test_bad_betas_are_rejected(bad):
    with pytest.raises(ValueError, match="betas"):
        tempered_transitions(betas=bad)
    with pytest.raises(ValueError, match="betas"):
        parallel_tempering(betas=bad)


@pytest.mark.slow
def test_trans_sap_batch_step_branches_once_for_all_chains():
    """With ``every`` > 1, stepping a batch of chains gives exactly what stepping each
    chain on its own gives, and the run-or-not decision stays a real branch (a ``cond``
    in the jaxpr): under a plain ``vmap`` it becomes a select that computes a whole
    tempered run on every step (measured on an RBM 784x10, 100 chains, 50 betas,
    every=200: 258 ms per PCD-1 update before, 3.2 ms after, plain Gibbs 2.2 ms)."""
    from numpyro_ugm.kernels.base import step_chains

    m, params = vbm8()
    kernel = tempered_transitions(kernel=GIBBS, betas=(0.5, 0.8, 1.0), every=3).build(m.target())
    logdensity = lambda x: m.target().log_potential(params, x)  # noqa: E731
    states = jax.vmap(kernel.init, (0, None))(m.target().random_state(jax.random.PRNGKey(0), (16,)),
                                              logdensity)
    batched, one_by_one = states, states
    # both jitted: op by op, the seven steps took 30 s
    step_batch = jax.jit(lambda k, s: step_chains(kernel, k, s, logdensity))
    step_each = jax.jit(lambda keys, s: jax.vmap(lambda k, s: kernel.step(k, s, logdensity))(
        keys, s))
    ran = []
    for key in jax.random.split(jax.random.PRNGKey(1), 7):
        batched, info = step_batch(key, batched)
        keys = jax.random.split(key, 16)
        one_by_one, _ = step_each(keys, one_by_one)
        ran.append(bool(np.all(info.ran)) if bool(np.any(info.ran)) else False)
        for a, b in zip(jax.tree.leaves(batched), jax.tree.leaves(one_by_one)):
            np.testing.assert_array_equal(a, b)
    assert ran == [False, False, True, False, False, True, False]
    jaxpr = str(jax.make_jaxpr(lambda k, s: step_chains(kernel, k, s, logdensity))(
        jax.random.PRNGKey(2), states))
    assert "cond[" in jaxpr


@pytest.mark.parametrize("spec", [
    parallel_tempering(kernel=GIBBS, betas=(0.5, 1.0)),
    tempered_transitions(kernel=GIBBS, betas=(0.5, 1.0)),
], ids=["pt", "tt"])
def test_a_kernel_first_built_inside_a_trace_serves_the_next_trace(spec):
    """Estimators build their kernel once per target (``bound_kernel``), often first
    inside a traced update. Before, the βs the build made were tracers of that trace, and
    the next trace failed with UnexpectedTracerError (the parallel-tempering benchmark)."""
    from numpyro_ugm.kernels.base import bound_kernel, init_chains, step_chains
    m = ugm.UGM(curie_weiss, 4, 0.3)
    target, params = m.target(), m.init_params(jax.random.PRNGKey(0))

    def step(key, position):
        kernel = bound_kernel(spec, target)
        states = init_chains(kernel, position, target.logdensity_fn(params))
        return step_chains(kernel, key, states, target.logdensity_fn(params))[0].position

    for num_chains in (2, 3):  # a new shape: a new trace, the cached kernel reused
        start = target.random_state(jax.random.PRNGKey(num_chains), (num_chains,))
        out = jax.jit(step)(jax.random.PRNGKey(0), start)
        assert out["x"].shape == (num_chains, 4)
