"""A Gaussian MRF of spatial-statistics size: the CAR model on a 100 × 100 torus (10^4
real-valued sites), sampled by block Gibbs and learned by PCD, checked against its exact
moments and exact MLE.

The model is ``ugm.models.lattice_gmrf``: precision Q = κ (I − (ρ/4) A), A the
nearest-neighbour adjacency of the torus, so x_i | rest ~ N(ρ · mean of its 4 neighbours,
1/κ). The 2-D Fourier transform diagonalizes Q (eigenvalues κ (1 − (ρ/2)(cos ω_k +
cos ω_l))), which gives the exact variance of a site and covariance of neighbours, the
exact log-likelihood, its MLE, and exact draws (white noise filtered by λ^(−1/2)).

1. **Structure.** The model declares its checkerboard colouring (``ugm.factor(...,
   colors=)``): two blocks of exact Gaussian draws. The analysis that would find it from
   the model (Hessian probes) is timed too (``--no-analysis`` skips it).
2. **Sampling.** ``ugm.sample`` with the default Gibbs kernel at the true (κ, ρ):
   the site variance and neighbour covariance (mean over sites and draws), with a Monte
   Carlo standard error from the spread of the independent chains, against the exact
   values at the true ρ and at a wrong one (which the same test must reject).
3. **Learning.** (κ, ρ) by PCD (Gibbs, 1 sweep per update) with Adam from a few exact
   draws, against the exact MLE of the same fields (and its standard error from the exact
   Fisher information) and the truth.

Run: ``python examples/gmrf_lattice.py`` (about 2 minutes on 2 CPU cores) or ``--quick``
(a 32 × 32 torus, fewer draws and steps). Writes ``outputs/gmrf_lattice.json`` and
``outputs/gmrf_lattice.png``.
"""

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

import numpyro_ugm as ugm
from numpyro_ugm.model.analysis import probe_params
from numpyro_ugm.models import (lattice_draws, lattice_gmrf, lattice_log_likelihood,
                                lattice_mle, lattice_moments)


def structure(size, analysis):
    """Seconds to trace the model with its declared colouring and, with ``analysis``,
    to find the colouring from the model instead; the numbers of blocks."""
    t = time.perf_counter()
    m = ugm.UGM(lattice_gmrf, size)
    blocks = len(m.target().blocks)
    out = {"declared_seconds": time.perf_counter() - t, "declared_blocks": blocks}
    if analysis:
        t = time.perf_counter()
        found = ugm.structure.analyze(m.target().log_potential, m.target().state_sites,
                                      lambda key, rng: probe_params(m, key, rng))
        out.update(analysis_seconds=time.perf_counter() - t,
                   analysis_blocks=len(found.blocks))
    return m, out


def moment_check(m, truth, wrong_rho, chains, samples, warmup, seed):
    """Gibbs draws at ``truth``: site variance and neighbour covariance with their Monte
    Carlo standard errors (spread of the per-chain means / √chains), and their z-scores
    against the exact values at the true ρ and at ``wrong_rho``."""
    t = time.perf_counter()
    draws = ugm.sample(m, {k: jnp.float32(v) for k, v in truth.items()},
                       jax.random.PRNGKey(seed), samples, num_chains=chains,
                       num_warmup=warmup)
    x = np.asarray(draws["x"], np.float64).reshape(chains, samples, *m.target().state_sites["x"].shape_)
    seconds = time.perf_counter() - t
    stats = {"variance": np.mean(x * x, (1, 2, 3)),
             "neighbour_covariance": np.mean(x * np.roll(x, 1, -1), (1, 2, 3))}
    size = x.shape[-1]
    exact = dict(zip(stats, lattice_moments(size, truth["kappa"], truth["rho"])))
    wrong = dict(zip(stats, lattice_moments(size, truth["kappa"], wrong_rho)))
    out = {"seconds": seconds, "chains": chains, "samples": samples, "warmup": warmup,
           "wrong_rho": wrong_rho}
    for name, per_chain in stats.items():
        estimate, se = per_chain.mean(), per_chain.std(ddof=1) / np.sqrt(chains)
        out[name] = {"estimate": estimate, "se": se, "exact": exact[name],
                     "z": (estimate - exact[name]) / se, "exact_at_wrong_rho": wrong[name],
                     "z_at_wrong_rho": (estimate - wrong[name]) / se}
    return out, x[0, -1]


def fisher_se(fields, mle, h=1e-4):
    """Standard errors of the exact MLE (κ, ρ) from the numerical Hessian of the exact
    log-likelihood of all fields."""
    n = len(fields)

    def loglik(v):
        return n * lattice_log_likelihood(fields, v[0], v[1])

    v0 = np.array([mle["kappa"], mle["rho"]])
    hess = np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            e_i, e_j = np.eye(2)[i] * h, np.eye(2)[j] * h
            hess[i, j] = (loglik(v0 + e_i + e_j) - loglik(v0 + e_i - e_j)
                          - loglik(v0 - e_i + e_j) + loglik(v0 - e_i - e_j)) / (4 * h * h)
    return dict(zip(("kappa", "rho"), np.sqrt(np.diag(np.linalg.inv(-hess)))))


