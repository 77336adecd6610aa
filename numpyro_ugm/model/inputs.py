"""The inputs of a conditional model (CRF): per-example model keyword arguments, checked
against the arguments a model was traced with before they are bound."""

from collections.abc import Mapping

import jax
import numpy as np

__all__ = ["check_input_names", "concrete_arrays"]


def check_input_names(inputs: Mapping, traced_kwargs: Mapping) -> None:
    """Raise if ``inputs`` names a keyword argument the model was not traced with."""
    unknown = [k for k in inputs if k not in traced_kwargs]
    if unknown:
        raise TypeError(f"inputs {unknown} are not keyword arguments the model was "
                        f"traced with ({list(traced_kwargs)})")


def concrete_arrays(inputs: Mapping) -> bool:
    """Whether ``inputs`` holds only concrete numeric arrays (which can be checked: a
    traced value cannot, and a Python number may be static, e.g. a shape)."""
    leaves = jax.tree.leaves(inputs)
    return bool(leaves) and all(
        isinstance(v, (np.ndarray, jax.Array)) and not isinstance(v, jax.core.Tracer)
        and v.dtype.kind in "biuf" for v in leaves)
