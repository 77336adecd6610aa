"""The PSMC paper's image segmentation (Xiong et al. 2016, sec. 7.2, Fig. 7): man-made
structure detection on Kumar & Hebert's images (research use only: read from the shipped
data folder, never copied).

Each 256×384 image is a 16×24 grid of 16×16 blocks; a block's label y_v ∈ {−1, +1}
(structure or not) depends on its 3 appearance features (mean gradient magnitude, the
"spikeness" of its magnitude-weighted orientation histogram, the angle between its two
dominant orientations) and on its 4 neighbours through one shared weight (eq. 35):
``models.grid_crf`` with node features [1, x_v] and a constant edge feature. Learned
with PCD-1, PCD-H, TT, PT, SMC and PSMC; test labels are the Gibbs marginals thresholded
at 1/2 (``ugm.predict``); the result is a confusion matrix per method.

Scaled down for a 2-core machine (see --help): fewer particles per image and iterations
than the paper's 200 and 100.

Run: python examples/psmc_segmentation.py [--quick]
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
    spikeness = hist.max(-1) * BINS  # 1 for a flat histogram, BINS for one spike
    return np.stack([mag.mean(-1), spikeness, angle], -1)


def confusion(truth, predicted):
    """Row-normalized 2×2 confusion matrix [[NS→NS, NS→MS], [MS→NS, MS→MS]] in %."""
    out = np.zeros((2, 2))
    for t in (0, 1):
        rows = truth == t
        out[t] = [np.mean(predicted[rows] == p) * 100 for p in (0, 1)]
    return out


def main(quick=False, seed=0, particles=20, steps=60, out="outputs"):
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
    schedule = lambda t: 1.0 / (10.0 + 0.1 * t)  # noqa: E731
    key = jax.random.PRNGKey(seed)

    def learn(estimator):
        learner = ugm.MLE(ugm.models.grid_crf, estimator, optax.sgd(schedule))
        t = time.perf_counter()
        result = learner.run(key, steps, data, inputs=train_inputs, progress_bar=False)
        jax.block_until_ready(result.params)
        return result, time.perf_counter() - t

    results = {"PSMC": learn(ugm.PSMC(particles, 0.9))}
    H = max(2, int(round(float(np.mean(results["PSMC"][0].diagnostics["num_betas"])))))
    gibbs = ugm.kernels.gibbs()
    for name, estimator in [
            ("PCD-1", ugm.PCD(particles, 1)), ("PCD-H", ugm.PCD(particles, H)),
            ("TT", ugm.PCD(particles, 1, kernel=ugm.kernels.tempered_transitions(
                gibbs, betas=H))),
            ("PT", ugm.PCD(particles, 1, kernel=ugm.kernels.parallel_tempering(
                gibbs, betas=H))),
            ("SMC", ugm.SMC(particles, 0.9))]:
        results[name] = learn(estimator)

    m = ugm.UGM(ugm.models.grid_crf, node_features=jnp.asarray(test_inputs["node_features"][0]),
                edge_features=jnp.asarray(test_inputs["edge_features"][0]))
    truth = y_test.astype(bool)
    rows = {}
    print(f"\nKumar-Hebert segmentation: {len(x_train)} train / {len(x_test)} test images, "
          f"{particles} particles per image, {steps} iterations, H = {H}")
    print(f"{'method':<8}{'NS->NS %':>10}{'MS->MS %':>10}{'accuracy %':>12}{'s':>8}")
    for name in ["PCD-1", "PCD-H", "TT", "PT", "SMC", "PSMC"]:
        result, seconds = results[name]
        prediction = ugm.predict(m, result.params, test_inputs, method="marginal",
                                 rng_key=jax.random.PRNGKey(seed + 1))
        labels = np.asarray(prediction.labels["x"]) > 0
        cm = confusion(truth, labels)
        accuracy = float(np.mean(labels == truth) * 100)
        rows[name] = {"confusion": cm.tolist(), "accuracy": accuracy, "seconds": seconds,
                      "params": {k: np.asarray(v).tolist() for k, v in result.params.items()}}
        print(f"{name:<8}{cm[0, 0]:>10.1f}{cm[1, 1]:>10.1f}{accuracy:>12.1f}{seconds:>8.1f}")
    Path(out).mkdir(exist_ok=True)
    with open(Path(out) / "psmc_segmentation.json", "w") as fh:
        json.dump({"H": H, "steps": steps, "particles": particles, "rows": rows}, fh, indent=1)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--particles", type=int, default=20,
                        help="particles per image (the paper: 200)")
    parser.add_argument("--steps", type=int, default=60, help="iterations (the paper: 100)")
    args = parser.parse_args()
    main(args.quick, args.seed, args.particles, args.steps)
