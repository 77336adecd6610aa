"""The PSMC paper's multi-label classification (Xiong et al. 2016, sec. 7.1, Table 2).

A pairwise CRF over the 6 labels of the scene data (Boutell et al. 2004), with
label-feature weights and an L2 penalty (a Gaussian prior: MAP), learned with PCD-1,
PCD-H, tempered transitions (TT), parallel tempering (PT), SMC and PSMC, 200 particles
per input, 100 iterations of η_t = s/(10 + 0.1 t) with s = 10 (the paper's s = 1, on the
driver's mean-over-examples gradient, moves the weights too little in 100 iterations:
F1 21% for every method). H is PSMC's mean number of β (measured first, as the paper
does). Test predictions threshold the exact label marginals (64
labelings per input, enumerated); the paper used 100 Gibbs rounds.

Run: python examples/psmc_scene.py [--quick]
"""

import argparse
import itertools
import json
import time
from pathlib import Path

import jax
import numpy as np
import optax

import numpyro_ugm as ugm
from numpyro_ugm.datasets import scene

PAPER = {"PCD-1": (57.7, 59.3, 58.5), "PCD-H": (70.3, 72.6, 71.4), "TT": (70.0, 67.5, 68.7),
         "PT": (72.2, 77.1, 74.6), "SMC": (71.7, 75.1, 73.4), "PSMC": (71.9, 78.5, 75.1)}


def exact_marginals(params, features, num_labels=6):
    """P(y_l = +1 | x) for every input, by enumerating the 2^L labelings."""
    Y = np.array(list(itertools.product([-1.0, 1.0], repeat=num_labels)))
    W_E = np.triu(np.asarray(params["W_E"], np.float64), 1)
    unary = features @ np.asarray(params["W_v"], np.float64).T + np.asarray(params["b"])
    f = np.einsum("ki,ij,kj->k", Y, W_E, Y)[None, :] + unary @ Y.T  # (N, 2^L)
    p = np.exp(f - f.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    return p @ (Y > 0)


def precision_recall_f1(truth, predicted):
    """Per-label precision and recall averaged over labels, F1 from the averages."""
    tp = (truth & predicted).sum(0)
    precision = np.mean(tp / np.maximum(predicted.sum(0), 1))
    recall = np.mean(tp / np.maximum(truth.sum(0), 1))
    return 100 * precision, 100 * recall, 100 * 2 * precision * recall / (precision + recall)


def main(quick=False, seed=0, lr_scale=10.0, particles=200, out="outputs"):
    x_train, y_train = scene("train")
    x_test, y_test = scene("test")
    steps, particles = (20, 50) if quick else (100, particles)
    if quick:
        x_train, y_train = x_train[:300], y_train[:300]
    data = {"y": (2 * y_train.astype(np.int8) - 1)}
    inputs = {"features": x_train}
    schedule = lambda t: lr_scale / (10.0 + 0.1 * t)  # noqa: E731
    key = jax.random.PRNGKey(seed)

    def learn(estimator):
        learner = ugm.MLE(ugm.models.multilabel_crf, estimator, optax.sgd(schedule))
        t = time.perf_counter()
        result = learner.run(key, steps, data, inputs=inputs, num_labels=6,
                             prior_scale=1.0, progress_bar=False)
        jax.block_until_ready(result.params)
        return result, time.perf_counter() - t

    results = {}
    psmc, seconds = learn(ugm.PSMC(particles, 0.9))
    H = max(1, int(round(float(np.nanmean(psmc.diagnostics["num_betas"])))))
    results["PSMC"] = (psmc, seconds)
    gibbs = ugm.kernels.gibbs()
    for name, estimator in [
            ("PCD-1", ugm.PCD(particles, 1)), ("PCD-H", ugm.PCD(particles, H)),
            ("TT", ugm.PCD(particles, 1, kernel=ugm.kernels.tempered_transitions(
                gibbs, betas=max(H, 2)))),
            ("PT", ugm.PCD(particles, 1, kernel=ugm.kernels.parallel_tempering(
                gibbs, betas=max(H, 2)))),
            ("SMC", ugm.SMC(particles, 0.9))]:
        results[name] = learn(estimator)

    truth = y_test.astype(bool)
    rows = {}
    print(f"\nScene multi-label CRF, {len(x_train)} train / {len(x_test)} test, "
          f"{particles} particles per input, {steps} iterations, H = {H}")
    print(f"{'method':<8}{'P %':>7}{'R %':>7}{'F1 %':>7}   {'paper P/R/F1':>18}{'s':>8}")
    for name in ["PCD-1", "PCD-H", "TT", "PT", "SMC", "PSMC"]:
        result, seconds = results[name]
        marg = exact_marginals(result.params, x_test)
        p, r, f = precision_recall_f1(truth, marg > 0.5)
        rows[name] = {"precision": p, "recall": r, "f1": f, "seconds": seconds,
                      "paper": PAPER[name],
                      "num_betas": float(np.mean(result.diagnostics["num_betas"]))}
        paper = "/".join(f"{v:.1f}" for v in PAPER[name])
        print(f"{name:<8}{p:>7.1f}{r:>7.1f}{f:>7.1f}   {paper:>18}{seconds:>8.1f}")
    Path(out).mkdir(exist_ok=True)
    with open(Path(out) / "psmc_scene.json", "w") as fh:
        json.dump({"H": H, "steps": steps, "particles": particles, "rows": rows}, fh,
                  indent=1)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr-scale", type=float, default=10.0)
    parser.add_argument("--particles", type=int, default=200)
    args = parser.parse_args()
    main(args.quick, args.seed, args.lr_scale, args.particles)
