"""Cost of a PCD-1 update with parallel tempering against plain PCD-1 on an RBM 784x500
(batch 100, 100 chains), both through numpyro_ugm's learner, timed in the same run.

Each PT update moves every replica once (one Gibbs sweep each) and attempts swaps, so its
cost should be about the number of replicas K times plain PCD-1's sampling cost (less,
since the gradient step is shared). Reported: the time ratio and ratio / K.
Run: python benchmarks/bench_pt_pcd.py [--replicas 5]
"""

import argparse

import jax
import optax
from _report import learner_step as jit_step
from _report import report
from bench_rbm_pcd import BATCH, CHAINS, H, LR, V, load_data, timeit_pair

import numpyro_ugm as ugm


def learner_step(estimator, data, key):
    learner = ugm.MLE(ugm.models.rbm, estimator, optax.sgd(LR))
    state = [learner.init(key, {"v": data}, V, H)]
    batch = learner.prepare({"v": data}).batch

    def run():
        state[0], _ = jit_step(learner, state[0], batch)
        jax.block_until_ready(state[0].params)

    return run


def main(replicas=5, repeats=20):
    data = load_data(BATCH)
    key = jax.random.PRNGKey(0)
    plain = learner_step(ugm.PCD(CHAINS, num_mcmc_steps=1), data, key)
    tempered = learner_step(ugm.PCD(CHAINS, num_mcmc_steps=1, kernel=ugm.kernels.parallel_tempering(
        betas=replicas)), data, key)
    t_plain, t_pt = timeit_pair(plain, tempered, repeats)
    ratio = t_pt / t_plain
    print(f"{'estimator':<34}{'ms / update':>14}")
    print(f"{'PCD-1 (block Gibbs)':<34}{1e3 * t_plain:>14.2f}")
    print(f"{f'PCD-1 + parallel tempering K={replicas}':<34}{1e3 * t_pt:>14.2f}")
    print(f"ratio PT / plain = {ratio:.2f} = {ratio / replicas:.2f} x K "
          f"(target: about K, i.e. ratio / K <= ~1)")
    report(f"RBM 784x500 PCD-1 + parallel tempering K={replicas}: time / (K x plain PCD-1)",
           f"{ratio / replicas:.2f}", f"{1e3 * t_pt:.1f} vs {1e3 * t_plain:.1f} ms; "
           "target <= ~1")
    return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicas", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    main(args.replicas, args.repeats)
