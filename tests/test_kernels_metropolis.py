"""The block Metropolis kernel (kernels/metropolis.py).

Its draws are checked against exact enumeration here on every kind of model (Spin,
Binary with blocks of several sizes, Categorical with K = 3, a potential that is not
multilinear) and both scan orders — the systematic-scan runs on the spin VBM and the
Potts ring sit beside Gibbs's in test_kernels_gibbs.py — and inside ``ugm.sample`` and
``ugm.PCD``. Its acceptance rate is checked exactly: every proposal changes its variable,
so the rate of a systematic sweep is the fraction of variables that changed, and from
exact draws its mean is the stationary expectation computed by enumeration.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from helpers.models import abs7, binary3, potts5, vbm8
from helpers.states import GIBBS, METROPOLIS, all_states, check_tv, config_index, exact_log_probs, total_variation, tv_threshold

import numpyro_ugm as ugm

METROPOLIS_RANDOM = ugm.kernels.metropolis(scan="random")
#: systematic scan through the padded index tables (the path random scan takes)
METROPOLIS_PADDED = ugm.kernels.metropolis(max_unrolled=0)


def one_step(m, params, spec, position, seed=0, num_steps=1):
    """One step (or ``num_steps``) of ``spec`` from each of a batch of positions: (new
    positions, acceptance rate per chain, averaged over the steps)."""
    kernel = spec.build(m.target())

    def logdensity(x):
        return m.target().log_potential(params, x)

    @jax.jit
    def run(rng_key, position):
        states = jax.vmap(kernel.init, (0, None))(position, logdensity)
        num_chains = jax.tree.leaves(position)[0].shape[0]

        def step(states, key):
            states, info = jax.vmap(lambda k, s: kernel.step(k, s, logdensity))(
                jax.random.split(key, num_chains), states)
            return states, info.acceptance_rate

        states, rates = jax.lax.scan(step, states, jax.random.split(rng_key, num_steps))
        return states.position, rates.mean(0)

    new, rate = run(jax.random.PRNGKey(seed), position)
    return jax.device_get(new), np.asarray(rate)


def exact_draws(m, params, num, seed=0):
    """``num`` i.i.d. draws from p (model representation), by enumeration."""
    p = np.exp(exact_log_probs(m, params))
    pick = np.random.default_rng(seed).choice(len(p), size=num, p=p)
    return {s: v[pick] for s, v in all_states(m).items()}


# --- the distribution ------------------------------------------------------------------


@pytest.mark.parametrize("model,spec,steps", [
    (binary3, METROPOLIS, 40),
    pytest.param(binary3, METROPOLIS_RANDOM, 60, marks=pytest.mark.slow),
    # random scan on categorical sites: 17 s of the default suite, which checks
    # categorical sites by their stationary acceptance from exact draws (below)
    pytest.param(potts5, METROPOLIS_RANDOM, 60, marks=pytest.mark.slow),
    # f evaluated at each value: the same exact conditionals as Gibbs's
    # (test_kernels_gibbs.py::test_not_multilinear_exact_conditionals runs by default)
    pytest.param(abs7, METROPOLIS, 40, marks=pytest.mark.slow),
    pytest.param(abs7, METROPOLIS_RANDOM, 60, marks=pytest.mark.slow),
], ids=["binary-systematic", "binary-random", "categorical-random",
        "not-multilinear-systematic", "not-multilinear-random"])
def test_samples_the_exact_distribution(model, spec, steps):
    m, params = model()
    if model is binary3:  # real blocks, of several sizes
        assert len({len(b["x"]) for b in m.target().blocks}) > 1
    if model is abs7:  # conditionals by evaluating f at each value
        assert not m.target().structure.multilinear
    check_tv(m, params, spec, 20000, steps, wrong_beta=0.75)


@pytest.mark.slow  # by default, Metropolis runs inside the learner (test_inside_pcd)
def test_inside_ugm_sample():
    m, params = vbm8()
    p = np.exp(exact_log_probs(m, params))
    num = 20000
    draws = ugm.sample(m, params, jax.random.PRNGKey(0), 1, num_chains=num, num_warmup=60,
                       kernel=METROPOLIS_RANDOM)
    tv = total_variation(p, config_index(m, draws))
    assert tv < tv_threshold(p, num), tv
    few = ugm.sample(m, params, jax.random.PRNGKey(0), 1, num_chains=num, num_warmup=1,
                     kernel=METROPOLIS_RANDOM)
    assert total_variation(p, config_index(m, few)) > tv_threshold(p, num)  # not blind


@pytest.mark.slow
def test_inside_pcd():
    """PCD's persistent particles at fixed parameters (zero learning rate) end up
    distributed as p."""
    m, params = vbm8()
    p = np.exp(exact_log_probs(m, params))
    num = 4000
    data = {"x": np.random.default_rng(0).choice(np.array([-1, 1], np.int8), size=(20, 8))}
    learner = ugm.MLE(ugm.models.vbm, ugm.PCD(num, kernel=ugm.kernels.metropolis()),
                      optax.sgd(0.0))
    for steps, inside in ((60, True), (1, False)):  # the short run shows the test can fail
        result = learner.run(jax.random.PRNGKey(1), steps, data, 8, init_params=params,
                             progress_bar=False)
        np.testing.assert_array_equal(result.params["W"], params["W"])
        tv = total_variation(p, config_index(m, learner.particles(result.state)))
        assert (tv < tv_threshold(p, num)) == inside, (steps, tv)


# --- the acceptance rate ---------------------------------------------------------------


@pytest.mark.parametrize("model,spec", [(vbm8, METROPOLIS), (binary3, METROPOLIS),
                                        (binary3, METROPOLIS_PADDED),
                                        (potts5, METROPOLIS_PADDED)],
                         ids=["spin", "binary", "binary-padded", "categorical-padded"])
def test_acceptance_is_the_fraction_of_variables_changed(model, spec):
    """A systematic sweep visits each variable once and every proposal changes its
    variable: the rate is the fraction changed, chain by chain (padded index entries
    are not counted)."""
    m, params = model()
    position = jax.device_get(m.target().random_state(jax.random.PRNGKey(2), (500,)))
    new, rate = one_step(m, params, spec, position)
    changed = position["x"] != new["x"]
    if m.target().state_sites["x"].event_shape:  # one-hot: a variable changed if any entry did
        changed = changed.any(-1)
    np.testing.assert_allclose(rate, changed.reshape(len(rate), -1).mean(-1), rtol=1e-6)
    assert np.all((rate >= 0) & (rate <= 1)) and 0 < rate.mean() < 1


def exact_acceptance(m, params, accept=lambda ratio: np.minimum(1.0, ratio)):
    """Stationary mean acceptance of a systematic sweep: the mean over variables i of
    E_p[mean over labels l ≠ x_i of accept(p(x with x_i = l) / p(x))], by enumeration
    (Metropolis: accept(r) = min(1, r))."""
    log_p = exact_log_probs(m, params)
    (site, domain), = m.target().state_sites.items()
    states = all_states(m)[site]
    labels = np.asarray(domain.labels(states))  # (num_states, n)
    num_values, n = domain.num_values, labels.shape[1]
    per_variable = np.zeros(n)
    for i in range(n):
        for shift in range(1, num_values):
            other = labels.copy()
            other[:, i] = (other[:, i] + shift) % num_values
            moved = np.asarray(domain.label_to_model(jnp.asarray(other)))
            ratio = np.exp(log_p[config_index(m, {site: moved})] - log_p)
            per_variable[i] += np.exp(log_p) @ accept(ratio) / (num_values - 1)
    return per_variable.mean()


@pytest.mark.parametrize("model,spec", [(potts5, METROPOLIS), (binary3, METROPOLIS_PADDED)],
                         ids=["categorical", "binary-padded"])
def test_acceptance_from_exact_draws_is_the_stationary_expectation(model, spec):
    m, params = model()
    num = 20000
    _, rate = one_step(m, params, spec, exact_draws(m, params, num))
    expected = exact_acceptance(m, params)
    se = rate.std() / np.sqrt(num)
    assert abs(rate.mean() - expected) < 5 * se, (rate.mean(), expected, se)
    # not blind: Barker's rule r / (1 + r) in place of min(1, r) would be detected
    barker = exact_acceptance(m, params, lambda ratio: ratio / (1.0 + ratio))
    assert abs(barker - expected) > 5 * se, (barker, expected, se)


def test_acceptance_is_reported():
    """The rate a run of several sweeps reports on the spin VBM (unrolled blocks): from
    exact draws the chains stay stationary, so each sweep's rate has the stationary
    expectation (a chain's mean over the sweeps has it too); Gibbs accepts every draw."""
    m, params = vbm8()
    num = 4000
    draws = exact_draws(m, params, num, seed=1)
    _, rate = one_step(m, params, METROPOLIS, draws, num_steps=5)
    expected = exact_acceptance(m, params)
    se = rate.std() / np.sqrt(num)  # chains are independent; a chain's sweeps are not
    assert abs(rate.mean() - expected) < 5 * se, (rate.mean(), expected, se)
    # not blind: Barker's rule r / (1 + r), which also leaves p invariant, would fail
    barker = exact_acceptance(m, params, lambda ratio: ratio / (1.0 + ratio))
    assert abs(barker - expected) > 5 * se, (barker, expected, se)
    _, rate = one_step(m, params, GIBBS, draws, num_steps=5)
    assert np.all(rate == 1.0)


def test_state_and_reverse():
    m, _ = potts5()
    kernel = METROPOLIS.build(m.target())
    state = kernel.init(m.target().random_state(jax.random.PRNGKey(0)), None)
    assert isinstance(state, ugm.kernels.MetropolisState) and state._fields == ("position",)
    assert METROPOLIS.reverse() == ugm.kernels.metropolis(backward=True)
    assert METROPOLIS_RANDOM.reverse() is METROPOLIS_RANDOM
