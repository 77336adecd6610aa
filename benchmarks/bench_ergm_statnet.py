"""The statnet tutorials' ERGM fits, ours (``ugm.network.fit_ergm``) against ergmx (the
Python package with a Rust core and R ergm's interface) on the same data, in the same
process: estimates ± standard errors side by side, whether they agree (estimates within
two combined standard errors, standard errors within 15 %), and the wall time of each fit,
ours / ergmx.

Fits (``--fits``, comma separated; default all):

* ``flo1``: flomarriage ~ edges + nodecov(wealth) (R: −2.595 (0.536), 0.01055 (0.00465))
* ``flo2``: flomarriage ~ edges + nodecov(wealth) + triangle
* ``mesa1``: faux.mesa.high ~ edges + nodematch(Grade) + nodefactor(Sex)
* ``mesa2``: faux.mesa.high ~ edges + nodematch(Grade) + gwesp(0.5, fixed)
* ``magnolia``: faux.magnolia.high ~ edges + nodematch(Grade) + nodematch(Race) +
  nodematch(Sex) + gwesp(0.25, fixed) (1,461 nodes, 1.07 million dyads)
* ``dixon0``: faux.dixon.high (directed) ~ edges + mutual + nodematch(grade)
* ``dixon``: faux.dixon.high (directed) ~ edges + mutual + nodematch(grade) + gwesp(0.5)
  (outgoing two-paths)

Each fit's result is saved to ``--out`` (a JSON file per fit), so an interrupted run
resumes where it stopped (``--fresh`` recomputes). ergmx runs in a subprocess with a
time limit (``--ergmx-timeout`` seconds), since one of its fits may not finish.

Run: ``python benchmarks/bench_ergm_statnet.py`` (needs ``pip install ergmx``, the bench
extra; about 10–20 minutes on 2 CPU cores).
"""

import argparse
import json
import multiprocessing
import time
from pathlib import Path

import numpy as np

FITS = {
    "flo1": ("flomarriage", "edges + nodecov('wealth')"),
    "flo2": ("flomarriage", "edges + nodecov('wealth') + triangle"),
    "mesa1": ("faux.mesa.high", "edges + nodematch('Grade') + nodefactor('Sex')"),
    "mesa2": ("faux.mesa.high", "edges + nodematch('Grade') + gwesp(0.5, fixed=TRUE)"),
    "magnolia": ("faux.magnolia.high", "edges + nodematch('Grade') + nodematch('Race') + "
                 "nodematch('Sex') + gwesp(0.25, fixed=TRUE)"),
    "dixon0": ("faux.dixon.high", "edges + mutual + nodematch('grade')"),
    "dixon": ("faux.dixon.high", "edges + mutual + nodematch('grade') + gwesp(0.5, fixed=TRUE)"),
}


def ours(name, num_chains=4, num_draws=256, log_likelihood=True, verbose=False):
    from numpyro_ugm import datasets
    from numpyro_ugm.network import ErgmControl, SamplingControl, fit_ergm

    data, formula = FITS[name]
    graph = datasets.network(data)
    start = time.perf_counter()
    control = ErgmControl(SamplingControl(num_chains=num_chains,
                                          samplesize=num_chains * num_draws))
    fit = fit_ergm(graph, formula, control=control, log_likelihood=log_likelihood,
                   verbose=verbose)
    seconds = time.perf_counter() - start
    return {"names": list(fit.names), "estimates": np.asarray(fit.estimates).tolist(),
            "stderr": np.asarray(fit.stderr).tolist(), "loglik": float(fit.log_likelihood),
            "converged": bool(fit.converged), "seconds": seconds, "summary": fit.summary()}


def _ergmx_worker(name, queue):
    import ergmx

    from numpyro_ugm import datasets

    data, formula = FITS[name]
    graph = datasets.network(data)
    start = time.perf_counter()
    fit = ergmx.ergm(graph, formula, seed=1)
    seconds = time.perf_counter() - start
    coef = fit.coef
    estimates = list(coef.values()) if isinstance(coef, dict) else list(coef)
    stderr = fit.stderr
    stderr = list(stderr.values()) if isinstance(stderr, dict) else list(stderr)
    queue.put({"names": list(fit.names), "estimates": [float(v) for v in estimates],
               "stderr": [float(v) for v in stderr], "loglik": float(fit.loglik()
                                                                     if callable(fit.loglik)
                                                                     else fit.loglik),
               "seconds": seconds, "summary": str(fit.summary())})


