"""What the deterministic fits check and prepare (learn/fit_setup.py): a fit's tolerance,
step count, data and starting point, errors naming the fit, and the problem whose target
observes the data's sites (the others latent)."""

import warnings

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


def _gaussian_data(seed, dim=4, num_examples=200):
    """x ~ N(0, Θ⁻¹), Θ = AAᵀ/4 + I, A ~ N(0, 1) (issue 46's graphical-lasso case)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(dim, dim))
    cov = np.linalg.inv(a @ a.T / 4 + np.eye(dim))
    return rng.multivariate_normal(np.zeros(dim), cov, size=num_examples).astype(np.float32)


def test_an_unconverged_fit_warns_and_a_converged_one_does_not():
    """The graphical-lasso MAP of 4 variables (L1 prior, non-smooth): L-BFGS stalls at a
    kink after a few steps, short of the 500 asked, with a gradient norm ~0.2; the fit
    warns, naming the gradient norm, the steps and the kink (it returned
    ``converged=False`` without a word). The same model without the penalty (smooth)
    converges and does not warn; a fit cut short by ``num_steps`` says to raise it."""
    x = _gaussian_data(0)
    with pytest.warns(RuntimeWarning, match=r"^fit_exact: not converged: the gradient "
                      r"norm of the objective is [0-9.e-]+ \(tol 1e-06\) after \d+ of the "
                      r"500 steps asked; the line search found no better point.*kink"):
        fit = ugm.fit_exact(ugm.models.sparse_gmrf, {"x": x}, 4, 0.1, 200,
                            progress_bar=False)
    assert not fit.converged and fit.num_steps < 500 and fit.grad_norm > 1e-3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = ugm.fit_exact(ugm.models.sparse_gmrf, {"x": x}, 4, progress_bar=False)
    assert fit.converged
    m, params, _, data = spins3()
    with pytest.warns(RuntimeWarning, match=r"^fit_pseudo_likelihood: not converged.* "
                      r"after 1 of the 1 steps asked; raise num_steps"):
        assert not ugm.fit_pseudo_likelihood(m, data, params=params, num_steps=1,
                                             progress_bar=False).converged
