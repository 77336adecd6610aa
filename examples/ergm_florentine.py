"""ERGMs of Padgett's Florentine marriage network, checked against R's ``ergm``.

The network is ``networkx.florentine_families_graph()`` plus the isolated Pucci family,
which networkx leaves out: R's ``flomarriage`` (statnet) has 16 families, so 120 node pairs,
of which 20 are marriages (3 triangles).

1. ``flomarriage ~ edges``: a dyad-independent model whose MLE is logit(20/120) =
   log(20/100) = −1.6094 exactly. All 120 edge variables are independent, so
   ``fit_exact`` sums every one of them out in closed form (one enumerated configuration)
   and gives the MLE exactly; the MPLE equals it too.
2. ``flomarriage ~ edges + triangle``: R ``ergm`` (statnet tutorial) reports the MCMC MLE
   (−1.6727, 0.1563). Here: PCD-1 with S particles from the MPLE, plain SGD with an
   exponentially decaying rate, repeated over several seeds; the estimate is the mean over
   seeds and its Monte Carlo standard error the seeds' standard deviation / √seeds. A long
   Gibbs sample at the estimate then checks the moment equations E_θ[s] = s(y_obs) and gives
   the (statistical) standard errors sqrt(diag Cov_θ[s]⁻¹), the numbers ``ergm`` prints
   beside its estimates.

Run: ``python examples/ergm_florentine.py`` (4 seeds × 2000 steps, a few minutes on 2 CPU
cores) or ``--quick`` (2 seeds × 600 steps). Writes ``outputs/ergm_florentine.json``.
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import optax

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact
from numpyro_ugm.models import ergm
from numpyro_ugm.network import (check_particle_degeneracy, ergm_statistics, graph_to_edges,
                                 mple)

#: R ergm's MCMC MLE of flomarriage ~ edges + triangle (statnet tutorial)
ERGM_R = (-1.6727, 0.1563)
EDGES_ONLY = float(np.log(20 / 100))  # logit(20/120)
STATS = ("edges", "triangles")


def florentine():
    """Edge data {"y": (1, 120)} of the 16-family marriage network (Pucci included)."""
    graph = nx.florentine_families_graph()
    graph.add_node("Pucci")  # the isolate of R's flomarriage
    nodes = sorted(graph.nodes)
    return {"y": graph_to_edges(graph, nodelist=nodes)[None]}, nodes


def edges_only(data):
    """The dyad-independent model: exact MLE (all edges summed out) and MPLE."""
    m = ugm.UGM(ergm, 16, ("edges",))
    num, summed = exact.num_enumerated(m)
    t = time.perf_counter()
    fit = ugm.fit_exact(m, data, num_steps=100, tol=1e-5)
    seconds = time.perf_counter() - t
    theta = float(fit.params["theta"][0])
    pseudo = float(mple(data, ("edges",)).params["theta"][0])
    return {"exact_mle": theta, "mple": pseudo, "logit_20_of_120": EDGES_ONLY,
            "abs_error": abs(theta - EDGES_ONLY), "enumerated_configurations": num,
            "summed_out_in_closed_form": "all 120" if summed.get("y", 0) is None else summed,
            "seconds": seconds}


def learner_for(steps, particles, lr, decay):
    """PCD-1 with plain SGD at an exponentially decaying rate (lr → lr·decay)."""
    return ugm.MLE(ergm, ugm.PCD(particles, num_mcmc_steps=1),
                   optax.sgd(optax.exponential_decay(lr, steps, decay)))


def learn(learner, data, init, seed, steps):
    t = time.perf_counter()
    result = learner.run(jax.random.PRNGKey(seed), steps, data, 16, STATS,
                         init_params=init, progress_bar=False)
    theta = np.asarray(jax.block_until_ready(result.params["theta"]), np.float64)
    return theta, time.perf_counter() - t, result


def moment_check(theta, observed, seed, chains=100, samples=200, warmup=100, thinning=5):
    """Gibbs sample at θ: E_θ[s] − s(y_obs), its Monte Carlo s.e. (batch means over
    chains), the statistical s.e. sqrt(diag Cov⁻¹), and one Newton step."""
    m = ugm.UGM(ergm, 16, STATS)
    draws = ugm.sample(m, {"theta": jnp.asarray(theta, jnp.float32)},
                       jax.random.PRNGKey(1000 + seed), samples, num_chains=chains,
                       num_warmup=warmup, thinning=thinning)
    summary = check_particle_degeneracy(draws)
    s = np.asarray(ergm_statistics(draws["y"], STATS), np.float64)
    cov = np.cov(s.T)
    per_chain = s.reshape(chains, samples, -1).mean(1)
    mc_se = per_chain.std(0, ddof=1) / np.sqrt(chains)
    diff = s.mean(0) - observed
    fisher_inv = np.linalg.inv(cov)
    return {"mean_statistics": s.mean(0).tolist(), "observed": observed.tolist(),
            "difference": diff.tolist(), "difference_mc_se": mc_se.tolist(),
            "newton_step": (fisher_inv @ -diff).tolist(),
            "std_errors": np.sqrt(np.diag(fisher_inv)).tolist(),
            "num_draws": int(len(s)), "mean_density": summary.mean_density}


def main(seeds=4, steps=2000, particles=200, lr=0.05, decay=0.02, out="outputs"):
    data, _ = florentine()
    observed = np.asarray(ergm_statistics(data["y"][0], STATS), np.float64)
    print(f"flomarriage: 16 families, {int(observed[0])} marriages, "
          f"{int(observed[1])} triangles")

    report = {"edges_only": edges_only(data)}
    e = report["edges_only"]
    print(f"\n~ edges: exact MLE {e['exact_mle']:.6f} (logit(20/120) = {EDGES_ONLY:.6f}, "
          f"|error| {e['abs_error']:.1e}; {e['enumerated_configurations']} configuration "
          f"enumerated, all edges summed out); MPLE {e['mple']:.6f}")
    assert e["abs_error"] < 1e-5, e

    t = time.perf_counter()
    init = mple(data, STATS).params
    mple_seconds = time.perf_counter() - t
    print(f"\n~ edges + triangle: MPLE {np.round(np.asarray(init['theta']), 4)} "
          f"({mple_seconds:.1f} s with compilation)")
    runs, times = [], []
    learner = learner_for(steps, particles, lr, decay)  # compiled once, reused by seeds
    for seed in range(seeds):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            theta, seconds, _ = learn(learner, data, init, seed, steps)
        runs.append(theta)
        times.append(seconds)
        print(f"  seed {seed}: PCD-1 (S={particles}, {steps} SGD steps) theta = "
              f"{np.round(theta, 4)}  ({seconds:.1f} s{', with compilation' if seed == 0 else ''})")
    runs = np.array(runs)
    estimate = runs.mean(0)
    mc_se = runs.std(0, ddof=1) / np.sqrt(len(runs)) if len(runs) > 1 else np.full(2, np.nan)
    check = moment_check(estimate, observed, 0)
    z = (estimate - np.asarray(ERGM_R)) / np.sqrt(mc_se ** 2 + 1e-12)
    report["edges_triangle"] = {
        "mple": np.asarray(init["theta"]).tolist(), "runs": runs.tolist(),
        "estimate": estimate.tolist(), "mc_se": mc_se.tolist(), "ergm_R": list(ERGM_R),
        "difference_from_R": (estimate - np.asarray(ERGM_R)).tolist(),
        "seconds_per_run": times, "settings": {"particles": particles, "steps": steps,
                                               "lr": lr, "lr_decay": decay, "seeds": seeds},
        "moment_check": check}
    print(f"\n  estimate (mean of {len(runs)} seeds): edges {estimate[0]:.4f} ± "
          f"{mc_se[0]:.4f}, triangle {estimate[1]:.4f} ± {mc_se[1]:.4f} (MC s.e.)")
    print(f"  R ergm:                          edges {ERGM_R[0]:.4f}, triangle "
          f"{ERGM_R[1]:.4f};  difference {np.round(estimate - ERGM_R, 4)} "
          f"= {np.round(z, 1)} MC s.e.")
    print(f"  moment check at the estimate ({check['num_draws']} Gibbs draws): "
          f"E[s] - s_obs = {np.round(check['difference'], 3)} ± "
          f"{np.round(check['difference_mc_se'], 3)}; a Newton step would move theta by "
          f"{np.round(check['newton_step'], 4)}")
    print(f"  statistical standard errors sqrt(diag Cov^-1): "
          f"{np.round(check['std_errors'], 4)}")
    Path(out).mkdir(parents=True, exist_ok=True)
    path = Path(out) / "ergm_florentine.json"
    path.write_text(json.dumps(report, indent=1))
    print(f"\nwrote {path}")
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds x 600 steps")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--particles", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--out", default="outputs")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.steps = 2, 600
    main(seeds=args.seeds, steps=args.steps, particles=args.particles, lr=args.lr,
         out=args.out)
