"""The statnet ERGM tutorial with numpyro_ugm: fit, summary, goodness of fit.

Each fit is one call, as R's ``ergm(net ~ ...)``; ``gof_ergm`` simulates networks from
the estimate and compares their degree, edgewise shared partner and geodesic distance
distributions with the observed network's (ergm's ``gof``), and ``fit.mcmle`` /
``mcmc_diagnostics`` give the MCMC diagnostics of the sampled statistics.

Run: ``python examples/ergm_statnet.py`` (a few minutes on 2 CPU cores; ``--large`` adds
faux.magnolia.high, 1,461 nodes, and the directed faux.dixon.high). Figures go to
``--figures`` (default docs/images).
"""

import argparse
import time
from pathlib import Path

import jax

from numpyro_ugm import datasets
from numpyro_ugm.network import (ErgmControl, SamplingControl, fit_ergm, gof_ergm,
                                 mcmc_diagnostics)

FITS = [
    ("flomarriage", "edges + nodecov('wealth')"),
    ("flomarriage", "edges + nodecov('wealth') + triangle"),
    ("faux.mesa.high", "edges + nodematch('Grade') + nodefactor('Sex')"),
    ("faux.mesa.high", "edges + nodematch('Grade') + gwesp(0.5, fixed=TRUE)"),
]
LARGE = [
    ("faux.magnolia.high", "edges + nodematch('Grade') + nodematch('Race') + "
     "nodematch('Sex') + gwesp(0.25, fixed=TRUE)"),
    ("faux.dixon.high", "edges + mutual + nodematch('grade') + gwesp(0.5, fixed=TRUE)"),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--large", action="store_true")
    parser.add_argument("--figures", default="docs/images")
    parser.add_argument("--only", type=int, nargs="*", help="indices of the fits to run")
    args = parser.parse_args()
    figures = Path(args.figures)
    figures.mkdir(parents=True, exist_ok=True)
    for k, (name, formula) in enumerate(FITS + (LARGE if args.large else [])):
        if args.only is not None and k not in args.only:
            continue
        graph = datasets.network(name)
        print(f"\n=== {name} ~ {formula}")
        start = time.perf_counter()
        # the large networks' chains mix slowly: many short chains reach the effective
        # sample size sooner than a few long ones
        control = (ErgmControl(SamplingControl(num_chains=32, samplesize=32 * 32))
                   if k >= len(FITS) else None)
        fit = fit_ergm(graph, formula, control=control, rng_key=jax.random.PRNGKey(k))
        print(fit)
        print(f"({time.perf_counter() - start:.1f} s)")
        gof = gof_ergm(fit, 100)
        print(gof)
        outside = gof.outside_interval(0.95)
        print("observed values outside the simulated 95 % interval:",
              {s: v for s, v in outside.items() if len(v)} or "none")
        tag = f"ergm_{k}_{name.replace('.', '_')}"
        gof.plot().savefig(figures / f"{tag}_gof.png", dpi=80)
        if fit.final_statistics is not None:
            diagnostics = mcmc_diagnostics(fit.final_statistics, fit.network_fit.observed,
                                           fit.names)
            print(diagnostics)
            diagnostics.plot().savefig(figures / f"{tag}_mcmc.png", dpi=80)


if __name__ == "__main__":
    main()
