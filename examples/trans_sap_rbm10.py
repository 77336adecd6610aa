"""The Trans-SAP paper's toy RBM (Salakhutdinov 2009, sec. 4.1, Fig. 1 top): an RBM with
784 visible and 10 hidden units learned on MNIST by the stochastic approximation
procedure (SAP = PCD-1) and by Trans-SAP (SAP whose chains get one tempered-transitions
run every 200 Gibbs updates), compared by the exact training log-likelihood (the 2^10
hidden configurations enumerated) against the number of Gibbs steps, beside exact
maximum likelihood with the same learning-rate schedule.

The paper's setup, followed here:

* MNIST stochastically binarized (each pixel 1 with probability intensity / 255), a
  random 10,000 of the 60,000 training images set aside: 50,000 for training;
* mini-batches of 100 images, 100 persistent chains, one Gibbs sweep per update;
* 100,000 updates; learning rate 0.01 for the first 10,000, then 10 / (1000 + t) (we
  count t from the start of the annealing, so that the rate is continuous; the text
  does not say);
* Trans-SAP: tempered transitions only during the last 50,000 Gibbs steps, alternating
  200 Gibbs updates with one run of 50 β spaced uniformly in [0.9, 1]; methods compared
  at equal numbers of Gibbs steps, a run counting 2 × 49 = 98 (parameters are updated
  after each Gibbs update, and once after each run); both methods share the first
  50,000 updates (same random numbers);
* exact ML: the same schedule and mini-batches, the negative phase computed exactly.

Ours (*): W0 ~ N(0, 0.01²), b0 = c0 = 0; plain SGD on the gradient of the batch-mean
log-likelihood; one seed (``--seeds``).

Ours (*) also: the paper does not say whether its rates multiply the gradient of the
batch's mean or summed log-likelihood: ``--gradient mean`` (default) or ``sum`` (100×
larger steps); see benchmarks/results/trans_sap_rbm10.md for both.

Outputs: a table on stdout, ``outputs/trans_sap_rbm10_<gradient>.json`` (curves, TT
acceptance, timings) and ``outputs/trans_sap_rbm10_<gradient>.png`` (training
log-likelihood against Gibbs steps, as the paper's Fig. 1 top).

Run: ``python examples/trans_sap_rbm10.py`` (14-18 minutes on a shared 2-core CPU, most
of it exact ML and the exact evaluations); ``--quick`` for a 10,000-update check (3 min).
"""

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm.auto import tqdm

import numpyro_ugm as ugm
from numpyro_ugm.datasets import binary_mnist
from numpyro_ugm.evaluate import exact

NUM_VISIBLE, NUM_HIDDEN = 784, 10


def schedule(constant_steps, rate=0.01, scale=10.0, offset=1000.0):
    """0.01 for ``constant_steps`` updates, then 10 / (1000 + t), t counted from there."""
    return optax.join_schedules(
        [optax.constant_schedule(rate), lambda t: scale / (offset + t)], [constant_steps])


def rbm_log_z(params):
    """log Z of the binary RBM in closed form: the visible units summed out analytically,
    the 2^10 hidden configurations enumerated (the exact-ML reference's negative phase;
    checked against ``exact.log_partition`` at start)."""
    h = ((jnp.arange(2 ** NUM_HIDDEN)[:, None] >> jnp.arange(NUM_HIDDEN)) & 1).astype(
        params["W"].dtype)
    return jax.nn.logsumexp(h @ params["c"] + jnp.sum(
        jax.nn.softplus(params["b"] + h @ params["W"].T), axis=1))


def rbm_free_energy(params, v):
    """log Σ_h exp f(v, h) for a batch of visible vectors."""
    return v @ params["b"] + jnp.sum(jax.nn.softplus(params["c"] + v @ params["W"]), -1)


class Evaluator:
    """Exact mean log-likelihood per image on the training and test sets."""

    def __init__(self, m, train, test):
        self.m, self.train, self.test = m, {"v": train}, {"v": test}

    def __call__(self, params):
        return (float(exact.log_likelihood(self.m, params, self.train)),
                float(exact.log_likelihood(self.m, params, self.test)))


