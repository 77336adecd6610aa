"""The PSMC paper's MNIST RBMs (Xiong, Szedmak & Piater 2016, sec. 6.2, Figs. 5-6 and the
lower part of Table 1): PCD-1, PCD-H, parallel tempering (PT), tempered transitions (TT),
standard SMC and persistent SMC (PSMC) learning an RBM 784x10 (``--hidden 10``, exact
log-likelihood) or 784x500 (``--hidden 500``, log-likelihood by AIS).

Setup (the paper's, where it says; ours, marked *, where it does not or where this machine
cannot afford it):

* binary RBM f(v, h) = v'Wh + b'v + c'h (``ugm.models.rbm``), W0 ~ N(0, 0.01^2), b0 = c0 = 0*;
* MNIST stochastically binarized once (each pixel 1 with probability intensity / 255,
  fixed seed*: the Salakhutdinov papers' binarization; ``--data binarized_mnist`` takes
  Larochelle & Murray's fixed binarization instead);
* mini-batches of 200 images, 200 particles for every method (PCD: 200 persistent chains;
  PT: 200 chains of H replicas each; TT: 200 chains);
* learning rate eta_t = 1/(100 + t), t the update count, applied to the gradient of the
  log-likelihood *summed* over the mini-batch* (``--gradient sum``; the paper does not say;
  ``--gradient mean`` applies it to the batch mean, which learns 200x slower and makes
  PSMC take one beta per update: see benchmarks/results/psmc_rbm_mnist.md);
* SMC and PSMC with ESS threshold sigma* = 0.9, one Gibbs sweep per beta; PSMC carries half
  of its particles over and re-draws the other half uniformly;
* H = PSMC's mean number of betas per update over its whole run (measured first, as the
  paper does; ``--H`` sets it); PCD-H: H Gibbs sweeps per update; PT: H betas uniform in
  [0, 1] (one sweep per replica, then swaps); TT: one tempered-transitions run of H betas
  uniform in [0.9, 1] per update (2(H-1) sweeps: the paper's choice; ``--tt-match-sweeps``
  gives TT H/2 + 1 betas, about H sweeps);
* **scaled down** for a 2-core CPU*: a random subset of ``--train-size`` training images
  (default 10,000; the paper: all 60,000) and ``--epochs`` epochs (default 30 for
  784x10, 2 for 784x500; the paper: 1000), test on all 10,000 test images;
* evaluation: exact (2^10 hidden states enumerated) train and test log-likelihood per image
  after every epoch for 784x10; for 784x500 AIS (Salakhutdinov & Murray 2008, base-rate
  start fitted to the training images, their schedule shape) with few chains and betas
  along the way (default 16 chains x 500 betas) and more at the end (default 100 x 3000;
  the literature: 100 x 14,500) - the curve points are noisy, say so.

Outputs: the table on stdout (the form of the paper's Table 1, lower part, the paper's
numbers beside), ``outputs/rbm_mnist_<H>.json`` (settings, curves, per-update diagnostics,
timings, TT acceptance, PT swap rates) and ``outputs/rbm_mnist_<H>.png`` ((a) train and
test log-likelihood vs epoch, (b)/(c) number of betas per iteration of PSMC / SMC).

Run: ``python examples/rbm_mnist_psmc.py --hidden 10`` (about 10 minutes here),
``python examples/rbm_mnist_psmc.py --hidden 500`` (about 10 minutes),
``--quick`` for a short check, ``--paper`` for the paper's scale (days on this machine).
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
from numpyro_ugm.model.validation import validate_data
from numpyro_ugm.datasets import binary_mnist
from numpyro_ugm.evaluate import ais, exact
from numpyro_ugm.learn import NonFiniteError


NUM_VISIBLE = 784
METHODS = ("PCD-1", "PCD-H", "PT", "TT", "SMC", "PSMC", "PF")

#: the paper's Table 1, lower part (sign of PT's 784x10 entries restored: the text prints
#: "206.2819" for both train and test, surely -206.2819)
PAPER = {
    10: {"train": {"PCD-1": -206.3846, "PCD-H": -203.5884, "PT": -206.2819,
                   "TT": -206.9033, "SMC": -203.3672, "PSMC": -199.9089},
         "test": {"PCD-1": -207.7464, "PCD-H": -204.6717, "PT": -206.2819,
                  "TT": -208.2452, "SMC": -204.4852, "PSMC": -201.0794}},
    500: {"train": {"PCD-1": -176.3767, "PCD-H": -173.0064, "PT": -165.2149,
                    "TT": -170.9312, "SMC": -678.6464, "PSMC": -161.6231},
          "test": {"PCD-1": -177.0584, "PCD-H": -173.4998, "PT": -166.1645,
                   "TT": -171.6008, "SMC": -678.7835, "PSMC": -162.1705}},
}
#: the paper's H (PCD-H, PT, TT) and mean number of betas (sec. 6.2)
PAPER_H = {10: 100, 500: 200}
PAPER_BETAS = {10: {"PSMC": "about 100", "SMC": "about 100"},
               500: {"PSMC": "159", "SMC": "9.6"}}


# --- data -------------------------------------------------------------------------------

def base_rate_log_likelihood(train, test, smoothing=1.0):
    """Mean log-likelihood of independent pixels fitted to the training images (the
    RBM with W = 0 and the base-rate visible biases): a reference level."""
    p = (train.sum(0) + smoothing) / (len(train) + 2 * smoothing)
    ll = lambda x: float(np.mean(x @ np.log(p) + (1 - x) @ np.log1p(-p)))  # noqa: E731
    return ll(train), ll(test)


# --- evaluation -------------------------------------------------------------------------

class Evaluator:
    """Mean train / test log-likelihood per image: exact for few hidden units (the 2^H
    hidden configurations enumerated), AIS otherwise (one log Z per parameter set,
    shared by train and test; the base rate is fitted to the training images)."""

    def __init__(self, m, train, test, use_exact, seed=0):
        self.m, self.use_exact = m, use_exact
        self.train, self.test = {"v": train}, {"v": test}
        self.key = jax.random.PRNGKey(10_000 + seed)
        if not use_exact:
            self.base = ais.base_rate_log_probs(m, self.train)
            model_train = validate_data(m.target().state_sites, self.train)
            model_test = validate_data(m.target().state_sites, self.test)
            target = m.target()
            mean_f = jax.jit(lambda p, x: jnp.mean(
                jax.vmap(target.free_energy, (None, 0))(p, x)))
            self.positive = lambda p: (float(mean_f(p, model_train)),
                                       float(mean_f(p, model_test)))
        self.calls = 0

    def __call__(self, params, num_chains=16, num_betas=500):
        """(train LL, test LL, stderr of log Z or 0, seconds)."""
        t = time.perf_counter()
        if self.use_exact:
            out = (float(exact.log_likelihood(self.m, params, self.train)),
                   float(exact.log_likelihood(self.m, params, self.test)), 0.0)
        else:
            self.calls += 1
            res = ais.log_partition(self.m, params, jax.random.fold_in(self.key, self.calls),
                                    num_chains=num_chains, betas=ais.default_betas(num_betas),
                                    base_log_probs=self.base)
            f_train, f_test = self.positive(params)
            log_z = float(res.log_z)
            out = (f_train - log_z, f_test - log_z, float(res.stderr))
        return out + (time.perf_counter() - t,)


# --- methods ----------------------------------------------------------------------------

def tt_betas(H, match_sweeps=False):
    num = max(2, H // 2 + 1) if match_sweeps else max(2, H)
    return np.linspace(0.9, 1.0, num)


def make_estimator(method, H, num_particles, ess_threshold, tt_match_sweeps=False,
                   psmc_redraw="uniform-heuristic"):
    if method == "PF":
        return ugm.PF(num_particles)  # the package's defaults (not a method of the paper)
    if method == "PCD-1":
        return ugm.PCD(num_particles, num_mcmc_steps=1)
    if method == "PCD-H":
        return ugm.PCD(num_particles, num_mcmc_steps=H)
    if method == "PT":
        return ugm.PCD(num_particles, num_mcmc_steps=1, kernel=ugm.kernels.parallel_tempering(
            betas=np.linspace(0.0, 1.0, max(2, H))))
    if method == "TT":
        return ugm.PCD(num_particles, num_mcmc_steps=1, kernel=ugm.kernels.tempered_transitions(
            betas=tt_betas(H, tt_match_sweeps)))
    if method == "SMC":
        return ugm.SMC(num_particles, target_ess=ess_threshold)
    if method == "PSMC":
        return ugm.PSMC(num_particles, target_ess=ess_threshold, keep_fraction=0.5,
                        redraw=psmc_redraw)  # default: the paper's re-draw
    raise ValueError(method)


def sweeps_per_update(method, H, diagnostics, tt_match_sweeps=False):
    """Gibbs sweeps (of every chain or particle) per parameter update."""
    if method in ("SMC", "PSMC"):  # one sweep per beta, the fresh path's included
        return float(np.mean(diagnostics["num_betas"]
                             + diagnostics.get("fresh_num_betas", 0.0)))
    if method == "PF":  # one sweep per rejuvenation
        return float(np.mean(diagnostics["rejuvenated"]))
    return {"PCD-1": 1.0, "PCD-H": float(H), "PT": float(max(2, H)),
            "TT": 2.0 * (len(tt_betas(H, tt_match_sweeps)) - 1)}[method]


def learn(method, estimator, optimizer, train, hidden, *, epochs, batch_size, eval_interval,
          evaluate, seed, curve_ais):
    """One learning run with mini-batches from a per-epoch permutation, evaluated every
    ``eval_interval`` updates and at the end.

    The steps go through the public ``MLE.update(state, batch)`` with batches shuffled
    here, once per epoch: ``MLE.run(batch_size=...)`` draws a fresh permutation of the
    whole training set at every step, which costs more than a PCD-1 update of this RBM
    (12 ms for 10,000 images, 70 ms for 50,000 on this CPU).

    Returns the learner, the final state, the evaluations (the first one: the initial
    parameters), the per-update diagnostics and the timings.
    """
    learner = ugm.MLE(ugm.models.rbm, estimator, optimizer)
    key = jax.random.PRNGKey(seed)
    state = learner.init(key, {"v": train}, NUM_VISIBLE, hidden, batch_size=batch_size)
    rng = np.random.default_rng(seed)
    per_epoch = len(train) // batch_size
    total = epochs * per_epoch
    steps, evals = [], []
    learn_seconds, first_update_seconds, failed = 0.0, None, None

    def record_eval(state, update):
        ll_train, ll_test, stderr, secs = evaluate(learner.get_params(state), *curve_ais)
        evals.append({"update": update, "epoch": update / per_epoch, "train": ll_train,
                      "test": ll_test, "stderr": stderr, "seconds": secs})
        extra = ""
        if method in ("SMC", "PSMC") and steps:
            recent = [s["num_betas"] for s in steps[-eval_interval:]]
            extra = f"  #beta (recent) {np.mean(recent):.1f}"
        print(f"    {method:<6} epoch {update / per_epoch:7.2f}  train {ll_train:9.3f}  test "
              f"{ll_test:9.3f}  (learning {learn_seconds:6.1f} s){extra}", flush=True)

    record_eval(state, 0)
    update = 0
    for epoch in range(epochs):
        order = rng.permutation(len(train))
        for i in range(per_epoch):
            batch = {"v": train[order[i * batch_size:(i + 1) * batch_size]]}
            t = time.perf_counter()
            try:
                state, info = learner.update(state, batch)
            except NonFiniteError as error:
                failed = int(error.step)
                print(f"    {method}: non-finite step {failed}; stopped, keeping the last "
                      "good state", flush=True)
                state = error.state
                break
            steps.append({k: float(v) for k, v in info.diagnostics().items()})  # waits
            seconds = time.perf_counter() - t
            learn_seconds += seconds
            if first_update_seconds is None:
                first_update_seconds = seconds
            update += 1
            if update % eval_interval == 0 or update == total:
                record_eval(state, update)
        if failed is not None:
            if not evals or evals[-1]["update"] != update:
                record_eval(state, update)
            break
    diagnostics = {k: np.array([s[k] for s in steps]) for k in (steps[0] if steps else {})}
    return learner, state, evals, diagnostics, {
        "learn_seconds": learn_seconds, "first_update_seconds": first_update_seconds,
        "num_updates": len(steps), "failed_at": failed}


def pt_swap_rates(learner, state, betas, num_steps=100, seed=0):
    """Swap acceptance of each neighbour pair (beta_k, beta_k+1), measured by running the
    PT kernel ``num_steps`` more steps from the learned chains under the learned
    parameters (the learner's diagnostics hold the base kernel's acceptance only)."""
    m = learner.ugm
    params = learner.get_params(state)
    kernel = ugm.kernels.parallel_tempering(betas=betas).build(m.target())
    chains = state.estimator_state.kernel_state
    logdensity = m.target().logdensity_fn(params)
    num_chains = jax.tree.leaves(chains.position)[0].shape[0]

    @jax.jit
    def run(chains, key):
        def body(chains, key):
            keys = jax.random.split(key, num_chains)
            chains, info = jax.vmap(lambda k, s: kernel.step(k, s, logdensity))(keys, chains)
            return chains, (jnp.sum(info.swap_attempted, 0), jnp.sum(info.swap_accepted, 0))
        _, (attempted, accepted) = jax.lax.scan(body, chains, jax.random.split(key, num_steps))
        return jnp.sum(attempted, 0), jnp.sum(accepted, 0)

    attempted, accepted = run(chains, jax.random.PRNGKey(seed))
    rates = np.asarray(accepted, float) / np.maximum(np.asarray(attempted, float), 1)
    return rates


# --- main -------------------------------------------------------------------------------

def main(args):
    t_start = time.perf_counter()
    hidden = args.hidden
    train, test = binary_mnist(args.data, args.train_size, args.seed)
    base_train, base_test = base_rate_log_likelihood(train, test)
    use_exact = hidden <= 20
    m = ugm.UGM(ugm.models.rbm, NUM_VISIBLE, hidden).observe(["v"])
    evaluate = Evaluator(m, train, test, use_exact, args.seed)
    curve_ais = (args.ais_chains, args.ais_betas)
    final_ais = (args.final_ais_chains, args.final_ais_betas)
    scale = args.batch_size if args.gradient == "sum" else 1.0
    scale *= args.lr_scale
    optimizer = optax.sgd(lambda t: scale / (100.0 + t))
    per_epoch = len(train) // args.batch_size
    print(f"RBM {NUM_VISIBLE}x{hidden}: {len(train)} training images ({args.data}), "
          f"{len(test)} test; {args.epochs} epochs of {per_epoch} updates; batch "
          f"{args.batch_size}, {args.particles} particles; eta_t = 1/(100+t) on the "
          f"{args.gradient} gradient; evaluation: "
          + ("exact" if use_exact else f"AIS {curve_ais[0]} chains x {curve_ais[1]} betas "
             f"(curves), {final_ais[0]} x {final_ais[1]} (final)"), flush=True)
    print(f"independent-pixel (base-rate) model: train {base_train:.3f}, test "
          f"{base_test:.3f}", flush=True)

    eval_interval = max(1, round(per_epoch * args.eval_every))
    results, H = {}, args.H
    order = ("PSMC", "SMC", "PCD-1", "PCD-H", "PT", "TT", "PF")  # PSMC first: it gives H
    for method in order:
        if method not in args.methods:
            continue
        if method in ("PCD-H", "PT", "TT") and H is None:
            raise SystemExit("PCD-H, PT and TT need H: run PSMC too, or give --H")
        estimator = make_estimator(method, H, args.particles, args.ess_threshold,
                                   args.tt_match_sweeps, args.psmc_redraw)
        print(f"\n== {method}: {estimator!r}", flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            learner, state, evals, diag, timing = learn(
                method, estimator, optimizer, train, hidden, epochs=args.epochs,
                batch_size=args.batch_size, eval_interval=eval_interval, evaluate=evaluate,
                seed=args.seed, curve_ais=curve_ais)
        record = {"estimator": repr(estimator), "evals": evals, "timing": timing,
                  "diagnostics": diag}
        if not use_exact and final_ais != curve_ais and timing["failed_at"] is None:
            ll_train, ll_test, stderr, secs = evaluate(learner.get_params(state), *final_ais)
            record["final"] = {"train": ll_train, "test": ll_test, "stderr": stderr,
                               "seconds": secs}
            print(f"    {method:<6} final AIS ({final_ais[0]} x {final_ais[1]}): train "
                  f"{ll_train:.3f}  test {ll_test:.3f}  (log Z stderr {stderr:.3f}, "
                  f"{secs:.0f} s)", flush=True)
        else:
            record["final"] = {k: evals[-1][k] for k in ("train", "test", "stderr")}
        if method in ("SMC", "PSMC"):
            record["mean_num_betas"] = sweeps_per_update(method, H, diag)
        if method == "PSMC" and H is None:
            H = max(2, int(round(record["mean_num_betas"])))
            print(f"  PSMC mean number of betas per update {record['mean_num_betas']:.2f}: "
                  f"H = {H}", flush=True)
        if method == "TT":
            record["tt_acceptance"] = float(np.mean(diag["acceptance"]))
            print(f"    TT mean acceptance probability {record['tt_acceptance']:.3f}",
                  flush=True)
        if method == "PT" and timing["failed_at"] is None:
            rates = pt_swap_rates(learner, state, np.linspace(0.0, 1.0, max(2, H)),
                                  args.swap_steps, args.seed)
            record["pt_swap_rates"] = rates.tolist()
            print(f"    PT swap acceptance (after learning, {args.swap_steps} steps): mean "
                  f"{rates.mean():.3f}, min {rates.min():.3f} (pair {int(rates.argmin())}),"
                  f" max {rates.max():.3f}", flush=True)
        record["sweeps_per_update"] = sweeps_per_update(
            method, H, diag, args.tt_match_sweeps)
        results[method] = record

    total = time.perf_counter() - t_start
    summary = summarize(results, per_epoch)
    print_table(hidden, summary, H, (base_train, base_test), use_exact, final_ais)
    print(f"total wall time {total / 60:.1f} min")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "settings": {**vars(args), "num_train": len(train), "num_test": len(test),
                     "updates_per_epoch": per_epoch, "H": H,
                     "evaluation": "exact" if use_exact else "AIS",
                     "ais_schedule": "Salakhutdinov-Murray shape, scaled",
                     "jax_backend": jax.default_backend()},
        "reference": {"base_rate": {"train": base_train, "test": base_test}},
        "paper_table1": PAPER[hidden] if hidden in PAPER else None,
        "paper_H": PAPER_H.get(hidden), "paper_num_betas": PAPER_BETAS.get(hidden),
        "summary": summary, "total_seconds": total,
        "runs": {k: {**{kk: vv for kk, vv in r.items() if kk != "diagnostics"},
                     "diagnostics": {kk: np.asarray(vv).tolist()
                                     for kk, vv in r["diagnostics"].items()}}
                 for k, r in results.items()},
    }
    path = out / f"rbm_mnist_{hidden}.json"
    path.write_text(json.dumps(json_safe(record), indent=1))
    print(f"results saved to {path}")
    plot(results, hidden, per_epoch, (base_train, base_test), H,
         out / f"rbm_mnist_{hidden}.png", use_exact)
    return record


def summarize(results, per_epoch):
    summary = {}
    for method, r in results.items():
        evals = r["evals"]
        timing = r["timing"]
        n = timing["num_updates"]
        per_update = ((timing["learn_seconds"] - timing["first_update_seconds"]) / (n - 1)
                      if n > 1 else float("nan"))
        last = evals[-max(1, len(evals) // 4):]
        summary[method] = {
            "train": r["final"]["train"], "test": r["final"]["test"],
            "train_last_quarter": float(np.mean([e["train"] for e in last])),
            "test_last_quarter": float(np.mean([e["test"] for e in last])),
            "best_test": float(np.max([e["test"] for e in evals])),
            "sweeps_per_update": r["sweeps_per_update"],
            "mean_num_betas": r.get("mean_num_betas"),
            "ms_per_update": 1e3 * per_update,
            "learn_seconds": timing["learn_seconds"],
            "compile_seconds": timing["first_update_seconds"],
            "eval_seconds": float(sum(e["seconds"] for e in evals)
                                  + r["final"].get("seconds", 0.0)),
            "failed_at": timing["failed_at"],
            "tt_acceptance": r.get("tt_acceptance"),
            "pt_swap_mean": (float(np.mean(r["pt_swap_rates"])) if "pt_swap_rates" in r
                             else None),
            "pt_swap_min": (float(np.min(r["pt_swap_rates"])) if "pt_swap_rates" in r
                            else None),
        }
    return summary


def print_table(hidden, summary, H, base, use_exact, final_ais):
    methods = [m for m in METHODS if m in summary]
    paper = PAPER.get(hidden)
    how = "exact" if use_exact else f"AIS, {final_ais[0]} chains x {final_ais[1]} betas"
    print(f"\nTable 1 (lower part), MNIST RBM ({NUM_VISIBLE}x{hidden}): average "
          f"log-likelihood per image of the final parameters ({how}); H = {H}; the paper's "
          f"value below (its H = {PAPER_H.get(hidden)})")
    name = lambda m: f"PCD-{H}" if m == "PCD-H" else m  # noqa: E731
    print(f"{'':<16}" + "".join(f"{name(m):>11}" for m in methods))
    for split, label in (("train", "Training data"), ("test", "Testing data")):
        print(f"{label:<16}" + "".join(f"{summary[m][split]:>11.3f}" for m in methods))
        if paper:
            print(f"{'  paper':<16}" + "".join(
                f"{paper[split][m]:>11.3f}" if m in paper[split] else f"{'':>11}"
                for m in methods))
    print(f"{'test, mean of last quarter':<16}")
    print(f"{'':<16}" + "".join(f"{summary[m]['test_last_quarter']:>11.3f}" for m in methods))
    print(f"{'sweeps/update':<16}" + "".join(
        f"{summary[m]['sweeps_per_update']:>11.1f}" for m in methods))
    print(f"{'ms/update':<16}" + "".join(f"{summary[m]['ms_per_update']:>11.1f}"
                                         for m in methods))
    print(f"{'learn s':<16}" + "".join(f"{summary[m]['learn_seconds']:>11.0f}"
                                       for m in methods))
    for m in methods:
        s = summary[m]
        if s["tt_acceptance"] is not None:
            print(f"TT mean acceptance probability: {s['tt_acceptance']:.3f}")
        if s["pt_swap_mean"] is not None:
            print(f"PT swap acceptance: mean {s['pt_swap_mean']:.3f}, min {s['pt_swap_min']:.3f}")
        if s["failed_at"] is not None:
            print(f"{m}: stopped at non-finite step {s['failed_at']}")
    print(f"independent-pixel (base-rate) model: train {base[0]:.3f}, test {base[1]:.3f}")


def json_safe(value):
    """NaN and infinities as null (strict JSON); numpy values as Python values."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


