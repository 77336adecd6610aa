"""Checks of the plain arguments that many entry points share: PRNG keys and counts, so
that a wrong argument gets the same clear error everywhere (never a raw JAX one, never a
silent rounding).

* :func:`check_count` accepts an integer (Python ``int``, a numpy integer, a 0-d integer
  array) and nothing else: ``2.5`` is an error, and so is ``2.0`` (a count given as a
  float is a sign of arithmetic gone wrong upstream, and one rule is easier to trust than
  "integral floats are fine").
* :func:`as_key` accepts one PRNG key (``jax.random.PRNGKey(n)`` or ``jax.random.key(n)``).
"""

import functools
import operator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def check_count(owner: str, name: str, value: Any, minimum: int = 1) -> int:
    """``value`` as a Python ``int``, after checking it is an integer >= ``minimum``.

    Parameters
    ----------
    owner : str
        Who takes the setting (``"PCD"``, ``"MLE.run"``, ...), named in the error.
    name : str
        The setting's name, named in the error.
    value : Any
    minimum : int

    Raises
    ------
    ValueError
        If ``value`` is not an integer (a float, a bool, a string, ...) or is below
        ``minimum``.
    """
    number = None
    if not isinstance(value, (bool, np.bool_)):
        try:
            number = operator.index(value)
        except TypeError:
            pass
    if number is None:
        raise ValueError(f"{owner}: {name} must be an integer >= {minimum}, got {value!r} "
                         f"of type {type(value).__name__} (counts are never rounded)")
    if number < minimum:
        raise ValueError(f"{owner}: {name} must be an integer >= {minimum}, got {number}")
    return number


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