def exact_ml(params, optimizer, train, num_updates, batch_size, eval_every, evaluate, seed,
             bar):
    """SGD with the exact gradient on the same kind of mini-batches (a fresh permutation
    per epoch); evaluated every ``eval_every`` updates."""
    grad = jax.grad(lambda p, v: rbm_log_z(p) - jnp.mean(rbm_free_energy(p, v)))

    @jax.jit
    def segment(params, opt_state, batches):
        def body(carry, v):
            p, s = carry
            updates, s = optimizer.update(grad(p, v), s, p)
            return (optax.apply_updates(p, updates), s), None
        return jax.lax.scan(body, (params, opt_state), batches)[0]

    rng = np.random.default_rng(seed)
    per_epoch = len(train) // batch_size
    order = np.concatenate([rng.permutation(len(train))[:per_epoch * batch_size]
                            for _ in range(-(-num_updates // per_epoch))])
    opt_state, curve, start = optimizer.init(params), [(0, *evaluate(params))], time.perf_counter()
    learn_seconds = 0.0
    for done in range(0, num_updates, eval_every):
        n = min(eval_every, num_updates - done)
        idx = order[done * batch_size:(done + n) * batch_size].reshape(n, batch_size)
        t = time.perf_counter()
        params, opt_state = segment(params, opt_state, jnp.asarray(train[idx], jnp.float32))
        jax.block_until_ready(params)
        learn_seconds += time.perf_counter() - t
        curve.append((done + n, *evaluate(params)))
        bar.update(n)
    return params, curve, learn_seconds, time.perf_counter() - start


def run_segments(learner, state, data, num_updates, segment, gibbs_per_update, evaluate,
                 curve, gibbs_start, bar):
    """Continue ``state`` for ``num_updates`` updates in segments of ``segment``, evaluating
    after each; ``gibbs_per_update`` converts updates to Gibbs steps for the curve."""
    diagnostics, seconds = [], 0.0
    for done in range(0, num_updates, segment):
        n = min(segment, num_updates - done)
        t = time.perf_counter()
        result = learner.run(None, n, data, NUM_VISIBLE, NUM_HIDDEN, batch_size=100,
                             init_state=state, progress_bar=False)
        jax.block_until_ready(result.state.params)
        seconds += time.perf_counter() - t
        state = result.state
        diagnostics.append(result.diagnostics)
        curve.append((gibbs_start + round((done + n) * gibbs_per_update),
                      *evaluate(result.params)))
        bar.update(curve[-1][0] - curve[-2][0])
    merged = {k: np.concatenate([d[k] for d in diagnostics]) for k in diagnostics[0]}
    return state, merged, seconds


def one_seed(args, seed, train, test):
    m = ugm.UGM(ugm.models.rbm, NUM_VISIBLE, NUM_HIDDEN).observe(["v"])
    evaluate = Evaluator(m, train, test)
    data = {"v": train}
    factor = 100.0 if args.gradient == "sum" else 1.0  # the batch size
    optimizer = optax.sgd(schedule(args.constant, rate=0.01 * factor, scale=10.0 * factor))
    tt_every, num_betas = args.tt_every, args.tt_betas
    tt_sweeps = 2 * (num_betas - 1)
    kernels = {"SAP": None,
               "Trans-SAP": ugm.kernels.tempered_transitions(
                   betas=np.linspace(0.9, 1.0, num_betas), every=tt_every + 1)}
    learners = {name: ugm.MLE(ugm.models.rbm, ugm.PCD(args.particles, num_mcmc_steps=1, kernel=k),
                              optimizer) for name, k in kernels.items()}
    key = jax.random.PRNGKey(seed)
    state = learners["SAP"].init(key, data, NUM_VISIBLE, NUM_HIDDEN, batch_size=100)
    init_params = learners["SAP"].get_params(state)
    check = abs(float(rbm_log_z(init_params)) - float(exact.log_partition(m, init_params)))
    assert check < 1e-3, f"closed-form log Z disagrees with exact.log_partition by {check}"

    out = {}
    # shared first phase: plain SAP
    curve = [(0, *evaluate(init_params))]
    # progress in Gibbs steps (updates for exact ML): shared phase, two branches, exact ML
    bar = tqdm(total=args.updates * 2 + (args.updates - args.tt_from),
               desc=f"seed {seed}: Gibbs steps")
    branch, diag, seconds = run_segments(learners["SAP"], state, data, args.tt_from,
                                         args.eval_every, 1.0, evaluate, curve, 0, bar)
    remaining = args.updates - args.tt_from
    # SAP continues with one Gibbs sweep per update
    sap_curve = list(curve)
    final, sap_diag, sap_seconds = run_segments(
        learners["SAP"], branch, data, remaining, args.eval_every, 1.0, evaluate,
        sap_curve, args.tt_from, bar)
    out["SAP"] = {"curve": sap_curve, "learn_seconds": seconds + sap_seconds,
                  "updates": args.updates, "gibbs_steps": args.updates,
                  "params": final.params}
    # Trans-SAP: same parameters, optimizer state, keys and chains at the branch point;
    # its own kernel state (the count that schedules the runs) starts at zero
    tt = learners["Trans-SAP"]
    tt.init(key, data, NUM_VISIBLE, NUM_HIDDEN, batch_size=100)
    tt_state = tt.restart_estimator(jax.random.split(key, 4)[1], branch,
                                    position=learners["SAP"].particles(branch))
    cycle_updates, cycle_gibbs = tt_every + 1, tt_every + tt_sweeps
    cycles = remaining // cycle_gibbs
    tt_updates = cycles * cycle_updates + (remaining - cycles * cycle_gibbs)
    per_segment = max(1, round(args.eval_every / cycle_gibbs)) * cycle_updates
    tt_curve = list(curve)
    final, tt_diag, tt_seconds = run_segments(
        tt, tt_state, data, tt_updates, per_segment, cycle_gibbs / cycle_updates, evaluate,
        tt_curve, args.tt_from, bar)
    ran = np.arange(tt_updates) % cycle_updates == tt_every
    out["Trans-SAP"] = {"curve": tt_curve, "learn_seconds": seconds + tt_seconds,
                        "updates": args.tt_from + tt_updates,
                        "gibbs_steps": args.tt_from + tt_updates + int(ran.sum()) * (
                            tt_sweeps - 1),
                        "tt_runs": int(ran.sum()),
                        "tt_acceptance": float(np.mean(tt_diag["acceptance"][ran])),
                        "tt_acceptance_per_run": tt_diag["acceptance"][ran].tolist(),
                        "params": final.params}
    # exact ML with the same schedule
    params, ml_curve, ml_seconds, _ = exact_ml(
        init_params, optimizer, train, args.updates, 100, args.eval_every, evaluate, seed, bar)
    bar.close()
    out["exact ML"] = {"curve": ml_curve, "learn_seconds": ml_seconds,
                       "updates": args.updates, "params": params}
    for v in out.values():
        v["params"] = {k: np.asarray(a).tolist() for k, a in v["params"].items()}
    return out


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    colors = {"exact ML": "k", "SAP": "tab:blue", "Trans-SAP": "tab:red"}
    for name, color in colors.items():
        for i, runs in enumerate(results):
            c = np.asarray(runs[name]["curve"])
            label = name if i == 0 else None
            for ax in axes:
                ax.plot(c[:, 0], c[:, 1], color=color, label=label, lw=1.2)
    axes[0].set_ylim(bottom=max(axes[0].get_ylim()[0], -250))
    zoom_from = 0.8 * results[0]["tt_from"]  # panel (b): the tempered phase, zoomed in
    tails = [c[c[:, 0] >= zoom_from, 1] for c in (np.asarray(r[n]["curve"])
                                                  for r in results for n in colors)]
    axes[1].set_xlim(zoom_from, None)
    axes[1].set_ylim(min(t.min() for t in tails) - 1, max(t.max() for t in tails) + 1)
    for ax, title in zip(axes, ("(a) whole run", "(b) the tempered-transitions phase")):
        ax.set_xlabel("Gibbs steps (parameter updates for exact ML)")
        ax.set_ylabel("training log-likelihood per image (nats)")
        ax.set_title(title)
        ax.axvline(results[0]["tt_from"], color="gray", ls=":", lw=0.8)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--updates", type=int, default=100_000,
                        help="Gibbs steps (= SAP updates) in all")
    parser.add_argument("--constant", type=int, default=10_000,
                        help="updates at the constant rate 0.01")
    parser.add_argument("--tt-from", type=int, default=50_000,
                        help="Gibbs steps of plain SAP before Trans-SAP's runs start")
    parser.add_argument("--tt-every", type=int, default=200,
                        help="Gibbs updates between two tempered-transitions runs")
    parser.add_argument("--tt-betas", type=int, default=50)
    parser.add_argument("--particles", type=int, default=100)
    parser.add_argument("--eval-every", type=int, default=2500)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--gradient", choices=("mean", "sum"), default="mean",
                        help="the rates multiply the gradient of the batch's mean (default) "
                             "or summed log-likelihood (100x larger steps)")
    parser.add_argument("--quick", action="store_true",
                        help="10,000 updates (tempered transitions from 5,000)")
    parser.add_argument("--out", default="outputs")
    args = parser.parse_args()
    if args.quick:
        args.updates, args.constant, args.tt_from, args.eval_every = 10_000, 2_000, 5_000, 1_000

    t0 = time.perf_counter()
    train, test = binary_mnist("stochastic", train_size=50_000, seed=0)
    results = []
    for seed in range(args.seeds):
        runs = one_seed(args, seed, train, test)
        runs["tt_from"] = args.tt_from
        results.append(runs)
    total = time.perf_counter() - t0

    print(f"\nRBM 784x{NUM_HIDDEN} on MNIST ({len(train)} training images), "
          f"{args.updates} Gibbs steps, {args.seeds} seed(s); exact log-likelihood per image")
    print(f"{'method':<11} {'train LL':>16} {'test LL':>16} {'updates':>8} {'learn s':>8}"
          f"  TT acceptance")
    for name in ("SAP", "Trans-SAP", "exact ML"):
        final = np.array([r[name]["curve"][-1][1:] for r in results])
        acc = [r[name].get("tt_acceptance") for r in results]
        print(f"{name:<11} {final[:, 0].mean():>9.2f} ± {final[:, 0].std():<4.2f} "
              f"{final[:, 1].mean():>9.2f} ± {final[:, 1].std():<4.2f} "
              f"{results[0][name]['updates']:>8} "
              f"{np.mean([r[name]['learn_seconds'] for r in results]):>8.1f}"
              f"  {'' if acc[0] is None else f'{np.mean(acc):.3f}'}")
    print(f"total wall time {total / 60:.1f} min")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = {k: v for k, v in vars(args).items() if k != "out"}
    stem = out / f"trans_sap_rbm10_{args.gradient}"
    stem.with_suffix(".json").write_text(json.dumps(
        {"settings": settings, "total_seconds": total, "runs": results}))
    plot(results, stem.with_suffix(".png"))
    print(f"wrote {stem}.json and {stem}.png")


if __name__ == "__main__":
    main()
