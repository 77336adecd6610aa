"""Wall time for PF and for PCD-1 to reach the same exact test log-likelihood on the PF
paper's VBM-15 (Asuncion et al. 2010, sec. 4.1, Fig. 1b): PF should be faster because it
skips the Gibbs sweep on every epoch whose ESS stays above 0.9 S.

One run of each learner (same problem, same initial W0 ~ N(0,1), S = 50, n = 1, learning
rate 0.01 decayed exponentially to ``--lr-final`` times that over ``--epochs``, full batch;
the settings of ``examples/pf_vbm15.py``, whose initial setting 0 this is), learned in
segments of ``--segment`` epochs with the exact test log-likelihood checked between
segments (evaluation not timed). The target is a value both reach: ``--margin`` nats
below the lower of PCD's final and PF's best test log-likelihood. Reported: the epochs
and learning seconds each needed (summed segment times, and an uninterrupted re-run of
exactly that many epochs, median of ``--repeats`` timed interleaved, which drops the
per-segment call overhead), and the ratio PF / PCD. Run: python benchmarks/bench_pf_vs_pcd.py
"""

import argparse
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax

from _report import report

import numpyro_ugm as ugm
from numpyro_ugm.datasets import vbm_problem
from numpyro_ugm.evaluate import exact

N, S = 15, 50


def curve(learner, key, W0, train, test, m, epochs, segment):
    """Learn in segments; exact test LL and cumulative learning seconds after each."""
    state = learner.init(key, train, N, fields=False, init_params=W0)
    warm = learner.run(key, segment, train, N, fields=False, init_state=state,
                       progress_bar=False)  # compile outside the timing
    jax.block_until_ready(warm.state)
    steps, seconds, lls, elapsed = [], [], [], 0.0
    for _ in range(epochs // segment):
        t = time.perf_counter()
        result = learner.run(key, segment, train, N, fields=False, init_state=state,
                             progress_bar=False)
        jax.block_until_ready(result.state)
        elapsed += time.perf_counter() - t
        state = result.state
        steps.append(int(state.step))
        seconds.append(elapsed)
        lls.append(float(exact.log_likelihood(m, result.params, test)))
    return learner.init(key, train, N, fields=False, init_params=W0), steps, seconds, lls


def uninterrupted(runs, repeats):
    """Median seconds of each uninterrupted run (compiled first), timed interleaved so
    that all see the same machine load, and each run's final parameters."""
    finals = {name: jax.block_until_ready(run()) for name, run in runs.items()}
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            t = time.perf_counter()
            jax.block_until_ready(run().state)
            times[name].append(time.perf_counter() - t)
    return {name: (float(np.median(times[name])), finals[name].params) for name in runs}


def main(epochs=3000, segment=10, margin=0.02, repeats=5, seed=0, pf_every=100,
         lr_final=0.1):
    key = jax.random.PRNGKey(seed)
    _, train, test = vbm_problem(key, N, 500, 100)
    m = ugm.UGM(ugm.models.vbm, N, fields=False)
    W0 = {"W": jnp.triu(jax.random.normal(jax.random.fold_in(key, 1000), (N, N)), 1)}
    schedule = optax.exponential_decay(0.01, transition_steps=epochs, decay_rate=lr_final)
    learners = {
        "PF": ugm.MLE(ugm.models.vbm, ugm.PF(S, resample_threshold=0.9, num_mcmc_steps=1,
                                             rejuvenate_every=pf_every, adaptive=False,
                                             check_log_z=False), optax.sgd(schedule)),
        "PCD-1": ugm.MLE(ugm.models.vbm, ugm.PCD(S, num_mcmc_steps=1), optax.sgd(schedule)),
    }
    learn_key = jax.random.fold_in(key, 0)
    curves = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name, learner in learners.items():
            curves[name] = curve(learner, learn_key, W0, train, test, m, epochs, segment)

    target = min(curves["PCD-1"][3][-1], max(curves["PF"][3])) - margin
    print(f"VBM-15, S = {S}, {epochs} epochs, lr 0.01 -> {0.01 * lr_final:g}, PF forced "
          f"rejuvenation every {pf_every} epochs; target test LL "
          f"{target:.4f} (PCD-1 final {curves['PCD-1'][3][-1]:.4f}, PF best "
          f"{max(curves['PF'][3]):.4f}, PF final {curves['PF'][3][-1]:.4f})")
    print(f"{'learner':<8}{'epochs':>8}{'segmented s':>13}{'uninterrupted s':>17}"
          f"{'ms / epoch':>12}{'test LL there':>15}")
    reached = {name: next(i for i, ll in enumerate(c[3]) if ll >= target)
               for name, c in curves.items()}

    def rerun(name):  # the same run, uninterrupted up to the target (bit-identical)
        return lambda: learners[name].run(learn_key, curves[name][1][reached[name]], train,
                                          N, fields=False, init_state=curves[name][0],
                                          progress_bar=False)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        timed = uninterrupted({name: rerun(name) for name in curves}, repeats)
    results = {}
    for name, (state0, steps, seconds, lls) in curves.items():
        i = reached[name]
        t_run, params = timed[name]
        ll = float(exact.log_likelihood(m, params, test))  # same as the segmented run's
        results[name] = (steps[i], seconds[i], t_run)
        print(f"{name:<8}{steps[i]:>8}{seconds[i]:>13.3f}{t_run:>17.3f}"
              f"{1e3 * t_run / steps[i]:>12.4f}{ll:>15.4f}")
    ratio_seg = results["PF"][1] / results["PCD-1"][1]
    ratio_run = results["PF"][2] / results["PCD-1"][2]
    ratio_epochs = results["PF"][0] / results["PCD-1"][0]
    print(f"time to target, PF / PCD-1 = {ratio_run:.2f} (= {ratio_epochs:.2f} x the epochs "
          f"at {ratio_run / ratio_epochs:.2f} x the cost per epoch; segmented timing, "
          f"which adds a per-call overhead to every {segment} epochs: {ratio_seg:.2f}); "
          f"< 1 means PF is faster, the paper's claim")
    report("VBM-15 wall time to the same test log-likelihood: PF / PCD-1",
           f"{ratio_run:.2f}", f"{ratio_epochs:.2f} x the epochs; < 1: PF faster (PF paper)")
    return ratio_run


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3000)
    parser.add_argument("--segment", type=int, default=10)
    parser.add_argument("--margin", type=float, default=0.02)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pf-every", type=int, default=100,
                        help="PF's forced rejuvenation interval (the paper: 100)")
    parser.add_argument("--lr-final", type=float, default=0.1,
                        help="final learning rate as a fraction of 0.01 (1: constant)")
    args = parser.parse_args()
    main(args.epochs, args.segment, args.margin, args.repeats, args.seed, args.pf_every,
         args.lr_final)
