"""Does the AIS bracket hold the exact value? RBMs 784×H with H = 12, 16 and 20 (the
2^H hidden configurations enumerated, the visible units summed out: exact log Z and
log-likelihoods), learned by PCD-1 on MNIST with a small and a large learning rate (the
large one gives weights of about 4-5 and a multimodal model), evaluated by
``ugm.ais`` with 100, 1,000 and 14,500 βs (Salakhutdinov & Murray's schedule, scaled)
and 100 chains:

* log Z: forward AIS (lower) and reverse AIS from 100 exact draws (upper), Grosse et al.'s
  bidirectional bracket (``ais.log_partition(..., reverse_from=draws)``);
* mean log-likelihood of the exact draws ("simulated"): forward (upper) and RAISE (lower),
  a stochastic bound on both sides;
* mean log-likelihood of 200 MNIST test images: forward (upper) and RAISE (lower): on
  data that the model did not generate RAISE bounds the annealing model's likelihood, not
  the RBM's.

Outputs: the table on stdout and ``outputs/ais_bracket.json``.
Run: ``python examples/ais_bracket.py`` (about 20 minutes on one core); ``--quick``.
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import jax
import numpy as np
import optax

import numpyro_ugm as ugm
from numpyro_ugm.datasets import binary_mnist
from numpyro_ugm.evaluate import ais, exact


def train_rbm(hidden, lr, steps, train):
    learner = ugm.MLE(ugm.models.rbm, ugm.PCD(100), optax.sgd(lr))
    return learner.run(jax.random.PRNGKey(hidden), steps, {"v": train}, 784, hidden,
                       batch_size=100, progress_bar=False).params


def main(args):
    train, test = binary_mnist("stochastic", seed=0)
    train, test = train[:5000], test[:200]
    base_data = {"v": train}
    rows = []
    for hidden in args.hidden:
        for label, lr, steps in (("lr 0.05, 300 updates", 0.05, 300),
                                 ("lr 0.5, 2000 updates", 0.5, 2000)):
            params = train_rbm(hidden, lr, steps if not args.quick else 50, train)
            m = ugm.UGM(ugm.models.rbm, 784, hidden).observe(["v"])
            base = ais.base_rate_log_probs(m, base_data)
            log_z = float(exact.log_partition(m, params))
            draws = exact.sample(m, params, jax.random.PRNGKey(1), 100)
            simulated = {"v": draws["v"]}
            truth = {"log Z": log_z,
                     "simulated": float(exact.log_likelihood(m, params, simulated)),
                     "test": float(exact.log_likelihood(m, params, {"v": test}))}
            print(f"\nRBM 784x{hidden}, {label}: max |W| "
                  f"{float(np.abs(params['W']).max()):.2f}; exact log Z {log_z:.3f}, "
                  f"log-likelihood simulated {truth['simulated']:.3f}, test "
                  f"{truth['test']:.3f}", flush=True)
            for num_betas in args.betas:
                betas = ais.default_betas(num_betas)
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    results = {
                        "log Z": ais.log_partition(m, params, jax.random.PRNGKey(2), 100,
                                                   betas, base_log_probs=base,
                                                   reverse_from=draws),
                        "simulated": ais.log_likelihood(m, params, simulated,
                                                        jax.random.PRNGKey(3), 100, betas,
                                                        base_log_probs=base, reverse=True),
                        "test": ais.log_likelihood(m, params, {"v": test},
                                                   jax.random.PRNGKey(4), 100, betas,
                                                   base_log_probs=base, reverse=True)}
                seconds = time.perf_counter() - t
                for what, r in results.items():
                    lower, upper = float(r.lower), float(r.upper)
                    lower_se, upper_se = float(r.lower_stderr), float(r.upper_stderr)
                    exact_value = truth[what]
                    row = {"hidden": hidden, "training": label, "betas": len(betas),
                           "quantity": what, "exact": exact_value,
                           "lower": lower, "lower_stderr": lower_se,
                           "upper": upper, "upper_stderr": upper_se,
                           "contains": bool(lower - 3 * lower_se <= exact_value
                                            <= upper + 3 * upper_se),
                           "seconds": seconds}
                    rows.append(row)
                    print(f"  {len(betas):6d} betas  {what:<9}  lower {lower - exact_value:+8.3f}"
                          f" ± {lower_se:.3f}  upper {upper - exact_value:+8.3f} ± {upper_se:.3f}"
                          f"  (relative to exact)  contains: {row['contains']}", flush=True)
    out = Path(args.out)
    out.mkdir(exist_ok=True)
    (out / "ais_bracket.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[12, 16, 20])
    parser.add_argument("--betas", type=int, nargs="+", default=[100, 1000, 14500])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="outputs")
    args = parser.parse_args()
    if args.quick:
        args.hidden, args.betas = [12], [100]
    main(args)
