"""The PF paper's ERGM study (Asuncion et al. 2010, sec. 4.2, Fig. 2a): MCMC-MLE, PF and
PCD-1 learning the triad model (edges, 2-stars, triangles) of 10-node graphs, compared by
the L1 error of θ against wall time.

Setup, as in the paper where it says: 10 nodes (45 edge variables); ground truth θ ~ N(0, 1)
redrawn until it is not degenerate; 500 training graphs from p(y; θ); S = 100 particles;
initial learning rate 0.005, decreased gradually (here exponentially, to ``--lr-final``
times it at the last epoch); every learner starts at the MPLE; n = 1 Gibbs sweep of
rejuvenation for PF and PCD; PF's ESS threshold 0.9 S; 10 sweeps per (re)draw for
MCMC-MLE's initial particles and for each MCMC-MLE round, a round lasting at most 100
epochs. One epoch = one full-batch gradient step.

What differs, and why:

* 2^45 graphs cannot be enumerated, so the training graphs come from long Gibbs chains
  (one graph per chain: ``--burn-in`` sweeps from a uniformly random graph). A θ passes as
  non-degenerate when chains started at the empty, the complete and random graphs agree on
  the mean density (so the chains mix and no extreme graph traps them), the density is in
  [0.05, 0.95], and no single graph holds 10% of the draws.
* The initial particles of PF and MCMC-MLE come from adaptive tempering from uniform
  graphs to p(·; θ_0) (plus the 10 sweeps for MCMC-MLE), not from 10 sweeps alone.
* The paper initialises at "approximately the MPLE (found by CD with a single-variable
  sampling step)"; here the MPLE is exact (``ugm.network.mple``: L-BFGS on the pseudo-likelihood).
* Besides the L1 error against the ground truth (which cannot fall below the sampling error
  of 500 graphs), the L1 error against the MLE of the training set is shown: the MLE is
  found independently by Newton–Raphson on MCMC moments (statnet's approach: long Gibbs
  runs at the current θ, θ ← θ + Cov⁻¹(s̄_data − E_θ[s])), with its Monte Carlo error.
* MCMC-MLE starts a new round every 100 epochs or when its ESS falls below 10%; the
  paper's convergence-based restart is not used.

Outputs: a table on stdout, ``outputs/ergm_triad.png`` and ``outputs/ergm_triad.json``.
Run: ``python examples/ergm_triad.py`` (10000 epochs per learner, a few minutes on 2 CPU
cores) or ``--quick``; ``--problems K`` repeats the study on K ground truths (the paper's
Fig. 2b used 100).
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

import numpyro_ugm as ugm
from numpyro_ugm.models import ergm
from numpyro_ugm.network import check_particle_degeneracy, ergm_statistics, mple

NUM_NODES, NUM_TRAIN, NUM_PARTICLES = 10, 500, 100
TRIAD = ("edges", "twostars", "triangles")
NUM_PAIRS = NUM_NODES * (NUM_NODES - 1) // 2


# --- sampling with θ as an argument (one compilation for every θ) ----------------------


def gibbs_runner(m):
    """A jitted ``run(theta, key, position, sweeps) -> position`` of block Gibbs sweeps
    (the model's edge matchings) on a batch of chains."""
    kernel = ugm.kernels.gibbs().build(m.target())

    @jax.jit
    def run(theta, key, position, sweeps):
        f = m.target().logdensity_fn({"theta": theta})
        chains = position["y"].shape[0]

        def sweep(i, x):
            keys = jax.random.split(jax.random.fold_in(key, i), chains)
            return jax.vmap(lambda k, p: kernel.step(k, kernel.init(p), f)[0].position)(
                keys, x)

        return jax.lax.fori_loop(0, sweeps, sweep, position)

    return run


def statistics(position):
    return np.asarray(ergm_statistics(position["y"], TRIAD), np.float64)


def degeneracy_check(run, theta, key, chains=100, sweeps=500):
    """Chains from the empty, complete and random graphs: mean densities (each start),
    and the largest share of one graph among the random-start draws."""
    starts = {"empty": jnp.zeros((chains, NUM_PAIRS)), "full": jnp.ones((chains, NUM_PAIRS)),
              "random": jax.random.bernoulli(key, 0.5, (chains, NUM_PAIRS)).astype(
                  jnp.float32)}
    density, draws = {}, None
    for i, (name, y) in enumerate(starts.items()):
        out = run(theta, jax.random.fold_in(key, i), {"y": y}, sweeps)
        density[name] = float(jnp.mean(out["y"]))
        draws = out
    y = np.asarray(draws["y"]).astype(np.int8)
    _, counts = np.unique(y, axis=0, return_counts=True)
    spread = max(density.values()) - min(density.values())
    ok = (0.05 < density["random"] < 0.95 and spread < 0.05 and counts.max() / chains < 0.1)
    return ok, {"density_by_start": density, "top_graph_share": float(counts.max() / chains)}


def draw_problem(run, key, burn_in, max_tries=200):
    """Ground truth θ ~ N(0, I) (redrawn until non-degenerate) and 500 training graphs."""
    for attempt in range(max_tries):
        k = jax.random.fold_in(key, attempt)
        theta = jax.random.normal(k, (3,))
        ok, info = degeneracy_check(run, theta, jax.random.fold_in(k, 1))
        if ok:
            break
    else:
        raise RuntimeError("no non-degenerate θ found")
    start = jax.random.bernoulli(jax.random.fold_in(k, 2), 0.5, (NUM_TRAIN, NUM_PAIRS))
    train = run(theta, jax.random.fold_in(k, 3), {"y": start.astype(jnp.float32)}, burn_in)
    data = {"y": np.asarray(train["y"]).astype(np.int8)}
    info.update(rejected=attempt, train_density=float(data["y"].mean()))
    return np.asarray(theta, np.float64), data, info


def reference_mle(run, data, init, key, iterations=6, chains=500, burn_in=200,
                  samples=20, spacing=10):
    """MLE by Newton–Raphson on MCMC moments (chains started at the training graphs);
    returns θ̂ and the Monte Carlo s.e. of the last step (from per-chain means)."""
    target = statistics(data).mean(0)
    theta = np.asarray(init, np.float64)
    position = {"y": jnp.asarray(data["y"][:chains], jnp.float32)}
    for it in range(iterations):
        th = jnp.asarray(theta, jnp.float32)
        position = run(th, jax.random.fold_in(key, 100 * it), position, burn_in)
        draws = []
        for j in range(samples):
            position = run(th, jax.random.fold_in(key, 100 * it + 1 + j), position, spacing)
            draws.append(statistics(position))
        draws = np.stack(draws, 1)  # (chains, samples, 3)
        s = draws.reshape(-1, 3)
        cov = np.cov(s.T)
        step = np.linalg.solve(cov, target - s.mean(0))
        theta = theta + step
    chain_means = draws.mean(1)
    mean_cov = np.cov(chain_means.T) / chains
    inv = np.linalg.inv(cov)
    mc_se = np.sqrt(np.diag(inv @ mean_cov @ inv))
    return theta, {"mc_se": mc_se.tolist(), "last_step": step.tolist(),
                   "statistical_se": np.sqrt(np.diag(inv) / len(data["y"])).tolist()}


# --- learning curves ---------------------------------------------------------------------


def estimators(defaults=False):
    """The paper's settings (the docs' reproduction), or with ``defaults`` the package's
    defaults for MCMC-MLE and PF."""
    if defaults:
        return {"MCMC-MLE": ugm.MCMCMLE(NUM_PARTICLES), "PF": ugm.PF(NUM_PARTICLES),
                "PCD-1": ugm.PCD(NUM_PARTICLES)}
    return {
        "MCMC-MLE": ugm.MCMCMLE(NUM_PARTICLES, num_mcmc_steps=10, reset_every=100,
                                restart_threshold=0.1, gradient_tol=0.0,
                                resample_threshold=None, check_log_z=False),
        "PF": ugm.PF(NUM_PARTICLES, resample_threshold=0.9, num_mcmc_steps=1,
                     rejuvenate_every=None, check_log_z=False),
        "PCD-1": ugm.PCD(NUM_PARTICLES, num_mcmc_steps=1),
    }


def learn_curve(learner, key, init, data, num_epochs, every):
    """θ after every ``every`` epochs and the learning time so far (compilation and the
    particles' initialization excluded: the segments continue with ``init_state``)."""
    state = learner.init(key, data, NUM_NODES, TRIAD, init_params=init)
    # compile the ``every``-epoch scan on a throwaway segment, so no segment times it
    jax.block_until_ready(learner.run(key, every, data, NUM_NODES, TRIAD, init_state=state,
                                      progress_bar=False).state)
    thetas, seconds, diagnostics = [np.asarray(init["theta"], np.float64)], [0.0], []
    for _ in range(num_epochs // every):
        t = time.perf_counter()
        result = learner.run(key, every, data, NUM_NODES, TRIAD, init_state=state,
                             progress_bar=False)
        jax.block_until_ready(result.state)
        seconds.append(seconds[-1] + time.perf_counter() - t)
        state = result.state
        thetas.append(np.asarray(result.params["theta"], np.float64))
        diagnostics.append(result.diagnostics)
    diagnostics = {k: np.concatenate([d[k] for d in diagnostics]) for k in diagnostics[0]}
    return np.array(thetas), np.array(seconds), diagnostics, result


def run_problem(problem, run, key, num_epochs, every, lr, lr_final, burn_in, learners):
    theta_true, data, info = draw_problem(run, jax.random.fold_in(key, problem), burn_in)
    init = mple(data, TRIAD).params
    mle, mle_info = reference_mle(run, data, init["theta"], jax.random.fold_in(key, 77))
    out = {"theta_true": theta_true.tolist(), "check": info,
           "mple": np.asarray(init["theta"]).tolist(), "mle": mle.tolist(),
           "mle_info": mle_info, "learners": {}}
    print(f"\nproblem {problem}: theta_true {np.round(theta_true, 3)} ({info['rejected']} "
          f"degenerate draws rejected; density by start {info['density_by_start']}; "
          f"training density {info['train_density']:.3f})")
    print(f"  MPLE {np.round(out['mple'], 3)}   MLE {np.round(mle, 3)} "
          f"(MC s.e. {np.round(mle_info['mc_se'], 3)}; statistical s.e. "
          f"{np.round(mle_info['statistical_se'], 3)})")
    print(f"  {'':9s} {'L1 to truth':>11s} {'L1 to MLE':>10s} {'seconds':>8s} "
          f"{'sweeps/epoch':>12s}  final theta")
    l1_mple_truth = float(np.abs(np.asarray(out["mple"]) - theta_true).sum())
    l1_mple_mle = float(np.abs(np.asarray(out["mple"]) - mle).sum())
    print(f"  {'MPLE':9s} {l1_mple_truth:11.3f} {l1_mple_mle:10.3f}")
    for name, learner in learners.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # collapsed-ESS notes
            thetas, seconds, diag, result = learn_curve(
                learner, jax.random.fold_in(key, 1000 * problem + 1), init, data,
                num_epochs, every)
        degeneracy = check_particle_degeneracy(result, data=data, warn=False)._asdict()
        sweeps = 1.0 if name == "PCD-1" else (  # PCD's "rejuvenated" is all NaN
            (10 if name == "MCMC-MLE" else 1) * float(np.nanmean(diag["rejuvenated"])))
        l1_truth = np.abs(thetas - theta_true).sum(1)
        l1_mle = np.abs(thetas - mle).sum(1)
        out["learners"][name] = {
            "epochs": (np.arange(len(thetas)) * every).tolist(), "seconds": seconds.tolist(),
            "theta": thetas.tolist(), "l1_truth": l1_truth.tolist(),
            "l1_mle": l1_mle.tolist(), "sweeps_per_epoch": sweeps,
            "mean_ess": float(np.nanmean(diag["ess"])), "degeneracy": degeneracy}
        print(f"  {name:9s} {l1_truth[-1]:11.3f} {l1_mle[-1]:10.3f} {seconds[-1]:8.1f} "
              f"{sweeps:12.3f}  {np.round(thetas[-1], 3)}")
    return out


def plot(result, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, curve in result["learners"].items():
        axes[0].plot(curve["seconds"], curve["l1_truth"], label=name)
        axes[1].plot(curve["seconds"], curve["l1_mle"], label=name)
    for ax, title in zip(axes, ["L1 error to the ground truth θ",
                                "L1 distance to the training MLE"]):
        ax.set_xlabel("learning time (s)")
        ax.set_ylabel("L1 error")
        ax.set_yscale("log")
        ax.set_title(title)
        ax.legend()
    fig.suptitle("ERGM triad model, 10 nodes, 500 graphs (cf. Asuncion et al. 2010, "
                 "Fig. 2a)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(num_epochs=10000, every=250, problems=1, seed=0, lr=0.005, lr_final=0.1,
         burn_in=2000, out="outputs", defaults=False):
    num_epochs = every * max(1, num_epochs // every)
    key = jax.random.PRNGKey(seed)
    m = ugm.UGM(ergm, NUM_NODES, TRIAD)
    print(f"triad ERGM on {NUM_NODES} nodes: {len(m.target().blocks)} Gibbs blocks (edge "
          f"matchings), multilinear={m.target().structure.multilinear}")
    run = gibbs_runner(m)
    schedule = optax.exponential_decay(lr, transition_steps=num_epochs, decay_rate=lr_final)
    learners = {name: ugm.MLE(ergm, est, optax.sgd(schedule))
                for name, est in estimators(defaults).items()}
    t = time.perf_counter()
    results = [run_problem(p, run, key, num_epochs, every, lr, lr_final, burn_in, learners)
               for p in range(problems)]
    total = time.perf_counter() - t
    summary = {}
    for name in learners:
        final = [r["learners"][name]["l1_truth"][-1] for r in results]
        to_mle = [r["learners"][name]["l1_mle"][-1] for r in results]
        summary[name] = {"l1_truth_median": float(np.median(final)),
                         "l1_mle_median": float(np.median(to_mle))}
    if problems > 1:
        print("\nmedian final L1 over problems:",
              {k: round(v["l1_truth_median"], 3) for k, v in summary.items()})
    Path(out).mkdir(parents=True, exist_ok=True)
    report = {"settings": {"num_epochs": num_epochs, "lr": lr, "lr_final": lr_final,
                           "particles": NUM_PARTICLES, "burn_in": burn_in,
                           "problems": problems},
              "problems": results, "summary": summary, "total_seconds": total}
    (Path(out) / "ergm_triad.json").write_text(json.dumps(report, indent=1))
    plot(results[0], Path(out) / "ergm_triad.png")
    print(f"\nwrote {out}/ergm_triad.png and {out}/ergm_triad.json ({total:.0f} s)")
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2000 epochs")
    parser.add_argument("--epochs", type=int, default=10000)
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--problems", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--lr-final", type=float, default=0.1)
    parser.add_argument("--burn-in", type=int, default=2000)
    parser.add_argument("--out", default="outputs")
    parser.add_argument("--defaults", action="store_true",
                        help="PF and MCMC-MLE at the package's defaults, not the paper's")
    args = parser.parse_args()
    if args.quick:
        args.epochs, args.every, args.burn_in = 2000, 100, 1000
    main(num_epochs=args.epochs, every=args.every, problems=args.problems, seed=args.seed,
         lr=args.lr, lr_final=args.lr_final, burn_in=args.burn_in, out=args.out,
         defaults=args.defaults)
