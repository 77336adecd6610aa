"""The padding of the example axis (evaluate/_padding.py), which lets data of 5 to 8
examples share one compiled program: lengths round up to a power of two, padded rows are
copies of the first row, and masked means and cuts give the unpadded results."""

import jax
import jax.numpy as jnp
import numpy as np

from numpyro_ugm.evaluate._padding import first, mean_of_first, pad_examples, padded_length


def test_lengths_round_up_to_a_power_of_two():
    assert [padded_length(n) for n in (0, 1, 2, 3, 5, 8, 9, 1000)] == [1, 1, 2, 4, 8, 8, 16,
                                                                        1024]


def test_padded_rows_do_not_change_the_mean_or_the_first_entries():
    values = np.array([3.0, -1.0, 4.0, 1.0, 5.0], np.float32)
    tree = {"x": values, "y": np.arange(10).reshape(5, 2)}
    padded = pad_examples(tree, padded_length(5))
    assert padded["x"].shape == (8,) and padded["y"].shape == (8, 2)
    np.testing.assert_array_equal(padded["x"][5:], [3.0, 3.0, 3.0])  # copies of row 0
    np.testing.assert_array_equal(padded["y"][5:], [[0, 1]] * 3)
    assert pad_examples(tree, 5)["x"] is tree["x"]  # nothing to pad
    # the padded rows are masked out: the mean of the 5 values, not of the 8 rows
    np.testing.assert_allclose(float(mean_of_first(jnp.asarray(padded["x"]), jnp.asarray(5))),
                               values.mean(), rtol=1e-6)
    assert abs(float(jnp.mean(padded["x"])) - values.mean()) > 0.1  # not blind
    # one program for every count: the count may be traced
    mean = jax.jit(mean_of_first)
    for n in (1, 3, 5):
        np.testing.assert_allclose(float(mean(jnp.asarray(padded["x"]), jnp.asarray(n))),
                                   values[:n].mean(), rtol=1e-6)
    np.testing.assert_array_equal(first(padded["x"], 5), values)
    np.testing.assert_array_equal(jax.jit(lambda v: first(v, 2))(padded["x"]), values[:2])
    # traced arrays are padded too (inside a user's jit)
    traced = jax.jit(lambda v: pad_examples(v, 8))(jnp.asarray(values))
    np.testing.assert_array_equal(traced, np.asarray(padded["x"]))
