"""Evaluation of CRFs with per-example inputs (``inputs=``, as in learning): exact
log-probabilities, pseudo-likelihood and AIS against a brute-force sum per example, and
the fits (exact conditional maximum likelihood, conditional pseudo-likelihood) against a
brute-force optimum."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers.crf import adjacency_crf, adjacency_crf_data, crf_data
from scipy.optimize import minimize_scalar

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import ais, exact

PARAMS = {"w": jnp.array([-0.1, 0.9]), "v": jnp.array([0.4, -0.1])}


def brute_force(m, params, inputs, data, shape):
    """Per example log p(x_n; θ, inputs_n) and Σ_i log p(x_i | x_−i; θ, inputs_n) from
    the log-potential at every configuration of ±1 spins."""
    configs = jnp.asarray(list(itertools.product([-1.0, 1.0], repeat=int(np.prod(shape)))))
    log_probs, pseudo = [], []
    for n in range(len(data["x"])):
        mb = m.for_example(**{k: v[n] for k, v in inputs.items()})
        f = jax.vmap(lambda x: mb.target().log_potential(params, {"x": x.reshape(shape)}))(configs)
        x = jnp.asarray(data["x"][n], jnp.float32).reshape(-1)
        index = int(np.ravel_multi_index(tuple((np.asarray(x) > 0).astype(int)),
                                         (2,) * x.size))
        log_probs.append(float(f[index] - jax.nn.logsumexp(f)))
        total = 0.0
        for i in range(x.size):  # the configuration with spin i flipped
            flipped = index ^ (1 << (x.size - 1 - i))
            total += float(f[index] - jnp.logaddexp(f[index], f[flipped]))
        pseudo.append(total)
    return np.array(log_probs), np.array(pseudo)


@pytest.fixture(scope="module", params=["grid", "adjacency"])
def case(request):
    """The 3×3 grid CRF (inputs: features) and the 5-spin CRF whose interaction graph is
    an input (the structure traced with the first example does not hold for the others)."""
    if request.param == "grid":
        m, inputs, data = crf_data()
        inputs = jax.tree.map(lambda a: a[:4], inputs)
        data = {"x": data["x"][:4].copy()}
        data["x"][1, 0, 0] = data["x"][2, 1, 2] = -data["x"][1, 0, 0]  # not all alike
        params, shape = PARAMS, (3, 3)
    else:
        m, inputs, data = adjacency_crf_data()
        params, shape = {"J": jnp.asarray(0.8)}, (5,)
    log_probs, pseudo = brute_force(m, params, inputs, data, shape)
    return dict(m=m, inputs=inputs, data=data, params=params, log_probs=log_probs,
                pseudo=pseudo)


def test_exact_log_probabilities_take_each_examples_inputs(case):
    m, params, data, inputs = case["m"], case["params"], case["data"], case["inputs"]
    np.testing.assert_allclose(exact.log_prob(m, params, data, inputs=inputs),
                               case["log_probs"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(exact.log_likelihood(m, params, data, inputs=inputs),
                               case["log_probs"].mean(), rtol=1e-5)
    # the inputs matter: without them every example takes the traced model's inputs
    assert abs(float(exact.log_likelihood(m, params, data))
               - case["log_probs"].mean()) > 1e-3


def test_pseudo_likelihood_takes_each_examples_inputs(case):
    m, params, data, inputs = case["m"], case["params"], case["data"], case["inputs"]
    np.testing.assert_allclose(
        ugm.pseudo_log_likelihood(m, params, data, inputs=inputs), case["pseudo"].mean(),
        rtol=1e-5)


def test_ais_log_likelihood_takes_each_examples_inputs(case):
    m, params, data, inputs = case["m"], case["params"], case["data"], case["inputs"]
    truth = case["log_probs"].mean()
    r = ais.log_likelihood(m, params, data, jax.random.PRNGKey(0), 200, 100, inputs=inputs,
                           reverse=True)
    assert 0 < float(r.stderr) < 0.05
    assert abs(float(r.upper) - truth) < 4 * float(r.stderr) + 1e-3, (float(r.upper), truth)
    assert float(r.lower) < truth + 4 * float(r.lower_stderr) + 1e-3


def test_evaluation_checks_its_inputs():
    m, inputs, data = crf_data()
    with pytest.raises(ValueError, match=r"input 'edge_features' has shape \(9, 12, 2\): "
                                         r"its leading axis must be the 10 examples"):
        exact.log_prob(m, PARAMS, data, inputs={**inputs,
                                                "edge_features": inputs["edge_features"][:9]})
    with pytest.raises(TypeError, match=r"inputs \['colour'\] are not keyword arguments"):
        ugm.pseudo_log_likelihood(m, PARAMS, data, inputs={"colour": inputs["node_features"]})
    with pytest.raises(ValueError, match=r"input 'node_features' holds non-finite values"):
        ais.log_likelihood(m, PARAMS, data, jax.random.PRNGKey(0), 4, 5, inputs={
            **inputs, "node_features": inputs["node_features"].at[0].set(jnp.nan)})


def conditional_objectives(inputs, data):
    """The mean conditional log-likelihood and pseudo-log-likelihood of ``adjacency_crf``
    as functions of J, by brute force (float64): f = J Σ_{i<j} a_ij x_i x_j, so each
    example's log Z sums over its 32 configurations, and p(x_i | x_−i) is the logistic
    function of 2 x_i J (a x)_i."""
    configs = np.array(list(itertools.product([-1.0, 1.0], repeat=5)))  # (32, 5)
    upper = np.triu(np.asarray(inputs["adjacency"], np.float64), 1)  # (N, 5, 5)
    x = np.asarray(data["x"], np.float64)  # (N, 5)
    stat_all = np.einsum("si,nij,sj->ns", configs, upper, configs)  # (N, 32)
    stat_data = np.einsum("ni,nij,nj->n", x, upper, x)
    field = np.einsum("nij,nj->ni", upper + np.swapaxes(upper, 1, 2), x)  # (A x)_i

    def log_likelihood(J):
        return np.mean(J * stat_data - np.logaddexp.reduce(J * stat_all, axis=1))

    def pseudo(J):
        return np.mean(np.sum(-np.logaddexp(0.0, -2.0 * J * x * field), axis=1))

    return log_likelihood, pseudo


def best(objective):
    return minimize_scalar(lambda J: -objective(J), bounds=(-5.0, 5.0), method="bounded",
                           options={"xatol": 1e-9}).x


@pytest.mark.slow  # by default the evaluations above check the same per-example binding
def test_fits_take_each_examples_inputs():
    """``fit_exact`` and ``fit_pseudo_likelihood`` take a CRF's inputs as evaluation does
    (they used to hand ``inputs=`` to the model function: ``TypeError``) and maximize the
    conditional likelihood and pseudo-likelihood over the examples, each under its own
    graph; a model function is traced with the first example's inputs."""
    m, inputs, data = adjacency_crf_data()
    log_likelihood, pseudo = conditional_objectives(inputs, data)
    start = {"J": jnp.asarray(0.1, jnp.float32)}
    for model, args in ((adjacency_crf, ()), (m, ())):
        ml = ugm.fit_exact(model, data, *args, params=start, num_steps=100, inputs=inputs)
        assert ml.converged
        np.testing.assert_allclose(ml.params["J"], best(log_likelihood), atol=1e-3)
        np.testing.assert_allclose(ml.log_likelihood, log_likelihood(best(log_likelihood)),
                                   rtol=1e-5)
        mple = ugm.fit_pseudo_likelihood(model, data, params=start, num_steps=100,
                                         inputs=inputs)
        assert mple.converged
        np.testing.assert_allclose(mple.params["J"], best(pseudo), atol=1e-3)
        np.testing.assert_allclose(mple.pseudo_log_likelihood, pseudo(best(pseudo)),
                                   rtol=1e-5)
    # the inputs matter: the two optima differ from the fits of the traced graph alone
    alone = ugm.fit_exact(m, data, params=start, num_steps=100)
    assert abs(float(alone.params["J"]) - best(log_likelihood)) > 0.05
    with pytest.raises(TypeError, match=r"inputs \['colour'\] are not keyword arguments"):
        ugm.fit_exact(m, data, params=start, inputs={"colour": inputs["adjacency"]})


