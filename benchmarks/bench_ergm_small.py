"""Small dyad-dependent ERGM fits, ours (``ugm.network.fit_ergm``) against ergmx
(``ergmx.ergm``), at both libraries' defaults: the wall time of a user's first fit in a
fresh process and of a later fit in the same process, and the estimates side by side.

Fits (``--fits``, comma separated; default all):

* ``flo_tri``: flomarriage ~ edges + nodecov('wealth') + triangle
* ``flo_gwesp``: flomarriage ~ edges + gwesp(0.25, fixed=TRUE)
* ``mesa_gwesp``: faux.mesa.high ~ edges + nodematch('Grade') + gwesp(0.5, fixed=TRUE)

For each fit:

* **first call**: each library's first fit in a fresh process (``--first`` runs, each
  a new interpreter; the import is timed apart), the two alternating, and the same fit
  again in that process: the difference is the first call's fixed cost (loading and
  compiling);
* **warm**: one untimed fit of each, then ``--repeats`` fits of each timed interleaved
  in one process (:func:`_report.timeit_many`: both see the same machine load);
* the estimates and standard errors side by side, with ``|Δ| / combined s.e.`` (they
  agree when it is below 2), and the log-likelihoods.

Like for like: both run 1,024 draws per MCMLE sample 1,024 proposals apart after 16
intervals of burn-in, the adaptive interval to an effective size of 64, ergm's
``"confidence"`` termination and the bridge log-likelihood (ours 16 bridges x 512 draws,
ergmx 33 points x 256). Ours also draws a final sample of 4 x 1,024 draws at the
estimate for the standard errors (``MCMLEControl.last_boost``; on flomarriage 14.8
million proposals in all against ergmx's 10.3 million); ergmx takes them from the last
iteration's 1,024. ``--like-for-like`` also times ours with ``last_boost=1``.

Run: ``python benchmarks/bench_ergm_small.py`` (needs ergmx, the bench extra; about
5 minutes on 2 CPU cores); ``--fits flo_tri --repeats 5`` for the headline row only.
"""

import argparse
import importlib
import json
import sys
import time

import numpy as np

from _report import report, run_worker, timeit_many

FITS = {
    "flo_tri": ("flomarriage", "edges + nodecov('wealth') + triangle"),
    "flo_gwesp": ("flomarriage", "edges + gwesp(0.25, fixed=TRUE)"),
    "mesa_gwesp": ("faux.mesa.high", "edges + nodematch('Grade') + gwesp(0.5, fixed=TRUE)"),
}


def ours(name, last_boost=None):
    """``fit_ergm`` at its defaults (key PRNGKey(0)); ``last_boost=1``: the final sample
    only as large as one MCMLE sample, ergmx's amount of sampling."""
    from numpyro_ugm import datasets
    from numpyro_ugm.network import ErgmControl, MCMLEControl, fit_ergm

    data, formula = FITS[name]
    control = None if last_boost is None else ErgmControl(
        mcmle=MCMLEControl(last_boost=last_boost))
    fit = fit_ergm(datasets.network(data), formula, control=control)
    return {"estimates": np.asarray(fit.estimates).tolist(),
            "stderr": np.asarray(fit.stderr).tolist(), "loglik": float(fit.log_likelihood),
            "loglik_se": float(fit.log_likelihood_se)}


def theirs(name):
    """``ergmx.ergm`` at its defaults (seed 1)."""
    import ergmx

    from numpyro_ugm import datasets

    data, formula = FITS[name]
    fit = ergmx.ergm(datasets.network(data), formula, seed=1)
    values = [fit.coef, fit.stderr]
    values = [list(v.values()) if isinstance(v, dict) else list(v) for v in values]
    loglik = fit.loglik() if callable(fit.loglik) else fit.loglik
    return {"estimates": [float(v) for v in values[0]],
            "stderr": [float(v) for v in values[1]], "loglik": float(loglik),
            "loglik_se": float(getattr(fit, "loglik_se", float("nan")) or float("nan"))}


LIBRARIES = {"ours": ours, "ergmx": theirs}


def worker(library, name):
    """In a fresh process: seconds of the imports and of the first fit (one JSON line)."""
    start = time.perf_counter()
    # both read the package's networks
    for module in ("numpyro_ugm.network" if library == "ours" else "ergmx",
                   "numpyro_ugm.datasets"):
        importlib.import_module(module)
    imported = time.perf_counter()
    LIBRARIES[library](name)
    first = time.perf_counter()
    LIBRARIES[library](name)
    print(json.dumps({"import": imported - start, "first": first - imported,
                      "second": time.perf_counter() - first}))


def first_calls(name, runs):
    """{library: [(import s, first fit s, second fit s) per run]}, the libraries
    alternating."""
    out = {library: [] for library in LIBRARIES}
    for _ in range(runs):
        for library in LIBRARIES:
            r = run_worker(__file__, "--worker", library, name)
            out[library].append((r["import"], r["first"], r["second"]))
    return out


