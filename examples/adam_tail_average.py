"""Under Adam on VBM-15, how far the last iterate and the average of the last iterates
are from exact-gradient ascent (the docs' "Choosing an estimator" page).

The setting of the map (``examples/estimator_map.py``): 15 spins, couplings N(0, 1), no
fields, 500 training cases drawn exactly, 50 particles, 6,000 full-batch Adam steps from
the initial parameters of seed s (key ``PRNGKey(s)``, learning key ``PRNGKey(100 + s)``),
at the constant rate 0.01 or at 0.01/(1 + t/1000) (``--schedule``). The optimizer is
wrapped in ``ugm.averaged(..., 4000)``, whose state keeps the mean of the iterates of the
last 2,000 steps: ``"averaged"`` is what ``learner.get_params(state, averaged=True)``
returns, ``"last"`` the last iterate. Each gap is the exact training log-likelihood of
exact-gradient Adam 0.01 after 6,000 steps (within 0.001 nats of the supremum: 12,000
steps add 0.0004 from seed 0's start) minus that of the learned parameters.

Run: ``python examples/adam_tail_average.py`` (PCD-1, PF and MCMC-MLE, three seeds,
both schedules: about 7 minutes on one CPU core); ``--estimators PF-3`` for PF with
three sweeps per move, ``MCMC-MLE-reset`` for MCMC-MLE with the paper's rounds (equal
weights at every round); one JSON line per run on stdout.
"""

import argparse
import json
import warnings

import jax
import optax

import numpyro_ugm as ugm
from numpyro_ugm.datasets import vbm_problem
from numpyro_ugm.evaluate import exact

NUM_UNITS, NUM_STEPS, NUM_PARTICLES, TAIL = 15, 6000, 50, 2000
ESTIMATORS = {"PCD-1": lambda: ugm.PCD(NUM_PARTICLES), "PF": lambda: ugm.PF(NUM_PARTICLES),
              "PF-3": lambda: ugm.PF(NUM_PARTICLES, num_mcmc_steps=3),
              "MCMC-MLE": lambda: ugm.MCMCMLE(NUM_PARTICLES),
              # the paper's rounds: equal weights again at every round
              "MCMC-MLE-reset": lambda: ugm.MCMCMLE(NUM_PARTICLES, resample_threshold=None),
              "SMC": lambda: ugm.SMC(NUM_PARTICLES), "PSMC": lambda: ugm.PSMC(NUM_PARTICLES)}
SCHEDULES = {"constant": 0.01, "decay": lambda t: 0.01 / (1 + t / 1000)}


def gaps(m, train, name, schedule, seed, reference):
    """Gap of the last iterate and of the average of the last TAIL iterates of one run."""
    learner = ugm.MLE(ugm.models.vbm, ESTIMATORS[name](),
                      ugm.averaged(optax.adam(SCHEDULES[schedule]), NUM_STEPS - TAIL))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = learner.run(jax.random.PRNGKey(100 + seed), NUM_STEPS, train, NUM_UNITS,
                             init_params=m.init_params(jax.random.PRNGKey(seed)),
                             fields=False, progress_bar=False)

    def gap(params):
        return reference - float(exact.log_likelihood(learner.ugm, params, train))

    return {"estimator": name, "schedule": schedule, "seed": seed,
            "last": gap(result.params),
            "averaged": gap(learner.get_params(result.state, averaged=True))}


def main(args):
    _, train, _ = vbm_problem(jax.random.PRNGKey(0), NUM_UNITS, 500, 100)
    m = ugm.UGM(ugm.models.vbm, NUM_UNITS, fields=False)
    for seed in range(args.seeds):
        init = m.init_params(jax.random.PRNGKey(seed))
        best = ugm.fit_exact(m, train, params=init, num_steps=NUM_STEPS,
                         optimizer=optax.adam(0.01), tol=0.0)
        reference = float(exact.log_likelihood(m, best.params, train))
        for schedule in args.schedules:
            for name in args.estimators:
                print(json.dumps(gaps(m, train, name, schedule, seed, reference)),
                      flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--estimators", nargs="+", choices=sorted(ESTIMATORS),
                        default=["PCD-1", "PF", "MCMC-MLE"])
    parser.add_argument("--schedules", nargs="+", choices=sorted(SCHEDULES),
                        default=["constant", "decay"])
    parser.add_argument("--seeds", type=int, default=3)
    main(parser.parse_args())