COLORS = {"PCD-1": "tab:red", "PCD-H": "tab:orange", "PT": "tab:purple", "TT": "tab:brown",
          "SMC": "tab:green", "PSMC": "tab:blue", "PF": "tab:pink"}


def plot(results, hidden, per_epoch, base, H, path, use_exact):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    for ax, split in zip(axes[0], ("train", "test")):
        lows = []
        for method, r in results.items():
            epochs = [e["epoch"] for e in r["evals"]]
            ll = [e[split] for e in r["evals"]]
            label = f"PCD-{H}" if method == "PCD-H" else method
            ax.plot(epochs, ll, "-o" if len(epochs) < 12 else "-", ms=3,
                    color=COLORS[method], label=label)
            lows.append(np.nanmin(ll[max(1, len(ll) // 5):]) if len(ll) > 1 else ll[0])
        ax.axhline(base[0 if split == "train" else 1], color="0.5", ls=":",
                   label="independent pixels (base rate)")
        top = max(np.nanmax([e[split] for r in results.values() for e in r["evals"]
                             if np.isfinite(e[split])]),
                  base[0 if split == "train" else 1])
        ax.set_ylim(max(min(lows), top - 120) - 5, top + 5)
        ax.set_xlabel("epoch")
        ax.set_ylabel(f"{'exact' if use_exact else 'AIS'} log-likelihood per image")
        ax.set_title(f"(a) {'training' if split == 'train' else 'test'} data, "
                     f"RBM {NUM_VISIBLE}x{hidden}")
        ax.legend(loc="lower right", fontsize=8)
    for ax, method, tag in ((axes[1, 0], "PSMC", "(b)"), (axes[1, 1], "SMC", "(c)")):
        if method in results:
            nb = results[method]["diagnostics"]["num_betas"]
            ax.plot(np.arange(1, len(nb) + 1), nb, color="tab:blue", lw=0.6)
            ax.axhline(np.mean(nb), color="tab:red", label=f"mean {np.mean(nb):.1f}")
            ax.legend(loc="upper right", fontsize=8)
        ax.set_xlabel(f"iteration ({per_epoch} per epoch)")
        ax.set_ylabel("number of betas")
        ax.set_title(f"{tag} {method}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot saved to {path}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=int, default=10, help="hidden units (10 or 500)")
    parser.add_argument("--data", choices=("stochastic", "binarized_mnist"),
                        default="stochastic")
    parser.add_argument("--train-size", type=int, default=10000,
                        help="random subset of training images (0: all; the paper: all)")
    parser.add_argument("--epochs", type=int, default=None,
                        help="default 30 (784x10) or 2 (784x500); the paper: 1000")
    parser.add_argument("--eval-every", type=float, default=None,
                        help="epochs between evaluations (default 1 for 784x10, 0.5 for "
                             "784x500)")
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--particles", type=int, default=200)
    parser.add_argument("--ess-threshold", type=float, default=0.9)
    parser.add_argument("--gradient", choices=("sum", "mean"), default="sum",
                        help="eta_t scales the gradient of the batch's summed (default) or "
                             "mean log-likelihood")
    parser.add_argument("--lr-scale", type=float, default=1.0,
                        help="multiplies eta_t (a grid of learning rates: the docs' "
                             "'Choosing an estimator' page)")
    parser.add_argument("--psmc-redraw", choices=("uniform-heuristic", "tempered"),
                        default="uniform-heuristic",
                        help="PSMC's re-draw: the paper's (default here) or the package's "
                             "default, 'tempered'")
    parser.add_argument("--H", type=int, default=None,
                        help="H for PCD-H, PT and TT (default: PSMC's mean number of betas; "
                             "the paper: 100 for 784x10, 200 for 784x500)")
    parser.add_argument("--tt-match-sweeps", action="store_true",
                        help="TT with H/2+1 betas (about H Gibbs sweeps) instead of H betas")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--ais-chains", type=int, default=16)
    parser.add_argument("--ais-betas", type=int, default=500)
    parser.add_argument("--final-ais-chains", type=int, default=100)
    parser.add_argument("--final-ais-betas", type=int, default=3000)
    parser.add_argument("--swap-steps", type=int, default=100,
                        help="PT steps run after learning to measure swap rates")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a short check")
    parser.add_argument("--paper", action="store_true",
                        help="the paper's scale: all 60,000 images, 1000 epochs, final AIS "
                             "100 chains x 14,500 betas (days here)")
    parser.add_argument("--out", default="outputs")
    args = parser.parse_args(argv)
    if not args.lr_scale > 0:
        parser.error(f"--lr-scale must be > 0, got {args.lr_scale}")
    if args.epochs is None:
        args.epochs = 30 if args.hidden <= 20 else 2
    if args.eval_every is None:
        args.eval_every = 1.0 if args.hidden <= 20 else 0.5
    if args.paper:
        args.train_size, args.epochs = 0, 1000
        args.final_ais_chains, args.final_ais_betas = 100, 14500
    if args.quick:
        args.train_size, args.epochs = 2000, 2
        args.ais_chains, args.ais_betas = 8, 200
        args.final_ais_chains, args.final_ais_betas = 16, 300
        args.swap_steps = 10
    return args


if __name__ == "__main__":
    main(parse_args())
