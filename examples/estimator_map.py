"""Where each negative-phase estimator wins: final exact log-likelihood and wall time of
every estimator over a grid of learning rates x target difficulty (issue 15, item 5).

Targets (all small enough for exact log-likelihoods by enumeration):

* ``vbm15``: the PF paper's VBM-15 (15 spins, couplings N(0, 1), no fields, 500
  training cases drawn exactly): a peaked, unimodal-up-to-the-spin-flip model;
* ``curie-weiss``: a Curie-Weiss VBM of 15 spins (every coupling J/15 with J = 2.5, a
  field h = 0.05 on every spin; couplings and fields learned), whose two modes (all up,
  all down; weights about 4.5 : 1) are separated by a barrier of about 10 nats that
  single-site Gibbs does not cross in thousands of sweeps; 500 training cases drawn
  exactly.

The 784x10 RBM on MNIST is the third target; it runs through
``examples/rbm_mnist_psmc.py`` (``--lr-scale``, ``--methods``), see the docs page
"Choosing an estimator".

Estimators, each at its package defaults but for the particle count (S = 50): PCD-1;
PCD-H (H sweeps, H = PSMC's mean number of β per update in the same cell, at least 2);
PF; MCMC-MLE; SMC; PSMC; TT (PCD whose move is a tempered transition over H β evenly
spaced in [0.9, 1]); PT (PCD whose move is parallel tempering over H replicas, β evenly
spaced in [0, 1]). Optimizers: plain SGD with η_t = η0 / (1 + t/1000), η0 in
{0.01, 0.03, 0.1}, and Adam 0.01, each for 6,000 full-batch steps (the issue's budget).
Every cell also runs exact-gradient ascent with the same optimizer and steps: the
best any estimator can do with that budget, against which the "gap" is measured.

Wall time is the learning alone (a first run of 1,024 steps compiles the program and
is not timed). Each finished cell is appended to ``OUT/estimator_map.jsonl`` at once, so
an interrupted run resumes where it stopped; ``--plot`` turns the file into
``OUT/estimator_map.png`` and prints the tables.

Run: ``python examples/estimator_map.py --seeds 1`` (both targets, one seed: about 50
minutes on one CPU core, most of it compilation; the default 2 seeds double it),
``--quick`` (1,000 steps, one seed, two optimizers: a check), ``--plot`` (tables and
figure from the saved cells).
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
from numpyro_ugm.datasets import vbm_problem
from numpyro_ugm.evaluate import exact

NUM_UNITS, NUM_TRAIN, NUM_PARTICLES = 15, 500, 50
ESTIMATORS = ("PCD-1", "PCD-H", "PF", "MCMC-MLE", "SMC", "PSMC", "TT", "PT")
#: the papers' settings, which the defaults replaced (``--estimators`` can name them)
PAPER_SETTINGS = ("PF (paper)", "PSMC (paper)", "MCMC-MLE (paper)")
#: the paper's PF with the package's log Z check (its moves still triggered by the ESS)
VARIANTS = ("PF (ESS-triggered)",)
OPTIMIZERS = {"sgd 0.01": lambda: optax.sgd(lambda t: 0.01 / (1 + t / 1000)),
              "sgd 0.03": lambda: optax.sgd(lambda t: 0.03 / (1 + t / 1000)),
              "sgd 0.1": lambda: optax.sgd(lambda t: 0.1 / (1 + t / 1000)),
              "adam 0.01": lambda: optax.adam(0.01)}
CURIE_WEISS_J, CURIE_WEISS_H = 2.5, 0.05


def problem(target):
    """(model function and its keyword arguments, training data) of a target."""
    if target == "vbm15":
        _, train, _ = vbm_problem(jax.random.PRNGKey(0), NUM_UNITS, NUM_TRAIN, 100)
        return {"fields": False}, train
    if target == "curie-weiss":
        m = ugm.UGM(ugm.models.vbm, NUM_UNITS)
        true = {"W": jnp.triu(jnp.full((NUM_UNITS, NUM_UNITS), CURIE_WEISS_J / NUM_UNITS), 1),
                "b": jnp.full((NUM_UNITS,), CURIE_WEISS_H)}
        draws = exact.sample(m, true, jax.random.PRNGKey(0), NUM_TRAIN)
        return {}, {"x": np.asarray(draws["x"])}
    raise ValueError(target)


def make_estimator(name, H):
    S = NUM_PARTICLES
    return {"PCD-1": lambda: ugm.PCD(S),
            "PCD-H": lambda: ugm.PCD(S, num_mcmc_steps=H),
            "PF": lambda: ugm.PF(S),
            "MCMC-MLE": lambda: ugm.MCMCMLE(S),
            "SMC": lambda: ugm.SMC(S),
            "PSMC": lambda: ugm.PSMC(S),
            "TT": lambda: ugm.PCD(S, kernel=ugm.kernels.tempered_transitions(
                betas=np.linspace(0.9, 1.0, H))),
            "PT": lambda: ugm.PCD(S, kernel=ugm.kernels.parallel_tempering(
                betas=np.linspace(0.0, 1.0, H))),
            "PF (paper)": lambda: ugm.PF(S, rejuvenate_every=None, check_log_z=False),
            "PF (ESS-triggered)": lambda: ugm.PF(S, rejuvenate_every=None),
            "PSMC (paper)": lambda: ugm.PSMC(S, redraw="uniform-heuristic"),
            "MCMC-MLE (paper)": lambda: ugm.MCMCMLE(S, reset_every=100,
                                                    restart_threshold=0.1,
                                                    gradient_tol=0.0,
                                                    resample_threshold=None)}[name]()


def sweeps_per_update(estimator, diagnostics):
    """Kernel sweeps of every particle per update (the unit of cost the papers use), from
    the estimator's configuration and its run's diagnostics."""
    steps = estimator.num_mcmc_steps
    if "num_betas" in diagnostics:  # SMC, PSMC: a move per beta, the fresh path's included
        betas = diagnostics["num_betas"] + diagnostics.get("fresh_num_betas", 0.0)
        return steps * float(np.mean(betas))
    if "rejuvenated" in diagnostics:  # PF, MCMC-MLE: moves only when renewing
        return steps * float(np.mean(diagnostics["rejuvenated"]))
    kernel = estimator.kernel
    if isinstance(kernel, ugm.kernels.tempered_transitions):  # down and up the ladder
        return steps * 2.0 * (len(kernel.betas) - 1)
    if isinstance(kernel, ugm.kernels.parallel_tempering):  # one sweep per replica
        return steps * float(len(kernel.betas))
    return float(steps)


def exact_gradient(m, train, optimizer, num_steps, seed):
    """Final exact training log-likelihood of exact-gradient descent, same optimizer and
    initial parameters as the learners."""
    result = ugm.fit_exact(m, train, params=m.init_params(jax.random.PRNGKey(seed)),
                       num_steps=num_steps, optimizer=optimizer, tol=0.0)
    return float(exact.log_likelihood(m, result.params, train))


def run_cell(target, optimizer_name, seed, num_steps, estimators):
    kwargs, train = problem(target)
    m = ugm.UGM(ugm.models.vbm, NUM_UNITS, **kwargs)
    cell = {"target": target, "optimizer": optimizer_name, "seed": seed,
            "num_steps": num_steps, "num_particles": NUM_PARTICLES,
            "exact_gradient": exact_gradient(m, train, OPTIMIZERS[optimizer_name](),
                                             num_steps, seed),
            "runs": {}}
    H = None
    needs_h = any(n in ("PCD-H", "TT", "PT") for n in estimators)
    order = ["PSMC"] * ("PSMC" in estimators or needs_h) + [n for n in estimators
                                                          if n != "PSMC"]
    for name in order:
        estimator = make_estimator(name, H)
        learner = ugm.MLE(ugm.models.vbm, estimator, OPTIMIZERS[optimizer_name]())
        key = jax.random.PRNGKey(100 + seed)
        init = dict(progress_bar=False, init_params=m.init_params(jax.random.PRNGKey(seed)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            t = time.perf_counter()
            learner.run(key, min(1024, num_steps), train, NUM_UNITS, **kwargs, **init)
            compile_s = time.perf_counter() - t
            t = time.perf_counter()
            result = learner.run(key, num_steps, train, NUM_UNITS, **kwargs, **init)
            learn_s = time.perf_counter() - t
        diag = {k: np.asarray(v, float) for k, v in result.diagnostics.items()}
        learned = float(exact.log_likelihood(m, result.params, train))
        run = {"train_ll": learned, "gap": cell["exact_gradient"] - learned,
               "learn_seconds": learn_s, "first_run_seconds": compile_s,
               "sweeps_per_update": sweeps_per_update(estimator, diag),
               "warnings": sorted({str(w.message)[:120] for w in caught})}
        if "log_likelihood" in diag:
            run["running_ll_error"] = float(diag["log_likelihood"][-1] - learned)
        if "reannealed" in diag:  # updates that tempered fresh particles (not in sweeps)
            run["reannealed"] = float(np.mean(diag["reannealed"]))
        if name == "PSMC":
            H = max(2, int(round(run["sweeps_per_update"])))
            run["fresh_share"] = float(np.nanmean(diag["fresh_share"]))
        cell["runs"][name] = run
        print(f"  {target} {optimizer_name} seed {seed} {name:<9} gap {run['gap']:8.4f}  "
              f"learn {learn_s:6.2f} s  sweeps/update {run['sweeps_per_update']:6.2f}"
              + (f"  warned: {run['warnings']}" if run["warnings"] else ""), flush=True)
    cell["H"] = H
    return cell


def load(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def tables(cells):
    """Markdown tables: mean gap (nats) and learning seconds per estimator and optimizer."""
    lines = []
    for target in dict.fromkeys(c["target"] for c in cells):
        rows = [c for c in cells if c["target"] == target]
        optimizers = list(dict.fromkeys(c["optimizer"] for c in rows))
        lines += [f"\n{target}: gap to exact-gradient ascent (nats, mean over seeds; "
                  f"learning seconds in brackets)\n",
                  "| estimator | " + " | ".join(optimizers) + " |",
                  "| --- |" + " --- |" * len(optimizers)]
        names = [n for n in ESTIMATORS + PAPER_SETTINGS + VARIANTS
                 if any(n in c["runs"] for c in rows)]
        for name in names:
            cells_of = [[c["runs"][name] for c in rows if c["optimizer"] == o
                         and name in c["runs"]] for o in optimizers]
            entry = [f"{np.mean([r['gap'] for r in rs]):.3f} ({np.mean([r['learn_seconds'] for r in rs]):.1f} s)"
                     if rs else "" for rs in cells_of]
            lines.append(f"| {name} | " + " | ".join(entry) + " |")
        ref = [np.mean([c["exact_gradient"] for c in rows if c["optimizer"] == o])
               for o in optimizers]
        lines.append("| exact-gradient LL | " + " | ".join(f"{v:.3f}" for v in ref) + " |")
    return "\n".join(lines)


def plot(cells, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not any(name in c["runs"] for c in cells for name in ESTIMATORS):
        return  # only the papers' settings: tables, no map
    targets = list(dict.fromkeys(c["target"] for c in cells))
    fig, axes = plt.subplots(2, len(targets), figsize=(6.5 * len(targets), 8.5), squeeze=False)
    for col, target in enumerate(targets):
        rows = [c for c in cells if c["target"] == target]
        optimizers = list(dict.fromkeys(c["optimizer"] for c in rows))
        gap = np.full((len(ESTIMATORS), len(optimizers)), np.nan)
        secs = np.full_like(gap, np.nan)
        for i, name in enumerate(ESTIMATORS):
            for j, o in enumerate(optimizers):
                rs = [c["runs"][name] for c in rows if c["optimizer"] == o and name in c["runs"]]
                if rs:
                    gap[i, j] = np.mean([r["gap"] for r in rs])
                    secs[i, j] = np.mean([r["learn_seconds"] for r in rs])
        ax = axes[0, col]
        shown = np.log10(np.clip(gap, 1e-3, None))
        image = ax.imshow(shown, cmap="viridis_r", vmin=-3, vmax=2, aspect="auto")
        for i in range(gap.shape[0]):
            for j in range(gap.shape[1]):
                if np.isfinite(gap[i, j]):
                    ax.text(j, i, f"{gap[i, j]:.3f}" if gap[i, j] < 10 else f"{gap[i, j]:.0f}",
                            ha="center", va="center", fontsize=8,
                            color="white" if shown[i, j] > -0.5 else "black")
        ax.set_xticks(range(len(optimizers)), optimizers)
        ax.set_yticks(range(len(ESTIMATORS)), ESTIMATORS)
        ax.set_title(f"{target}: gap to exact-gradient ascent (nats)")
        fig.colorbar(image, ax=ax, label="log10 gap")
        ax = axes[1, col]
        for i, name in enumerate(ESTIMATORS):
            ax.scatter(secs[i], np.clip(gap[i], 1e-3, None), label=name, s=25)
        ax.axhline(0.05, color="grey", ls="--", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("learning wall time (s, 6,000 steps)")
        ax.set_ylabel("gap (nats; 0.05 dashed)")
        ax.set_title(f"{target}: accuracy against cost, every optimizer")
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"figure saved to {path}")


def main(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / ((args.name or "estimator_map") + ("_quick" if args.quick else "")
                  + ".jsonl")
    if not args.plot:
        done = {(c["target"], c["optimizer"], c["seed"]) for c in load(path)}
        optimizers = ["sgd 0.1", "adam 0.01"] if args.quick else args.optimizers
        for seed in range(1 if args.quick else args.seeds):  # every target, then a seed more
            for target in args.targets:
                for optimizer in optimizers:
                    if (target, optimizer, seed) in done:
                        continue
                    cell = run_cell(target, optimizer, seed, 1000 if args.quick else 6000,
                                    args.estimators)
                    with path.open("a") as f:
                        f.write(json.dumps(cell) + "\n")
    cells = load(path)
    print(tables(cells))
    plot(cells, out / path.name.replace(".jsonl", ".png"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", nargs="+", default=["vbm15", "curie-weiss"],
                        choices=["vbm15", "curie-weiss"])
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS),
                        choices=ESTIMATORS + PAPER_SETTINGS + VARIANTS)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="a short check")
    parser.add_argument("--plot", action="store_true", help="only tables and figure")
    parser.add_argument("--optimizers", nargs="+", default=list(OPTIMIZERS),
                        choices=list(OPTIMIZERS))
    parser.add_argument("--name", default=None,
                        help="results file name (default estimator_map)")
    parser.add_argument("--out", default="outputs")
    main(parser.parse_args())
