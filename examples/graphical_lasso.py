"""The graphical lasso by MAP with a stochastic negative phase (PCD, SMC), against
scikit-learn's ``GraphicalLasso`` at the same penalty, in the same run.

The model is ``ugm.models.sparse_gmrf``: f(x) = −½ xᵀ Θ x, Θ = L Lᵀ with L a Cholesky
factor (lower triangular, positive diagonal through numpyro's ``lower_cholesky``
transform), so Θ stays positive definite at every update; L carries the improper prior
``OffDiagonalLaplace`` (a Laplace density of scale 1/(N α) on each Θ_ij, i < j), so that
the MAP that the learner ascends (mean log-likelihood + log prior / N) is −½ of the
graphical lasso objective

    −log det Θ + tr(S Θ) + α Σ_{i≠j} |Θ_ij|,

S the covariance of the standardized data. The learner never evaluates log det Θ: the
negative phase E_Θ[x xᵀ] comes from PCD's persistent Gibbs chains (each unit drawn from
its exact Gaussian conditional) or from SMC (a fresh anneal from the base Normal every
update), and Adam follows the resulting stochastic (sub)gradient. Learning starts from
the model's default, Θ = I (the improper prior's start point; no ``init_params``).

Sparsity. A (sub)gradient method on |Θ_ij| never lands on exact zeros: entries whose
optimum is 0 jitter around it at the scale of the step. Θ is recorded every ``thin``
updates; over the last 10 % of the records, an entry is declared zero when its mean is
within two standard deviations of its records of zero (indistinguishable from zero at
the noise of the estimator), and the estimate is the tail mean with those entries set to
0. Both the tail mean and the thresholded estimate are scored with the objective,
evaluated exactly (float64) for every solution.

Problems: (a) synthetic, a 30-variable GMRF whose precision is a chain plus 10 random
edges (39 edges), 500 exact draws, α = 0.1: support against the truth and against
scikit-learn; (b) real, the 30 features of scikit-learn's breast-cancer data set (569
cases, bundled with scikit-learn, no download), standardized, α = 0.3: support against
scikit-learn's. scikit-learn runs both its solvers (``cd``, ``lars``).

Run: ``python examples/graphical_lasso.py`` (some 10 minutes on 2 CPU cores) or
``--quick`` (fewer updates and particles). Writes ``outputs/graphical_lasso.json`` and
``outputs/graphical_lasso.png``.
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
from numpyro_ugm.models import glasso_objective, sparse_gmrf

PROBLEMS = {"synthetic": 0.1, "breast_cancer": 0.3}  # name -> α


def synthetic(dim=30, num_examples=500, seed=0):
    """A sparse precision (unit diagonal, a chain of 0.4, ``dim // 3`` random edges of
    −0.3, shifted to a smallest eigenvalue ≥ 0.2) and exact draws from it."""
    rng = np.random.default_rng(seed)
    theta = np.eye(dim)
    chain = np.arange(dim - 1)
    theta[chain, chain + 1] = theta[chain + 1, chain] = 0.4
    for _ in range(dim // 3):
        i, j = rng.choice(dim, 2, replace=False)
        if abs(i - j) > 1:
            theta[i, j] = theta[j, i] = -0.3
    theta += max(0.0, 0.2 - np.linalg.eigvalsh(theta).min()) * np.eye(dim)
    x = rng.multivariate_normal(np.zeros(dim), np.linalg.inv(theta), size=num_examples)
    return theta, x


def load(name):
    """(data standardized per feature, the true precision or None)."""
    if name == "synthetic":
        truth, x = synthetic()
    else:
        from sklearn.datasets import load_breast_cancer

        truth, x = None, load_breast_cancer().data
    return (x - x.mean(0)) / x.std(0), truth


def support_counts(support, reference):
    """Off-diagonal pairs (i < j): both nonzero, only in ``support``, only in
    ``reference``."""
    rows, cols = np.triu_indices(len(support), 1)
    a, b = support[rows, cols], reference[rows, cols]
    return {"nonzero": int(a.sum()), "both": int(np.sum(a & b)),
            "only_here": int(np.sum(a & ~b)), "only_reference": int(np.sum(~a & b))}


def sklearn_fits(x, alpha):
    """scikit-learn's GraphicalLasso with each solver: precision, seconds, iterations
    and whether it warned that it did not converge."""
    from sklearn.covariance import GraphicalLasso

    fits = {}
    for mode in ("cd", "lars"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = time.perf_counter()
            fit = GraphicalLasso(alpha=alpha, mode=mode, max_iter=1000, tol=1e-5).fit(x)
            seconds = time.perf_counter() - t
        fits[mode] = {"precision": fit.precision_, "seconds": seconds,
                      "iterations": int(fit.n_iter_),
                      "converged": not any("converge" in str(w.message) for w in caught)}
    return fits


def estimator_fit(name, x, alpha, steps, particles, lr, thin, seed):
    """MAP of ``sparse_gmrf`` with the estimator ``name`` (``pcd``, ``smc``): the
    recorded Θ (every ``thin`` updates), the tail mean, the thresholded estimate and the
    seconds of the run (compilation included)."""
    num_examples, dim = x.shape
    estimator = {"pcd": ugm.PCD(particles), "smc": ugm.SMC(particles)}[name]
    learner = ugm.MLE(sparse_gmrf, estimator,
                      optax.adam(optax.cosine_decay_schedule(lr, steps, 0.02)))

    def record(core, state):
        chol = core.get_params(state)["L"]
        return {"theta": chol @ chol.T}

    data = {"x": jnp.asarray(x, jnp.float32)}
    t = time.perf_counter()
    result = learner.run(jax.random.PRNGKey(seed), steps, data, dim, alpha, num_examples,
                         progress_bar=False, thinning=thin, record=record)
    trace = np.asarray(jax.block_until_ready(result.diagnostics["theta"]), np.float64)
    seconds = time.perf_counter() - t
    per_update = seconds_per_update(learner, result.state, data)
    tail = trace[-max(2, len(trace) // 10):]
    mean, sd = tail.mean(0), tail.std(0)
    keep = np.abs(mean) > 2.0 * sd
    np.fill_diagonal(keep, True)
    return {"trace": trace, "mean": mean, "thresholded": np.where(keep, mean, 0.0),
            "support": keep, "seconds": seconds, "seconds_per_update": per_update}


def seconds_per_update(learner, state, data, repeats=10):
    """Median seconds of one jitted update (``learner.core.update``) on the full data,
    compilation excluded: the run's cost per update without its one-time costs."""
    step = jax.jit(learner.core.update)
    batch = learner.prepare(data).batch
    state = jax.block_until_ready(step(state, batch))[0]  # compiles
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        state = jax.block_until_ready(step(state, batch))[0]
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def run_problem(name, alpha, steps, particles, lr, thin, seed):
    x, truth = load(name)
    S = x.T @ x / len(x)
    objective = lambda theta: glasso_objective(theta, S, alpha)  # noqa: E731
    rows, fits = {}, {}
    for mode, fit in sklearn_fits(x, alpha).items():
        rows[f"sklearn {mode}"] = {"objective": objective(fit["precision"]),
                                   "support": fit["precision"] != 0,
                                   "seconds": fit["seconds"],
                                   "note": f"{fit['iterations']} iterations"
                                   + ("" if fit["converged"] else ", not converged")}
        fits[f"sklearn {mode}"] = fit["precision"]
    best = min((r["objective"], k) for k, r in rows.items())[1]
    for est in ("pcd", "smc"):
        fit = estimator_fit(est, x, alpha, steps, particles, lr, thin, seed)
        label = f"{est.upper()} ({particles})"
        learning = steps * fit["seconds_per_update"]
        rows[label] = {"objective": objective(fit["thresholded"]),
                       "objective_tail_mean": objective(fit["mean"]),
                       "support": fit["support"], "seconds": learning,
                       "seconds_with_compilation": fit["seconds"],
                       "note": f"{steps} updates x {1e3 * fit['seconds_per_update']:.1f} ms; "
                               f"{fit['seconds']:.1f} s with compilation",
                       "objective_trace": [objective(t) for t in fit["trace"]]}
        fits[label] = fit["thresholded"]
    reference = rows[best]["support"]
    for r in rows.values():
        r["gap_to_best_sklearn"] = r["objective"] - rows[best]["objective"]
        r["vs_sklearn"] = support_counts(r["support"], reference)
        if truth is not None:
            r["vs_truth"] = support_counts(r["support"], truth != 0)
    return {"alpha": alpha, "shape": list(x.shape), "best_sklearn": best, "rows": rows,
            "truth_edges": None if truth is None else int(np.sum(np.triu(truth, 1) != 0)),
            "truth": truth, "fits": fits}


