"""Every estimator's defaults on the PF paper's VBM-15 (issue 15's bar): 15 spins,
couplings N(0, 1), 500 training cases drawn exactly, 50 particles, 6,000 full-batch
steps. The learned model's exact training log-likelihood must come within 0.05 nats of
what the exact gradient reaches with the same optimizer and steps (the supremum over
estimators of that budget; with SGD 0.01 it is itself 0.11 nats short of the L-BFGS
optimum, so no estimator can reach that within 0.05).

Chain-based estimators (PCD-1, PF, MCMC-MLE) with 50 particles do not reach it under
Adam 0.01: at a constant rate Adam does not average away the noise of 50 correlated
chains (this start: PCD-1 0.44, PF 0.10, MCMC-MLE 0.09 nats; the docs' "Choosing an
estimator" page has more starts; SMC and PSMC within 0.01): strict xfails, so that a
change that fixes them shows. (For PF the shortfall is noise: the mean of its last
2,000 iterates is within 0.007 on three starts; ``examples/adam_tail_average.py``.) Run with ``-m slow`` (about 7 minutes on 2 cores).
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
              "adam 0.01": lambda: optax.adam(0.01)}
ESTIMATORS = {"PCD-1": lambda: ugm.PCD(NUM_PARTICLES), "PF": lambda: ugm.PF(NUM_PARTICLES),
              "MCMC-MLE": lambda: ugm.MCMCMLE(NUM_PARTICLES),
              "SMC": lambda: ugm.SMC(NUM_PARTICLES), "PSMC": lambda: ugm.PSMC(NUM_PARTICLES)}
CHAIN_BASED_UNDER_ADAM = {"PCD-1", "PF", "MCMC-MLE"}


@functools.lru_cache(maxsize=None)
def problem():
    _, train, _ = vbm_problem(jax.random.PRNGKey(0), 15, 500, 100)
    return ugm.UGM(ugm.models.vbm, 15, fields=False), train


@functools.lru_cache(maxsize=None)
def exact_gradient_reference(optimizer_name):
    """The exact training log-likelihood after NUM_STEPS exact-gradient steps."""
    m, train = problem()
    result = exact.fit(m, train, params=m.init_params(jax.random.PRNGKey(0)),
                       num_steps=NUM_STEPS, optimizer=OPTIMIZERS[optimizer_name](), tol=0.0)
    return float(exact.log_likelihood(m, result.params, train))


def cases():
    for estimator in ESTIMATORS:
        for optimizer in OPTIMIZERS:
            marks = ()
            if optimizer.startswith("adam") and estimator in CHAIN_BASED_UNDER_ADAM:
                marks = pytest.mark.xfail(strict=True, reason=(
                    "chain-based negative phase with 50 particles under Adam 0.01"))
            yield pytest.param(estimator, optimizer, marks=marks,
                               id=f"{estimator}-{optimizer.split()[0]}{optimizer.split()[1]}")


@pytest.mark.parametrize("estimator,optimizer", list(cases()))
def test_defaults_reach_the_exact_gradient_within_tolerance(estimator, optimizer):
    m, train = problem()
    learner = ugm.MLE(ugm.models.vbm, ESTIMATORS[estimator](), OPTIMIZERS[optimizer]())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = learner.run(jax.random.PRNGKey(1), NUM_STEPS, train, 15, fields=False,
                             progress_bar=False)
    learned = float(exact.log_likelihood(learner.ugm, result.params, train))
    gap = exact_gradient_reference(optimizer) - learned
    assert gap < TOLERANCE, f"{estimator} with {optimizer}: {gap:.4f} nats short"
