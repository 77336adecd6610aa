"""Finiteness of the potential (diagnose.py): the compiled test at one configuration and
the error that names the first configuration at fault, the factor that is not finite
there, and the largest parameter magnitudes."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.model.diagnose import check_finite, non_finite_error, potential_is_finite


def two_spins():
    h = numpyro.param("h", jnp.zeros(2))
    J = numpyro.param("J", jnp.zeros(()))
    x = numpyro.sample("x", ugm.Spin(2))
    numpyro.factor("fields", h @ x)
    numpyro.factor("pair", J * x[0] * x[1])


def test_the_error_names_the_configuration_and_the_factor_at_fault():
    """Fields of 3e38 overflow to +inf where both spins are +1 and cancel where they
    differ: of the states (+1, −1), (+1, +1) the second is named, with the factor
    ``fields`` (not ``pair``, which is finite everywhere)."""
    m = ugm.UGM(two_spins)
    target = m.target()
    params = {"h": jnp.full(2, 3e38, jnp.float32), "J": jnp.asarray(0.5, jnp.float32)}
    states = {"x": jnp.array([[1.0, -1.0], [1.0, 1.0]])}
    ok = jax.vmap(lambda s: potential_is_finite(target, params, s))(states)
    np.testing.assert_array_equal(ok, [True, False])
    with pytest.raises(FloatingPointError, match=r"^sample: the log-potential or its "
                       r"conditional log-odds are not finite at state 1 under the given "
                       r"params \(factor 'fields' = inf; largest \|value\| per parameter "
                       r"site: \{'h': 3e\+38, 'J': 0.5\}\)") as error:
        check_finite(target, "sample", params, ok, states, lambda index: f"state {index[0]}")
    assert "'pair'" not in str(error.value)
    check_finite(target, "sample", params, np.array([True, True]), states, str)  # no error


def test_non_finite_error_lists_the_details_and_the_magnitudes():
    error = non_finite_error("fit", "the result is nan", {"w": np.array([-7.0, 2.0]),
                                                         "b": np.zeros(0)}, ["at step 3"])
    assert isinstance(error, FloatingPointError)
    assert str(error).startswith("fit: the result is nan under the given params (at step 3; "
                                 "largest |value| per parameter site: {'w': 7, 'b': 0})")