def learn(fields, steps, particles, lr, seed):
    """PCD-1 (Gibbs) with Adam (rate ``lr`` cosine-decayed to 2 %); the parameters
    recorded every step; the estimate is their mean over the last 20 % of steps."""
    learner = ugm.MLE(lattice_gmrf, ugm.PCD(particles),
                      optax.adam(optax.cosine_decay_schedule(lr, steps, 0.02)))

    def record(core, state):
        return core.get_params(state)

    size = fields.shape[-1]
    t = time.perf_counter()
    result = learner.run(jax.random.PRNGKey(seed), steps, {"x": fields}, size,
                         progress_bar=False, record=record)
    jax.block_until_ready(result.params)
    seconds = time.perf_counter() - t
    trace = {k: np.asarray(result.diagnostics[k], np.float64) for k in ("kappa", "rho")}
    tail = steps - steps // 5
    estimate = {k: float(v[tail:].mean()) for k, v in trace.items()}
    return estimate, trace, seconds


def plot(path, exact_field, gibbs_field, trace, mle, truth):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
    lim = np.max(np.abs(exact_field))
    for ax, field, title in ((axes[0], exact_field, "exact draw (FFT)"),
                             (axes[1], gibbs_field, "ugm.sample (Gibbs) draw")):
        ax.imshow(field, cmap="RdBu_r", vmin=-lim, vmax=lim)
        ax.set_title(title)
        ax.set_axis_off()
    for ax, k in zip(axes[2:], ("kappa", "rho")):
        ax.plot(trace[k], label="PCD-1 (Gibbs)")
        ax.axhline(mle[k], color="k", ls="--", label="exact MLE")
        ax.axhline(truth[k], color="tab:red", ls=":", label="truth")
        ax.set_xlabel("update")
        ax.set_title(k)
        ax.legend()
    axes[3].set_ylim(0.5, 1.0)
    side = exact_field.shape[0]
    fig.suptitle(f"CAR model on a {side}x{side} torus: sampled and learned")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(size=100, kappa=1.0, rho=0.9, wrong_rho=0.89, chains=16, samples=100,
         warmup=200, num_fields=4, steps=600, particles=16, lr=0.05, analysis=True,
         seed=0, out="outputs"):
    truth = {"kappa": kappa, "rho": rho}
    report = {"settings": {"size": size, "truth": truth, "num_fields": num_fields,
                           "steps": steps, "particles": particles, "lr": lr,
                           "backend": jax.default_backend()}}
    m, report["structure"] = structure(size, analysis)
    s = report["structure"]
    print(f"{size}x{size} torus ({size * size} real sites): declared colouring "
          f"{s['declared_blocks']} blocks, traced in {s['declared_seconds']:.1f} s"
          + (f"; the analysis finds {s['analysis_blocks']} blocks in "
             f"{s['analysis_seconds']:.1f} s" if analysis else ""))

    check, gibbs_field = moment_check(m, truth, wrong_rho, chains, samples, warmup, seed)
    report["sampling"] = check
    print(f"\nugm.sample, Gibbs at kappa={kappa}, rho={rho}: {chains} chains x {samples} "
          f"draws after {warmup} sweeps ({check['seconds']:.1f} s with compilation)")
    for name in ("variance", "neighbour_covariance"):
        c = check[name]
        print(f"  {name:21s} {c['estimate']:.5f} ± {c['se']:.5f}   exact {c['exact']:.5f} "
              f"(z = {c['z']:+.2f});  exact at rho={wrong_rho}: "
              f"{c['exact_at_wrong_rho']:.5f} (z = {c['z_at_wrong_rho']:+.1f})")

    fields = lattice_draws(jax.random.PRNGKey(seed + 1), num_fields, size, kappa, rho)
    fields = np.asarray(fields, np.float32)
    mle = lattice_mle(fields)
    se = fisher_se(fields, mle)
    estimate, trace, seconds = learn(jnp.asarray(fields), steps, particles, lr, seed)
    report["learning"] = {
        "exact_mle": mle, "mle_se": se, "pcd": estimate, "seconds": seconds,
        "pcd_minus_mle_in_se": {k: (estimate[k] - mle[k]) / se[k] for k in mle},
        "mle_minus_truth_in_se": {k: (mle[k] - truth[k]) / se[k] for k in mle},
        "exact_log_likelihood_per_field": {
            "pcd": lattice_log_likelihood(fields, estimate["kappa"], estimate["rho"]),
            "mle": lattice_log_likelihood(fields, mle["kappa"], mle["rho"]),
            "truth": lattice_log_likelihood(fields, kappa, rho)}}
    r = report["learning"]
    print(f"\nlearning (kappa, rho) from {num_fields} exact draws: PCD-1, {particles} "
          f"chains, {steps} Adam steps ({seconds:.1f} s with compilation)")
    for k in ("kappa", "rho"):
        print(f"  {k:5s}  PCD {estimate[k]:.5f}   exact MLE {mle[k]:.5f} ± {se[k]:.5f}   "
              f"truth {truth[k]:.5f}   PCD - MLE = {r['pcd_minus_mle_in_se'][k]:+.2f} s.e.")
    ll = r["exact_log_likelihood_per_field"]
    print(f"  exact log-likelihood per field: PCD {ll['pcd']:.3f}, MLE {ll['mle']:.3f}, "
          f"truth {ll['truth']:.3f}")

    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    plot(path / "gmrf_lattice.png", fields[0], gibbs_field, trace, mle, truth)
    (path / "gmrf_lattice.json").write_text(json.dumps(report, indent=1, default=float))
    print(f"\nwrote {path / 'gmrf_lattice.json'} and {path / 'gmrf_lattice.png'}")
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a 32 x 32 torus, fewer draws and steps, no analysis")
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--no-analysis", action="store_true")
    parser.add_argument("--out", default="outputs")
    args = parser.parse_args()
    options = {"size": args.size, "steps": args.steps, "analysis": not args.no_analysis,
               "out": args.out}
    if args.quick:
        options.update(size=32, steps=200, samples=50, warmup=100, analysis=False)
    main(**options)
