"""How far the weighted estimators' running log Z (and so the running log-likelihood of
the diagnostics) can be trusted along a learning run, and whether the learner's warnings
catch it when it cannot (the table of benchmarks/results/running_log_z.md).

Setup: VBM-15 as in the PF paper (couplings W_ij ~ N(0, 1), 500 training cases drawn
exactly), 50 particles, each estimator with its defaults, 6,000 full-batch steps of SGD
0.1/(1 + t/1000) or of Adam 0.01. Every 500 steps the running ``log_z`` is compared with
the exact log Z(θ_t) (enumeration of the 2^15 states), beside the reported standard
error ``log_z_se``; the warnings each segment raised are counted.

Run: ``python examples/running_log_z.py`` (about 5 minutes on 2 CPU cores),
``python examples/running_log_z.py --quick`` (1,000 steps, PF and SMC only).
"""

import argparse
import warnings

import jax
import optax

import numpyro_ugm as ugm
from numpyro_ugm.datasets import vbm_problem
from numpyro_ugm.evaluate import exact

ESTIMATORS = {"PF": lambda: ugm.PF(50), "MCMC-MLE": lambda: ugm.MCMCMLE(50),
              "PSMC": lambda: ugm.PSMC(50), "SMC": lambda: ugm.SMC(50)}
OPTIMIZERS = {"SGD": lambda: optax.sgd(lambda t: 0.1 / (1 + t / 1000)),
              "Adam": lambda: optax.adam(0.01)}


def track(estimator, optimizer, train, num_steps, every=500):
    """Run in segments; per segment: step, running log Z − exact log Z, its reported
    standard error, and the kinds of warning raised."""
    learner = ugm.MLE(ugm.models.vbm, estimator, optimizer)
    state = learner.init(jax.random.PRNGKey(1), train, 15)
    rows = []
    for _ in range(num_steps // every):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = learner.run(None, every, train, 15, init_state=state,
                                 progress_bar=False)
        state, d = result.state, result.diagnostics
        error = float(d["log_z"][-1]) - float(exact.log_partition(learner.ugm, result.params))
        kinds = sorted({kind for w in caught for kind, text in (
            ("positive", "log-likelihood was positive"), ("se", "standard error exceeded"),
            ("collapse", "collapsed")) if text in str(w.message)})
        rows.append((int(state.step), error, float(d["log_z_se"][-1]), kinds))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    _, train, _ = vbm_problem(jax.random.PRNGKey(0), 15, 500, 10)
    names = ["PF", "SMC"] if args.quick else list(ESTIMATORS)
    num_steps = 1000 if args.quick else 6000
    print("| estimator | optimizer | final error of running log Z (nats) | reported se | "
          "first warned segment ends at step | warnings |\n|---|---|---|---|---|---|")
    for name in names:
        for opt in OPTIMIZERS:
            rows = track(ESTIMATORS[name](), OPTIMIZERS[opt](), train, num_steps)
            warned = [r for r in rows if set(r[3]) & {"positive", "se"}]
            kinds = sorted({k for r in rows for k in r[3]})
            step, error, se, _ = rows[-1]
            print(f"| {name} | {opt} | {error:+.2f} | {se:.2f} | "
                  f"{warned[0][0] if warned else '-'} | {', '.join(kinds) or '-'} |",
                  flush=True)


if __name__ == "__main__":
    main()
