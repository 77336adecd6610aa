"""The PSMC paper's VBM study (Xiong, Szedmak & Piater 2016, sec. 6.1, Figs. 2-4 and the
upper part of Table 1): PCD-1, PCD-H, standard SMC and persistent SMC (PSMC) learning a
small fully visible Boltzmann machine under three learning-rate schemes, with exact-gradient
maximum likelihood as the reference.

Setup (the paper's, where it says; our choice, marked *, where it does not):

* a VBM with 10 spins x in {-1, +1}^10 and parameters {W, b} (couplings and fields, the
  paper's phi(x) = {x x^T, x}); the true couplings W_ij ~ N(0, 1), no true fields (*: the
  paper's Table 1 labels the model "(15)" but its text says 10 variables twice);
  200 training cases drawn exactly (``datasets.vbm_problem``);
* full batch: the paper's mini-batches of 200 instances are the whole training set, so
  one learning step is one epoch;
* 200 particles for every method (the paper's "all 200 particles", sec. 6.2; PCD: 200
  persistent chains), one Gibbs sweep per move;
* learning rates eta_t = 1/(100+t) for 500 epochs, 1/(20+0.5t) for 100 epochs and
  1/(10+0.1t) for 40 epochs (t = 0, 1, ... the update count*), plain gradient ascent on
  the average log-likelihood (optax.sgd on its negative);
* SMC and PSMC with ESS threshold sigma* = 0.9; PSMC keeps half of its particles and
  re-draws the other half uniformly at each update;
* PCD-H with H the mean number of beta steps per update of the PSMC runs of the same
  scheme (measured first, as the paper does); PCD-1;
* 5 trials with different initial parameters W0, b0 ~ N(0, 0.1^2) (*: the paper does not
  give their distribution); the same data in every trial;
* "Avg. log-likelihood" (the paper's L(theta|D) = (1/M) sum_m log p(x_m; theta), eq. 3's
  objective) of the parameters learned at the end of the run, mean (± std) over the
  trials; the mean over the run's epochs is reported as well.

The paper's parallel tempering and tempered transition columns are not run here. Two
extra columns: PCD-10 (the paper's H, whatever H is measured here) and "PSMC keep=1"
(PSMC carrying all its particles over, without the uniform re-draws). ``--gradient sum``
ascends the gradient of the summed log-likelihood instead (eta_t times 200), another
reading of the paper's learning rates; it diverges (see benchmarks/results/psmc_vbm.md).

Every log-likelihood is exact (enumeration of the 2^10 states). Outputs: the table on
stdout, ``outputs/psmc_vbm.json`` and ``outputs/psmc_vbm.png`` (per scheme: (a) exact
log-likelihood vs epoch, mean ± std over trials; (b), (c) number of betas per iteration
of PSMC and SMC, trial 0, and their mean).

Run: ``python examples/psmc_vbm.py`` (about 15 minutes on 2 CPU cores, mostly
compilation),
``python examples/psmc_vbm.py --quick`` (a short check: a tenth of the epochs,
2 trials).
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
from numpyro_ugm.learn import NonFiniteError

NUM_UNITS, NUM_TRAIN, NUM_PARTICLES, ESS_THRESHOLD = 10, 200, 200, 0.9

#: (name, label, a, b, epochs): eta_t = 1 / (a + b t)
SCHEMES = (("small", "1/(100+t)", 100.0, 1.0, 500),
           ("intermediate", "1/(20+0.5t)", 20.0, 0.5, 100),
           ("large", "1/(10+0.1t)", 10.0, 0.1, 40))

#: the paper's methods (PT, TT not run), then two extra columns: PCD with the paper's
#: H = 10, and PSMC carrying all its particles over (no uniform re-draws)
METHODS = ("PCD-1", "PCD-H", "SMC", "PSMC", "PCD-10", "PSMC keep=1")
PAPER_H = 10

#: the paper's Table 1, upper part (VBM; PT and TT are not run here)
PAPER = {
    "small": {"PCD-1": -1.693, "PCD-H": -1.691, "PT": -1.689, "TT": -1.692,
              "SMC": -1.692, "PSMC": -1.691},
    "intermediate": {"PCD-1": -7.046, "PCD-H": -2.612, "PT": -1.995, "TT": -2.227,
                     "SMC": -2.069, "PSMC": -1.891},
    "large": {"PCD-1": -25.179, "PCD-H": -3.714, "PT": -2.118, "TT": -4.329,
              "SMC": -2.224, "PSMC": -1.976},
}


def schedule(a, b, scale=1.0):
    """eta_t = scale / (a + b t), t = the optimizer's update count (0, 1, ...).

    ``scale`` = 1 ascends the gradient of the average log-likelihood (the paper's eq. 3);
    ``scale`` = 200 (the number of cases) the gradient of the summed log-likelihood."""
    return lambda count: scale / (a + b * count)


def estimator(method, H=None, psmc_redraw="uniform-heuristic"):
    if method == "PCD-1":
        return ugm.PCD(NUM_PARTICLES, num_mcmc_steps=1)
    if method == "PCD-H":
        return ugm.PCD(NUM_PARTICLES, num_mcmc_steps=H)
    if method == "SMC":
        return ugm.SMC(NUM_PARTICLES, target_ess=ESS_THRESHOLD)
    if method == "PCD-10":
        return ugm.PCD(NUM_PARTICLES, num_mcmc_steps=PAPER_H)
    if method == "PSMC":
        return ugm.PSMC(NUM_PARTICLES, target_ess=ESS_THRESHOLD, keep_fraction=0.5,
                        redraw=psmc_redraw)  # default: the paper's re-draw
    if method == "PSMC keep=1":
        return ugm.PSMC(NUM_PARTICLES, target_ess=ESS_THRESHOLD, keep_fraction=1.0)
    raise ValueError(method)


def initial_params(key, scale=0.1):
    key_w, key_b = jax.random.split(key)
    return {"W": jnp.triu(scale * jax.random.normal(key_w, (NUM_UNITS, NUM_UNITS)), 1),
            "b": scale * jax.random.normal(key_b, (NUM_UNITS,))}


def learn_curve(learner, key, init, train, num_epochs):
    """One learning run, one epoch per ``MLE.run`` call (continued bit-identically with
    ``init_state``), so that the parameters of every epoch can be evaluated exactly.

    Returns the parameters after 0, 1, ..., num_epochs epochs (NaN after a non-finite
    step), the per-step diagnostics and the learning wall time.
    """
    state = learner.init(key, train, NUM_UNITS, init_params=init)
    jax.block_until_ready(state)
    params, diagnostics, seconds = [init], [], 0.0
    for _ in range(num_epochs):
        t = time.perf_counter()
        try:
            result = learner.run(key, 1, train, NUM_UNITS, init_state=state,
                                 progress_bar=False)
        except NonFiniteError as error:  # keep the curve: NaN from here on
            print(f"    non-finite step at epoch {error.step}: stopped there", flush=True)
            nan = jax.tree.map(lambda a: jnp.full_like(a, jnp.nan), params[-1])
            params += [nan] * (num_epochs + 1 - len(params))
            break
        jax.block_until_ready(result.state)
        seconds += time.perf_counter() - t
        state = result.state
        params.append(result.params)
        diagnostics.append(result.diagnostics)
    diagnostics = ({k: np.concatenate([d[k] for d in diagnostics]) for k in diagnostics[0]}
                   if diagnostics else {})
    return params, diagnostics, seconds


def main(num_trials=5, problem_seed=0, epoch_fraction=1.0, out="outputs",
         exact_fit_steps=300, init_scale=0.1, gradient="mean",
         psmc_redraw="uniform-heuristic"):
    t_start = time.perf_counter()
    key = jax.random.PRNGKey(problem_seed)
    true_params, train, _ = vbm_problem(key, NUM_UNITS, NUM_TRAIN, 0)
    m = ugm.UGM(ugm.models.vbm, NUM_UNITS)  # fields b included (the paper's phi(x))
    m_true = ugm.UGM(ugm.models.vbm, NUM_UNITS, fields=False)
    # vmapped, not jitted: exact.log_likelihood validates the data with numpy, which
    # fails under an outer jax.jit (TracerArrayConversionError); it jits internally
    ll_batch = jax.vmap(lambda p: exact.log_likelihood(m, p, train))

    def curve_ll(params):
        stacked = jax.tree.map(lambda *a: jnp.stack(a), *params)
        return np.asarray(ll_batch(stacked), dtype=float)

    init_keys = [jax.random.fold_in(key, 1000 + s) for s in range(num_trials)]
    inits = [initial_params(k, init_scale) for k in init_keys]
    learn_keys = [jax.random.fold_in(key, s) for s in range(num_trials)]

    reference = {"true model": float(exact.log_likelihood(m_true, true_params, train))}
    t = time.perf_counter()
    fit = ugm.fit_exact(m, train, num_steps=exact_fit_steps)
    reference[f"exact ML ({exact_fit_steps} L-BFGS steps)"] = float(fit.log_likelihood)
    fit_seconds = time.perf_counter() - t
    print(f"VBM-{NUM_UNITS}, {NUM_TRAIN} training cases: true model LL "
          f"{reference['true model']:.4f}, exact ML (L-BFGS) LL {float(fit.log_likelihood):.4f} "
          f"(grad norm {float(fit.grad_norm):.1e}, {fit_seconds:.1f} s)", flush=True)

    results = {}
    for scheme, label, a, b, full_epochs in SCHEMES:
        num_epochs = max(2, int(round(full_epochs * epoch_fraction)))
        opt = optax.sgd(schedule(a, b, NUM_TRAIN if gradient == "sum" else 1.0))
        print(f"\n== eta_t = {label}, {num_epochs} epochs ==", flush=True)
        runs = {}

        # exact-gradient ascent with the same eta_t (the paper's "ML" curves)
        lls = []
        for init in inits:
            f = ugm.fit_exact(m, train, params=init, num_steps=num_epochs, optimizer=opt, tol=0.0)
            lls.append(np.asarray(f.trace["log_likelihood"], dtype=float))
        runs["ML (exact gradient)"] = {"ll": lls, "seconds": [], "num_betas": []}

        H = None
        for method in ("PSMC", "SMC", "PSMC keep=1", "PCD-1", "PCD-H", "PCD-10"):
            # PSMC first: it gives H
            learner = ugm.MLE(ugm.models.vbm, estimator(method, H, psmc_redraw), opt)
            # compile outside the timings
            state = learner.init(learn_keys[0], train, NUM_UNITS, init_params=inits[0])
            jax.block_until_ready(learner.run(learn_keys[0], 1, train, NUM_UNITS,
                                              init_state=state, progress_bar=False).state)
            record = {"ll": [], "seconds": [], "num_betas": [], "ess": []}
            for s in range(num_trials):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    params, diag, seconds = learn_curve(learner, learn_keys[s], inits[s],
                                                        train, num_epochs)
                ll = curve_ll(params)
                record["ll"].append(ll)
                record["seconds"].append(seconds)
                if method in ("SMC", "PSMC", "PSMC keep=1"):
                    record["num_betas"].append(np.asarray(diag["num_betas"], dtype=float))
                record["ess"].append(float(np.nanmean(diag["ess"])) if diag else np.nan)
                print(f"  trial {s}: {method:<11} final LL {ll[-1]:8.4f}  mean over run "
                      f"{np.mean(ll[1:]):8.4f}  learning {seconds:6.1f} s"
                      + (f"  mean #beta {np.mean(record['num_betas'][-1]):.2f}"
                         if record["num_betas"] else ""), flush=True)
            if method == "PSMC":
                mean_betas = float(np.mean(np.concatenate(record["num_betas"])))
                H = max(1, int(round(mean_betas)))
                print(f"  PSMC mean number of beta steps per update {mean_betas:.2f}: "
                      f"H = {H}", flush=True)
            runs[method] = record
        results[scheme] = {"label": label, "num_epochs": num_epochs, "H": H, "runs": runs}

    total_seconds = time.perf_counter() - t_start
    summary = summarize(results)
    print_table(summary, results, reference, num_trials)
    print(f"total wall time {total_seconds / 60:.1f} min")

    Path(out).mkdir(parents=True, exist_ok=True)
    record = {
        "settings": {"num_units": NUM_UNITS, "num_train": NUM_TRAIN,
                     "num_particles": NUM_PARTICLES, "ess_threshold": ESS_THRESHOLD,
                     "psmc_keep_fraction": 0.5, "num_trials": num_trials,
                     "problem_seed": problem_seed, "gradient": gradient,
                     "init": f"W0, b0 ~ N(0, {init_scale}^2)",
                     "schemes": {s: {"eta": lab, "epochs": results[s]["num_epochs"]}
                                 for s, lab, *_ in SCHEMES},
                     "jax_backend": jax.default_backend()},
        "reference": reference, "exact_fit_seconds": fit_seconds,
        "total_seconds": total_seconds,
        "paper_table1": PAPER, "summary": summary,
        "curves": {s: {name: {"ll_mean": np.mean(np.array(r["ll"]), 0).tolist(),
                              "ll_std": np.std(np.array(r["ll"]), 0).tolist(),
                              "ll_per_trial": [np.asarray(x).tolist() for x in r["ll"]],
                              "num_betas_per_trial": [np.asarray(x).tolist()
                                                      for x in r["num_betas"]]}
                       for name, r in res["runs"].items()}
                   for s, res in results.items()},
    }
    (Path(out) / "psmc_vbm.json").write_text(json.dumps(_json_safe(record), indent=1))
    print(f"results saved to {Path(out) / 'psmc_vbm.json'}")
    plot(results, reference, Path(out) / "psmc_vbm.png", num_trials)
    return record


def summarize(results):
    summary = {}
    for scheme, res in results.items():
        rows = {}
        for name, r in res["runs"].items():
            ll = np.array(r["ll"])  # (trials, epochs + 1)
            final, run_mean = ll[:, -1], np.mean(ll[:, 1:], axis=1)
            row = {"final_mean": float(np.mean(final)), "final_std": float(np.std(final)),
                   "run_mean": float(np.mean(run_mean)), "run_std": float(np.std(run_mean))}
            if r["seconds"]:
                row["seconds_per_run"] = float(np.mean(r["seconds"]))
                row["ms_per_epoch"] = float(1e3 * np.mean(r["seconds"]) / res["num_epochs"])
            if r["num_betas"]:
                nb = np.concatenate(r["num_betas"])
                row["mean_num_betas"] = float(np.mean(nb))
                row["min_num_betas"], row["max_num_betas"] = float(nb.min()), float(nb.max())
            rows[name] = row
        summary[scheme] = {"label": res["label"], "num_epochs": res["num_epochs"],
                           "H": res["H"], "methods": rows}
    return summary


def print_table(summary, results, reference, num_trials):
    names = list(METHODS) + ["ML (exact gradient)"]
    short = {"ML (exact gradient)": "ML (exact grad)"}
    width = 16

    def rows(key):
        for scheme, row in summary.items():
            meth = row["methods"]
            cells = [f"{meth[n][key + '_mean']:7.3f} ±{meth[n][key + '_std']:<5.3f}"
                     for n in names]
            print(f"{row['label']:<13}{row['H']:>3}" + "".join(f"{c:>{width}}" for c in cells))
            if key == "final":
                paper = [f"{PAPER[scheme][n]:7.3f}" + " " * 7 if n in PAPER[scheme] else ""
                         for n in names]
                print(f"{'  paper':<16}" + "".join(f"{c:>{width}}" for c in paper))

    header = f"{'eta_t':<13}{'H':>3}" + "".join(f"{short.get(n, n):>{width}}" for n in names)
    print(f"\nTable 1 (upper part), VBM-{NUM_UNITS}: average exact training log-likelihood "
          f"of the final parameters, mean ± std over {num_trials} trials; the paper's value "
          "below (PT, TT not run; PCD-10 and PSMC keep=1 are extra columns)")
    print(header)
    rows("final")
    print("\nthe same, averaged over the epochs of each run instead of the final parameters")
    print(header)
    rows("run")
    print("\nnumber of beta steps per update (mean [min, max]); learning ms per epoch")
    for scheme, row in summary.items():
        meth = row["methods"]
        betas = "  ".join(f"{n} {meth[n]['mean_num_betas']:.2f} "
                          f"[{meth[n]['min_num_betas']:.0f}, {meth[n]['max_num_betas']:.0f}]"
                          for n in ("PSMC", "SMC", "PSMC keep=1"))
        times = "  ".join(f"{n} {meth[n]['ms_per_epoch']:.1f}" for n in METHODS)
        print(f"{row['label']:<13}{betas}\n{'':13}ms/epoch: {times}")
    for name, value in reference.items():
        print(f"{name}: {value:.4f}")
    print("(exact mean log-likelihood per training case in nats; H: PCD-H's number of "
          "Gibbs sweeps, the rounded mean number of beta steps of PSMC; ML (exact grad): "
          "exact-gradient ascent with the same eta_t and epochs; ms/epoch: learning wall "
          "time per epoch, one MLE.run call per epoch, exact evaluation excluded)")


def _json_safe(value):
    """NaN and infinities as null (strict JSON); numpy scalars as Python numbers."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (np.floating, np.integer)):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def plot(results, reference, path, num_trials):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    colors = {"PCD-1": "tab:red", "PCD-H": "tab:orange", "PCD-10": "tab:brown",
              "SMC": "tab:green", "PSMC": "tab:blue", "PSMC keep=1": "tab:cyan",
              "ML (exact gradient)": "k"}
    fig, axes = plt.subplots(len(results), 3, figsize=(15, 4 * len(results)),
                             gridspec_kw={"width_ratios": [2, 1, 1]}, squeeze=False)
    ml_lbfgs = [v for k, v in reference.items() if k.startswith("exact ML")][0]
    for row, (scheme, res) in zip(axes, results.items()):
        ax = row[0]
        lows = []
        for name, r in res["runs"].items():
            ll = np.array(r["ll"])
            with warnings.catch_warnings():  # all-NaN epochs after a failed run
                warnings.simplefilter("ignore", RuntimeWarning)
                mean, std = np.nanmean(ll, 0), np.nanstd(ll, 0)
            epochs = np.arange(ll.shape[1])
            label = f"PCD-H (H = {res['H']})" if name == "PCD-H" else name
            ax.plot(epochs, mean, color=colors[name], label=label,
                    ls="--" if name.startswith("ML") else "-")
            ax.fill_between(epochs, mean - std, mean + std, color=colors[name], alpha=0.15)
            lows.append(np.nanmin(mean[len(mean) // 10:]))
        ax.axhline(ml_lbfgs, color="0.5", ls=":", label="exact ML (L-BFGS)")
        ax.set_ylim(max(min(lows), ml_lbfgs - 8) - 0.3, ml_lbfgs + 0.3)
        ax.set_xlabel("epoch")
        ax.set_ylabel("exact training log-likelihood")
        ax.set_title(f"(a) eta_t = {res['label']}: mean ± std over {num_trials} trials")
        ax.legend(loc="lower right", fontsize=8)
        for ax, name, tag in ((row[1], "PSMC", "(b)"), (row[2], "SMC", "(c)")):
            nb = res["runs"][name]["num_betas"]
            if nb:
                ax.plot(np.arange(1, len(nb[0]) + 1), nb[0], color="tab:blue", lw=0.8)
                mean = float(np.mean(np.concatenate(nb)))
                ax.axhline(mean, color="tab:red", label=f"mean {mean:.2f}")
                ax.legend(loc="upper right", fontsize=8)
            ax.set_xlabel("iteration")
            ax.set_ylabel("number of beta steps")
            ax.set_title(f"{tag} {name}, trial 0")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot saved to {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=5,
                        help="learning runs per method and scheme (different initial "
                             "parameters; the paper: 5)")
    parser.add_argument("--problem-seed", type=int, default=0,
                        help="seed of the true model and its data")
    parser.add_argument("--init-scale", type=float, default=0.1,
                        help="initial W0, b0 ~ N(0, init_scale^2)")
    parser.add_argument("--exact-fit-steps", type=int, default=300,
                        help="L-BFGS steps of the exact ML reference")
    parser.add_argument("--gradient", choices=("mean", "sum"), default="mean",
                        help="ascend the gradient of the mean log-likelihood over the "
                             "batch (the paper's eq. 3; default) or of its sum (eta_t "
                             "times the number of cases)")
    parser.add_argument("--psmc-redraw", choices=("uniform-heuristic", "tempered"),
                        default="uniform-heuristic",
                        help="PSMC's re-draw: the paper's (default here) or the package's "
                             "default, 'tempered'")
    parser.add_argument("--quick", action="store_true",
                        help="a short check: a tenth of the epochs, 2 trials")
    parser.add_argument("--out", default="outputs")
    args = parser.parse_args()
    fraction = 1.0
    if args.quick:
        args.trials, fraction, args.exact_fit_steps = 2, 0.1, 50
    main(args.trials, args.problem_seed, fraction, args.out, args.exact_fit_steps,
         args.init_scale, args.gradient, args.psmc_redraw)
