"""``ugm.predict`` (marginals and MAP labels of a CRF, per example; by elimination by
default, by MCMC with ``exact=False``) against exact enumeration on the 3×3 grid CRFs of ``helpers.crf.crf_data`` (512 labelings per image); the
samplers' check of a potential that is not finite (``predict`` and ``ugm.sample``)."""

import itertools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers.crf import crf_data

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact
from numpyro_ugm.models import grid_crf


@pytest.fixture(scope="module")
def problem():
    """The images' features and the traced model (the learner's CRF problem)."""
    m, inputs, data = crf_data()
    return dict(m=m, inputs=inputs, data=data)


@pytest.fixture(scope="module")
def prediction_case(problem):
    """Three of the images and parameters near the optimum (a clear-cut but not trivial
    posterior); exact marginals and the brute-force MAP of each image."""
    m = problem["m"]
    inputs = jax.tree.map(lambda a: a[:3], problem["inputs"])
    params = {"w": jnp.array([-0.1, 0.9]), "v": jnp.array([0.4, -0.1])}
    marginals = jax.vmap(lambda inp: exact.marginals(m.for_example(**inp), params)["x"])(inputs)
    configs = jnp.asarray(list(itertools.product([-1.0, 1.0], repeat=9))).reshape(-1, 3, 3)

    def scores(inp):
        mb = m.for_example(**inp)
        return jax.vmap(lambda x: mb.target().log_potential(params, {"x": x}))(configs)

    f = jax.vmap(scores)(inputs)  # (3, 512)
    order = jnp.sort(f, axis=1)
    assert np.all(np.asarray(order[:, -1] - order[:, -2]) > 1e-3)  # unique MAPs
    return dict(m=m, inputs=inputs, params=params, marginals=marginals,
                map=configs[jnp.argmax(f, 1)].astype(np.int8), map_value=jnp.max(f, 1))


def test_predict_marginals_match_exact(prediction_case):
    case = prediction_case
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # chains that agree: no R-hat warning
        pred = ugm.predict(case["m"], case["params"], case["inputs"], "marginal",
                           rng_key=jax.random.PRNGKey(3), num_chains=16, num_samples=300,
                           num_warmup=50, exact=False)
    assert pred.r_hat["x"].shape == (3, 3, 3) and np.nanmax(pred.r_hat["x"]) < 1.1
    assert pred.marginals["x"].shape == (3, 3, 3, 2)
    assert pred.labels["x"].shape == (3, 3, 3) and pred.labels["x"].dtype == np.int8
    np.testing.assert_allclose(pred.marginals["x"].sum(-1), 1.0, atol=1e-5)
    # 4800 Rao-Blackwellized draws per image, autocorrelated: error well under 0.01
    np.testing.assert_allclose(pred.marginals["x"], case["marginals"], atol=0.01)
    exact_labels = np.where(np.asarray(case["marginals"])[..., 1] > 0.5, 1, -1)
    clear = np.abs(np.asarray(case["marginals"])[..., 1] - 0.5) > 0.05
    np.testing.assert_array_equal(np.asarray(pred.labels["x"])[clear], exact_labels[clear])
    m = case["m"]
    f = jax.vmap(lambda inp, x: m.target().bind(**inp).log_potential(case["params"], {"x": x}))(
        case["inputs"], jnp.asarray(pred.labels["x"], jnp.float32))
    np.testing.assert_allclose(pred.log_potential, f, rtol=1e-5, atol=1e-5)


def test_predict_map_finds_brute_force_map(prediction_case):
    case = prediction_case
    pred = ugm.predict(case["m"], case["params"], case["inputs"], "map",
                       rng_key=jax.random.PRNGKey(4), num_chains=4, num_samples=200,
                       exact=False)
    assert pred.marginals is None and pred.r_hat is None
    np.testing.assert_array_equal(pred.labels["x"], case["map"])
    np.testing.assert_allclose(pred.log_potential, case["map_value"], rtol=1e-5)


