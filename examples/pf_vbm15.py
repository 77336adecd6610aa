"""The PF paper's VBM-15 study (Asuncion et al. 2010, sec. 4.1, Fig. 1a/1b): MCMC-MLE, PF
and PCD-1 learning a 15-spin visible Boltzmann machine, compared by exact test
log-likelihood against epochs and against wall time.

Setup (as in the paper): couplings W_ij ~ N(0, 1), no fields, 500 training and 100 test
cases drawn exactly; S = 50 particles; n = 1 Gibbs sweep; PF with ESS threshold 0.9 S and
a forced rejuvenation every 100 epochs; MCMC-MLE redrawing its sample with 10 sweeps every
100 epochs; learning rate 0.01 decayed exponentially over the run (to ``--lr-final``
times 0.01 at the last epoch), full batch (one step = one epoch); one run per initial
setting W0 ~ N(0, 1) (the paper uses 10).

Every log-likelihood is exact (enumeration of the 2^15 states). The wall time is the
learning alone (compilation, particle initialization and evaluation excluded): the curves
come from ``MLE.run`` on segments of ``--every`` epochs, continued bit-identically with
``init_state``, and each run is also timed uninterrupted (see :func:`learn_curve`).
Outputs: a table on stdout, ``outputs/pf_vbm15.png`` and ``outputs/pf_vbm15.json``.

Run: ``python examples/pf_vbm15.py`` (3000 epochs, 10 initial settings; a few minutes on
2 CPU cores), ``python examples/pf_vbm15.py --quick`` (a short check).
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

NUM_UNITS, NUM_TRAIN, NUM_TEST, NUM_PARTICLES = 15, 500, 100, 50


def estimators(pf_every=100):
    """The three learners of the paper's Fig. 1, with its settings."""
    return {
        # the settings the docs' reproduction was measured with (not the package's
        # defaults, which the docs' "Choosing an estimator" page measures)
        "MCMC-MLE": ugm.MCMCMLE(NUM_PARTICLES, num_mcmc_steps=10, reset_every=100,
                                restart_threshold=0.1, gradient_tol=0.0,
                                resample_threshold=None, check_log_z=False),
        "PF": ugm.PF(NUM_PARTICLES, resample_threshold=0.9, num_mcmc_steps=1,
                     rejuvenate_every=pf_every, adaptive=False, check_log_z=False),
        "PCD-1": ugm.PCD(NUM_PARTICLES, num_mcmc_steps=1),
    }


#: Gibbs sweeps each rejuvenation / redraw costs (PCD sweeps on every epoch)
SWEEPS = {"MCMC-MLE": 10, "PF": 1}


def initial_params(key):
    """W0 ~ N(0, 1) on the strict upper triangle (the model ignores the rest)."""
    return {"W": jnp.triu(jax.random.normal(key, (NUM_UNITS, NUM_UNITS)), 1)}


