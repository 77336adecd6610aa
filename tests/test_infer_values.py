"""Starting values and representations of the numpyro adapters (infer/values.py):
initial states in the data or the model representation, checked against the domains, and
samples converted back to the data representation."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from helpers.models import potts5, potts_ring

import numpyro_ugm as ugm
from numpyro_ugm.infer import UGMSampler


def test_init_params_in_either_representation():
    sampler = UGMSampler(potts_ring, params=potts5()[1])
    key = jax.random.PRNGKey(0)
    labels = np.array([0, 1, 2, 1, 0])
    for start in (labels, np.eye(3, dtype=np.float32)[labels]):
        state = sampler.init(key, 0, {"x": start}, (5, 3), {})
        np.testing.assert_array_equal(state.z["x"], np.eye(3)[labels])
    batched = sampler.init(jax.random.split(key, 4), 0, {"x": np.tile(labels, (4, 1))},
                           (5, 3), {})
    assert batched.z["x"].shape == (4, 5, 3) and batched.rng_key.shape[0] == 4
    with pytest.raises(ValueError, match="outside the domain"):
        sampler.init(key, 0, {"x": labels + 1}, (5, 3), {})
    with pytest.raises(ValueError, match="has shape"):
        sampler.init(key, 0, {"x": labels[:4]}, (5, 3), {})


def test_to_data_converts_the_state_sites_and_passes_the_others_through():
    """Model representation -> data: spins ±1.0 and binary 0.0/1.0 as ``int8``, one-hot
    vectors as integer labels, with any leading axes; a continuous site comes back as it
    was given."""
    def model():
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        s = numpyro.sample("s", ugm.Spin(3))
        b = numpyro.sample("b", ugm.Binary(2))
        c = numpyro.sample("c", ugm.Categorical(2, num_categories=3))
        numpyro.factor("f", jnp.sum(s) + jnp.sum(b) + jnp.sum(c[:, 0]))
        numpyro.sample("y", dist.Normal(jnp.sum(s), sigma), obs=0.0)

    labels = np.array([[[2, 0]], [[1, 1]]])  # leading axes (2, 1)
    samples = {"s": jnp.array([[[1.0, -1.0, 1.0]], [[-1.0, -1.0, 1.0]]]),
               "b": jnp.array([[[0.0, 1.0]], [[1.0, 1.0]]]),
               "c": jnp.asarray(np.eye(3, dtype=np.float32)[labels]),
               "sigma": jnp.array([[0.5], [1.5]])}
    out = ugm.infer.to_data(model, samples)
    assert out["s"].dtype == jnp.int8 and out["b"].dtype == jnp.int8
    np.testing.assert_array_equal(out["s"], [[[1, -1, 1]], [[-1, -1, 1]]])
    np.testing.assert_array_equal(out["b"], [[[0, 1]], [[1, 1]]])
    assert out["c"].dtype.kind == "i"
    np.testing.assert_array_equal(out["c"], labels)
    np.testing.assert_array_equal(out["sigma"], samples["sigma"])