def test_exact_predictions_by_elimination(prediction_case):
    """By default (the grid is thin) ``predict`` is exact: the marginals are enumeration's
    to float rounding and the MAP is the brute-force one, with no chains (no R-hat)."""
    case = prediction_case
    marginal = ugm.predict(case["m"], case["params"], case["inputs"], "marginal")
    assert marginal.r_hat is None and marginal.labels["x"].dtype == np.int8
    np.testing.assert_allclose(marginal.marginals["x"], case["marginals"], atol=2e-6)
    exact_labels = np.where(np.asarray(case["marginals"])[..., 1] > 0.5, 1, -1)
    np.testing.assert_array_equal(marginal.labels["x"], exact_labels)
    best = ugm.predict(case["m"], case["params"], case["inputs"], "map", exact=True)
    np.testing.assert_array_equal(best.labels["x"], case["map"])
    np.testing.assert_allclose(best.log_potential, case["map_value"], rtol=1e-5)
    with pytest.raises(ValueError, match=r"predict: exact must be"):
        ugm.predict(case["m"], case["params"], case["inputs"], exact="yes")


def test_predict_warns_when_its_chains_disagree():
    """Issue 46 sweep: on a 4×4 grid CRF with coupling 0.9 and weak fields (two modes;
    every exact marginal 0.32–0.35, by enumeration of the 2^16 labelings), the default
    call (16 chains of 500 Gibbs sweeps) put marginals at up to 0.55 (0.22 off) with no
    word, while ``ugm.sample`` on the same chains warned (split R-hat 2.6). ``predict``
    now reports the split R-hat of every variable's estimate and warns; the marginals are
    unchanged."""
    size = 4
    y = 0.3 * np.random.default_rng(0).normal(0, 1, (size, size))
    node, edge = ugm.models.image_features(y)
    m = ugm.UGM(grid_crf, node, edge)
    params = {"w": jnp.array([0.0, 0.3]), "v": jnp.array([0.9, 0.0])}
    x = np.array(list(itertools.product([-1.0, 1.0], repeat=size * size)))
    edges = ugm.models.grid_edges(size, size)
    f = (x @ (np.asarray(node, np.float64).reshape(-1, 2) @ [0.0, 0.3])
         + (x[:, edges[:, 0]] * x[:, edges[:, 1]]) @ (np.asarray(edge, np.float64) @ [0.9, 0]))
    p = np.exp(f - f.max())
    exact_marginals = (p / p.sum()) @ ((x + 1) / 2)
    with pytest.warns(RuntimeWarning, match=r"^predict: split R-hat .* > 1.1 at site 'x': "
                                            r"the chains disagree"):
        pred = ugm.predict(m, params, exact=False)
    error = np.abs(np.asarray(pred.marginals["x"])[..., 1].ravel() - exact_marginals).max()
    assert error > 0.1  # the wrong answer it warns about
    exactly = ugm.predict(m, params)  # the default: elimination (issue 49), no chains
    np.testing.assert_allclose(np.asarray(exactly.marginals["x"])[..., 1].ravel(),
                               exact_marginals, atol=2e-6)
    assert pred.r_hat["x"].shape == (size, size) and np.nanmin(pred.r_hat["x"]) > 1.5


