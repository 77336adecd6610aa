"""Exact fits of dyad-independent ERGMs (``network/estimation/dyad_independent.py``): the
MLE and its standard errors against a generic optimizer, and R's ergm on flomarriage ~
edges + nodecov("wealth")."""


import numpy as np
import pytest
from scipy import optimize

from numpyro_ugm.network.estimation.dyad_independent import (dyad_independent_log_likelihood,
                                                             dyad_independent_mle)
from numpyro_ugm.network.summary import dyad_independent_fit
from helpers.network import STATNET


DATA = STATNET


def test_dyad_independent_mle_is_the_maximum_with_exact_standard_errors(dyad_model):
    x, observed = dyad_model.design()
    mle = dyad_independent_mle(x, observed)
    assert mle.converged

    def negative(theta):
        return -dyad_independent_log_likelihood(theta, x, observed)

    reference = optimize.minimize(negative, np.zeros(2), method="Nelder-Mead",
                                  options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 5000})
    np.testing.assert_allclose(mle.theta, reference.x, atol=1e-5)
    assert mle.log_likelihood == pytest.approx(-reference.fun, abs=1e-9)
    # the inverse of a finite-difference Hessian of the log-likelihood
    h = 1e-4
    hessian = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            ei_, ej = np.eye(2)[i] * h, np.eye(2)[j] * h
            hessian[i, j] = (negative(mle.theta + ei_ + ej) - negative(mle.theta + ei_ - ej)
                             - negative(mle.theta - ei_ + ej)
                             + negative(mle.theta - ei_ - ej)) / (4 * h * h)
    np.testing.assert_allclose(mle.cov, np.linalg.inv(hessian), rtol=1e-4)


def test_dyad_independent_fit_matches_r_ergm_on_flomarriage():
    path = DATA / "flomarriage.npz"
    data = np.load(path, allow_pickle=False)
    n = int(data["num_nodes"])
    wealth = data["attr_wealth"]
    i, j = np.triu_indices(n, 1)
    x = np.column_stack([np.ones(i.size), wealth[i] + wealth[j]])
    adjacency = np.zeros((n, n), bool)
    adjacency[data["edges"][:, 0], data["edges"][:, 1]] = True
    adjacency |= adjacency.T
    observed = x.T @ adjacency[i, j]
    fit = dyad_independent_fit(x, observed, ["edges", "nodecov.wealth"])
    # R: summary(ergm(flomarriage ~ edges + nodecov("wealth"))) (ergm 4)
    np.testing.assert_allclose(fit.estimates, [-2.594929, 0.010546], rtol=1e-4)
    np.testing.assert_allclose(fit.stderr, [0.536056, 0.004674], rtol=1e-3)
    assert fit.null_deviance == pytest.approx(166.4, abs=0.05)
    assert fit.deviance == pytest.approx(103.1, abs=0.05)
    assert fit.aic == pytest.approx(107.1, abs=0.05)
    assert fit.bic == pytest.approx(112.7, abs=0.05)
    np.testing.assert_allclose(fit.z, [-4.841, 2.256], atol=1e-3)
    text = fit.summary()
    assert "Maximum Likelihood Results" in text and "nodecov.wealth" in text
    assert "on 120  degrees of freedom" in text and "on 118  degrees of freedom" in text
