"""The PSMC paper's image segmentation (Xiong et al. 2016, sec. 7.2, Fig. 7): man-made
structure detection on Kumar & Hebert's images (research use only: read from the shipped
data folder, never copied).

Each 256×384 image is a 16×24 grid of 16×16 blocks; a block's label y_v ∈ {−1, +1}
(structure or not) depends on its 3 appearance features (mean gradient magnitude, the
"spikeness" of its magnitude-weighted orientation histogram, the angle between its two
dominant orientations) and on its 4 neighbours through one shared weight (eq. 35):
``models.grid_crf`` with node features [1, x_v] and a constant edge feature. Learned
with PCD-1, PCD-H, TT, PT, SMC and PSMC from w = 0, η_t = s/(10 + 0.1 t) times the
gradient of the mean log-likelihood *per block* (the driver's per-image mean divided by
the 384 blocks: on the per-image scale the paper's rate moves w by tens per step); test
labels are the Gibbs marginals thresholded at 1/2 (``ugm.predict``, by default 4 chains
of 100 sweeps per image after 20 discarded; the paper: 100 Gibbs rounds); the result is a
confusion matrix per method. References: per-block logistic regression on the same
features (no edges) and the CRF fitted by maximum pseudo-likelihood (L-BFGS).

Scaled down for a 2-core machine (see --help): fewer particles per image and iterations
than the paper's 200 and 100.

Run: python examples/psmc_segmentation.py [--quick] [--particles S] [--steps T]
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
from numpyro_ugm.datasets import kumar_hebert
from numpyro_ugm.models import grid_edges

BLOCK, BINS = 16, 36
METHODS = ["PCD-1", "PCD-H", "TT", "PT", "SMC", "PSMC"]


def block_features(images):
    """(N, 16, 24, 3) features of each 16×16 block (see the module docstring)."""
    images = images.astype(np.float64)
    gy, gx = np.gradient(images, axis=(1, 2))
    magnitude = np.hypot(gx, gy)
    orientation = np.mod(np.arctan2(gy, gx), np.pi)  # undirected, [0, π)
    n, h, w = images.shape
    hb, wb = h // BLOCK, w // BLOCK

    def blocks(a):
        return a.reshape(n, hb, BLOCK, wb, BLOCK).transpose(0, 1, 3, 2, 4).reshape(
            n, hb, wb, BLOCK * BLOCK)

    mag, ori = blocks(magnitude), blocks(orientation)
    bins = np.minimum((ori / np.pi * BINS).astype(int), BINS - 1)
    hist = np.zeros((n, hb, wb, BINS))
    np.add.at(hist, (np.arange(n)[:, None, None, None], np.arange(hb)[None, :, None, None],
                     np.arange(wb)[None, None, :, None], bins), mag)
    hist /= hist.sum(-1, keepdims=True) + 1e-12
    top2 = np.argsort(hist, -1)[..., -2:]
    angle = np.abs(top2[..., 1] - top2[..., 0]) * (np.pi / BINS)
    angle = np.minimum(angle, np.pi - angle)
    # 1 for a flat histogram, BINS for one spike; a block without gradient counts as flat
    spikeness = np.where(hist.sum(-1) > 0, hist.max(-1) * BINS, 1.0)
    return np.stack([mag.mean(-1), spikeness, angle], -1)


def plot_examples(images, truth, predictions, path, which=(0, 5, 12)):
    """Test images with the true and some methods' predicted structure blocks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in ("logistic (no edges)", "PCD-1", "PSMC") if n in predictions]
    columns = ["truth"] + names
    fig, axes = plt.subplots(len(which), len(columns),
                             figsize=(2.0 * len(columns), 1.45 * len(which)))
    axes = np.atleast_2d(axes)
    for r, i in enumerate(which):
        for c, name in enumerate(columns):
            mask = truth[i] if name == "truth" else predictions[name][i]
            ax = axes[r, c]
            ax.imshow(images[i], cmap="gray", vmin=0, vmax=255)
            ax.imshow(np.kron(mask, np.ones((BLOCK, BLOCK))), cmap="autumn", alpha=0.35 * (
                np.kron(mask, np.ones((BLOCK, BLOCK))) > 0), vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(name, fontsize=8)
    fig.tight_layout(pad=0.2)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def confusion(truth, predicted):
    """Row-normalized 2×2 confusion matrix [[NS→NS, NS→MS], [MS→NS, MS→MS]] in %."""
    out = np.zeros((2, 2))
    for t in (0, 1):
        rows = truth == t
        out[t] = [np.mean(predicted[rows] == p) * 100 for p in (0, 1)]
    return out


def fit_reference(node_train, labels_train, edges=True, steps=200):
    """Per-block logistic regression (``edges=False``) or the CRF's maximum
    pseudo-likelihood (each block's conditional given its true neighbours), by L-BFGS."""
    h = jnp.asarray(node_train)  # (N, 16, 24, D)
    x = jnp.asarray(labels_train, jnp.float32)  # (N, 16, 24), ±1
    padded = jnp.pad(x, ((0, 0), (1, 1), (1, 1)))
    neighbours = (padded[:, :-2, 1:-1] + padded[:, 2:, 1:-1] + padded[:, 1:-1, :-2]
                  + padded[:, 1:-1, 2:])

    def loss(q):
        field = h @ q["w"] + (q["v"][0] * neighbours if edges else 0.0)
        return jnp.mean(jnp.logaddexp(0.0, -2.0 * x * field))  # −log p(x_i | rest)

    opt = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(loss)

    @jax.jit
    def step(q, state):
        value, g = value_and_grad(q, state=state)
        updates, state = opt.update(g, state, q, value=value, grad=g, value_fn=loss)
        return optax.apply_updates(q, updates), state

    q = {"w": jnp.zeros(h.shape[-1]), "v": jnp.zeros(1)}
    state = opt.init(q)
    for _ in range(steps):
        q, state = step(q, state)
    return q


def main(quick=False, seed=0, particles=20, steps=60, lr_scale=1.0, methods=None, H=None,
         predict_chains=4, predict_samples=100, predict_warmup=20, out="outputs",
         psmc_redraw="uniform-heuristic"):
    methods = METHODS if methods is None else methods
    x_train, y_train = kumar_hebert("train")
    x_test, y_test = kumar_hebert("test")
    if quick:
        x_train, y_train, x_test, y_test = x_train[:20], y_train[:20], x_test[:20], y_test[:20]
        particles, steps = 8, 15
    f_train, f_test = block_features(x_train), block_features(x_test)
    mean, std = f_train.reshape(-1, 3).mean(0), f_train.reshape(-1, 3).std(0)

    def node_features(f):
        f = (f - mean) / std
        return np.concatenate([np.ones(f.shape[:-1] + (1,)), f], -1).astype(np.float32)

    num_edges = len(grid_edges(16, 24))

    def inputs_of(f):
        return {"node_features": node_features(f),
                "edge_features": np.ones((len(f), num_edges, 1), np.float32)}

    train_inputs, test_inputs = inputs_of(f_train), inputs_of(f_test)
    data = {"x": (2 * y_train.astype(np.int8) - 1)}
    num_blocks = y_train.shape[1] * y_train.shape[2]
    schedule = lambda t: lr_scale / (10.0 + 0.1 * t) / num_blocks  # noqa: E731
    key = jax.random.PRNGKey(seed)

    def learn(estimator):
        learner = ugm.MLE(ugm.models.grid_crf, estimator, optax.sgd(schedule))
        t = time.perf_counter()
        result = learner.run(key, steps, data, inputs=train_inputs, progress_bar=False)
        jax.block_until_ready(result.params)
        seconds = time.perf_counter() - t
        print(f"{type(estimator).__name__}: {seconds:.1f} s", flush=True)
        return result, seconds

    results = {}
    if H is None or "PSMC" in methods:
        results["PSMC"] = learn(ugm.PSMC(particles, target_ess=0.9, redraw=psmc_redraw))
        measured = max(2, int(round(float(np.mean(
            results["PSMC"][0].diagnostics["num_betas"])))))
        H = measured if H is None else H
    gibbs = ugm.kernels.gibbs()
    estimators = {
        "PCD-1": lambda: ugm.PCD(particles, num_mcmc_steps=1),
        "PCD-H": lambda: ugm.PCD(particles, num_mcmc_steps=H),
        "TT": lambda: ugm.PCD(particles, num_mcmc_steps=1, kernel=ugm.kernels.tempered_transitions(
            kernel=gibbs, betas=H)),
        "PT": lambda: ugm.PCD(particles, num_mcmc_steps=1, kernel=ugm.kernels.parallel_tempering(
            kernel=gibbs, betas=H)),
        "SMC": lambda: ugm.SMC(particles, target_ess=0.9)}
    for name in methods:
        if name != "PSMC":
            results[name] = learn(estimators[name]())
    references = {
        "logistic (no edges)": fit_reference(train_inputs["node_features"], data["x"],
                                             edges=False),
        "pseudo-likelihood": fit_reference(train_inputs["node_features"], data["x"])}

    m = ugm.UGM(ugm.models.grid_crf, node_features=jnp.asarray(test_inputs["node_features"][0]),
                edge_features=jnp.asarray(test_inputs["edge_features"][0]))
    truth = y_test.astype(bool)
    rows = {}
    print(f"\nKumar-Hebert segmentation: {len(x_train)} train / {len(x_test)} test images, "
          f"{particles} particles per image, {steps} iterations, H = {H}")
    print(f"{'method':<22}{'NS->NS %':>10}{'MS->MS %':>10}{'accuracy %':>12}{'s':>8}"
          f"{'betas':>7}   w, v")
    predictions = {}
    for name in [m for m in METHODS if m in results] + list(references):
        if name in results:
            result, seconds = results[name]
            params = result.params
            betas = np.asarray(result.diagnostics.get(  # only SMC and PSMC have betas
                "num_betas", np.full(len(result.diagnostics["grad_norm"]), np.nan)), float)
            betas = float(np.nanmean(betas)) if np.isfinite(betas).any() else float("nan")
        else:
            params, seconds, betas = references[name], None, float("nan")
        prediction = ugm.predict(m, params, test_inputs, method="marginal",
                                 rng_key=jax.random.PRNGKey(seed + 1),
                                 num_chains=predict_chains, num_samples=predict_samples,
                                 num_warmup=predict_warmup)
        labels = np.asarray(prediction.labels["x"]) > 0
        predictions[name] = labels
        cm = confusion(truth, labels)
        accuracy = float(np.mean(labels == truth) * 100)
        rows[name] = {"confusion": cm.tolist(), "accuracy": accuracy, "seconds": seconds,
                      "num_betas": betas,
                      "params": {k: np.asarray(v).tolist() for k, v in params.items()}}
        timing = f"{seconds:>8.1f}" if seconds is not None else f"{'':>8}"
        weights = np.round(np.concatenate([np.asarray(params["w"]),
                                           np.asarray(params["v"])]), 3).tolist()
        print(f"{name:<22}{cm[0, 0]:>10.1f}{cm[1, 1]:>10.1f}{accuracy:>12.1f}{timing}"
              f"{betas:>7.2f}   {weights}")
    Path(out).mkdir(exist_ok=True)
    plot_examples(x_test, truth, predictions, Path(out) / "psmc_segmentation.png")
    with open(Path(out) / "psmc_segmentation.json", "w") as fh:
        json.dump({"H": H, "steps": steps, "particles": particles, "lr_scale": lr_scale,
                   "train_images": len(x_train), "test_images": len(x_test), "rows": rows},
                  fh, indent=1)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="20 train / 20 test images, 8 particles, 15 iterations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--particles", type=int, default=20,
                        help="particles per image (the paper: 200)")
    parser.add_argument("--steps", type=int, default=60, help="iterations (the paper: 100)")
    parser.add_argument("--lr-scale", type=float, default=1.0,
                        help="s in η_t = s / (10 + 0.1 t), per block")
    parser.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    parser.add_argument("--H", type=int, default=None,
                        help="sweeps / betas for PCD-H, TT, PT (default: PSMC's mean)")
    parser.add_argument("--predict-chains", type=int, default=4,
                        help="Gibbs chains per test image for the marginals")
    parser.add_argument("--predict-samples", type=int, default=100,
                        help="Gibbs sweeps averaged per chain (the paper: 100 rounds)")
    parser.add_argument("--predict-warmup", type=int, default=20)
    parser.add_argument("--psmc-redraw", choices=("uniform-heuristic", "tempered"),
                        default="uniform-heuristic",
                        help="PSMC's re-draw: the paper's (default here) or the package's "
                             "default, 'tempered'")
    args = parser.parse_args()
    main(args.quick, args.seed, args.particles, args.steps, args.lr_scale, args.methods,
         args.H, args.predict_chains, args.predict_samples, args.predict_warmup,
         psmc_redraw=args.psmc_redraw)