def test_crf_evaluation_compiles_once_per_power_of_two_of_examples():
    """Exact log-probabilities of 3 and then 4 examples under their inputs share one
    compiled program (the examples are padded to a power of two, the padding skipped),
    and agree with brute force. The model is traced on the host at every call too (the
    check that its blocks hold for every example draws probe parameters): a new number
    of examples must trace it no more than a repeated call does."""
    calls = []

    def counted_crf(**inputs):
        calls.append(1)  # runs only when the model is traced
        return ugm.models.grid_crf(**inputs)

    _, inputs, data = crf_data()
    m = ugm.UGM(counted_crf, **{k: v[0] for k, v in inputs.items()})
    log_probs, _ = brute_force(m, PARAMS, inputs, data, (3, 3))

    def traces(evaluate, n):
        before = len(calls)
        got = evaluate(m, PARAMS, {"x": data["x"][:n]},
                       inputs=jax.tree.map(lambda a: a[:n], inputs))
        return len(calls) - before, got

    for evaluate, want in ((exact.log_prob, lambda n: log_probs[:n]),
                           (exact.log_likelihood, lambda n: log_probs[:n].mean())):
        traces(evaluate, 3)
        repeated, got = traces(evaluate, 3)
        np.testing.assert_allclose(got, want(3), rtol=1e-5, atol=1e-5)
        longer, got = traces(evaluate, 4)
        np.testing.assert_allclose(got, want(4), rtol=1e-5, atol=1e-5)
        assert longer == repeated, (evaluate.__name__, longer, repeated)
