"""Shared helpers of the benchmark scripts (not a benchmark itself: run_all.py runs only
``bench_*.py``).

Every script prints its headline numbers as ``RESULT`` lines, which ``run_all.py``
collects into the results table::

    RESULT<TAB>measure<TAB>value<TAB>note
"""

import json
import resource
import subprocess
import sys
import time

import jax
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


_STEPS = {}


def learner_step(learner, state, batch):
    """One jitted learner step (``learner.core.update``) on a batch from
    ``learner.prepare(...).batch``, as ``learner.update`` runs it but without its
    host-side failure check."""
    core = learner.core
    if id(core) not in _STEPS:
        _STEPS[id(core)] = (core, jax.jit(core.update))
    return _STEPS[id(core)][1](state, batch)


def _status_mb(field):
    with open("/proc/self/status") as f:
        kib = next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
    return kib / 1024


def peak_rss_mb():
    """The peak resident set of this process (since :func:`reset_peak_rss`), in MB."""
    try:
        return _status_mb("VmHWM")
    except OSError:  # not Linux: ru_maxrss, the peak since the process started
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak_rss():
    """Make the resident set now the peak (Linux >= 4.0; elsewhere nothing is reset) and
    return it, in MB, so that a later :func:`peak_rss_mb` measures what came after."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status_mb("VmRSS")
    except OSError:
        return peak_rss_mb()


def first_call(fn, repeats=3):
    """Cost of compiling: seconds of ``fn``'s first call (compile + run), the median of
    ``repeats`` later calls (run), their difference (compile), and how far the process's
    peak resident set rose above its resident set before the first call (MB). Call it in
    a fresh process (:func:`run_worker`), so that no earlier compilation hides this one."""
    rss0 = reset_peak_rss()
    t = time.perf_counter()
    fn()
    first = time.perf_counter() - t
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    run = float(np.median(times))
    return {"first": first, "run": run, "compile": first - run,
            "peak_mb": peak_rss_mb() - rss0}


def run_worker(*argv):
    """Run ``python *argv`` in a fresh process; its last line of output, parsed as JSON."""
    out = subprocess.run([sys.executable, *argv], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])