def segments(num_epochs, every):
    """Segment lengths: the first ``every`` epochs in five pieces (the curves rise
    fast there), then ``every`` at a time."""
    return [every // 5] * 5 + [every] * (num_epochs // every - 1)


def distinct_configurations(position):
    """Number of distinct particles up to the global spin flip (f(x) = f(-x) without
    fields, so x and -x always carry the same weight)."""
    x = np.asarray(position["x"])
    x = x * np.where(x[:, :1] < 0, -1, 1).astype(x.dtype)
    return len({row.tobytes() for row in x})


def learn_curve(learner, key, W0, train, num_epochs, every, evaluate):
    """One learning run in segments (see :func:`segments`), continued with
    ``init_state``; the exact train/test log-likelihood after each segment.

    Each ``MLE.run`` call costs a fixed overhead (dispatch, host transfers, about a
    millisecond here) that is comparable to a few hundred PF epochs. So the same run is
    also timed uninterrupted (bit-identical), and the learning time after each segment
    is the sum of the segment times less a per-call overhead estimated from the two:
    (sum of segment times - uninterrupted time) / number of segments.
    """
    state0 = learner.init(key, train, NUM_UNITS, fields=False, init_params=W0)
    jax.block_until_ready(state0)
    state, epochs, raw, lls, diagnostics = state0, [0], [], [evaluate(W0)], []
    for length in segments(num_epochs, every):
        t = time.perf_counter()
        result = learner.run(key, length, train, NUM_UNITS, fields=False, init_state=state,
                             progress_bar=False)
        jax.block_until_ready(result.state)
        raw.append(time.perf_counter() - t)
        state = result.state
        epochs.append(int(state.step))
        lls.append(evaluate(result.params))
        diagnostics.append(result.diagnostics)
    diagnostics = {k: np.concatenate([d[k] for d in diagnostics]) for k in diagnostics[0]}
    t = time.perf_counter()
    whole = learner.run(key, num_epochs, train, NUM_UNITS, fields=False, init_state=state0,
                        progress_bar=False)
    jax.block_until_ready(whole.state)
    uninterrupted = time.perf_counter() - t
    overhead = max(0.0, (sum(raw) - uninterrupted) / len(raw))
    seconds = np.concatenate([[0.0], np.cumsum(np.maximum(np.array(raw) - overhead, 0.0))])
    extra = {"uninterrupted_seconds": uninterrupted, "segmented_seconds": float(sum(raw)),
             "final_log_z_estimate": float(diagnostics.get("log_z", [np.nan])[-1]),
             "overhead_per_call": overhead,
             "distinct_particles": distinct_configurations(learner.particles(state))}
    return epochs, seconds.tolist(), lls, diagnostics, extra, result.params


def main(num_epochs=3000, num_seeds=10, problem_seed=0, every=50, lr=0.01, lr_final=0.1,
         out="outputs", exact_fit_steps=200, pf_every=100):
    every = 5 * max(1, round(every / 5))
    num_epochs = every * max(1, round(num_epochs / every))
    key = jax.random.PRNGKey(problem_seed)
    true_params, train, test = vbm_problem(key, NUM_UNITS, NUM_TRAIN, NUM_TEST)
    m = ugm.UGM(ugm.models.vbm, NUM_UNITS, fields=False)

    def evaluate(params):
        return (float(exact.log_likelihood(m, params, train)),
                float(exact.log_likelihood(m, params, test)))

    schedule = optax.exponential_decay(lr, transition_steps=num_epochs, decay_rate=lr_final)
    learners = {name: ugm.MLE(ugm.models.vbm, est, optax.sgd(schedule))
                for name, est in estimators(pf_every).items()}
    init_keys = [jax.random.fold_in(key, 1000 + s) for s in range(num_seeds)]

    # compile each learner's segments once, outside the timings
    for learner in learners.values():
        state = learner.init(key, train, NUM_UNITS, fields=False,
                             init_params=initial_params(init_keys[0]))
        for length in set(segments(num_epochs, every)) | {num_epochs}:
            jax.block_until_ready(learner.run(key, length, train, NUM_UNITS, fields=False,
                                              init_state=state, progress_bar=False).state)

    runs = {name: [] for name in learners}
    for s, init_key in enumerate(init_keys):
        W0 = initial_params(init_key)
        for name, learner in learners.items():
            with warnings.catch_warnings():  # collapsed-ESS warnings: counted below instead
                warnings.simplefilter("ignore", RuntimeWarning)
                epochs, seconds, lls, diag, extra, params = learn_curve(
                    learner, jax.random.fold_in(key, s), W0, train, num_epochs, every,
                    evaluate)
            # the weighted estimators' running log Z(θ) against the exact value
            extra["log_z_error"] = (extra["final_log_z_estimate"]
                                    - float(exact.log_partition(m, params)))
            runs[name].append({
                "seed": s, "epochs": epochs, "seconds": seconds,
                "train_ll": [ll[0] for ll in lls], "test_ll": [ll[1] for ll in lls],
                "rejuvenated_fraction": float(np.nanmean(diag["rejuvenated"]))
                if name in SWEEPS else 1.0,
                "mean_ess": float(np.nanmean(diag["ess"])),
                "collapsed_steps": int(np.sum(diag["ess"] < 1.5)),
                **extra,
            })
            print(f"initial setting {s}: {name:<9} test LL {lls[-1][1]:8.4f}  learning "
                  f"{extra['uninterrupted_seconds']:6.3f} s (segmented "
                  f"{extra['segmented_seconds']:6.3f} s)", flush=True)

    reference = {"true model": evaluate(true_params)}
    fit_seconds = float("nan")
    if exact_fit_steps:
        t = time.perf_counter()
        fit = ugm.fit_exact(ugm.models.vbm, train, NUM_UNITS, fields=False,
                        num_steps=exact_fit_steps)
        fit_seconds = time.perf_counter() - t
        reference[f"exact ML ({exact_fit_steps} L-BFGS steps)"] = evaluate(fit.params)

    summary = {}
    for name, rs in runs.items():
        final_train = np.array([r["train_ll"][-1] for r in rs])
        final_test = np.array([r["test_ll"][-1] for r in rs])
        secs = np.array([r["uninterrupted_seconds"] for r in rs])
        rej = np.array([r["rejuvenated_fraction"] for r in rs])
        summary[name] = {
            "train_ll_mean": float(final_train.mean()), "train_ll_std": float(final_train.std()),
            "test_ll_mean": float(final_test.mean()), "test_ll_std": float(final_test.std()),
            "seconds_mean": float(secs.mean()), "rejuvenated_fraction": float(rej.mean()),
            "sweeps_per_epoch": float(rej.mean() * SWEEPS.get(name, 1)),
            "segmented_seconds_mean": float(np.mean([r["segmented_seconds"] for r in rs])),
            "distinct_particles_mean": float(np.mean([r["distinct_particles"] for r in rs])),
            "log_z_error_mean": float(np.mean([r["log_z_error"] for r in rs])),
        }

    print(f"\nVBM-15 (PF paper sec. 4.1): {NUM_TRAIN} train / {NUM_TEST} test cases, "
          f"S = {NUM_PARTICLES}, {num_epochs} epochs, lr {lr} -> {lr * lr_final:g} "
          f"(exponential), {num_seeds} initial settings W0 ~ N(0,1)")
    print(f"{'method':<30}{'train LL':>16}{'test LL':>16}{'learn s':>9}"
          f"{'rejuv.':>8}{'sweeps/ep':>10}{'distinct':>9}{'logZ err':>9}")
    for name, row in summary.items():
        print(f"{name:<30}{row['train_ll_mean']:>9.4f} ±{row['train_ll_std']:<5.3f}"
              f"{row['test_ll_mean']:>9.4f} ±{row['test_ll_std']:<5.3f}"
              f"{row['seconds_mean']:>9.3f}{row['rejuvenated_fraction']:>8.3f}"
              f"{row['sweeps_per_epoch']:>10.3f}{row['distinct_particles_mean']:>9.1f}"
              f"{row['log_z_error_mean']:>9.2f}")
    for name, (tr, te) in reference.items():
        print(f"{name:<30}{tr:>9.4f}{'':7}{te:>9.4f}")
    print("(exact mean log-likelihood per case in nats, mean ± std over initial settings; "
          "learn s: wall time of one uninterrupted learning run, mean over initial settings; "
          "rejuv.: fraction of epochs on which PF rejuvenated / MCMC-MLE redrew (PCD sweeps "
          "on every epoch); sweeps/ep: Gibbs sweeps per epoch; distinct: distinct particles "
          f"(up to a global flip) among the {NUM_PARTICLES} at the end; logZ err: the "
          "estimator's running log Z estimate minus the exact log Z at the end)")

    Path(out).mkdir(parents=True, exist_ok=True)
    record = {
        "settings": {"num_units": NUM_UNITS, "num_train": NUM_TRAIN, "num_test": NUM_TEST,
                     "num_particles": NUM_PARTICLES, "num_epochs": num_epochs,
                     "num_seeds": num_seeds, "problem_seed": problem_seed, "every": every,
                     "lr": lr, "lr_final_fraction": lr_final,
                     "estimators": {n: repr(e) for n, e in estimators(pf_every).items()},
                     "jax_backend": jax.default_backend()},
        "reference": {n: {"train_ll": tr, "test_ll": te} for n, (tr, te) in reference.items()},
        "exact_fit_seconds": fit_seconds,
        "summary": summary, "runs": runs,
    }
    (Path(out) / "pf_vbm15.json").write_text(json.dumps(_json_safe(record), indent=1))
    print(f"results saved to {Path(out) / 'pf_vbm15.json'}")
    plot(runs, reference, Path(out) / "pf_vbm15.png", num_seeds)
    return record


def _json_safe(value):
    """NaN and infinities as null (strict JSON)."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def plot(runs, reference, path, num_seeds):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    true_test = reference["true model"][1]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    colors = {"MCMC-MLE": "tab:green", "PF": "tab:blue", "PCD-1": "tab:red"}
    late = []
    for name, rs in runs.items():
        test = np.array([r["test_ll"] for r in rs])
        mean, std = test.mean(0), test.std(0)
        epochs = np.array(rs[0]["epochs"])
        seconds = np.array([r["seconds"] for r in rs]).mean(0)
        for ax, x in ((axes[0], epochs), (axes[1], seconds)):
            ax.plot(x, mean, color=colors.get(name), label=name)
            ax.fill_between(x, mean - std, mean + std, color=colors.get(name), alpha=0.2)
        late.append(np.min(mean[epochs >= epochs[-1] / 10]))
    for ax in axes:
        ax.axhline(true_test, color="k", ls=":", label="true model")
        for name, (_, te) in reference.items():
            if name != "true model":
                ax.axhline(te, color="0.5", ls="--", label=name)
    axes[0].set_ylim(max(min(late), true_test - 3.0) - 0.2, true_test + 0.1)
    axes[0].set_xlabel("epoch")
    axes[1].set_xlabel("learning wall time (s)")
    axes[0].set_ylabel("exact test log-likelihood (nats / case)")
    axes[0].set_title(f"(a) vs epochs, mean ± std over {num_seeds} initial settings")
    axes[1].set_title("(b) vs wall time")
    axes[1].legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot saved to {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=10,
                        help="number of initial settings W0 ~ N(0,1)")
    parser.add_argument("--problem-seed", type=int, default=0,
                        help="seed of the true model and its data")
    parser.add_argument("--every", type=int, default=50,
                        help="epochs between exact evaluations")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--lr-final", type=float, default=0.1,
                        help="final learning rate as a fraction of --lr (1: constant)")
    parser.add_argument("--exact-fit-steps", type=int, default=200,
                        help="L-BFGS steps of the exact ML reference (0: skip)")
    parser.add_argument("--pf-every", type=int, default=100,
                        help="PF's forced rejuvenation interval in epochs (the paper: 100)")
    parser.add_argument("--quick", action="store_true",
                        help="a short run: 400 epochs, 2 initial settings")
    parser.add_argument("--out", default="outputs")
    args = parser.parse_args()
    if args.quick:
        args.epochs, args.seeds, args.every, args.exact_fit_steps = 400, 2, 50, 50
    main(args.epochs, args.seeds, args.problem_seed, args.every, args.lr, args.lr_final,
         args.out, args.exact_fit_steps, args.pf_every)
