"""Compile time and peak memory of the learner, for every negative-phase estimator.

For each estimator (CD-1, PCD-1, MCMC-MLE, PF, SMC, PSMC; ``--particles`` particles) a
fresh process builds ``ugm.MLE`` on a 15-spin VBM (500 training cases drawn exactly
from couplings N(0, 0.5²), ``ugm.datasets.vbm_problem``), runs ``learner.init`` (model
tracing, structure analysis, initial particles: setup), and then ``learner.run`` for ``--steps`` updates
twice: the first call compiles the whole scan and runs it, the second reuses it
(``_report.first_call``). Reported per estimator: setup seconds, compile seconds (first
call minus second), the steady-state time per update, compile time / update time, and how
far the process's peak resident memory rose above its resident memory before ``init`` and
before the first call. Each estimator runs in its own process, so that no compilation or memory peak of
one hides another's.

Run: python benchmarks/bench_compile.py [--steps 200] [--particles 100]
"""

import argparse
import json
import sys
import time

import jax
import optax
from _report import first_call, peak_rss_mb, report, reset_peak_rss, run_worker

import numpyro_ugm as ugm
from numpyro_ugm.datasets import vbm_problem

N = 15
ESTIMATORS = {
    "CD-1": lambda s: ugm.CD(num_mcmc_steps=1),
    "PCD-1": lambda s: ugm.PCD(s, num_mcmc_steps=1),
    "MCMCMLE": lambda s: ugm.MCMCMLE(s),
    "PF": lambda s: ugm.PF(s),
    "SMC": lambda s: ugm.SMC(s),
    "PSMC": lambda s: ugm.PSMC(s),
}


def worker(name, steps, particles):
    """In a fresh process: setup, compile and run times and peak memory of one learner."""
    key = jax.random.PRNGKey(0)
    _, train, _ = vbm_problem(key, N, 500, 100, scale=0.5)
    learner = ugm.MLE(ugm.models.vbm, ESTIMATORS[name](particles), optax.sgd(0.01))
    rss0 = reset_peak_rss()
    t = time.perf_counter()
    state = jax.block_until_ready(learner.init(key, train, N))
    setup = time.perf_counter() - t
    setup_mb = peak_rss_mb() - rss0

    def learn():
        result = learner.run(key, steps, train, N, init_state=state, progress_bar=False)
        jax.block_until_ready(result.state)

    out = first_call(learn, repeats=2)
    print(json.dumps({**out, "setup": setup, "setup_mb": setup_mb}))


def main(steps=200, particles=100):
    print(f"learner compile time, VBM-15 ({particles} particles, {steps} updates per run; "
          "each estimator in a fresh process)")
    header = (f"{'estimator':<9} {'setup s':>8} {'compile s':>9} {'ms/update':>10} "
              f"{'compile/update':>15} {'setup MB':>8} {'peak MB':>8}")
    print(header + "\n" + "-" * len(header))
    rows = {}
    for name in ESTIMATORS:
        r = run_worker(__file__, "--worker", name, str(steps), str(particles))
        step = r["run"] / steps
        rows[name] = {**r, "ratio": r["compile"] / step, "setup_mb": max(r["setup_mb"], 0)}
        print(f"{name:<9} {r['setup']:>8.2f} {r['compile']:>9.2f} {1e3 * step:>10.3f} "
              f"{r['compile'] / step:>15.0f} {r['setup_mb']:>8.1f} {r['peak_mb']:>8.1f}")

    def each(column, fmt=".0f"):
        return " / ".join(format(row[column], fmt) for row in rows.values())

    names = ", ".join(rows)
    report(f"learner compile time, VBM-15 ({names})", each("compile", ".1f") + " s",
           f"first learner.run minus a second one; learner.init before it: "
           f"{each('setup', '.1f')} s")
    report(f"learner compile time / time per update, VBM-15 ({names})", each("ratio"),
           f"{particles} particles; steady state from a {steps}-update run")
    report(f"learner peak memory growth of the first run, VBM-15 ({names})",
           each("peak_mb") + " MB", "max RSS above RSS before the first run, fresh "
           f"process per estimator; learner.init before it: {each('setup_mb')} MB")

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        sys.exit()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--particles", type=int, default=100)
    args = parser.parse_args()
    main(args.steps, args.particles)
