"""Checks of the plain arguments that many entry points share: PRNG keys and counts.

Every public function that takes an ``rng_key`` or a number of samples, chains or steps
goes through :func:`as_key` and :func:`as_count`, so that a wrong argument gets the same
clear error everywhere instead of a raw JAX one (or a silent truncation).
"""

import functools
import operator

import jax
import jax.numpy as jnp
import numpy as np


@functools.lru_cache(maxsize=None)
def _raw_key_shape():
    return tuple(jax.random.key_data(jax.random.key(0)).shape)


def as_key(rng_key, owner: str) -> jax.Array:
    """``rng_key`` as a raw key array (a typed key ``jax.random.key(n)`` gives its data).

    Raises
    ------
    TypeError
        If ``rng_key`` is not one PRNG key (an integer seed, a batch of keys, floats),
        naming ``owner`` and saying to pass ``jax.random.PRNGKey(n)``.
    """
    key = rng_key if hasattr(rng_key, "dtype") else np.asarray(rng_key)
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) and key.shape == ():
        return jax.random.key_data(key)
    if key.dtype == np.uint32 and tuple(key.shape) == _raw_key_shape():
        return key
    got = (f"the scalar {rng_key!r}" if key.ndim == 0
           else f"an array of shape {tuple(key.shape)} and dtype {key.dtype}")
    raise TypeError(f"{owner}: rng_key must be one JAX PRNG key, e.g. "
                    f"jax.random.PRNGKey(0) (an integer seed n: pass jax.random.PRNGKey(n)), "
                    f"got {got}")


def as_count(value, name: str, owner: str, minimum: int = 1) -> int:
    """``value`` as a Python ``int`` >= ``minimum`` (a float with an integer value, such
    as ``100.0``, is that integer).

    Raises
    ------
    ValueError
        Naming ``owner``, ``name`` and the value, for a fractional, non-numeric or
        boolean value or one below ``minimum``.
    """
    try:
        number = operator.index(value)
    except TypeError:
        is_float = isinstance(value, (float, np.floating)) or (
            hasattr(value, "dtype") and np.ndim(value) == 0
            and jnp.issubdtype(value.dtype, jnp.floating))
        number = int(value) if is_float and float(value).is_integer() else None
    if number is None or isinstance(value, (bool, np.bool_)) or number < minimum:
        raise ValueError(f"{owner}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(number)
