"""A harness for tests of JAX's multi-controller runtime on one machine: launch N local
processes of a worker script, each with its own CPU devices, joined by
``jax.distributed.initialize`` on the loopback address with the gloo CPU collectives, and
collect what each wrote.

The worker reads its place from the environment (:func:`join`, called before any other
use of JAX) and writes its results with :func:`write`; :func:`launch` returns them per
process. A run that does not finish within ``timeout`` seconds is killed and fails the
test (a hung collective never hangs the suite).
"""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: environment variables through which :func:`launch` tells a worker its place
PROCESS_ID, NUM_PROCESSES, COORDINATOR, OUT_DIR = (
    "UGM_TEST_PROCESS_ID", "UGM_TEST_NUM_PROCESSES", "UGM_TEST_COORDINATOR",
    "UGM_TEST_OUT_DIR")

#: seconds without a heartbeat after which JAX's coordination service declares a worker
#: dead and stops the others (its default, 100 s, would outlast a test's patience), and
#: that a process ending (e.g. on an exception) waits for the others at the shutdown
#: barrier (default 300 s) before it exits anyway and the others learn of it
HEARTBEAT_TIMEOUT = 10


class Failed(RuntimeError):
    """A multi-process run that failed or timed out; ``runs`` holds every process's
    :class:`Run`."""

    def __init__(self, message, runs):
        super().__init__(message)
        self.runs = runs


class Run:
    """One process of a launch: its exit code (None if it was killed at the deadline),
    its stdout and stderr, the arrays it wrote (``results``, by name) and the launch's
    output directory (``out_dir``)."""

    def __init__(self, returncode, stdout, stderr, results, out_dir):
        self.returncode, self.stdout, self.stderr, self.results, self.out_dir = (
            returncode, stdout, stderr, results, out_dir)


def free_port() -> int:
    """A TCP port free on the loopback address now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(script, args=(), *, num_processes=2, devices_per_process=2, timeout=120,
           out_dir, check=True, on_start=None) -> list:
    """Run ``script`` as ``num_processes`` local processes with ``devices_per_process``
    CPU devices each; returns one :class:`Run` per process (in process order).

    Parameters
    ----------
    script : str or Path
        A Python script that calls :func:`join` first and :func:`write` for its results.
    args : sequence of str
        Its command-line arguments (the same for every process).
    timeout : float
        Seconds for the whole launch; past them every process is killed.
    out_dir : Path
        An empty directory for the results (one ``.npz`` per process).
    check : bool
        Raise :class:`Failed` unless every process exits with 0 in time.
    on_start : callable, optional
        ``(processes) -> None``, called once all are started (e.g. to kill one).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    coordinator = f"127.0.0.1:{free_port()}"
    root = Path(__file__).resolve().parents[1]
    procs = []
    for i in range(num_processes):
        env = dict(os.environ, **{
            PROCESS_ID: str(i), NUM_PROCESSES: str(num_processes), COORDINATOR: coordinator,
            OUT_DIR: str(out_dir),
            "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices_per_process}",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(root),
                                                        os.environ.get("PYTHONPATH")])),
            "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "2"})
        procs.append(subprocess.Popen([sys.executable, str(script), *map(str, args)],
                                      env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True,
                                      start_new_session=True))
    if on_start is not None:
        on_start(procs)
    deadline = time.monotonic() + timeout
    outputs, timed_out = [], False
    for p in procs:
        try:
            outputs.append(p.communicate(timeout=max(0.1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            timed_out = True
            for q in procs:  # stop them all: the rest would wait on it forever
                if q.poll() is None:
                    os.killpg(q.pid, signal.SIGKILL)
            outputs.append(p.communicate())
    runs = []
    for i, (p, (out, err)) in enumerate(zip(procs, outputs)):
        path = out_dir / f"process_{i}.npz"
        results = dict(np.load(path, allow_pickle=False)) if path.exists() else {}
        runs.append(Run(None if timed_out and p.returncode < 0 else p.returncode, out, err,
                        results, out_dir))
    if check and (timed_out or any(r.returncode != 0 for r in runs)):
        what = f"timed out after {timeout} s" if timed_out else "failed"
        tails = "\n".join(f"--- process {i} (exit {r.returncode}) ---\n{r.stderr[-3000:]}"
                          for i, r in enumerate(runs))
        raise Failed(f"{num_processes}-process run of {Path(script).name} {what}\n{tails}",
                     runs)
    return runs


def join():
    """In a worker: select the gloo CPU collectives and join the launch's processes
    (``jax.distributed.initialize`` on the coordinator :func:`launch` chose). Returns
    the process index. A single process joins too, as a user's script would."""
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=os.environ[COORDINATOR],
                               num_processes=int(os.environ[NUM_PROCESSES]),
                               process_id=int(os.environ[PROCESS_ID]),
                               heartbeat_timeout_seconds=HEARTBEAT_TIMEOUT,
                               shutdown_timeout_seconds=HEARTBEAT_TIMEOUT,
                               initialization_timeout=60)
    return jax.process_index()


def out_dir() -> str:
    """In a worker: the launch's output directory (shared by its processes)."""
    return os.environ[OUT_DIR]


def write(**arrays):
    """In a worker: save this process's results (plain arrays) for :func:`launch`."""
    path = Path(os.environ[OUT_DIR]) / f"process_{os.environ[PROCESS_ID]}.npz"
    np.savez(path, **{k: np.asarray(v) for k, v in arrays.items()})
