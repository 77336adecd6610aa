"""Every estimator's defaults on the PF paper's VBM-15 (issue 15's bar): 15 spins,
couplings N(0, 1), 500 training cases drawn exactly, 50 particles, 6,000 full-batch
steps. The learned model's exact training log-likelihood must come within 0.05 nats of
what the exact gradient reaches with the same optimizer and steps (the supremum over
estimators of that budget; with SGD 0.01 it is itself 0.11 nats short of the L-BFGS
optimum, so no estimator can reach that within 0.05).

PCD-1 and PF with 50 particles do not reach it with the last iterate under Adam 0.01:
at a constant rate Adam does not average away the noise of 50 correlated chains (this
start: PCD-1 0.44, PF 0.10 nats; the docs' "Choosing an estimator" page has more
starts; SMC and PSMC within 0.01). MCMC-MLE, whose rounds carry their weights, does
here (0.04; 0.09 with the paper's rounds), but not from every start (0.05-0.27 on the
docs' page). With ``ugm.averaged`` (the mean of the last 3,000 iterates) PF and
MCMC-MLE come within 0.01; PCD-1 (0.09) does not, and longer runs leave it further
short (24,000 steps: 0.72). The misses are strict xfails, so that a change that fixes
them shows. With Adam 0.01/(1 + t/1000) and the average, every estimator comes within
0.05 of exact-gradient Adam 0.01. Run with ``-m slow`` (about 11 minutes on 2 cores).
"""

import functools
import warnings

import jax
import optax
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.datasets import vbm_problem
from numpyro_ugm.evaluate import exact

pytestmark = pytest.mark.slow

NUM_STEPS, NUM_PARTICLES, TOLERANCE = 6000, 50, 0.05
OPTIMIZERS = {"sgd 0.1/(1+t/1000)": lambda: optax.sgd(lambda t: 0.1 / (1 + t / 1000)),
              "sgd 0.01/(1+t/1000)": lambda: optax.sgd(lambda t: 0.01 / (1 + t / 1000)),
              "adam 0.01": lambda: optax.adam(0.01),
              "adam 0.01 averaged": lambda: ugm.averaged(optax.adam(0.01), NUM_STEPS // 2),
              "adam 0.01/(1+t/1000) averaged": lambda: ugm.averaged(
                  optax.adam(lambda t: 0.01 / (1 + t / 1000)), NUM_STEPS // 2)}
ESTIMATORS = {"PCD-1": lambda: ugm.PCD(NUM_PARTICLES), "PF": lambda: ugm.PF(NUM_PARTICLES),
              "MCMC-MLE": lambda: ugm.MCMCMLE(NUM_PARTICLES),
              "SMC": lambda: ugm.SMC(NUM_PARTICLES), "PSMC": lambda: ugm.PSMC(NUM_PARTICLES)}
LAST_ITERATE_MISSES_UNDER_ADAM = {"PCD-1", "PF"}


@functools.lru_cache(maxsize=None)
def problem():
    _, train, _ = vbm_problem(jax.random.PRNGKey(0), 15, 500, 100)
    return ugm.UGM(ugm.models.vbm, 15, fields=False), train


@functools.lru_cache(maxsize=None)
def exact_gradient_reference(optimizer_name):
    """The exact training log-likelihood after NUM_STEPS exact-gradient steps."""
    m, train = problem()
    result = ugm.fit_exact(m, train, params=m.init_params(jax.random.PRNGKey(0)),
                       num_steps=NUM_STEPS, optimizer=OPTIMIZERS[optimizer_name](), tol=0.0)
    return float(exact.log_likelihood(m, result.params, train))


def cases():
    for estimator in ESTIMATORS:
        for optimizer in OPTIMIZERS:
            marks = ()
            if optimizer == "adam 0.01" and estimator in LAST_ITERATE_MISSES_UNDER_ADAM:
                marks = pytest.mark.xfail(strict=True, reason=(
                    "persistent chains' noise with 50 particles under Adam 0.01"))
            if optimizer == "adam 0.01 averaged" and estimator == "PCD-1":
                marks = pytest.mark.xfail(strict=True, reason=(
                    "PCD-1 under a constant-rate Adam: averaging leaves a drift that is "
                    "not noise"))
            yield pytest.param(estimator, optimizer, marks=marks,
                               id=f"{estimator}-{optimizer.replace(' ', '')}")


@pytest.mark.parametrize("estimator,optimizer", list(cases()))
def test_defaults_reach_the_exact_gradient_within_tolerance(estimator, optimizer):
    m, train = problem()
    learner = ugm.MLE(ugm.models.vbm, ESTIMATORS[estimator](), OPTIMIZERS[optimizer]())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = learner.run(jax.random.PRNGKey(1), NUM_STEPS, train, 15, fields=False,
                             progress_bar=False)
    params = learner.get_params(result.state, averaged=optimizer.endswith("averaged"))
    learned = float(exact.log_likelihood(learner.ugm, params, train))
    # Adam's runs are held to exact-gradient Adam 0.01, within 0.001 of the supremum
    reference = "adam 0.01" if optimizer.startswith("adam") else optimizer
    gap = exact_gradient_reference(reference) - learned
    assert gap < TOLERANCE, f"{estimator} with {optimizer}: {gap:.4f} nats short"
