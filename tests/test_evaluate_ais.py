"""Annealed importance sampling (evaluate/ais.py) against exact enumeration. (Its setup:
the default schedule and the checks of schedules, bases and starting states:
test_evaluate_ais_setup.py.)"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers.models import small_rbm, spins3

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import ais, _ais_setup, exact


# by default the base-rate start runs in
# test_both_directions_are_unbiased_for_their_ratio_of_normalizers[rbm]
@pytest.mark.slow
@pytest.mark.parametrize("use_data", [False, True], ids=["uniform-base", "base-rate"])
def test_ais_log_z_within_three_standard_errors_of_exact(use_data):
    m, params, data = small_rbm()
    truth = float(exact.log_partition(m, params))
    result = ais.log_partition(m, params, jax.random.PRNGKey(2), 200, 300,
                               data=data if use_data else None)
    err = abs(float(result.log_z) - truth)
    # measured here: errors ~0.01 with standard errors ~0.02
    assert float(result.stderr) < 0.1
    assert err < 3 * float(result.stderr) + 1e-3, (err, float(result.stderr))


def test_ais_without_latent_sites_and_its_standard_error_is_honest():
    m = ugm.UGM(ugm.models.vbm, 10)
    rng = np.random.default_rng(3)
    params = {"W": jnp.asarray(0.6 * rng.standard_normal((10, 10)), jnp.float32),
              "b": jnp.asarray(0.3 * rng.standard_normal(10), jnp.float32)}
    truth = float(exact.log_partition(m, params))
    estimates, errors = [], []
    for seed in range(4):
        r = ais.log_partition(m, params, jax.random.PRNGKey(seed), 100, 50)
        estimates.append(float(r.log_z))
        errors.append(float(r.stderr))
    z = (np.array(estimates) - truth) / np.array(errors)
    assert np.all(np.abs(z) < 4), z
    # a short schedule is not exact: the test would see a wrong estimate
    assert np.mean(errors) > 1e-3


# -m slow (16 s): the default suite checks ais.log_likelihood against exact in
# test_evaluate_inputs.py (per-example inputs; the same code path without them)
@pytest.mark.slow
def test_ais_log_likelihood_matches_exact():
    m, params, data = small_rbm()
    truth = float(exact.log_likelihood(m, params, data))
    r = ais.log_likelihood(m, params, data, jax.random.PRNGKey(4), 200, 300)
    assert isinstance(r, ais.AISLikelihoodResult)
    assert abs(float(r.log_likelihood) - truth) < 3 * float(r.stderr) + 1e-3
    # its log_z is the log Z it used, with the same standard error
    log_z = float(exact.log_partition(m, params))
    assert abs(float(r.log_z) - log_z) < 3 * float(r.log_z_stderr) + 1e-3
    assert float(r.log_z_stderr) == float(r.stderr)


def test_ais_compiles_once_for_new_parameters(count_traces):
    """A second estimate with other parameters and another key reuses the compiled
    run (it used to close over the parameters and recompile on every call)."""
    model = count_traces(ugm.models.rbm)
    m = ugm.UGM(model, 8, 3)
    params = m.init_params(jax.random.PRNGKey(0))
    first = ais.log_partition(m, params, jax.random.PRNGKey(1), 20, 30)
    scaled = {k: 2.0 * v for k, v in params.items()}
    with model.unchanged("a second estimate with other parameters"):
        second = ais.log_partition(m, scaled, jax.random.PRNGKey(2), 20, 30)
    for p, r in ((params, first), (scaled, second)):  # and the parameters are used
        assert abs(float(r.log_z) - float(exact.log_partition(m, p))) < 4 * float(
            r.stderr) + 1e-3


def test_ais_log_likelihood_compiles_once_for_other_numbers_of_cases(count_traces):
    """A second estimate on more cases reuses the compiled programs: the free energies of
    the cases are padded to a power of two (they used to compile for every number of
    cases), and the annealing run depends on the chains, not on the cases."""
    model = count_traces(ugm.models.rbm)
    m = ugm.UGM(model, 8, 3)
    params = m.init_params(jax.random.PRNGKey(0))
    v = np.random.default_rng(2).integers(0, 2, size=(7, 8)).astype(np.int8)
    ais.log_likelihood(m, params, {"v": v[:5]}, jax.random.PRNGKey(1), 20, 30)
    with model.unchanged("a second estimate on more cases"):
        r = ais.log_likelihood(m, params, {"v": v}, jax.random.PRNGKey(2), 20, 30)
    truth = float(exact.log_likelihood(m, params, {"v": v}))
    assert abs(float(r.log_likelihood) - truth) < 4 * float(r.stderr) + 1e-3


def test_ais_checks_params_before_it_runs():
    """A misspelled parameter is named, with the site meant, by both estimates (the
    log-likelihood's data term used to take the init value of the missing site)."""
    m, params, _, data = spins3()
    key = jax.random.PRNGKey(0)
    misspelled = {"hh": params["h"], "J": params["J"]}
    with pytest.raises(KeyError, match=r"\['hh'\] that are not parameter sites of the model "
                                       r"\(did you mean 'h' for 'hh'\?\)"):
        ais.log_partition(m, misspelled, key, 2, 3)
    with pytest.raises(KeyError, match=r"did you mean 'h' for 'hh'\?"):
        ais.log_likelihood(m, misspelled, data, key, 2, 3)


# --- the reverse direction: bounds -------------------------------------------------------


def _vbm10():
    m = ugm.UGM(ugm.models.vbm, 10)
    rng = np.random.default_rng(3)
    return m, {"W": jnp.asarray(0.6 * rng.standard_normal((10, 10)), jnp.float32),
               "b": jnp.asarray(0.3 * rng.standard_normal(10), jnp.float32)}


@pytest.mark.parametrize("case", ["rbm", pytest.param("rbm-random-scan", marks=pytest.mark.slow),
                                  "vbm"])
def test_both_directions_are_unbiased_for_their_ratio_of_normalizers(case):
    """With 4 βs (far too few for a good estimate) and many chains, the forward weights
    average to Z / Z_q and the reverse weights, started from exact draws, to Z_q / Z: both
    estimates of log Z are within 4 standard errors of the exact value. The RBM's hidden
    units are summed out in the weights (each move draws them first: a random-scan kernel
    needs that draw, the default kernel starts with it); the VBM has no latent sites and
    its reverse run takes the reverse kernel."""
    if case == "vbm":
        m, params = _vbm10()
        kernel = None
        data = None
    else:
        m, params, data = small_rbm()  # the base fitted to the data's marginals
        kernel = ugm.kernels.gibbs(scan="random") if case == "rbm-random-scan" else None
    truth = float(exact.log_partition(m, params))
    draws = exact.sample(m, params, jax.random.PRNGKey(7), 4000)
    r = ais.log_partition(m, params, jax.random.PRNGKey(1), 4000, 4, kernel=kernel,
                          data=data, reverse_from=draws, tolerance=np.inf)
    # the ends are sorted (issue 46): the forward one is whichever lower_from/upper_from name
    forward = r.lower if r.lower_from == "forward" else r.upper
    assert float(r.log_z) == float(forward) and float(r.lower) <= float(r.upper)
    for estimate, stderr in ((r.lower, r.lower_stderr), (r.upper, r.upper_stderr)):
        assert 1e-3 < float(stderr) < 0.2  # 4 βs are not exact: a wrong run would show
        assert abs(float(estimate) - truth) < 4 * float(stderr), (case, float(estimate),
                                                                  truth, float(stderr))


@pytest.mark.slow
def test_raise_is_unbiased_for_the_annealing_model():
    """Reverse AIS from a data case v (RAISE) estimates without bias the probability
    p_ann(v) that the forward run ends at v, computed here exactly from the transition
    matrices of the visible chain (3 βs, an RBM 6×2)."""
    m = ugm.UGM(ugm.models.rbm, 6, 2).observe(["v"])
    rng = np.random.default_rng(1)
    params = {k: jnp.asarray(1.5 * rng.standard_normal(np.shape(v)), jnp.float32)
              for k, v in m.init_params(jax.random.PRNGKey(0)).items()}
    betas = np.array([0.0, 0.4, 0.8, 1.0])
    vs = np.array(list(np.ndindex(*(2,) * 6)), np.float32)  # (64, 6)
    hs = np.array(list(np.ndindex(2, 2)), np.float32)  # (4, 2)
    W, b, c = (np.asarray(params[k], np.float64) for k in "Wbc")
    target = m.target()
    setup = _ais_setup.setup(target, None, None, None, None)
    log_q = vs @ (np.asarray(setup.logq["v"])[:, 1] - np.asarray(setup.logq["v"])[:, 0])
    log_q = log_q + np.asarray(setup.logq["v"])[:, 0].sum()
    p_ann = np.exp(log_q)  # the base, normalized
    for beta in betas[1:-1]:  # moves at β_1 .. β_{K-1}: h | v, then v | h
        joint = (1 - beta) * log_q[:, None] + beta * (vs @ W @ hs.T + (vs @ b)[:, None]
                                                      + hs @ c)
        h_given_v = np.exp(joint - np.logaddexp.reduce(joint, 1, keepdims=True))
        v_given_h = np.exp(joint - np.logaddexp.reduce(joint, 0, keepdims=True))
        p_ann = p_ann @ h_given_v @ v_given_h.T
    chains = 20000
    for index in (0, 37, 63):
        start = {"v": jnp.broadcast_to(vs[index], (chains, 6)), "h": jnp.zeros((chains, 2))}
        log_w = ais._anneal(target, setup, params, jax.random.PRNGKey(index),
                            betas[::-1].copy(), chains, None, start)
        free = float(target.free_energy(params, {"v": jnp.asarray(vs[index]),
                                                 "h": jnp.zeros(2)}))
        estimates = np.exp(free - setup.log_z_base + np.asarray(log_w, np.float64))
        error = estimates.mean() - p_ann[index]
        assert abs(error) < 4 * estimates.std() / np.sqrt(chains), (index, error, p_ann[index])


def _bimodal_rbm():
    """RBM 784×12 with large weights: each hidden unit owns a disjoint group of pixels
    and switches them between mostly off and mostly on (weight 2), its bias favours on
    by e²; the groups' modes are separated by barriers a short schedule cannot cross."""
    m = ugm.UGM(ugm.models.rbm, 784, 12).observe(["v"])
    groups = np.eye(12)[np.random.default_rng(0).integers(0, 12, 784)]
    params = {"W": jnp.asarray(2.0 * groups, jnp.float32), "b": jnp.full(784, -1.0),
              "c": jnp.asarray(-groups.sum(0) + 2.0, jnp.float32)}
    return m, params


@pytest.mark.slow
def test_the_bracket_holds_the_exact_value_where_a_short_forward_schedule_fails():
    m, params = _bimodal_rbm()
    draws = exact.sample(m, params, jax.random.PRNGKey(1), 100)
    data = {"v": draws["v"]}
    truth_log_z = float(exact.log_partition(m, params))
    truth = float(exact.log_likelihood(m, params, data))
    # 100 βs: the forward estimate of the log-likelihood is too high by many of its own
    # standard errors; the reverse (RAISE) estimate from these draws is below the exact
    # value, and the bracket's width warns
    with pytest.warns(RuntimeWarning, match=r"ais.log_likelihood: the forward and reverse "
                      r"estimates of the mean log-likelihood disagree by [\d.]+ nats"):
        r = ais.log_likelihood(m, params, data, jax.random.PRNGKey(3), 100, 100, reverse=True)
    assert float(r.upper) == float(r.log_likelihood)
    assert float(r.upper) - truth > 5 * float(r.upper_stderr), (float(r.upper), truth)
    assert float(r.lower) - 3 * float(r.lower_stderr) < truth
    assert float(r.width) > 1.0
    # log Z from the exact draws: forward ≤ log Z ≤ reverse, within their errors (the
    # schedules of examples/ais_bracket.py show the bracket narrowing with more βs)
    z = ais.log_partition(m, params, jax.random.PRNGKey(2), 100, 100, data=data,
                          reverse_from=draws)
    assert float(z.lower) - 3 * float(z.lower_stderr) < truth_log_z
    assert truth_log_z < float(z.upper) + 3 * float(z.upper_stderr)


@pytest.mark.slow
def test_degenerate_weights_warn():
    """16 chains and 20 βs on the bimodal RBM: one chain carries nearly all the weight,
    and the standard error computed from the weights cannot say so; the estimate warns."""
    m, params = _bimodal_rbm()
    with pytest.warns(RuntimeWarning, match=r"ais.log_partition: the AIS weights are "
                      r"degenerate \(effective number of chains [\d.]+ of 16\)"):
        ais.log_partition(m, params, jax.random.PRNGKey(0), 16, 20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a sound estimate does not warn
        small_m, small_params, _ = small_rbm()
        ais.log_partition(small_m, small_params, jax.random.PRNGKey(0), 100, 100)
