"""What the deterministic fits check and prepare (learn/fit_setup.py): a fit's tolerance,
step count, data and starting point, errors naming the fit, and the problem whose target
observes the data's sites (the others latent)."""

import jax
import numpy as np
import pytest
from helpers.models import spins3

import numpyro_ugm as ugm
from numpyro_ugm.learn.fit_setup import prepare_fit


def test_a_fit_is_prepared_on_the_data_and_checks_its_settings():
    """An RBM fitted to visible data: the target observes ``v`` and leaves ``h`` latent,
    the data comes in the model representation with its number of examples, and the
    starting point is the model's initial parameters drawn with key 0 when none is
    given (the fit then starts at the same point for every call)."""
    v = np.random.default_rng(0).integers(0, 2, size=(7, 4)).astype(np.int8)
    fit = prepare_fit("fit_exact", ugm.models.rbm, {"v": v}, (4, 3), {}, None, 10, None)
    problem = fit.problem
    assert problem.target.latent_sites == ("h",)
    assert problem.num_examples == 7 and fit.num_steps == 10 and problem.inputs is None
    np.testing.assert_array_equal(problem.data["v"], v.astype(np.float32))
    expected = ugm.UGM(ugm.models.rbm, 4, 3).init_params(jax.random.PRNGKey(0))
    for name in expected:
        np.testing.assert_array_equal(fit.params[name], expected[name])
    other = prepare_fit("fit_exact", ugm.models.rbm, {"v": v}, (4, 3), {}, None, 10,
                        jax.random.PRNGKey(1))
    assert not np.array_equal(other.params["W"], fit.params["W"])  # the key is used
    with pytest.raises(ValueError, match="^fit_exact: num_steps must be an integer >= 0"):
        prepare_fit("fit_exact", ugm.models.rbm, {"v": v}, (4, 3), {}, None, -1, None)
    with pytest.raises(TypeError, match="^data must be a dict"):
        prepare_fit("fit_exact", ugm.models.rbm, v, (4, 3), {}, None, 10, None)


def test_fits_check_their_tolerance():
    """A NaN tolerance would never stop a fit (the gradient norm is never <= NaN): both
    fits reject it, and a negative one, naming themselves."""
    m, params, _, data = spins3()
    for fit, owner in ((ugm.fit_exact, "fit_exact"), (ugm.fit_pseudo_likelihood,
                                                      "fit_pseudo_likelihood")):
        for tol in (float("nan"), -1.0, "small"):
            with pytest.raises(ValueError, match=f"^{owner}: tol must be a number >= 0"):
                fit(m, data, params=params, num_steps=3, tol=tol)
