"""Checks of the plain arguments that many entry points share: PRNG keys and counts, so
that a wrong argument gets the same clear error everywhere (never a raw JAX one, never a
silent rounding).

* :func:`check_count` accepts an integer (Python ``int``, a numpy integer, a 0-d integer
  array) and nothing else: ``2.5`` is an error, and so is ``2.0`` (a count given as a
  float is a sign of arithmetic gone wrong upstream, and one rule is easier to trust than
  "integral floats are fine").
* :func:`as_key` accepts one PRNG key (``jax.random.PRNGKey(n)`` or ``jax.random.key(n)``).
* :func:`check_inputs` checks a CRF's per-example inputs (learning, prediction and
  evaluation take the same ``inputs=``).
"""

import functools
import operator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def same_arguments(a: Any, b: Any) -> bool:
    """Whether two (args, kwargs) pytrees hold the very same leaves (identity): model
    arguments for which what was built from them can be reused."""
    leaves_a, tree_a = jax.tree.flatten(a)
    leaves_b, tree_b = jax.tree.flatten(b)
    return tree_a == tree_b and all(x is y for x, y in zip(leaves_a, leaves_b))


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
    # traced, not run: running it compiled two programs in each new process
    return tuple(jax.eval_shape(lambda: jax.random.key_data(jax.random.key(0))).shape)


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


#: Threefry-2x32's rotation constants (Salmon et al. 2011, table 4), rounds 1-4 and 5-8
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _threefry2x32(key, x0, x1):
    """Threefry-2x32 with 20 rounds (Salmon et al. 2011) of the 32-bit words (x0, x1)
    under ``key`` (two words), in numpy scalars: the block function of JAX's default
    PRNG, for :func:`split_key` on the host."""
    with np.errstate(over="ignore"):  # the words wrap modulo 2^32 by design
        k0, k1 = np.uint32(key[0]), np.uint32(key[1])
        schedule = (k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA))
        x0, x1 = np.uint32(x0) + schedule[0], np.uint32(x1) + schedule[1]
        for block in range(5):  # 4 rounds, then a key injection
            for r in _ROTATIONS[block % 2]:
                x0 = x0 + x1
                x1 = ((x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))) ^ x0
            x0 = x0 + schedule[(block + 1) % 3]
            x1 = x1 + schedule[(block + 2) % 3] + np.uint32(block + 1)
    return x0, x1


def _host_threefry() -> bool:
    """Whether JAX's PRNG is its default, partitionable Threefry-2x32 (raw keys of two
    words), whose seeding and splitting :func:`seed_key` and :func:`split_key` do on
    the host."""
    return (jax.config.jax_default_prng_impl == "threefry2x32"
            and bool(jax.config.jax_threefry_partitionable))


def seed_key(seed: int) -> np.ndarray:
    """``jax.random.PRNGKey(seed)`` (0 <= seed < 2^32) as a numpy raw key: (0, seed) under
    the default Threefry, without the programs that seeding compiles in a new
    process; else JAX's key, read back."""
    if _host_threefry() and 0 <= seed < 2 ** 32:
        return np.array([0, seed], np.uint32)
    return np.asarray(jax.random.PRNGKey(seed))


def split_key(rng_key) -> tuple[np.ndarray, np.ndarray]:
    """``jax.random.split(rng_key)``'s two keys as numpy rows (raw keys),
    computed on the host when JAX's PRNG is its default (partitionable Threefry: key i
    is Threefry of the counter (0, i)), else read back from JAX: the same keys, without
    a compiled program (the split and the unpacking of its result, 0.1-0.3 s of a
    small network fit's first call) nor a dispatch per split."""
    typed = jnp.issubdtype(rng_key.dtype, jax.dtypes.prng_key)
    if _host_threefry() and not typed and np.shape(rng_key) == (2,):
        key = np.asarray(rng_key, np.uint32)
        return tuple(np.array(_threefry2x32(key, 0, i), np.uint32) for i in range(2))
    pair = jax.random.split(rng_key)
    pair = np.asarray(jax.random.key_data(pair) if typed else pair)  # raw keys
    return pair[0], pair[1]


def check_inputs(inputs: Any, traced: dict | None = None,
                 num_examples: int | None = None) -> tuple[dict, int]:
    """Per-example model inputs (a CRF's keyword arguments, leading example axis) as
    arrays, and their number of examples.

    Parameters
    ----------
    inputs : dict of str -> array
    traced : dict, optional
        The keyword arguments the model was traced with: every input must be one of
        them, with their shape after the example axis.
    num_examples : int, optional
        The data's number of examples, which the inputs must share.
    """
    if not isinstance(inputs, dict) or not inputs:
        raise TypeError(f"inputs must be a non-empty dict of per-example model keyword "
                        f"arguments (leading axis: examples), got {type(inputs).__name__}")
    if traced is not None:
        unknown = [k for k in inputs if k not in traced]
        if unknown:
            raise TypeError(f"inputs {unknown} are not keyword arguments the model was "
                            f"traced with ({list(traced)})")
    out, num = {}, num_examples
    for name, value in inputs.items():
        value = jnp.asarray(value)
        shape = tuple(value.shape)
        if traced is not None:
            expected = tuple(np.shape(traced[name]))
            if value.ndim != len(expected) + 1 or shape[1:] != expected:
                raise ValueError(
                    f"input {name!r} has shape {shape}; expected (num_examples, "
                    f"{', '.join(map(str, expected))}) — a leading example axis over the "
                    f"shape {expected} the model was traced with (one example: add [None])")
        if value.ndim == 0 or (num_examples is not None and shape[0] != num_examples):
            raise ValueError(f"input {name!r} has shape {shape}: its leading axis must be "
                             f"the {num_examples} examples of the data")
        if num is None:
            num = shape[0]
        elif shape[0] != num:
            raise ValueError(f"input {name!r} has {shape[0]} examples but other inputs "
                             f"have {num}")
        if num == 0:
            raise ValueError(f"input {name!r} has no examples")
        if jnp.issubdtype(value.dtype, jnp.inexact) and not bool(jnp.all(jnp.isfinite(value))):
            raise ValueError(f"input {name!r} holds non-finite values")
        out[name] = value
    return out, int(num)
