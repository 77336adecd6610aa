"""Where the learner's data goes (learn/data.py): the minibatch order, a fresh permutation
per epoch read ``batch_size`` examples at a time, and the device-mesh placement's check."""

import jax
import numpy as np
import pytest

from numpyro_ugm.learn.data import Minibatches, Placement


class Step:
    """The two fields of a learner state that the order reads."""

    def __init__(self, step, data_key=jax.random.PRNGKey(0)):
        self.step, self.data_key = step, data_key


def test_each_epoch_visits_every_example_once_in_a_fresh_order():
    batches = Minibatches(10, 3)  # 3 minibatches per epoch; example left over each time
    assert batches.per_epoch == 3 and not batches.full
    epochs = []
    for epoch in range(2):
        seen = []
        for step in range(3 * epoch, 3 * epoch + 3):
            state = Step(step)
            perm = batches.permutation(state)
            seen.append(np.asarray(batches.indices(state, perm)))
        seen = np.concatenate(seen)
        assert len(seen) == 9 and len(np.unique(seen)) == 9  # no example twice per epoch
        epochs.append(seen)
    assert not np.array_equal(epochs[0], epochs[1])  # a new order each epoch
    # the same epoch's order for every step of it, and reproducible for the key
    np.testing.assert_array_equal(batches.permutation(Step(0)), batches.permutation(Step(2)))
    assert Minibatches(10, 10).indices(Step(4), None) is None  # full batch: no indices


def test_a_mesh_must_be_a_jax_mesh():
    with pytest.raises(TypeError, match="^mesh must be a jax.sharding.Mesh"):
        Placement("cpu")
    tree = {"x": np.ones(3)}
    assert Placement(None).shard(tree, 3) is tree  # without a mesh: where JAX puts them
    fn = lambda: 1  # noqa: E731
    assert Placement(None).run(fn) is fn
