"""Showcase: a Gaussian–Bernoulli RBM on real-valued MNIST intensities, learned with PCD
and with SMC, its test log-likelihood by AIS with the reverse bracket, against Gaussian
baselines whose test log-likelihood is exact (issue 31, item 5b).

Data (the same for every model):

* MNIST grey levels dequantized, x = (pixel + u) / 256 with u ~ U[0, 1) drawn once (fixed
  seed): intensities in (0, 1) with a density (the usual way to score a continuous model
  on 8-bit images), then downscaled 2×2 (block mean) to 14×14 = 196 values so that the
  full run fits a 2-core CPU; ``--train-size`` training images (default all 60,000) and
  ``--test-size`` test images (default all 10,000);
* mapped to logit space, y = logit(λ + (1 − 2λ) x) with λ = 1e-6 (as RealNVP and MAF do):
  on the intensities themselves a pixel that is blank in every training image has the
  dequantization noise's tiny variance, and the rare test image with ink there costs
  every model ~10^5 nats, which then rules the mean test log-likelihood (``--space
  intensity`` keeps the intensities, to see it);
* **standardized** per pixel with the training images' mean m_i and standard deviation
  s_i: v_i = (y_i − m_i) / s_i. The RBM's σ is learned per pixel (``--sigma learned``,
  log σ a parameter; the default) or fixed to 1 (``--sigma fixed``, the usual recipe on
  standardized data, which cannot give any direction less variance than 1).

Model: f(v, h) = −½ Σ_i ((v_i − b_i) / σ_i)² + Σ_ij (v_i / σ_i) W_ij h_j + c·h, v real
(``ugm.Real``), h binary, W0 ~ N(0, 0.01²). The potential is quadratic in v, so v | h is
drawn exactly (Gaussian) and h is summed out of the free energy; the two layers are the
Gibbs blocks, declared.

Learning: ``ugm.MLE`` with ``ugm.PCD(100)`` (100 persistent chains, one Gibbs sweep per
update) and with ``ugm.SMC(100)`` (particles tempered afresh at each update from the
base Normal fitted to the data), minibatches of 100 images, Adam with a learning rate
decayed tenfold over the run.

Evaluation, in nats per image:

* the GB-RBMs: ``ais.log_likelihood`` (base Normal fitted to the training images, h summed
  out, the Salakhutdinov–Murray schedule shape) forward (a stochastic *upper* bound on the
  log-likelihood: a short schedule overstates it) with RAISE from ``--num-reverse`` test
  images (``reverse=True``, the lower end of the bracket where the annealing model is not
  a better model of the data than the RBM); and the bidirectional bracket of log Z from
  draws of the model (long Gibbs chains: approximate draws, so its upper end is an
  estimate);
* baselines, exact: independent Gaussian pixels (the RBM with W = 0), probabilistic PCA
  with q = 16 and 64 components (Tipping & Bishop's closed-form maximum likelihood) and
  the full-covariance Gaussian (maximum likelihood), all fitted to the same standardized
  training images.

Units: the density of the standardized values v. The density of the 14×14 intensities
x in (0, 1) is that plus the mean log-Jacobian of x → v over the test images, the same
shift for every model (printed).

Outputs: the table on stdout, ``outputs/gbrbm_mnist.json`` (settings, numbers, timings)
and the figure ``docs/images/gbrbm_mnist.png`` (training images, and draws of each
learned model: the image at E[v | h] after 1000 Gibbs sweeps from the base);
``--quick`` writes both under ``outputs/``.

Run: ``python examples/gbrbm_mnist.py`` (9 to 16 minutes on 2 shared CPU cores),
``--quick`` for a short check (under a minute; 2 under load). Results:
``benchmarks/results/gbrbm_mnist.md``.
"""

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import optax

import numpyro_ugm as ugm
from numpyro_ugm.datasets import mnist
from numpyro_ugm.evaluate import ais

SIDE = 14  # 28×28 images downscaled 2×2
D = SIDE * SIDE


