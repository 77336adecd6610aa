"""Disk use and time per checkpoint of a learning run (issue 46 item 24).

A binary RBM (``--visible`` x ``--hidden``, default 16 x 8) learns by PCD from random
binary data for ``--steps`` updates, writing a checkpoint every ``--every`` updates into
a fresh directory. Reported: the files and bytes in the directory at the end (state
files, diagnostics files), the time spent in the
checkpoint writer (each call timed around the run loop's ``save``: mean, first and last
tenth, max; and the CPU time of the first and last tenth, which other processes on the
machine disturb less) and the run's wall time. ``--keep`` is passed as ``checkpoint_keep``
(``all``: None).

Run: python benchmarks/bench_checkpoints.py [--steps 20000] [--every 100] [--keep 3]
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import jax
import numpy as np
import optax

import numpyro_ugm as ugm
from numpyro_ugm.learn import mle


def timed_saves(times, cpu):
    """Wrap the run loop so that every call of its ``save`` is timed (wall clock, and the
    process's CPU time, user and system: less disturbed by other processes)."""
    run_loop = mle.run_loop

    def wrapped(advance, state, num_steps, *, save=None, **kwargs):
        def timed(*args):
            start, start_cpu = time.perf_counter(), time.process_time()
            save(*args)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        return run_loop(advance, state, num_steps, save=None if save is None else timed,
                        **kwargs)

    mle.run_loop = wrapped


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--keep", default="all")
    parser.add_argument("--visible", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=8)
    args = parser.parse_args()
    keep = None if args.keep == "all" else int(args.keep)
    data = {"v": (np.random.default_rng(0).random((200, args.visible)) < 0.3).astype(np.int32)}
    times, cpu = [], []
    timed_saves(times, cpu)
    learner = ugm.MLE(lambda: ugm.models.rbm(args.visible, args.hidden), ugm.PCD(32),
                      optax.sgd(0.01))
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "ckpt"
        start = time.perf_counter()
        learner.run(jax.random.PRNGKey(0), args.steps, data, progress_bar=False,
                    checkpoint_every=args.every, checkpoint_dir=directory,
                    checkpoint_keep=keep)
        wall = time.perf_counter() - start
        files = [p for p in directory.rglob("*") if p.is_file()]
        states = [p for p in files if p.name.startswith("step_")]
        tenth = max(1, len(times) // 10)
        print(json.dumps({
            "steps": args.steps, "every": args.every, "keep": args.keep,
            "files": len(files), "state_files": len(states),
            "bytes_on_disk": sum(p.stat().st_size for p in files),
            "bytes_newest_state": max(p.stat().st_size for p in states),
            "checkpoints": len(times),
            "ms_per_checkpoint_mean": 1e3 * float(np.mean(times)),
            "ms_first_tenth": 1e3 * float(np.mean(times[:tenth])),
            "ms_last_tenth": 1e3 * float(np.mean(times[-tenth:])),
            "ms_max": 1e3 * float(np.max(times)),
            "cpu_ms_first_tenth": 1e3 * float(np.mean(cpu[:tenth])),
            "cpu_ms_last_tenth": 1e3 * float(np.mean(cpu[-tenth:])),
            "wall_s": wall}, indent=1))


if __name__ == "__main__":
    main()
