"""PCD-1 update of an RBM 784x500 on one batch of 100 binarized-MNIST digits: numpyro_ugm's
learner step, a hand-written plain-JAX PCD-1 step and scikit-learn's
``BernoulliRBM.partial_fit``, timed interleaved in the same run.

How the three are matched:

* scikit-learn's ``BernoulliRBM`` is PCD-1 with as many persistent chains as its
  ``batch_size`` (it keeps ``h_samples_``, one hidden sample per chain): each
  ``partial_fit`` samples v | h for every chain, uses p(h | v) of the result as the
  negative statistics and samples the new persistent h — one Gibbs sweep per update. The
  positive phase uses p(h | v_data) (the Rao-Blackwellized gradient ours and the plain-JAX
  step use too). Its learning rate divides the summed gradient by the batch size, so
  ``learning_rate=0.01`` is plain SGD with step 0.01 on mean gradients, as ours. So:
  ``BernoulliRBM(n_components=500, batch_size=100, learning_rate=0.01)`` with 100 chains.
* Differences that remain: scikit-learn works in float64 (it converts its input) with
  numpy/BLAS, ours and plain JAX in float32 with XLA; scikit-learn's chains persist as
  hidden states, ours as visible ones; ``partial_fit`` also validates its input on every
  call (also timed: ``BernoulliRBM._fit``, the update alone, without that check).

Ratios: > 1 means the first-named is slower. Run:
``python benchmarks/bench_rbm_sklearn.py [--repeats 30]``; without scikit-learn it says so
and skips that column (``pip install -e '.[bench]'``).
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np
import optax
from _report import learner_step, report, timeit_many
from bench_rbm_pcd import BATCH, CHAINS, H, LR, V, load_data, plain_jax_pcd_step

import numpyro_ugm as ugm


def main(repeats=30, use_sklearn=True, gap=0.2):
    data = load_data(BATCH)
    key = jax.random.PRNGKey(0)
    fns = {}

    step = plain_jax_pcd_step()
    batch = jnp.asarray(data, jnp.float32)
    plain_state = [(0.01 * jax.random.normal(key, (V, H)), jnp.zeros(V), jnp.zeros(H)),
                   (jax.random.uniform(key, (CHAINS, V)) < 0.5).astype(jnp.float32)]

    def plain():
        plain_state[0], plain_state[1] = step(plain_state[0], plain_state[1], batch, key)
        jax.block_until_ready(plain_state[0])

    learner = ugm.MLE(ugm.models.rbm, ugm.PCD(CHAINS, num_mcmc_steps=1), optax.sgd(LR))
    ours_state = [learner.init(key, {"v": data}, V, H)]
    model_batch = learner.prepare({"v": data}).batch

    def ours():
        ours_state[0], _ = learner_step(learner, ours_state[0], model_batch)
        jax.block_until_ready(ours_state[0].params)

    fns["ours"], fns["plain"] = ours, plain

    try:
        if not use_sklearn:
            raise ImportError
        import sklearn
        from sklearn.neural_network import BernoulliRBM
    except ImportError:
        BernoulliRBM = None
        print("scikit-learn is not installed: skipping its column "
              "(pip install -e '.[bench]')")
    if BernoulliRBM is not None:
        x64 = np.ascontiguousarray(data, np.float64)
        rbm = BernoulliRBM(n_components=H, learning_rate=LR, batch_size=BATCH, n_iter=1,
                           random_state=0)
        rbm.partial_fit(x64)  # initializes components_ and the 100 persistent chains
        assert rbm.h_samples_.shape == (CHAINS, H)
        rng = np.random.RandomState(1)
        fns["sklearn partial_fit"] = lambda: rbm.partial_fit(x64)
        fns["sklearn _fit"] = lambda: rbm._fit(x64, rng)

    t = timeit_many(fns, repeats, warmup=2, gap=gap)
    print(f"RBM {V}x{H}, batch {BATCH}, {CHAINS} persistent chains, one PCD-1 update; "
          f"median of {repeats} interleaved, backend {jax.default_backend()}")
    print(f"{'implementation':<44}{'ms / update':>12}")
    names = {"ours": "numpyro_ugm MLE + PCD(1) (float32)",
             "plain": "plain JAX, hand-written (float32)",
             "sklearn partial_fit": "scikit-learn BernoulliRBM.partial_fit (f64)",
             "sklearn _fit": "scikit-learn BernoulliRBM._fit (f64, no check)"}
    for name, sec in t.items():
        print(f"{names[name]:<44}{1e3 * sec:>12.2f}")
    print(f"ours / plain JAX = {t['ours'] / t['plain']:.2f}")
    report("RBM 784x500 PCD-1 update: ours / plain JAX (time)",
           f"{t['ours'] / t['plain']:.2f}",
           f"{1e3 * t['ours']:.1f} vs {1e3 * t['plain']:.1f} ms, median of {repeats}")
    if BernoulliRBM is None:
        report("RBM 784x500 PCD-1 update: scikit-learn / ours (time)", "skipped",
               "scikit-learn not installed")
        return
    for name in ("sklearn partial_fit", "sklearn _fit"):
        print(f"{name} / ours = {t[name] / t['ours']:.2f}   "
              f"{name} / plain JAX = {t[name] / t['plain']:.2f}")
    report("RBM 784x500 PCD-1 update: scikit-learn partial_fit / ours (time)",
           f"{t['sklearn partial_fit'] / t['ours']:.2f}",
           f"sklearn {sklearn.__version__} float64 {1e3 * t['sklearn partial_fit']:.1f} ms "
           f"(update alone {1e3 * t['sklearn _fit']:.1f} ms); > 1: ours faster")
    report("RBM 784x500 PCD-1 update: scikit-learn partial_fit / plain JAX (time)",
           f"{t['sklearn partial_fit'] / t['plain']:.2f}", "")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--no-sklearn", action="store_true",
                        help="time ours and plain JAX only")
    parser.add_argument("--gap", type=float, default=0.2,
                        help="seconds of sleep before each timed call (lets OpenBLAS's "
                             "spinning threads stop)")
    args = parser.parse_args()
    main(args.repeats, not args.no_sklearn, args.gap)