def gbrbm(num_visible, num_hidden, learn_sigma=True):
    """Gaussian–Bernoulli RBM on standardized data (σ per pixel, learned or 1)."""
    W = numpyro.param("W", lambda key: 0.01 * jax.random.normal(key, (num_visible,
                                                                      num_hidden)))
    b = numpyro.param("b", jnp.zeros(num_visible))
    c = numpyro.param("c", jnp.zeros(num_hidden))
    sigma = (jnp.exp(numpyro.param("log_sigma", jnp.zeros(num_visible))) if learn_sigma
             else jnp.ones(num_visible))
    v = numpyro.sample("v", ugm.Real(num_visible))
    h = numpyro.sample("h", ugm.Binary(num_hidden))
    u = v / sigma
    ugm.factor("energy", -0.5 * jnp.sum((u - b / sigma) ** 2) + u @ W @ h + c @ h,
               colors={"v": np.zeros(num_visible, np.int64),
                       "h": np.ones(num_hidden, np.int64)}, multilinear=True)


# --- data -------------------------------------------------------------------------------

LAMBDA = 1e-6  # logit(λ + (1 − 2λ) x), as RealNVP and MAF map intensities


def load(train_size, test_size, seed):
    """Dequantized, downscaled MNIST intensities in (0, 1): (train, test), (N, 196)."""
    rng = np.random.default_rng(seed)

    def prepare(images, n):
        pick = np.sort(rng.choice(len(images), n, replace=False))
        x = (images[pick].astype(np.float32)
             + rng.uniform(size=(n, 28, 28)).astype(np.float32)) / 256.0
        return x.reshape(n, SIDE, 2, SIDE, 2).mean((2, 4)).reshape(n, D).astype(np.float64)

    return prepare(mnist("train")[0], train_size), prepare(mnist("test")[0], test_size)


def to_logit(x):
    """y = logit(λ + (1 − 2λ) x) and log |dy/dx| per image."""
    y = LAMBDA + (1 - 2 * LAMBDA) * x
    return np.log(y) - np.log1p(-y), np.sum(np.log(1 - 2 * LAMBDA) - np.log(y * (1 - y)), 1)


def from_logit(v):
    """The intensities x of logit-space values."""
    return (1.0 / (1.0 + np.exp(-v)) - LAMBDA) / (1 - 2 * LAMBDA)


# --- Gaussian baselines (exact) ---------------------------------------------------------

def gaussian_log_likelihood(x, mean, cov):
    """Mean log N(x; mean, cov) over the rows of x."""
    chol = np.linalg.cholesky(cov)
    z = np.linalg.solve(chol, (x - mean).T)
    return float(np.mean(-0.5 * np.sum(z * z, 0)) - np.sum(np.log(np.diag(chol)))
                 - 0.5 * x.shape[1] * np.log(2 * np.pi))


def ppca_cov(train, q):
    """Covariance W Wᵀ + s² I of probabilistic PCA with q components fitted by maximum
    likelihood (Tipping & Bishop 1999): the top q eigenpairs of the sample covariance,
    s² the mean of the other eigenvalues."""
    values, vectors = np.linalg.eigh(np.cov(train.T, bias=True))
    values, vectors = values[::-1], vectors[:, ::-1]
    s2 = values[q:].mean()
    top = vectors[:, :q] * np.sqrt(np.maximum(values[:q] - s2, 0.0))
    return top @ top.T + s2 * np.eye(train.shape[1])


def baselines(train, test, components=(16, 64)):
    mean = train.mean(0)
    covs = {"independent Gaussian pixels": np.diag(train.var(0)),
            **{f"probabilistic PCA, q = {q}": ppca_cov(train, q) for q in components},
            "full-covariance Gaussian": np.cov(train.T, bias=True)}
    return {name: {"train": gaussian_log_likelihood(train, mean, cov),
                   "test": gaussian_log_likelihood(test, mean, cov)}
            for name, cov in covs.items()}


# --- learning and evaluation ------------------------------------------------------------

def learn(estimator, train, hidden, learn_sigma, num_steps, lr, seed):
    """Parameters after ``num_steps`` minibatch updates, the learning time (compilation
    included) and the per-update diagnostics."""
    schedule = optax.exponential_decay(lr, transition_steps=num_steps, decay_rate=0.1)
    learner = ugm.MLE(gbrbm, estimator, optax.adam(schedule))
    t = time.perf_counter()
    result = learner.run(jax.random.PRNGKey(seed), num_steps, {"v": train}, D, hidden,
                         learn_sigma=learn_sigma, batch_size=100, progress_bar=False)
    seconds = time.perf_counter() - t
    return result.params, seconds, {k: np.asarray(v) for k, v in result.diagnostics.items()}


