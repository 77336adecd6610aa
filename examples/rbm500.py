"""The large-RBM benchmark: an RBM 784×500 learned on stochastically binarized MNIST and
evaluated by the AIS bracket (forward AIS from the base rate, reverse AIS from the data:
``ugm.ais.log_likelihood(..., reverse=True)``), in runs long enough to resume.

It reproduces the lower part of the PSMC paper's Table 1 (Xiong, Szedmak & Piater 2016:
PCD-1, PT, TT, SMC and PSMC, mini-batches and particles of 200, η_t = 1/(100 + t) on the
summed gradient, 1,000 epochs of the 60,000 training images) and Salakhutdinov & Murray's
CD-1 / CD-25 rows (ICML 2008: test log-probabilities −125.53 for CD-1, −86.34 for CD-25).
Every method is one background job with its own checkpoint folder: run it again and it
continues from the newest checkpoint, so a job can be stopped at any time.

* ``--method`` CD-1, CD-25, PCD-1, PCD-H, PT, TT, SMC or PSMC; ``--settings psmc`` (the
  PSMC paper's: batch 200, 200 particles, 1/(100 + t) times the summed gradient) or
  ``--settings sm`` (Salakhutdinov & Murray's CD: batch 100, SGD 0.05 on the mean
  gradient, our choice where their text is silent);
* ``--updates``: the total to reach (the paper: 300,000); ``--segment``: updates between
  checkpoints, each followed by a quick forward AIS (``--curve-chains`` ×
  ``--curve-betas``) for the learning curve;
* ``--evaluate``: the bracket of the newest checkpoint with the literature's schedule
  (``--betas`` 14,500, ``--chains`` 100): forward AIS (an upper estimate of the log-likelihood)
  and RAISE from ``--raise-cases`` test and training images (a lower one; 0: forward
  only).

Outputs in ``outputs/rbm500/<method>/``: ``step_<n>.npz`` checkpoints, ``curve.jsonl``
(one line per segment) and ``bracket_<betas>x<chains>.json``.

Run: ``python examples/rbm500.py --method PCD-1 --updates 300000`` (in the background),
then ``python examples/rbm500.py --method PCD-1 --evaluate``; ``--quick`` for a check.
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

import numpyro_ugm as ugm
from numpyro_ugm.datasets import binary_mnist
from numpyro_ugm.evaluate import ais

NUM_VISIBLE, NUM_HIDDEN = 784, 500
#: published values: PSMC paper Table 1 (lower part, train / test) and Salakhutdinov &
#: Murray 2008 (test)
PUBLISHED = {"PCD-1": (-176.3767, -177.0584), "PCD-H": (-173.0064, -173.4998),
             "PT": (-165.2149, -166.1645), "TT": (-170.9312, -171.6008),
             "SMC": (-678.6464, -678.7835), "PSMC": (-161.6231, -162.1705),
             "CD-1": (None, -125.53), "CD-25": (None, -86.34)}
H = 200  # the PSMC paper's H for the large RBM (PCD-H, PT, TT)


def estimator(method, num_particles):
    if method.startswith("CD-"):
        return ugm.CD(num_mcmc_steps=int(method[3:]))
    if method == "PCD-1":
        return ugm.PCD(num_particles)
    if method == "PCD-H":
        return ugm.PCD(num_particles, num_mcmc_steps=H)
    if method == "PT":
        return ugm.PCD(num_particles, kernel=ugm.kernels.parallel_tempering(
            betas=np.linspace(0.0, 1.0, H)))
    if method == "TT":
        return ugm.PCD(num_particles, kernel=ugm.kernels.tempered_transitions(
            betas=np.linspace(0.9, 1.0, H)))
    if method == "SMC":
        return ugm.SMC(num_particles, target_ess=0.9)
    if method == "PSMC":
        return ugm.PSMC(num_particles, target_ess=0.9)
    raise ValueError(method)


def settings(name):
    """(batch size, particles, optimizer) of the PSMC paper or of Salakhutdinov & Murray."""
    if name == "psmc":
        return 200, 200, optax.sgd(lambda t: 200.0 / (100.0 + t))
    return 100, 100, optax.sgd(0.05)


def newest(folder):
    steps = sorted(folder.glob("step_*.npz"), key=lambda p: int(p.stem.split("_")[1]))
    return steps[-1] if steps else None


def main(args):
    folder = Path(args.out) / "rbm500" / args.method
    folder.mkdir(parents=True, exist_ok=True)
    train, test = binary_mnist("stochastic", seed=0)
    if args.quick:
        train, test = train[:2000], test[:500]
    batch_size, particles, optimizer = settings(args.settings)
    learner = ugm.MLE(ugm.models.rbm, estimator(args.method, particles), optimizer)
    data = {"v": train}
    last = newest(folder)
    if last is None:
        state = learner.init(jax.random.PRNGKey(args.seed), data, NUM_VISIBLE, NUM_HIDDEN,
                             batch_size=batch_size)
    else:
        state, _ = learner.restore(last, data, NUM_VISIBLE, NUM_HIDDEN,
                                   batch_size=batch_size)
    m = learner.ugm
    base = ais.base_rate_log_probs(m, data)
    done = int(state.step)
    print(f"RBM {NUM_VISIBLE}x{NUM_HIDDEN}, {args.method} ({args.settings} settings, "
          f"batch {batch_size}): {done} updates done" + (f", from {last.name}" if last else ""),
          flush=True)
    if args.evaluate:
        return evaluate(args, learner, state, m, base, train, test, folder)
    key = jax.random.PRNGKey(args.seed + 1)
    while done < args.updates:
        steps = min(args.segment, args.updates - done)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = learner.run(jax.random.fold_in(key, done), steps, data, NUM_VISIBLE,
                                 NUM_HIDDEN, batch_size=batch_size, init_state=state,
                                 checkpoint_every=steps, checkpoint_dir=folder,
                                 progress_bar=False)
        seconds = time.perf_counter() - t
        state, done = result.state, int(result.state.step)
        params = learner.get_params(state)
        curve = ais.log_likelihood(m, params, {"v": test[:1000]}, jax.random.PRNGKey(done),
                                   args.curve_chains, ais.default_betas(args.curve_betas),
                                   base_log_probs=base)
        line = {"update": done, "epoch": done * batch_size / len(train),
                "test_forward": float(curve.log_likelihood), "log_z_stderr": float(curve.stderr),
                "learn_seconds": seconds,
                "max_abs_W": float(jnp.max(jnp.abs(params["W"])))}
        with open(folder / "curve.jsonl", "a") as f:
            f.write(json.dumps(line) + "\n")
        print(json.dumps(line), flush=True)
        keep = newest(folder)
        for old in folder.glob("step_*.npz"):  # keep the newest checkpoint only
            if old != keep:
                old.unlink()


def evaluate(args, learner, state, m, base, train, test, folder):
    """The bracket with the literature's schedule: forward AIS (upper) and RAISE (lower)
    on test and training images."""
    params = learner.get_params(state)
    betas = ais.default_betas(args.betas)
    out = {"update": int(state.step), "chains": args.chains, "betas": len(betas)}
    for name, images in (("test", test), ("train", train)):
        t = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = ais.log_likelihood(m, params, {"v": images}, jax.random.PRNGKey(7),
                                   args.chains, betas, base_log_probs=base,
                                   reverse=args.raise_cases > 0,
                                   num_reverse=args.raise_cases or None)
        lower = (None,) * 2
        if r.lower is not None:  # the RAISE end (the ends are sorted, named by direction)
            lower = ((float(r.lower), float(r.lower_stderr)) if r.lower_from == "reverse"
                     else (float(r.upper), float(r.upper_stderr)))
        out[name] = {"upper": float(r.log_likelihood), "upper_stderr": float(r.stderr),
                     "lower": lower[0], "lower_stderr": lower[1],
                     "raise_cases": args.raise_cases, "seconds": time.perf_counter() - t,
                     "warned": bool(caught), "published": PUBLISHED[args.method][
                         0 if name == "train" else 1]}
        print(name, json.dumps(out[name]), flush=True)
    (folder / f"bracket_{len(betas)}x{args.chains}.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", required=True, choices=sorted(PUBLISHED))
    parser.add_argument("--settings", choices=("psmc", "sm"), default=None,
                        help="default: sm for CD-k, psmc for the others")
    parser.add_argument("--updates", type=int, default=300_000)
    parser.add_argument("--segment", type=int, default=3000)
    parser.add_argument("--curve-chains", type=int, default=16)
    parser.add_argument("--curve-betas", type=int, default=1000)
    parser.add_argument("--evaluate", action="store_true")
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--betas", type=int, default=14500)
    parser.add_argument("--raise-cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="outputs")
    args = parser.parse_args()
    if args.settings is None:
        args.settings = "sm" if args.method.startswith("CD-") else "psmc"
    if args.quick:
        args.updates, args.segment, args.raise_cases = min(args.updates, 40), 20, 20
        args.betas, args.curve_betas = min(args.betas, 300), min(args.curve_betas, 100)
    main(args)