def side_by_side(a, b):
    """Print the estimates (s.e.) of both and return the largest |Δ| / combined s.e."""
    worst = 0.0
    print(f"  {'coef':>5s} {'ours':>20s} {'ergmx':>20s} {'|d|/se':>7s}")
    for k, (x, s, y, t) in enumerate(zip(a["estimates"], a["stderr"], b["estimates"],
                                         b["stderr"])):
        d = abs(x - y) / np.hypot(s, t)
        worst = max(worst, d)
        print(f"  {k:5d} {x:10.4f} ({s:.4f}) {y:10.4f} ({t:.4f}) {d:7.2f}")
    print(f"  log-likelihood ours {a['loglik']:.4f} ({a['loglik_se']:.4f}), ergmx "
          f"{b['loglik']:.4f} ({b['loglik_se']:.4f})")
    return worst


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fits", default=",".join(FITS))
    parser.add_argument("--repeats", type=int, default=3, help="warm fits of each, timed")
    parser.add_argument("--first", type=int, default=2,
                        help="fresh processes per library for the first call (0: none)")
    parser.add_argument("--like-for-like", action="store_true",
                        help="also time ours with a final sample of one MCMLE sample's "
                        "size (MCMLEControl(last_boost=1)), as ergmx draws")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(*args.worker)
    import os
    print(f"load average {os.getloadavg()}", flush=True)
    for name in args.fits.split(","):
        data, formula = FITS[name]
        print(f"\n== {name}: {data} ~ {formula}", flush=True)
        if args.first:
            first = first_calls(name, args.first)
            t_ours = [f for _, f, _ in first["ours"]]
            t_them = [f for _, f, _ in first["ergmx"]]
            # the first call's fixed cost: the first fit less the same fit again
            extra = {lib: [f - g for _, f, g in runs] for lib, runs in first.items()}
            ratios = [a / b for a, b in zip(t_ours, t_them)]
            print(f"  first fit in a fresh process (s): ours {np.round(t_ours, 2).tolist()}, "
                  f"ergmx {np.round(t_them, 2).tolist()}; imports ours "
                  f"{np.round([r[0] for r in first['ours']], 2).tolist()}, ergmx "
                  f"{np.round([r[0] for r in first['ergmx']], 2).tolist()}; first fit less "
                  f"the second: ours {np.round(extra['ours'], 2).tolist()}, ergmx "
                  f"{np.round(extra['ergmx'], 2).tolist()}")
            report(f"{name} first fit, ours / ergmx (fresh process)",
                   f"{np.median(ratios):.2f}",
                   f"range {min(ratios):.2f}-{max(ratios):.2f} over {len(ratios)} runs; "
                   f"ours {np.median(t_ours):.2f} s, ergmx {np.median(t_them):.2f} s; "
                   f"target <= 0.5")
            report(f"{name} first call's fixed cost (first fit less the second, same "
                   f"process), ours", f"{np.median(extra['ours']):.2f} s",
                   f"ergmx {np.median(extra['ergmx']):.2f} s; {len(t_ours)} runs each")
        results = {}

        def timed(library):
            return lambda: results.__setitem__(library, LIBRARIES[library](name))

        fns = {library: timed(library) for library in LIBRARIES}
        if args.like_for_like:
            fns["ours_lb1"] = lambda: results.__setitem__("ours_lb1", ours(name, 1))
        rounds = [timeit_many(fns, 1, warmup=1 if r == 0 else 0, seed=r)
                  for r in range(args.repeats)]
        t_ours = [r["ours"] for r in rounds]
        t_them = [r["ergmx"] for r in rounds]
        ratios = [a / b for a, b in zip(t_ours, t_them)]
        print(f"  warm fits (s): ours {np.round(t_ours, 2).tolist()}, ergmx "
              f"{np.round(t_them, 2).tolist()}")
        worst = side_by_side(results["ours"], results["ergmx"])
        report(f"{name} warm fit, ours / ergmx (interleaved)", f"{np.median(ratios):.2f}",
               f"range {min(ratios):.2f}-{max(ratios):.2f} over {len(ratios)} rounds; ours "
               f"{np.median(t_ours):.2f} s, ergmx {np.median(t_them):.2f} s; estimates "
               f"within {worst:.2f} combined s.e.; target <= 0.5")
        if args.like_for_like:
            t_lb1 = [r["ours_lb1"] for r in rounds]
            ratios = [a / b for a, b in zip(t_lb1, t_them)]
            print(f"  warm fits with last_boost=1 (s): {np.round(t_lb1, 2).tolist()}")
            side_by_side(results["ours_lb1"], results["ergmx"])
            report(f"{name} warm fit with ergmx's amount of sampling (last_boost=1), ours / "
                   f"ergmx", f"{np.median(ratios):.2f}",
                   f"range {min(ratios):.2f}-{max(ratios):.2f} over {len(ratios)} rounds")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    sys.exit(main())