def model_draws(m, params, key, num, sweeps):
    """States of ``num`` Gibbs chains after ``sweeps`` sweeps from the base."""
    return ugm.sample(m, params, key, 1, num_chains=num, num_warmup=sweeps)


def evaluate(m, params, train, test, base, key, args):
    """AIS of the test log-likelihood with RAISE, and the log Z bracket from draws."""
    betas = ais.default_betas(args.betas)
    t = time.perf_counter()
    test_key, z_key, draw_key = jax.random.split(key, 3)
    ll = ais.log_likelihood(m, params, {"v": test}, test_key, args.chains, betas,
                            reverse=True, num_reverse=args.num_reverse, base_log_probs=base,
                            tolerance=np.inf)
    draws = model_draws(m, params, draw_key, args.num_reverse, args.sweeps)
    z = ais.log_partition(m, params, z_key, args.chains, betas, base_log_probs=base,
                          reverse_from=draws, tolerance=np.inf)
    train_f = float(jnp.mean(m.target().free_energies(
        params, {"v": jnp.asarray(train[:len(test)])})))
    raise_, raise_se = end_from(ll, "reverse")
    reverse, reverse_se = end_from(z, "reverse")
    return {"test": float(ll.log_likelihood), "test_se": float(ll.stderr),
            "raise": raise_, "raise_se": raise_se,
            "train": train_f - float(ll.log_z),
            "log_z": float(z.log_z), "log_z_se": float(z.stderr),
            "log_z_reverse": reverse, "log_z_reverse_se": reverse_se,
            "seconds": time.perf_counter() - t}, draws


def end_from(result, direction):
    """(estimate, standard error) of the bracket's end that came from ``direction``
    (the ends are sorted; ``lower_from``/``upper_from`` name their directions)."""
    if result.lower_from == direction:
        return float(result.lower), float(result.lower_stderr)
    return float(result.upper), float(result.upper_stderr)


def conditional_means(params, draws, learn_sigma):
    """E[v | h] = b + σ ⊙ W h for the draws' hidden states (standardized units)."""
    W, b = np.asarray(params["W"]), np.asarray(params["b"])
    sigma = np.exp(np.asarray(params["log_sigma"])) if learn_sigma else 1.0
    return b + sigma * (np.asarray(draws["h"]) @ W.T)


