"""Bayesian learning of doubly-intractable models: posteriors of θ from the exchange
algorithm and SG-MCMC, checked against the exact posterior (log Z enumerated, NUTS).

Two parts (``--part``):

* ``agreement``: a 6-spin fully connected VBM (15 couplings, 6 fields) and a 3×3 Potts
  model (3 labels: coupling β and two label fields), Normal(0, 1) priors, data drawn
  exactly from a random θ. For each, the exact reference (NUTS on
  ``ugm.posterior.exact_posterior``), the exchange algorithm with exact auxiliary draws
  and with Gibbs runs of 1, 3, 10 and 30 sweeps from the data (Caimo & Friel's
  approximate exchange), SGLD and pSGLD with PCD(100). Reported per method: the largest
  |mean − reference mean| in Monte Carlo standard errors of the method's mean (from
  numpyro's effective sample size) and in posterior standard deviations, the largest
  relative error of the standard deviations, the smallest effective sample size and the
  wall time.
* ``florentine``: Padgett's Florentine marriages (R's flomarriage, 16 families).
  ``~ edges`` with a Normal(0, 5) prior: the exchange posterior of the edge parameter
  against one-dimensional quadrature. ``~ edges + triangle`` (Normal(0, 5) priors, as
  Bergm's default scale): the approximate exchange posterior (Gibbs runs from the
  observed graph) with a posterior predictive check of the statistics, beside the time of
  the MCMC-MLE fit.

Run: ``python examples/posterior.py`` (both parts; about 10 minutes on one CPU core) or
``--quick``. Writes ``outputs/posterior_<part>.json``.
"""

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import numpyro
import numpyro.distributions as dist
import optax
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import MCMC, NUTS

import numpyro_ugm as ugm
from numpyro_ugm.model.validation import validate_data, to_data
from numpyro_ugm.models import ergm
from numpyro_ugm.network import ergm_statistics, graph_to_edges, mple

VBM_UNITS = 6
PAIRS = np.triu_indices(VBM_UNITS, 1)
GRID, LABELS = 3, 3


def vbm():
    """Fully connected spins: one coupling per pair, one field per spin."""
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand((len(PAIRS[0]),)).to_event(1))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand((VBM_UNITS,)).to_event(1))
    x = numpyro.sample("x", ugm.Spin(VBM_UNITS))
    numpyro.factor("couplings", x @ jnp.zeros((VBM_UNITS, VBM_UNITS)).at[PAIRS].set(w) @ x)
    numpyro.factor("fields", b @ x)


def potts():
    """3×3 grid, 3 labels: β counts agreeing neighbours; fields of labels 1 and 2."""
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0))
    h = numpyro.sample("h", dist.Normal(0.0, 1.0).expand((LABELS - 1,)).to_event(1))
    x = numpyro.sample("x", ugm.Categorical((GRID, GRID), LABELS))
    agree = jnp.sum(x[1:] * x[:-1]) + jnp.sum(x[:, 1:] * x[:, :-1])
    numpyro.factor("coupling", beta * agree)
    numpyro.factor("fields", jnp.sum(x[..., 1:] @ h))


def summarize(samples, by_chain, reference, seconds):
    """Largest errors of a method's posterior means and sds against the reference."""
    z_mean, sd_units, sd_rel, min_ess = 0.0, 0.0, 0.0, np.inf
    for site, ref in reference.items():
        s = np.asarray(samples[site]).reshape(len(samples[site]), -1)
        r = np.asarray(ref).reshape(len(ref), -1)
        chains = np.asarray(by_chain[site])
        ess = np.atleast_1d(effective_sample_size(chains.reshape(chains.shape[:2] + (-1,))))
        mean_err = np.abs(s.mean(0) - r.mean(0))
        z_mean = max(z_mean, float(np.max(mean_err / (s.std(0) / np.sqrt(ess)))))
        sd_units = max(sd_units, float(np.max(mean_err / r.std(0))))
        sd_rel = max(sd_rel, float(np.max(np.abs(s.std(0) / r.std(0) - 1))))
        min_ess = min(min_ess, float(ess.min()))
    return {"max_mean_error_in_mc_se": z_mean, "max_mean_error_in_sd": sd_units,
            "max_sd_relative_error": sd_rel, "min_ess": min_ess, "seconds": seconds}


def run_mcmc(kernel, key, warmup, samples, *model_args, chains=4, **kwargs):
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=samples, num_chains=chains,
                chain_method="vectorized", progress_bar=False)
    t = time.perf_counter()
    mcmc.run(key, *model_args, **kwargs)
    jax.block_until_ready(mcmc.get_samples())
    return mcmc, time.perf_counter() - t


