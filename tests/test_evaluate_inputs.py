"""Evaluation of CRFs with per-example inputs (``inputs=``, as in learning): exact
log-probabilities, pseudo-likelihood and AIS against a brute-force sum per example."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import adjacency_crf_data, crf_data

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import ais, exact

PARAMS = {"w": jnp.array([-0.1, 0.9]), "v": jnp.array([0.4, -0.1])}


def brute_force(m, params, inputs, data, shape):
    """Per example log p(x_n; θ, inputs_n) and Σ_i log p(x_i | x_−i; θ, inputs_n) from
    the log-potential at every configuration of ±1 spins."""
    configs = jnp.asarray(list(itertools.product([-1.0, 1.0], repeat=int(np.prod(shape)))))
    log_probs, pseudo = [], []
    for n in range(len(data["x"])):
        mb = m.bind(**{k: v[n] for k, v in inputs.items()})
        f = jax.vmap(lambda x: mb.log_potential(params, {"x": x.reshape(shape)}))(configs)
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