def print_table(name, result):
    n, d = result["shape"]
    print(f"\n{name}: {n} cases x {d} variables, alpha = {result['alpha']}"
          + (f", {result['truth_edges']} true edges" if result["truth_edges"] else ""))
    print(f"  {'method':13s} {'objective':>10s} {'gap':>9s} {'raw gap':>9s} {'nonzero':>7s} "
          f"{'both/only/sk':>13s} {'TP/FP/FN':>9s} {'seconds':>8s}  note")
    best = result["rows"][result["best_sklearn"]]["objective"]
    for label, r in result["rows"].items():
        s, t = r["vs_sklearn"], r.get("vs_truth")
        truth = f"{t['both']}/{t['only_here']}/{t['only_reference']}" if t else "-"
        raw = (f"{r['objective_tail_mean'] - best:+9.5f}" if "objective_tail_mean" in r
               else f"{'':9s}")
        print(f"  {label:13s} {r['objective']:10.5f} {r['gap_to_best_sklearn']:+9.5f} {raw} "
              f"{s['nonzero']:7d} {s['both']:>7d}/{s['only_here']}/{s['only_reference']:<3d}"
              f" {truth:>9s} {r['seconds']:8.2f}  {r['note']}")


def plot(path, results):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 5, figsize=(19, 3.8 * len(results)))
    for row, (name, result) in zip(np.atleast_2d(axes), results.items()):
        panels = [("truth", result["truth"])] if result["truth"] is not None else [
            (None, None)]
        panels += [(label, theta) for label, theta in result["fits"].items()
                   if label != ("sklearn cd" if result["best_sklearn"] == "sklearn lars"
                                else "sklearn lars")]
        for ax, (label, theta) in zip(row[:4], panels):
            if theta is None:
                ax.set_axis_off()
                continue
            shown = np.where(np.eye(len(theta), dtype=bool), np.nan, theta)
            lim = np.nanmax(np.abs(shown))
            ax.imshow(shown, cmap="RdBu_r", vmin=-lim, vmax=lim)
            nz = int(np.sum(np.triu(theta, 1) != 0))
            ax.set_title(f"{name}: {label} ({nz} edges)")
            ax.set_xticks([])
            ax.set_yticks([])
        best = result["rows"][result["best_sklearn"]]["objective"]
        for label, r in result["rows"].items():
            if "objective_trace" in r:
                trace = np.asarray(r["objective_trace"]) - best
                steps = np.linspace(0, 1, len(trace) + 1)[1:]
                row[4].plot(steps, np.maximum(trace, 1e-6), label=label)
        row[4].set_yscale("log")
        row[4].set_xlabel("fraction of the updates")
        row[4].set_title(f"objective − {result['best_sklearn']}'s (raw iterates)")
        row[4].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(steps=1000, particles=200, lr=0.02, thin=10, seed=0, out="outputs"):
    results = {name: run_problem(name, alpha, steps, particles, lr, thin, seed)
               for name, alpha in PROBLEMS.items()}
    print("\nobjective: -log det + tr(S Theta) + alpha * sum_{i!=j} |Theta_ij| (exact, float64)"
          " of the estimate (the estimators': thresholded tail means); gap: to the best "
          "scikit-learn solver's; raw gap: of the tail mean before thresholding; "
          "both/only/sk: off-diagonal pairs nonzero in both, only here, only in that "
          "solver's; TP/FP/FN: against the true edges; seconds: learning, compilation "
          "excluded (see note)")
    for name, result in results.items():
        print_table(name, result)
    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    plot(path / "graphical_lasso.png", results)
    report = {name: {**{k: v for k, v in r.items() if k not in ("fits", "truth")},
                     "rows": {label: {k: v for k, v in row.items() if k != "support"}
                              for label, row in r["rows"].items()}}
              for name, r in results.items()}
    report["settings"] = {"steps": steps, "particles": particles, "lr": lr, "thin": thin,
                          "seed": seed, "backend": jax.default_backend()}
    (path / "graphical_lasso.json").write_text(json.dumps(report, indent=1, default=float))
    print(f"\nwrote {path / 'graphical_lasso.json'} and {path / 'graphical_lasso.png'}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 updates, 50 particles")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--particles", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--out", default="outputs")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.particles = 200, 50
    main(steps=args.steps, particles=args.particles, lr=args.lr, out=args.out)
