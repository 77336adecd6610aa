"""``ugm.Exact`` (learn/exact_estimator.py): the exact negative phase as an estimator of
``ugm.MLE`` — log Z differentiated, by elimination (a chain CRF with padded sentences,
minibatches) or enumeration (a visible Boltzmann machine) — reaches the optimum of
``ugm.fit_exact`` on the same data, reports log Z and the log-likelihood as it goes, and
refuses what it cannot do (a potential that does not decompose)."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import optax
import pytest

import numpyro_ugm as ugm


def crf_data(num=120, length=6, num_attributes=10, K=3, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, length + 1, num)
    mask = np.arange(length)[None] < lengths[:, None]
    features = np.where(mask[..., None], rng.integers(0, num_attributes, (num, length, 2)),
                        num_attributes).astype(np.int32)
    labels = (rng.integers(0, K, (num, length)) * mask).astype(np.int32)
    return {"y": labels}, {"features": features, "mask": mask}


def test_exact_on_a_chain_crf_reaches_fit_exacts_optimum():
    """Full batch: Adam on the exact gradient ends at fit_exact's MAP (L-BFGS); its
    recorded log Z and log-likelihood are the exact ones there."""
    data, inputs = crf_data()
    kwargs = {"num_labels": 3, "num_features": 10, "prior_scale": 1.0}
    m = ugm.UGM(ugm.models.chain_crf, features=inputs["features"][0],
                mask=inputs["mask"][0], **kwargs)
    fit = ugm.fit_exact(m, data, inputs=inputs, progress_bar=False)
    learner = ugm.MLE(ugm.models.chain_crf, ugm.Exact(), optax.adam(0.05))
    out = learner.run(jax.random.PRNGKey(0), 800, data, inputs=inputs, progress_bar=False,
                      **kwargs)
    for name in ("W", "A"):
        np.testing.assert_allclose(out.params[name], fit.params[name], atol=2e-3)
    log_likelihood = ugm.exact.log_likelihood(m, out.params, data, inputs=inputs)
    # recorded at the last step's parameters, one update before the final ones
    np.testing.assert_allclose(out.diagnostics["log_likelihood"][-1], log_likelihood,
                               atol=2e-3)
    np.testing.assert_allclose(fit.log_likelihood, log_likelihood, atol=1e-4)


@pytest.mark.slow
def test_exact_with_minibatches_on_a_boltzmann_machine_by_enumeration():
    """A 6-spin VBM with a prior (MAP exists), minibatches of 25: Adam with a decaying
    rate ends near fit_exact's optimum."""
    rng = np.random.default_rng(1)
    v = np.where(rng.random((200, 6)) < 0.6, 1, -1).astype(np.int8)

    def vbm(n):
        W = numpyro.sample("W", dist.Normal(0, 1).expand((n, n)).to_event(2))
        b = numpyro.sample("b", dist.Normal(0, 1).expand((n,)).to_event(1))
        x = numpyro.sample("v", ugm.Spin(n))
        numpyro.factor("f", x @ jnp.triu(W, 1) @ x + b @ x)

    fit = ugm.fit_exact(ugm.UGM(vbm, 6), {"v": v}, progress_bar=False)
    schedule = optax.exponential_decay(0.05, 2000, 0.05)
    learner = ugm.MLE(vbm, ugm.Exact(), optax.adam(schedule))
    out = learner.run(jax.random.PRNGKey(0), 4000, {"v": v}, 6, batch_size=25,
                      progress_bar=False)
    for name in ("W", "b"):
        np.testing.assert_allclose(np.triu(out.params[name], 1) if name == "W" else
                                   out.params[name],
                                   np.triu(fit.params[name], 1) if name == "W" else
                                   fit.params[name], atol=0.03)


def third_order(n):
    J = numpyro.param("J", jnp.full(n - 1, 0.3))
    T = numpyro.param("T", jnp.asarray(0.7))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("f", J @ (x[:-1] * x[1:]) + T * x[0] * x[1] * x[2])


def test_exact_refuses_a_bad_method_and_a_potential_that_does_not_decompose():
    with pytest.raises(ValueError, match="method must be one of"):
        ugm.Exact(method="junction")
    learner = ugm.MLE(third_order, ugm.Exact(method="eliminate"), optax.adam(0.1))
    with pytest.raises(ValueError, match=r"Exact: .*three or more variables"):
        learner.init(jax.random.PRNGKey(0), {"x": np.ones((4, 5), np.int8)}, 5)
