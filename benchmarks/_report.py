"""Shared helpers of the benchmark scripts (not a benchmark itself: run_all.py runs only
``bench_*.py``).

Every script prints its headline numbers as ``RESULT`` lines, which ``run_all.py``
collects into the results table::

    RESULT<TAB>measure<TAB>value<TAB>note
"""

import time

import numpy as np


def report(measure, value, note=""):
    """Print one headline number for run_all.py's table (``value`` already formatted)."""
    clean = lambda s: " ".join(str(s).split())  # noqa: E731  (no tabs or newlines)
    print(f"RESULT\t{clean(measure)}\t{clean(value)}\t{clean(note)}", flush=True)


def timeit_many(fns, repeats, warmup=1, gap=0.0, seed=0):
    """Median seconds of each callable in ``fns`` (a dict), timed interleaved (one call
    of each per round) so that all see the same machine load; ``warmup`` untimed rounds
    first (compilation). The order is shuffled every round, so that no callable always
    runs right after the same other one; ``gap`` seconds of sleep before each timed call
    let another library's worker threads (OpenBLAS spins for a while after a call)
    settle."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    rng = np.random.default_rng(seed)
    names = list(fns)
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for i in rng.permutation(len(names)):
            if gap:
                time.sleep(gap)
            t = time.perf_counter()
            fns[names[i]]()
            times[names[i]].append(time.perf_counter() - t)
    return {name: float(np.median(t)) for name, t in times.items()}


def learner_step(learner, state, batch):
    """One jitted learner step on a fixed batch (model representation), as
    ``learner.update`` runs it but without its host-side failure check."""
    return learner._update_jit(state, (None, batch, None))
