"""The checks every entry point shares (``runtime/checks.py``): an integer ``rng_key`` and a
fractional count get the same clear error everywhere, before anything compiles."""

import jax
import optax
import pytest
from helpers.models import spins3

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact


def test_an_integer_rng_key_is_an_error_everywhere():
    m, params, _, data = spins3()
    calls = {
        "sample": lambda: ugm.sample(m, params, 0, 2),
        "exact.sample": lambda: exact.sample(m, params, 0, 2),
        "predict": lambda: ugm.predict(m, params, rng_key=0),
        "ais": lambda: ugm.ais.log_partition(m, params, 0, 2, 3),
        "MLE.init": lambda: ugm.MLE(m, ugm.PCD(2), optax.sgd(0.1)).init(0, data),
        "fit_exact": lambda: ugm.fit_exact(m, data, rng_key=0),
        "init_params": lambda: m.init_params(0),
    }
    for owner, call in calls.items():
        with pytest.raises(TypeError, match=rf"^{owner}: rng_key must be one JAX PRNG key, "
                           r"e\.g\. jax\.random\.PRNGKey\(0\) \(an integer seed n: pass "
                           r"jax\.random\.PRNGKey\(n\)\), got the scalar 0$"):
            call()


def test_a_fractional_count_is_an_error_everywhere():
    m, params, _, data = spins3()
    key = jax.random.PRNGKey(0)
    calls = {
        ("sample", "num_warmup", 0): lambda: ugm.sample(m, params, key, 2, num_warmup=1.5),
        ("sample", "num_samples", 1): lambda: ugm.sample(m, params, key, 2.5),
        ("exact.sample", "num_samples", 1): lambda: exact.sample(m, params, key, 2.5),
        ("predict", "num_warmup", 0): lambda: ugm.predict(m, params, num_warmup=0.5),
        ("ais", "num_chains", 2): lambda: ugm.ais.log_partition(m, params, key, 2.5, 3),
        ("fit_exact", "num_steps", 0): lambda: ugm.fit_exact(m, data, num_steps=10.5),
        ("MLE.run", "num_steps", 0): lambda: ugm.MLE(m, ugm.PCD(2), optax.sgd(0.1)).run(
            key, 1.5, data),
        ("gibbs_fn", "num_mcmc_steps", 1): lambda: ugm.infer.gibbs_fn(m, num_mcmc_steps=1.5),
    }
    for (owner, name, minimum), call in calls.items():
        with pytest.raises(ValueError, match=rf"^{owner}: {name} must be an integer >= "
                                             rf"{minimum}, got \d+\.5 of type float"):
            call()


def test_split_key_gives_jax_random_splits_keys_on_the_host():
    import numpy as np

    from numpyro_ugm.runtime.checks import split_key

    key = jax.random.PRNGKey(7)
    first, second = split_key(key)
    expected = np.asarray(jax.random.split(key))
    assert isinstance(first, np.ndarray) and first.dtype == np.uint32
    np.testing.assert_array_equal(first, expected[0])
    np.testing.assert_array_equal(second, expected[1])
    # a host key splits as its device original does, and any key as JAX splits it
    np.testing.assert_array_equal(np.stack(split_key(first)),
                                  np.asarray(jax.random.split(expected[0])))
    for word in np.random.default_rng(0).integers(0, 2 ** 32, (50, 2), dtype=np.uint64):
        key = word.astype(np.uint32)
        np.testing.assert_array_equal(np.stack(split_key(key)),
                                      np.asarray(jax.random.split(key)))
    typed = jax.random.key(3)  # a typed key: JAX splits it
    np.testing.assert_array_equal(np.stack(split_key(typed)),
                                  np.asarray(jax.random.key_data(jax.random.split(typed))))


def test_seed_key_is_jax_random_prngkey_on_the_host():
    import numpy as np

    from numpyro_ugm.runtime.checks import seed_key

    for seed in (0, 1, 7, 2 ** 31 - 1, 2 ** 32 - 1):
        key = seed_key(seed)
        assert isinstance(key, np.ndarray) and key.dtype == np.uint32
        np.testing.assert_array_equal(key, np.asarray(jax.random.PRNGKey(seed)))
