"""PCD-1 update of an RBM 784x500 (batch 100, 100 chains): numpyro_ugm's learner step
against a hand-written plain-JAX PCD-1 step, timed in the same run.

Target (issue 2): ours <= 1.2x the plain-JAX time. Run: python benchmarks/bench_rbm_pcd.py
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np
import optax

from _report import learner_step, report, timeit_many

import numpyro_ugm as ugm

V, H, BATCH, CHAINS, LR = 784, 500, 100, 100, 0.01


def plain_jax_pcd_step():
    """The textbook PCD-1 step written directly in JAX (sampling h|v then v|h)."""

    def step(params, chains, batch, key):
        W, b, c = params
        k1, k2 = jax.random.split(key)
        h_data = jax.nn.sigmoid(batch @ W + c)
        h = (jax.random.uniform(k1, (CHAINS, H)) < jax.nn.sigmoid(chains @ W + c)).astype(
            jnp.float32)
        v = (jax.random.uniform(k2, (CHAINS, V)) < jax.nn.sigmoid(h @ W.T + b)).astype(
            jnp.float32)
        h_model = jax.nn.sigmoid(v @ W + c)
        gW = batch.T @ h_data / BATCH - v.T @ h_model / CHAINS
        gb = batch.mean(0) - v.mean(0)
        gc = h_data.mean(0) - h_model.mean(0)
        return (W + LR * gW, b + LR * gb, c + LR * gc), v

    return jax.jit(step)


def load_data(num):
    try:
        from numpyro_ugm.datasets import binarized_mnist
        return binarized_mnist("train")[:num]
    except Exception:  # synthetic data when the shipped set is absent
        return (np.random.default_rng(0).random((num, V)) < 0.13).astype(np.int8)


def timeit_pair(fn_a, fn_b, repeats):
    """Median seconds of each, timed interleaved so both see the same machine load."""
    t = timeit_many({"a": fn_a, "b": fn_b}, repeats)
    return t["a"], t["b"]


def main(repeats=50):
    data = load_data(BATCH)
    key = jax.random.PRNGKey(0)

    step = plain_jax_pcd_step()
    params = (0.01 * jax.random.normal(key, (V, H)), jnp.zeros(V), jnp.zeros(H))
    chains = (jax.random.uniform(key, (CHAINS, V)) < 0.5).astype(jnp.float32)
    batch = jnp.asarray(data, jnp.float32)
    state = [params, chains]

    def plain():
        state[0], state[1] = step(state[0], state[1], batch, key)
        jax.block_until_ready(state[0])

    learner = ugm.MLE(ugm.models.rbm, ugm.PCD(CHAINS, num_mcmc_steps=1), optax.sgd(LR))
    ours_state = [learner.init(key, {"v": data}, V, H)]
    model_batch = learner.prepare({"v": data}).batch

    def ours():
        ours_state[0], info = learner_step(learner, ours_state[0], model_batch)
        jax.block_until_ready(ours_state[0].params)

    t_plain, t_ours = timeit_pair(plain, ours, repeats)
    print(f"{'implementation':<28}{'ms / PCD-1 update':>20}")
    print(f"{'plain JAX (hand-written)':<28}{1e3 * t_plain:>20.2f}")
    print(f"{'numpyro_ugm MLE + PCD(1)':<28}{1e3 * t_ours:>20.2f}")
    print(f"ratio ours / plain = {t_ours / t_plain:.2f}  (target <= 1.2)")
    report("RBM 784x500 PCD-1 update: ours / plain JAX (time)", f"{t_ours / t_plain:.2f}",
           f"{1e3 * t_ours:.1f} vs {1e3 * t_plain:.1f} ms, median of {repeats}; target <= 1.2")
    return t_ours / t_plain


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=50)
    main(parser.parse_args().repeats)
