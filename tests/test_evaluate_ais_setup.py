"""What AIS is set up with (evaluate/_ais_setup.py): the default schedule, the checks of
the schedule, of the base distribution and of the reverse runs' starting states, and the
warning for an inverted bracket. (AIS against exact enumeration: test_evaluate_ais.py.)"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers.models import small_rbm

from numpyro_ugm.evaluate import ais, _ais_setup


def test_ais_checks_the_base_it_is_given():
    """Base log-probabilities must be finite, of shape (num_variables, K), for every site
    not summed out (the summed sites' base is uniform, whatever is given); the base rate
    checks its data and its smoothing."""
    m, params, data = small_rbm()
    key = jax.random.PRNGKey(0)
    base = ais.base_rate_log_probs(m, data)
    for bad, error, message in (
            ({**base, "v": base["v"].at[3, 1].set(jnp.nan)}, ValueError,
             r"^ais: base_log_probs\['v'\] holds non-finite values"),
            ({**base, "v": base["v"][:, 0]}, ValueError,
             r"^ais: base_log_probs\['v'\] has shape \(12,\); expected \(12, 2\)"),
            ({"h": base["h"]}, KeyError, r"ais: base_log_probs lacks the site 'v'"),
            ({**base, "w": base["v"]}, KeyError, r"\['w'\] that are not state sites"),
            (base["v"], TypeError, r"^ais: base_log_probs must be a dict")):
        with pytest.raises(error, match=message):
            ais.log_partition(m, params, key, 10, 5, base_log_probs=bad)
    full = ais.log_partition(m, params, key, 10, 5, base_log_probs=base)
    visible = ais.log_partition(m, params, key, 10, 5, base_log_probs={"v": base["v"]})
    assert float(full.log_z) == float(visible.log_z)
    for smoothing in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match="smoothing must be a finite number > 0"):
            ais.base_rate_log_probs(m, data, smoothing=smoothing)
    with pytest.raises(ValueError, match="site 'v'.*outside the domain"):
        ais.base_rate_log_probs(m, {"v": 2 * data["v"]})
    with pytest.raises(KeyError, match=r"sum_out_sites \['z'\] are not state sites"):
        ais.log_partition(m, params, key, 10, 5, sum_out_sites=["z"])


def test_ais_rejects_bad_schedules():
    """A schedule must be finite and increase from exactly 0 to exactly 1: a NaN β used
    to give log Z = nan without a word; the error names the first β at fault."""
    m, params, data = small_rbm()
    key = jax.random.PRNGKey(0)
    for betas, message in (
            (np.array([0.0, np.nan, 1.0]), r"betas must be finite; betas\[1\] is nan"),
            (np.array([0.0, 0.5]), r"betas must increase from 0 to 1; they run from 0 to 0.5"),
            (np.array([0.0, 0.5, np.inf, 1.0]), r"betas must be finite; betas\[2\] is inf"),
            (np.array([0.0, 0.6, 0.4, 1.0]),
             r"betas must increase from 0 to 1; betas\[2\] = 0.4 < betas\[1\] = 0.6"),
            (np.array([[0.0, 1.0]]), r"betas must be a 1-d array"),
            ("fast", r"betas must be a number of βs or an array")):
        for estimate in (lambda b: ais.log_partition(m, params, key, 10, b),
                         lambda b: ais.log_likelihood(m, params, data, key, 10, b)):
            with pytest.raises(ValueError, match=r"^ais: " + message):
                estimate(betas)
    with pytest.raises(ValueError, match="num_chains"):
        ais.log_partition(m, params, jax.random.PRNGKey(0), 1, 10)
    with pytest.raises(ValueError, match="^ais: num_chains must be an integer >= 2, got 2.5"):
        ais.log_partition(m, params, jax.random.PRNGKey(0), 2.5, 10)
    with pytest.raises(ValueError, match=r"^ais: betas \(a number\) must be an integer >= 2"):
        ais.log_partition(m, params, jax.random.PRNGKey(0), 10, 1)


def test_reverse_runs_check_their_starting_states():
    m, params, data = small_rbm()
    key = jax.random.PRNGKey(0)
    with pytest.raises(KeyError, match=r"reverse_from lacks the site\(s\) \['v'\]"):
        ais.log_partition(m, params, key, 10, 5, reverse_from={"h": np.zeros((4, 6))})
    with pytest.raises(ValueError, match="site 'v'.*outside the domain"):
        ais.log_partition(m, params, key, 10, 5, reverse_from={"v": 2 * data["v"]})
    with pytest.raises(ValueError, match=r"tolerance must be >= 0 \(nats\), got nan"):
        ais.log_partition(m, params, key, 10, 5, reverse_from=data, tolerance=np.nan)
    with pytest.raises(ValueError, match=r"num_reverse must be an integer >= 2, got 1"):
        ais.log_likelihood(m, params, data, key, 4, 5, reverse=True, num_reverse=1)
    with pytest.raises(ValueError, match=r"needs the latent sites \['h'\] summed out"):
        ais.log_likelihood(m, params, data, key, 4, 5, reverse=True, sum_out_sites=())


def test_default_schedule_is_salakhutdinov_and_murrays_at_any_length():
    betas = ais.default_betas()
    assert len(betas) == 14500 and np.sum(betas < 0.5) == 500 and np.sum(betas >= 0.9) == 10000
    for num in (6, 1000, 145000):
        b = ais.default_betas(num)
        assert len(b) == num and b[0] == 0.0 and b[-1] == 1.0 and np.all(np.diff(b) > 0)
        if num >= 1000:
            np.testing.assert_allclose(np.mean(b >= 0.9), 10000 / 14500, atol=0.01)
    with pytest.raises(ValueError, match="num_betas"):
        ais.default_betas(3)


def test_an_inverted_bracket_warns():
    """A lower estimate above the upper one by more than the tolerance means a biased
    direction (seen on the RBM 784×500 with CD-25, benchmarks/results/psmc_rbm_mnist.md): it warns as
    a wide bracket does, and a bracket within the tolerance does not."""
    inverted = ais.AISLikelihoodResult(-93.5, 0.6, 10.0, 0.6, np.zeros(4), -91.2, 0.2,
                                       -93.5, 0.6)
    with pytest.warns(RuntimeWarning, match="inverted by 2.3 nats"):
        _ais_setup.warn_if_wide("ais.log_likelihood", inverted, 1.0, "the log-likelihood")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _ais_setup.warn_if_wide("ais.log_likelihood", inverted._replace(lower=-93.0), 1.0,
                               "it")


def test_the_bracket_is_sorted_names_its_directions_and_warns_when_inverted():
    """Issue 46 item 4: the fields ``lower``/``upper`` were the forward and reverse
    estimates whatever their order, and an inversion warned only beyond the tolerance
    (1 nat). On a VBM-10 whose log Z is enumerated here (2^10 states, numpy), reverse
    AIS from uniform states (not draws from the model, so not an upper bound) comes out
    0.39 nats *below* the forward estimate, 24 combined standard errors: the ends are
    now sorted, name the direction they came from, the inversion warns, and the forward
    estimate is the exact value within 4 of its standard errors. The issue's GB-RBM
    numbers (forward 71.540 ± 0.02, reverse 71.476 ± 0.02) warn too."""
    import itertools

    import numpyro_ugm as ugm

    m = ugm.UGM(ugm.models.vbm, 10)
    rng = np.random.default_rng(3)
    W = 0.6 * rng.standard_normal((10, 10))
    b = 0.3 * rng.standard_normal(10)
    states = np.array(list(itertools.product([-1.0, 1.0], repeat=10)))
    f = np.einsum("ni,ij,nj->n", states, np.triu(W, 1), states) + states @ b
    truth = np.log(np.sum(np.exp(f - f.max()))) + f.max()
    params = {"W": jnp.asarray(W, jnp.float32), "b": jnp.asarray(b, jnp.float32)}
    uniform = {"x": jnp.asarray(rng.choice([-1.0, 1.0], size=(2000, 10)), jnp.float32)}
    with pytest.warns(RuntimeWarning, match=r"inverted by 0\.\d+ nats .*from reverse"):
        r = ais.log_partition(m, params, jax.random.PRNGKey(1), 2000, 50,
                              reverse_from=uniform)
    assert float(r.lower) < float(r.upper) and float(r.width) > 0
    assert (r.lower_from, r.upper_from) == ("reverse", "forward")
    assert float(r.upper) == float(r.log_z)
    assert abs(float(r.log_z) - truth) < 4 * float(r.stderr)
    assert "exact draws" in r.caveat
    issue = ais.AISResult(71.540, 0.02, np.zeros(4), **_ais_setup.bracket(
        71.540, 0.02, 71.476, 0.02, "forward"))
    assert (issue.lower, issue.lower_from, issue.upper_from) == (71.476, "reverse", "forward")
    with pytest.warns(RuntimeWarning, match="inverted by 0.064 nats"):
        _ais_setup.warn_if_wide("ais.log_partition", issue, 1.0, "log Z", "forward")


def test_a_raise_result_carries_its_caveat():
    """The RAISE caveat (it bounds the annealing model's likelihood, not the model's) is
    in the result, not only in the docs; the forward estimate is the upper end."""
    m, params, data = small_rbm()
    r = ais.log_likelihood(m, params, data, jax.random.PRNGKey(4), 50, 20, reverse=True,
                           tolerance=np.inf)
    assert r.caveat == ais.RAISE_CAVEAT and "annealing model" in r.caveat
    assert float(r.lower) <= float(r.upper)
    assert {r.lower_from, r.upper_from} == {"forward", "reverse"}
    forward = r.upper if r.upper_from == "forward" else r.lower
    assert float(forward) == float(r.log_likelihood)
