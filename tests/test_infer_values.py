"""Starting values of the numpyro adapters (infer/values.py): initial states in the data
or the model representation, checked against the domains."""

import jax
import numpy as np
import pytest
from helpers import potts5, potts_ring

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