def peer(name, timeout):
    queue = multiprocessing.get_context("spawn").Queue()
    process = multiprocessing.get_context("spawn").Process(target=_ergmx_worker,
                                                           args=(name, queue))
    start = time.perf_counter()
    process.start()
    process.join(timeout)
    if process.is_alive():
        process.kill()
        return {"timeout": timeout, "seconds": time.perf_counter() - start}
    return queue.get() if not queue.empty() else {"error": process.exitcode}


def compare(a, b):
    """Rows (name, ours, theirs, |Δ| / combined s.e., s.e. ratio) and the verdicts."""
    rows = []
    for k, name in enumerate(a["names"]):
        d = abs(a["estimates"][k] - b["estimates"][k]) / np.hypot(a["stderr"][k],
                                                                   b["stderr"][k])
        rows.append((name, a["estimates"][k], a["stderr"][k], b["estimates"][k],
                     b["stderr"][k], d, a["stderr"][k] / b["stderr"][k]))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fits", default=",".join(FITS))
    parser.add_argument("--out", default="outputs/ergm_statnet")
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--ergmx-timeout", type=float, default=1200)
    parser.add_argument("--ours-only", action="store_true", help="skip ergmx (e.g. on a GPU)")
    parser.add_argument("--num-chains", type=int, default=4)
    parser.add_argument("--num-draws", type=int, default=256)
    parser.add_argument("--verbose", action="store_true", help="print each MCMLE iteration")
    parser.add_argument("--no-loglik", action="store_true",
                        help="skip our bridge-sampled log-likelihood (long on large fits)")
    args = parser.parse_args()
    options = {"num_chains": args.num_chains, "num_draws": args.num_draws}
    if args.no_loglik:
        options["log_likelihood"] = False
    import jax
    print(f"jax {jax.__version__}, devices {jax.devices()}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.fits.split(","):
        path = out / f"{name}.json"
        record = {} if args.fresh or not path.exists() else json.loads(path.read_text())
        if "ours" not in record:
            record["ours"] = ours(name, verbose=args.verbose, **options)
            record["ours"]["options"] = options
            path.write_text(json.dumps(record, indent=1))
        if args.ours_only:
            print(f"\n== {name}\n{record['ours']['summary']}\nRESULT {name}: ours "
                  f"{record['ours']['seconds']:.1f} s ({options})")
            continue
        if "ergmx" not in record:
            record["ergmx"] = peer(name, args.ergmx_timeout)
            path.write_text(json.dumps(record, indent=1))
        a, b = record["ours"], record["ergmx"]
        print(f"\n== {name}: {FITS[name][0]} ~ {FITS[name][1]}")
        print(a["summary"])
        if "names" not in b:
            print(f"RESULT {name}: ours {a['seconds']:.1f} s; ergmx did not finish "
                  f"({b})")
            continue
        print(f"{'term':22s} {'ours':>18s} {'ergmx':>18s} {'|d|/se':>7s} {'se ratio':>8s}")
        for row in compare(a, b):
            print(f"{row[0]:22s} {row[1]:9.4f} ({row[2]:.4f}) {row[3]:9.4f} ({row[4]:.4f}) "
                  f"{row[5]:7.2f} {row[6]:8.3f}")
        rows = compare(a, b)
        agree = all(r[5] < 2 for r in rows)
        close = all(abs(r[6] - 1) <= 0.15 for r in rows)
        loglik = f"{a['loglik']:.3f}" if np.isfinite(a["loglik"]) else "not estimated"
        print(f"RESULT {name}: estimates within 2 combined s.e.: {agree}; s.e. within 15 %: "
              f"{close}; log-likelihood ours {loglik} ergmx {b['loglik']:.3f}; "
              f"time ours {a['seconds']:.1f} s / ergmx {b['seconds']:.1f} s = "
              f"{a['seconds'] / b['seconds']:.2f} (target <= 0.5)")


if __name__ == "__main__":
    main()