def test_predict_input_errors(prediction_case):
    case = prediction_case
    m, params, inputs = case["m"], case["params"], case["inputs"]
    one = {k: v[0] for k, v in inputs.items()}  # no example axis
    with pytest.raises(ValueError, match=r"input 'node_features' has shape \(3, 3, 2\); "
                                         r"expected \(num_examples, 3, 3, 2\)"):
        ugm.predict(m, params, {"node_features": one["node_features"],
                                "edge_features": inputs["edge_features"]})
    with pytest.raises(ValueError, match=r"input '\w+_features' has shape"):
        ugm.predict(m, params, one)
    with pytest.raises(ValueError, match=r"has \d examples but other inputs have \d"):
        ugm.predict(m, params, {**inputs, "edge_features": inputs["edge_features"][:2]})
    with pytest.raises(TypeError, match=r"inputs \['colour'\] are not keyword arguments"):
        ugm.predict(m, params, {**inputs, "colour": inputs["node_features"]})
    with pytest.raises(TypeError, match="non-empty dict"):
        ugm.predict(m, params, [inputs["node_features"]])
    with pytest.raises(ValueError, match="method must be 'marginal' or 'map'"):
        ugm.predict(m, params, inputs, method="mode")
    with pytest.raises(ValueError, match="num_chains must be an integer >= 1"):
        ugm.predict(m, params, inputs, num_chains=0)
    with pytest.raises(ValueError, match="^predict: num_samples must be an integer >= 1, "
                                         "got 2.5"):
        ugm.predict(m, params, inputs, num_samples=2.5)
    with pytest.raises(KeyError, match="parameter site 'v' is missing"):
        ugm.predict(m, {"w": params["w"]}, inputs)
    # a model function is traced with the first example's inputs; unknown names say so
    with pytest.raises(TypeError, match=r"first example's inputs .*'colour'.* failed: .*"
                                        r"unexpected keyword argument 'colour'"):
        ugm.predict(grid_crf, params, {**inputs, "colour": inputs["node_features"]})


#: parameters of the grid CRF that overflow float32 in its factors
HUGE = {"w": jnp.array([3e38, 3e38]), "v": jnp.array([3e38, 3e38])}


def test_predict_with_an_overflowing_potential_is_an_error(prediction_case):
    """Parameters that overflow float32 in a factor give NaN conditionals: an error,
    not labels and marginals of NaN (issue 13, item 4)."""
    case = prediction_case
    with pytest.raises(FloatingPointError, match=r"predict: the log-potential or its "
                       r"conditional log-odds are not finite at the last state of chain \d "
                       r"under the given params \(.*'w': 3e\+38"):
        ugm.predict(case["m"], HUGE, num_chains=2, num_samples=2, num_warmup=0, exact=False)


def test_sample_of_an_overflowing_potential_is_an_error(problem):
    """``ugm.sample`` (sampling.py) checks the potential at its draws the same way (on
    the CRF, whose structure this module has found already)."""
    with pytest.raises(FloatingPointError, match=r"^sample: the log-potential or its "
                       r"conditional log-odds are not finite at draw \d+ of chain \d+ under "
                       r"the given params \(factor '\w+' = [-+]?(inf|nan).*'w': 3e\+38"):
        ugm.sample(problem["m"], HUGE, jax.random.PRNGKey(0), 1, num_chains=2)


def counted_vbm(n, traces):
    """``ugm.models.vbm(n)``, counting in ``traces`` how often it is traced."""
    traces.append(1)
    ugm.models.vbm(n)


@pytest.mark.parametrize("method", ["marginal", "map"])
def test_other_counts_reuse_the_compiled_sampler(method):
    """Other keys, numbers of draws and warm-up steps (and, for ``"map"``, schedules) run
    the sampler compiled by the first call: the model is not traced again (it used to
    be, for every new count). ``"map"`` compiles once per power of two of draws."""
    traces = []
    m = ugm.UGM(counted_vbm, 4, traces)
    params = {"W": 0.3 * jnp.ones((4, 4)), "b": 0.2 * jnp.ones(4)}
    first = ugm.predict(m, params, None, method, num_chains=2, num_samples=5, exact=False)
    before = len(traces)
    for key, num_samples, num_warmup, beta_max in [(1, 6, 0, 10.0), (2, 8, 3, 100.0)]:
        again = ugm.predict(m, params, None, method, rng_key=jax.random.PRNGKey(key),
                            num_chains=2, num_samples=num_samples, num_warmup=num_warmup,
                            beta_max=beta_max, exact=False)
    assert len(traces) == before
    assert first.labels["x"].shape == again.labels["x"].shape == (4,)
    ugm.predict(m, params, None, method, num_chains=3, num_samples=5, exact=False)
    assert len(traces) > before, "test is blind"
