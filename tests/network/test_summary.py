"""The fit's summary (``network/summary.py``): R's ``summary(ergm)`` layout, stars and small
p-values, and its plain-dict form."""

import json

import jax
import numpy as np
import pytest

from numpyro_ugm.network import ErgmFit
from numpyro_ugm.network.estimation.standard_errors import StandardErrors
from numpyro_ugm.network.summary import mcmle_fit
from ergm_cases import FiveNode


@pytest.fixture(scope="module")
def five_node():
    """The edges + triangles model on 5 nodes, enumerated."""
    return FiveNode()


def test_summary_prints_the_coefficient_table_and_fit_statistics(five_node):
    fit = mcmle_fit(five_node.exact_simulator(seed=6), five_node.observed, [-1.0, 1.0],
                      jax.random.PRNGKey(4), num_dyads=10,
                      names=["edges", "gwesp.fixed.0.5"])
    text = str(fit)
    assert text == fit.summary()
    assert text.startswith("Monte Carlo Maximum Likelihood Results:")
    header = [line for line in text.splitlines() if "Estimate" in line][0]
    assert header.split() == ["Estimate", "Std.", "Error", "MCMC", "%", "z", "value",
                              "Pr(>|z|)"]
    rows = {line.split()[0]: line.split() for line in text.splitlines()
            if line.startswith(("edges", "gwesp"))}
    assert set(rows) == {"edges", "gwesp.fixed.0.5"}
    for i, name in enumerate(fit.names):
        assert float(rows[name][1]) == pytest.approx(fit.estimates[i], abs=1e-4)
        assert float(rows[name][2]) == pytest.approx(fit.stderr[i], abs=1e-4)
        assert float(rows[name][4]) == pytest.approx(fit.z[i], abs=1e-3)
    assert f"AIC: {fit.aic:.4f}" in text and f"BIC: {fit.bic:.4f}" in text
    assert f"Log-likelihood: {fit.log_likelihood:.4f}" in text
    assert "Converged after" in text and "Signif. codes" in text
    assert f"step length {fit.mcmle.step_lengths[-1]:.3g}" in text
    assert "on 10  degrees of freedom" in text and "on 8  degrees of freedom" in text
    record = json.loads(json.dumps(fit.to_dict()))
    assert record["names"] == ["edges", "gwesp.fixed.0.5"]
    assert record["estimates"] == pytest.approx(fit.estimates.tolist())
    assert len(record["mcmle"]["step_lengths"]) == fit.iterations
    assert "ErgmFit(MCMLE" in repr(fit)


def test_summary_stars_and_small_p_values():
    errors = StandardErrors(np.array([5.0, 0.1]), np.array([1.0, 1.0]), np.eye(2), np.eye(2),
                            np.zeros((2, 2)), np.array([3.0, 0.0]), np.array([5.0, 0.1]),
                            np.array([5.7e-7, 0.92]), np.eye(2), 1.0, 100.0)
    fit = ErgmFit(names=("a", "bb"), standard_errors=errors,
                     log_likelihood=float("nan"), log_likelihood_se=float("nan"),
                     aic=float("nan"), bic=float("nan"), num_dyads=10, converged=False,
                     iterations=3, message="reached max_iterations = 3")
    lines = fit.summary().splitlines()
    row_a = next(line for line in lines if line.startswith("a "))
    assert row_a.endswith("<1e-04 ***") and " 3 " in row_a
    row_b = next(line for line in lines if line.startswith("bb"))
    assert row_b.endswith("0.920")
    assert "Log-likelihood: not computed." in lines
    assert any(line.startswith("Did NOT converge after 3") for line in lines)