def agreement(quick):
    scale = 0.25 if quick else 1.0
    rng = np.random.default_rng(0)
    cases = {
        "VBM-6": (vbm, {"w": jnp.asarray(rng.normal(0, 0.5, len(PAIRS[0])), jnp.float32),
                        "b": jnp.asarray(rng.normal(0, 0.3, VBM_UNITS), jnp.float32)}, 100),
        "Potts 3x3": (potts, {"beta": jnp.float32(0.6),
                              "h": jnp.asarray([0.3, -0.2], jnp.float32)}, 50),
    }
    out = {}
    for name, (model, truth, n) in cases.items():
        data = ugm.exact.sample(ugm.UGM(model), truth, jax.random.PRNGKey(1), n)
        ref, seconds = run_mcmc(NUTS(ugm.posterior.exact_posterior(model, data)),
                                jax.random.PRNGKey(0), 500, int(2500 * scale))
        reference = ref.get_samples()
        rows = {"exact (NUTS)": summarize(reference, ref.get_samples(True), reference,
                                          seconds)}
        rows["exact (NUTS)"]["posterior"] = {k: [np.asarray(v).mean(0).tolist(),
                                                 np.asarray(v).std(0).tolist()]
                                             for k, v in reference.items()}
        for steps in (None, 1, 3, 10, 30):
            label = "exchange, exact draws" if steps is None else f"exchange, Gibbs {steps}"
            kernel = ugm.posterior.Exchange(model, data, num_aux_steps=steps)
            mcmc, seconds = run_mcmc(kernel, jax.random.PRNGKey(2), int(4000 * scale),
                                     int(8000 * scale), chains=8,
                                     extra_fields=("accept_prob",))
            rows[label] = summarize(mcmc.get_samples(), mcmc.get_samples(True), reference,
                                    seconds)
            rows[label]["accept_prob"] = float(np.mean(mcmc.get_extra_fields()["accept_prob"]))
        for label, step, pre in (("SGLD, PCD(100)", 2e-4, False),
                                 ("pSGLD, PCD(100)", 1e-2, True)):
            sampler = ugm.posterior.SGMCMC(model, ugm.PCD(100), step, preconditioned=pre)
            num = int(20000 * scale)
            t = time.perf_counter()
            result = sampler.run(jax.random.PRNGKey(3), num, data, num_warmup=2000,
                                 thinning=5, progress_bar=False)
            seconds = time.perf_counter() - t
            by_chain = {k: v.reshape((4, -1) + v.shape[1:]) for k, v in result.samples.items()}
            rows[label] = summarize(result.samples, by_chain, reference, seconds)
        out[name] = {"num_cases": n, "num_params": int(sum(np.size(v) for v in truth.values())),
                     "methods": rows}
        for label, row in rows.items():
            print(f"{name:10s} {label:24s} mean err {row['max_mean_error_in_mc_se']:5.2f} se "
                  f"({row['max_mean_error_in_sd']:.3f} sd), sd err "
                  f"{row['max_sd_relative_error']:.3f}, min ESS {row['min_ess']:7.0f}, "
                  f"{row['seconds']:6.1f} s", flush=True)
    return out


def florentine_data():
    graph = nx.florentine_families_graph()
    graph.add_node("Pucci")  # the isolate of R's flomarriage
    return {"y": graph_to_edges(graph, nodelist=sorted(graph.nodes))[None]}


def predictive(thetas, data, stats, sweeps=500):
    """One graph per row of ``thetas``: ``sweeps`` Gibbs sweeps from the observed graph."""
    m = ugm.UGM(ergm, 16, stats, prior_scale=5.0)
    kernel = ugm.kernels.gibbs().build(m.target())
    start = validate_data(m.target().state_sites, data)

    def simulate(theta, key):
        f = m.target().logdensity_fn({"theta": theta})
        state = kernel.init({"y": start["y"][0]}, f)
        state = jax.lax.fori_loop(
            0, sweeps, lambda i, s: kernel.step(jax.random.fold_in(key, i), s, f)[0], state)
        return state.position["y"]

    keys = jax.random.split(jax.random.PRNGKey(7), len(thetas))
    graphs = jax.jit(jax.vmap(simulate))(jnp.asarray(thetas, jnp.float32), keys)
    return to_data(m.target().state_sites, {"y": graphs})["y"]


