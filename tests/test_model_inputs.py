"""The inputs of a conditional model (inputs.py): names the model was not traced with are
refused, naming them, and only concrete numeric arrays count as checkable values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numpyro_ugm.model.inputs import check_input_names, concrete_arrays


def test_unknown_input_names_are_refused_naming_them():
    traced = {"features": np.zeros(3), "adjacency": np.zeros((3, 3))}
    check_input_names({"features": np.ones((5, 3))}, traced)  # known: no error
    with pytest.raises(TypeError, match=r"inputs \['colour'\] are not keyword arguments "
                       r"the model was traced with \(\['features', 'adjacency'\]\)"):
        check_input_names({"features": np.ones((5, 3)), "colour": np.ones(5)}, traced)


def test_only_concrete_numeric_arrays_are_checkable():
    assert concrete_arrays({"a": np.ones(3), "b": jnp.arange(2)})
    assert concrete_arrays({"a": np.array([True, False])})
    assert not concrete_arrays({})  # nothing to check
    assert not concrete_arrays({"a": 3.0})  # a Python number may be static (a shape)
    assert not concrete_arrays({"a": np.ones(3), "b": np.array(["x"])})
    seen = []
    jax.jit(lambda a: seen.append(concrete_arrays({"a": a})) or a)(jnp.ones(3))
    assert seen == [False]  # a traced value cannot be checked
