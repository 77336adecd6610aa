"""Under Adam 0.01 on VBM-15, how far the last iterate and the average of the last
iterates are from exact-gradient ascent (the docs' "Choosing an estimator" page).

The setting of the map (``examples/estimator_map.py``): 15 spins, couplings N(0, 1), no
fields, 500 training cases drawn exactly, 50 particles, 6,000 full-batch Adam 0.01 steps
from the initial parameters of seed s (key ``PRNGKey(s)``, learning key
``PRNGKey(100 + s)``). After 4,000 steps the run goes on in pieces of ``--every`` steps
(continued bit-identically with ``init_state``) and keeps the parameters after each; the
tail averages are the means of the last 2,000, 1,000, 500 and 200 of them (every
``--every``-th iterate). Each gap is the exact training log-likelihood of exact-gradient
Adam after 6,000 steps minus that of the learned parameters.

Run: ``python examples/adam_tail_average.py`` (PCD-1, PF and MCMC-MLE, three seeds:
about 12 minutes on one CPU core); ``--estimators PF-3`` for PF with three sweeps per
move; one JSON line per run on stdout.
"""

import argparse
import json
import warnings

import jax
import jax.numpy as jnp
import optax

import numpyro_ugm as ugm
from numpyro_ugm.datasets import vbm_problem
from numpyro_ugm.evaluate import exact

NUM_UNITS, NUM_STEPS, NUM_PARTICLES, TAIL = 15, 6000, 50, 2000
ESTIMATORS = {"PCD-1": lambda: ugm.PCD(NUM_PARTICLES), "PF": lambda: ugm.PF(NUM_PARTICLES),
              "PF-3": lambda: ugm.PF(NUM_PARTICLES, num_mcmc_steps=3),
              "MCMC-MLE": lambda: ugm.MCMCMLE(NUM_PARTICLES),
              "SMC": lambda: ugm.SMC(NUM_PARTICLES), "PSMC": lambda: ugm.PSMC(NUM_PARTICLES)}


def gaps(m, train, name, seed, every, reference):
    """Gap of the last iterate and of the tail averages of one run."""
    learner = ugm.MLE(ugm.models.vbm, ESTIMATORS[name](), optax.adam(0.01))
    common = dict(fields=False, progress_bar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = learner.run(jax.random.PRNGKey(100 + seed), NUM_STEPS - TAIL, train,
                             NUM_UNITS, init_params=m.init_params(jax.random.PRNGKey(seed)),
                             **common)
        tail = []
        for _ in range(TAIL // every):
            result = learner.run(None, every, train, NUM_UNITS, init_state=result.state,
                                 **common)
            tail.append(result.params)

    def gap(params):
        return reference - float(exact.log_likelihood(learner.ugm, params, train))

    out = {"estimator": name, "seed": seed, "last": gap(result.params)}
    for span in (2000, 1000, 500, 200):
        kept = tail[-(span // every):]
        out[f"average of the last {span}"] = gap(
            jax.tree.map(lambda *a: jnp.mean(jnp.stack(a), 0), *kept))
    return out


def main(args):
    _, train, _ = vbm_problem(jax.random.PRNGKey(0), NUM_UNITS, 500, 100)
    m = ugm.UGM(ugm.models.vbm, NUM_UNITS, fields=False)
    for seed in range(args.seeds):
        init = m.init_params(jax.random.PRNGKey(seed))
        best = exact.fit(m, train, params=init, num_steps=NUM_STEPS,
                         optimizer=optax.adam(0.01), tol=0.0)
        reference = float(exact.log_likelihood(m, best.params, train))
        for name in args.estimators:
            print(json.dumps(gaps(m, train, name, seed, args.every, reference)), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--estimators", nargs="+", choices=sorted(ESTIMATORS),
                        default=["PCD-1", "PF", "MCMC-MLE"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--every", type=int, default=10)
    main(parser.parse_args())