def florentine(quick):
    scale = 0.25 if quick else 1.0
    data = florentine_data()
    out = {}
    # ~ edges: quadrature
    mcmc, seconds = run_mcmc(ugm.posterior.Exchange(ergm, data), jax.random.PRNGKey(0),
                             1000, int(5000 * scale), 16, ("edges",), prior_scale=5.0)
    theta = np.asarray(mcmc.get_samples()["theta"])[:, 0]
    grid = np.linspace(-4.0, 0.0, 40001)
    log_post = 20 * grid - 120 * np.log1p(np.exp(grid)) - grid ** 2 / 50
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    mean = float((w * grid).sum())
    sd = float(np.sqrt((w * grid ** 2).sum() - mean ** 2))
    ess = float(effective_sample_size(np.asarray(
        mcmc.get_samples(True)["theta"])[..., 0]))
    out["edges"] = {"exchange_mean": float(theta.mean()), "exchange_sd": float(theta.std()),
                    "quadrature_mean": mean, "quadrature_sd": sd, "ess": ess,
                    "seconds": seconds}
    print(f"~ edges: exchange {theta.mean():.4f} ± {theta.std():.4f} (ESS {ess:.0f}), "
          f"quadrature {mean:.4f} ± {sd:.4f}, {seconds:.1f} s", flush=True)
    # ~ edges + triangle: approximate exchange, predictive check, MCMC-MLE time
    stats = ("edges", "triangles")
    observed = np.asarray(ergm_statistics(data["y"][0], stats))
    rows = {}
    for steps in ((5, 20) if quick else (5, 20, 100)):
        mcmc, seconds = run_mcmc(ugm.posterior.Exchange(ergm, data, num_aux_steps=steps),
                                 jax.random.PRNGKey(1), int(2000 * scale),
                                 int(5000 * scale), 16, stats, prior_scale=5.0,
                                 extra_fields=("accept_prob",))
        theta = np.asarray(mcmc.get_samples()["theta"])
        by_chain = np.asarray(mcmc.get_samples(True)["theta"])
        ess = np.atleast_1d(effective_sample_size(by_chain))
        # posterior predictive: a graph per posterior draw (every 20th), each the end of
        # 500 Gibbs sweeps from the observed graph
        sims = np.asarray(ergm_statistics(predictive(theta[::20], data, stats), stats))
        rows[steps] = {"mean": theta.mean(0).tolist(), "sd": theta.std(0).tolist(),
                       "ess": ess.tolist(), "seconds": seconds,
                       "accept_prob": float(np.mean(mcmc.get_extra_fields()["accept_prob"])),
                       "predictive_mean": sims.mean(0).tolist(),
                       "predictive_sd": sims.std(0).tolist(),
                       "predictive_quartiles": np.percentile(sims, [25, 50, 75], 0).tolist(),
                       "predictive_p": [float(np.mean(sims[:, j] >= observed[j]))
                                        for j in range(len(stats))]}
        print(f"~ edges + triangle, Gibbs {steps}: θ = {np.round(theta.mean(0), 3)} ± "
              f"{np.round(theta.std(0), 3)} (ESS {np.round(ess)}), {seconds:.1f} s; "
              f"predictive mean {np.round(sims.mean(0), 1)}, median {np.median(sims, 0)} vs "
              f"observed {observed}", flush=True)
    t = time.perf_counter()
    init = mple(data, stats).params
    steps = int(2000 * scale)
    learner = ugm.MLE(ergm, ugm.MCMCMLE(200), optax.sgd(optax.exponential_decay(
        0.05, steps, 0.02)))  # the settings of examples/ergm_florentine.py
    fit = learner.run(jax.random.PRNGKey(2), steps, data, 16, stats, init_params=init,
                      progress_bar=False)
    jax.block_until_ready(fit.params)
    fit_seconds = time.perf_counter() - t
    out["edges+triangle"] = {"observed": observed.tolist(), "exchange": rows,
                             "mcmc_mle": np.asarray(fit.params["theta"]).tolist(),
                             "mcmc_mle_seconds": fit_seconds}
    print(f"MCMC-MLE {np.round(np.asarray(fit.params['theta']), 3)} in {fit_seconds:.1f} s")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("agreement", "florentine", "all"), default="all")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="outputs")
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    parts = ("agreement", "florentine") if args.part == "all" else (args.part,)
    for part in parts:
        result = {"agreement": agreement, "florentine": florentine}[part](args.quick)
        result["device"] = str(jax.devices()[0])
        with open(Path(args.out) / f"posterior_{part}.json", "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
