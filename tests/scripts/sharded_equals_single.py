"""Run by tests/test_runtime_sharding.py in a fresh process with 4 host devices: every estimator
(and a CRF, and AIS) gives the same numbers with its particles split over a 4-device mesh
as on one device. Prints one line per case named on the command line (all by default):
name, max abs differences of the parameters and gradient norms, whether the particles
were split."""

import os
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=4")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

import numpyro_ugm as ugm  # noqa: E402
from numpyro_ugm.datasets import vbm_problem  # noqa: E402
from numpyro_ugm.evaluate import ais  # noqa: E402


def max_diff(a, b):
    return max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def main(names):
    assert len(jax.devices()) == 4, jax.devices()
    mesh = jax.make_mesh((4,), ("particles",))
    _, train, _ = vbm_problem(jax.random.PRNGKey(0), 8, 100, 10)
    key = jax.random.PRNGKey(1)
    estimators = {"PCD": ugm.PCD(64), "CD": ugm.CD(num_mcmc_steps=1), "PF": ugm.PF(64),
                  "MCMCMLE": ugm.MCMCMLE(64, reset_every=5), "SMC": ugm.SMC(64),
                  "PSMC": ugm.PSMC(64)}
    for name, est in estimators.items():
        if name not in names:
            continue
        one = ugm.MLE(ugm.models.vbm, est, optax.adam(0.05)).run(
            key, 15, train, 8, progress_bar=False)
        learner = ugm.MLE(ugm.models.vbm, est, optax.adam(0.05), mesh=mesh)
        many = learner.run(key, 15, train, 8, progress_bar=False)
        leaves = jax.tree.leaves(many.state.estimator_state)
        split = any(len(leaf.sharding.device_set) == 4 and not leaf.sharding.is_fully_replicated
                    for leaf in leaves) if leaves else None
        print(name, max_diff(one.params, many.params),
              max_diff(one.diagnostics["grad_norm"], many.diagnostics["grad_norm"]), split)

    if "CRF-PCD" in names:
        crf(key, mesh)
    if "AIS" in names:
        rbm_ais(key, mesh)


def crf(key, mesh):
    """A grid CRF's per-example PCD particles."""
    rng = np.random.default_rng(0)
    truth = np.where(rng.random((8, 3, 3)) < 0.5, 1, -1).astype(np.int8)
    feats = [ugm.models.image_features(y) for y in truth + rng.normal(0, 1, truth.shape)]
    inputs = {"node_features": np.stack([f[0] for f in feats]),
              "edge_features": np.stack([f[1] for f in feats])}
    runs = [ugm.MLE(ugm.models.grid_crf, ugm.PCD(8), optax.adam(0.05), mesh=m).run(
        key, 10, {"x": truth}, inputs=inputs, progress_bar=False) for m in (None, mesh)]
    print("CRF-PCD", max_diff(runs[0].params, runs[1].params), 0.0, True)


def rbm_ais(key, mesh):
    """AIS chains of a small RBM."""
    m = ugm.UGM(ugm.models.rbm, 12, 4).observe(["v"])
    params = {k: 0.5 * jax.random.normal(jax.random.PRNGKey(i), v.shape)
              for i, (k, v) in enumerate(m.init_params(key).items())}
    a = ais.log_partition(m, params, key, 64, 50)
    b = ais.log_partition(m, params, key, 64, 50, mesh=mesh)
    print("AIS", abs(float(a.log_z) - float(b.log_z)), 0.0, True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["PCD", "CD", "PF", "MCMCMLE", "SMC", "PSMC", "CRF-PCD", "AIS"])
