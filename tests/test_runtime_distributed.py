"""The same script under JAX's multi-controller runtime: 2 local processes with 2 CPU
devices each (gloo collectives on the loopback address) give the numbers of 1 process with
4 devices, write one checkpoint that resumes bit-identically, show progress and warnings
once, and stop together when one process dies (tests/multiprocess.py launches them,
tests/scripts/distributed_worker.py is the script).

The default suite runs the host-side pieces only (no learner is compiled: ~10 s); the
learning, sampling and evaluation runs and the failure tests are ``-m slow`` (several
minutes on 2 cores, mostly compilation in every process).
"""

import os
import signal
import threading
import time
from pathlib import Path

import jax
import numpy as np
import pytest

import multiprocess
import numpyro_ugm as ugm

WORKER = Path(__file__).parent / "scripts" / "distributed_worker.py"
CASES = ["learn", "steps", "smc", "pf", "psmc", "ais", "sample"]


def test_host_pieces_one_process():
    """Without jax.distributed the helpers are plain local operations."""
    assert ugm.distributed.is_primary()
    x = jax.numpy.arange(4.0)
    np.testing.assert_array_equal(ugm.distributed.to_host({"a": x})["a"], np.arange(4.0))
    ugm.distributed.agree(True, ValueError("unused"))
    with pytest.raises(ValueError, match="a check failed"):
        ugm.distributed.agree(False, ValueError("a check failed"))
    ugm.distributed.check_identical({"x": np.ones(3)}, "the data")
    ugm.distributed.barrier("nothing to wait for")
    with pytest.warns(RuntimeWarning, match="once"):
        ugm.distributed.warn("once", RuntimeWarning)


def test_host_pieces_across_two_processes(tmp_path):
    """A state split over 2 processes: one checkpoint file, restored onto the same
    devices; an error seen on one process raised on both; data that differ, or that
    each process loaded in part, refused on both."""
    runs = multiprocess.launch(WORKER, ["host"], out_dir=tmp_path, timeout=90)
    for run in runs:
        r = run.results
        np.testing.assert_array_equal(r["host_particles"], np.arange(32.0).reshape(8, 4))
        assert r["host_sharded"] and int(r["host_errors"]) == 3
        np.testing.assert_array_equal(r["host_diagnostics"], np.arange(7.0))
        assert "a check failed (on process(es) 1 of 2)" in run.stdout
        assert "the data differ between processes: process(es) 1" in run.stdout
        assert "data is a jax.Array split over several processes" in run.stdout
    assert [p.name for p in tmp_path.glob("host*")] == ["host.npz"]


@pytest.fixture(scope="module")
def launches(tmp_path_factory):
    """The worker's cases run as 2 processes x 2 devices and as 1 process x 4 devices."""
    two = multiprocess.launch(WORKER, CASES, num_processes=2, devices_per_process=2,
                              out_dir=tmp_path_factory.mktemp("two"), timeout=600)
    one = multiprocess.launch(WORKER, CASES, num_processes=1, devices_per_process=4,
                              out_dir=tmp_path_factory.mktemp("one"), timeout=600)
    return two, one


#: the largest difference allowed between 2 x 2 and 1 x 4 (measured: none, bit-identical)
TOLERANCE = {"learn_W": 1e-5, "learn_grad_norm": 1e-4, "learn_particles": 0,
             "steps_W": 1e-5, "steps_grad_norm": 1e-4, "predict_x": 0,
             "smc_log_z": 1e-4, "smc_W": 1e-5,
             **{f"{name}_{quantity}": tolerance for name in ("pf", "psmc")
                for quantity, tolerance in [("W", 1e-5), ("grad_norm", 1e-4),
                                            ("log_z", 1e-4), ("log_weights", 1e-4),
                                            ("particles", 0)]},
             "ais_log_z": 1e-4, "ais_log_w": 1e-4,
             "sample_x": 0, "sample_unsplit_x": 0}


@pytest.mark.slow
def test_two_processes_give_the_numbers_of_one(launches):
    """PCD learning with minibatches (``run``, and ``update`` on given batches), SMC's
    log Z, PF and PSMC learning (their running log Z, particles and log-weights, the
    particles split over both processes and PF resampling them), AIS, sampling and
    prediction: the same numbers on both processes, and those of one process with the
    same 4 devices."""
    two, one = launches
    for name, tolerance in TOLERANCE.items():
        a, b, c = (r.results[name] for r in (two[0], two[1], one[0]))
        np.testing.assert_array_equal(a, b, err_msg=name)
        diff = float(np.max(np.abs(a.astype(np.float64) - c.astype(np.float64))))
        print(f"{name}: largest difference 2x2 vs 1x4 {diff:.3g}")
        assert diff <= tolerance, (name, diff)
    for name in ("pf", "psmc"):
        assert [int(r.results[f"{name}_processes"]) for r in (two[0], one[0])] == [2, 1]
    assert np.sum(two[0].results["pf_resampled"]) > 0
    np.testing.assert_array_equal(two[0].results["sample_x"],
                                  two[0].results["sample_unsplit_x"])


@pytest.mark.slow
def test_progress_bar_warnings_and_checkpoints_once(launches):
    two, _ = launches
    assert "learning" in two[0].stderr and "learning" not in two[1].stderr
    assert [int(r.results["learn_warnings"]) for r in two] == [1, 0]
    for run in two:
        np.testing.assert_array_equal(run.results["learn_checkpoints"], [5, 10])


@pytest.mark.slow
def test_checkpoint_of_two_processes_resumes_bit_identically(launches, tmp_path):
    """The step-5 checkpoint of the 2-process run, restored by 2 processes and run to
    step 10, ends where the uninterrupted run did, bit for bit."""
    two, _ = launches
    source = two[0].out_dir
    runs = multiprocess.launch(WORKER, ["resume", "--from", source], out_dir=tmp_path,
                               timeout=600)
    full = two[0].results
    for run in runs:
        r = run.results
        np.testing.assert_array_equal(r["resume_W"], full["learn_W"])
        np.testing.assert_array_equal(r["resume_particles"], full["learn_particles"])
        np.testing.assert_array_equal(r["resume_grad_norm"], full["learn_grad_norm"][5:])


def _kill_process_1_when_stepping(out_dir):
    """Kill process 1 once it has made a few learning steps (the worker marks them)."""
    def on_start(procs):
        def watch():
            while not (out_dir / "stepping_1").exists():
                if procs[1].poll() is not None:
                    return
                time.sleep(0.2)
            os.kill(procs[1].pid, signal.SIGKILL)

        threading.Thread(target=watch, daemon=True).start()

    return on_start


@pytest.mark.slow
@pytest.mark.parametrize("how", ["killed", "exception"])
def test_one_process_failing_stops_every_process(how, tmp_path):
    """A process killed mid-run, or one raising an exception, ends every process with an
    error within the heartbeat / shutdown timeouts, not a hang."""
    if how == "killed":
        runs = multiprocess.launch(WORKER, ["wait"], out_dir=tmp_path, timeout=240,
                                   check=False, on_start=_kill_process_1_when_stepping(tmp_path))
        assert runs[1].returncode == -signal.SIGKILL
    else:
        runs = multiprocess.launch(WORKER, ["raise"], out_dir=tmp_path, timeout=240,
                                   check=False)
        assert "RuntimeError: process 1 fails at step 3" in runs[1].stderr
    assert all(r.returncode not in (None, 0) for r in runs), [r.returncode for r in runs]
    assert "JAX distributed service detected fatal errors" in runs[0].stderr