def plot(panels, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.6))
    for ax, (title, images) in zip(np.atleast_1d(axes), panels):
        grid = np.clip(images[:36], 0, 1).reshape(6, 6, SIDE, SIDE)
        ax.imshow(grid.transpose(0, 2, 1, 3).reshape(6 * SIDE, 6 * SIDE), cmap="gray",
                  vmin=0, vmax=1)
        ax.set_title(title, fontsize=9)
        ax.axis("off")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(args):
    t_start = time.perf_counter()
    learn_sigma = args.sigma == "learned"
    train_x, test_x = load(args.train_size, args.test_size, args.seed)
    logit = args.space == "logit"
    (train_y, _), (test_y, log_jacobian) = ((to_logit(train_x), to_logit(test_x)) if logit
                                             else ((train_x, 0), (test_x, np.zeros(1))))
    mean, scale = train_y.mean(0), train_y.std(0)
    train = ((train_y - mean) / scale).astype(np.float32)
    test = ((test_y - mean) / scale).astype(np.float32)
    shift = float(np.mean(log_jacobian) - np.sum(np.log(scale)))
    print(f"GB-RBM {D}x{args.hidden} (sigma {args.sigma}) on {len(train)} training / "
          f"{len(test)} test images (14x14, dequantized, {args.space} space, "
          f"standardized); {args.steps} updates per estimator", flush=True)

    rows = baselines(train.astype(np.float64), test.astype(np.float64))
    # v observed, h latent: h is summed out of the AIS weights (log Z too)
    m = ugm.UGM(gbrbm, D, args.hidden, learn_sigma=learn_sigma).observe(["v"])
    base = ais.base_rate_log_probs(m, {"v": train})
    estimators = {"PCD (100 chains)": ugm.PCD(100),
                  "SMC (100 particles)": ugm.SMC(100)}
    panels = [("training images", train_x)]
    key = jax.random.PRNGKey(args.seed)
    for i, (name, estimator) in enumerate(estimators.items()):
        params, seconds, diagnostics = learn(estimator, train, args.hidden, learn_sigma,
                                             args.steps, args.lr, args.seed + i)
        row, draws = evaluate(m, params, train, test, base, jax.random.fold_in(key, i),
                              args)
        row["learn_seconds"] = seconds
        if "log_z" in diagnostics:  # SMC's own estimate of log Z at its last update
            row["smc_log_z_last"] = float(diagnostics["log_z"][-1])
            row["smc_num_betas_mean"] = float(np.mean(diagnostics["num_betas"]))
        rows[f"GB-RBM, {name}"] = row
        means = conditional_means(params, draws, learn_sigma) * scale + mean
        means = from_logit(means) if logit else means
        panels.append((f"{name}: x at E[v | h]", means))
        print(f"  {name}: learned in {seconds:.0f} s, evaluated in {row['seconds']:.0f} s",
              flush=True)

    print(f"\nTest log-likelihood, nats per image of the standardized 196 values "
          f"(add {shift:.1f} for the density of the (0, 1) intensities):")
    print(f"  {'model':<38} {'train':>9} {'test':>19} {'RAISE (test)':>19}")
    for name, r in rows.items():
        if "raise" in r:
            print(f"  {name:<38} {r['train']:9.2f} {r['test']:10.2f} ± "
                  f"{r['test_se']:<6.2f} "
                  f"{r['raise']:10.2f} ± {r['raise_se']:.2f}")
        else:
            print(f"  {name:<38} {r['train']:9.2f} {r['test']:10.2f} (exact)")
    print("\nlog Z of the GB-RBMs: forward AIS | reverse AIS from model draws "
          f"({args.sweeps} Gibbs sweeps)")
    for name, r in rows.items():
        if "log_z" in r:
            extra = (f" | SMC's own, last update {r['smc_log_z_last']:.2f}"
                     if "smc_log_z_last" in r else "")
            print(f"  {name:<38} {r['log_z']:10.2f} ± {r['log_z_se']:.2f} | "
                  f"{r['log_z_reverse']:10.2f} ± {r['log_z_reverse_se']:.2f}{extra}")
    best = max((r["test"], n) for n, r in rows.items() if "raise" not in r)
    rbm = max((r["test"], n) for n, r in rows.items() if "raise" in r)
    verdict = "beats" if rbm[0] > best[0] else "does NOT beat"
    print(f"\nThe best GB-RBM ({rbm[1]}, {rbm[0]:.2f}) {verdict} the best Gaussian "
          f"baseline ({best[1]}, {best[0]:.2f}).")

    out = Path(args.out)
    figure = out / "gbrbm_mnist.png" if args.quick else Path(args.figure)
    plot(panels, figure)
    out.mkdir(parents=True, exist_ok=True)
    record = {"settings": vars(args), "intensity_shift": shift, "rows": rows,
              "total_seconds": time.perf_counter() - t_start, "figure": str(figure)}
    (out / "gbrbm_mnist.json").write_text(json.dumps(record, indent=1))
    print(f"wrote {out / 'gbrbm_mnist.json'} and {figure} "
          f"({record['total_seconds']:.0f} s in all)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a short check (< 2 min)")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--sigma", choices=("learned", "fixed"), default="learned")
    parser.add_argument("--space", choices=("logit", "intensity"), default="logit")
    parser.add_argument("--train-size", type=int, default=60000)
    parser.add_argument("--test-size", type=int, default=10000)
    parser.add_argument("--steps", type=int, default=6000, help="updates per estimator")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--chains", type=int, default=100, help="forward AIS chains")
    parser.add_argument("--betas", type=int, default=5000, help="AIS schedule length")
    parser.add_argument("--num-reverse", type=int, default=500,
                        help="RAISE chains (test images) and reverse chains (model draws)")
    parser.add_argument("--sweeps", type=int, default=1000,
                        help="Gibbs sweeps of the chains that draw from the model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="outputs")
    parser.add_argument("--figure", default="docs/images/gbrbm_mnist.png")
    args = parser.parse_args()
    if args.quick:
        args.hidden, args.train_size, args.test_size = 64, 2000, 1000
        args.steps, args.betas, args.chains, args.num_reverse = 300, 500, 50, 100
        args.sweeps = 200
    main(args)
