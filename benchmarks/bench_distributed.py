"""The overhead of JAX's multi-controller runtime: one learning step of the same program
on 2 CPU devices, as 2 processes with 1 device each (``jax.distributed``, gloo
collectives over the loopback address) against 1 process with 2 devices.

Both run the same 2-device mesh, so the numbers they compute are the same; what differs
is that the collectives of the step (the sums of the gradient and of the ESS over the
particles, the all-gathers of a minibatch) cross a process boundary over TCP instead of
shared memory, and that each process dispatches its half of the step itself.

The model: an RBM (``ugm.models.rbm``) learned by PCD-1 with ``MLE.update`` on minibatches
of random binary data, at two sizes (small: 64 visible, 32 hidden, 256 particles and
examples a batch; larger: 256 visible, 128 hidden, 2,048 each). The median time of one
update (each ``update`` waits for its step) after the first (compilation). The two
settings are measured in the same invocation, alternating, twice each, and the ratio is
of the medians over both rounds.

The local launch of the processes is the test suite's (``tests/multiprocess.py``).

Run: python benchmarks/bench_distributed.py
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import multiprocess  # noqa: E402

SIZES = {"small": (64, 32, 256), "larger": (256, 128, 2048)}
STEPS, ROUNDS = 30, 2


def worker():
    """One process: time ``STEPS`` updates at each size, write the medians."""
    multiprocess.join()
    import jax
    import numpy as np
    import optax

    import numpyro_ugm as ugm

    mesh = jax.make_mesh((len(jax.devices()),), ("particles",))
    out = {}
    for name, (visible, hidden, count) in SIZES.items():
        rng = np.random.default_rng(0)
        data = {"v": (rng.random((8 * count, visible)) < 0.3).astype(np.int8)}
        mle = ugm.MLE(ugm.models.rbm, ugm.PCD(count), optax.sgd(0.01), mesh=mesh)
        state = mle.init(jax.random.PRNGKey(0), data, visible, hidden, batch_size=count)
        state, _ = mle.update(state)  # compiles
        times = []
        for _ in range(STEPS):
            start = time.perf_counter()
            state, _ = mle.update(state)
            times.append(time.perf_counter() - start)
        out[name] = np.median(times)
    multiprocess.write(**out)


def main():
    import tempfile

    import numpy as np

    from _report import report

    settings = {"2 processes x 1 device": (2, 1), "1 process x 2 devices": (1, 2)}
    times = {(s, n): [] for s in settings for n in SIZES}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(ROUNDS):
            for setting, (processes, devices) in settings.items():
                runs = multiprocess.launch(
                    __file__, ["--worker"], num_processes=processes,
                    devices_per_process=devices, timeout=600,
                    out_dir=Path(tmp) / f"{r}-{processes}")
                for name in SIZES:  # a step ends when its slowest process ends
                    times[setting, name].append(max(float(run.results[name])
                                                    for run in runs))
    for name, (visible, hidden, count) in SIZES.items():
        medians = {s: float(np.median(times[s, name])) for s in settings}
        ratio = medians["2 processes x 1 device"] / medians["1 process x 2 devices"]
        for setting, seconds in medians.items():
            rounds = ", ".join(f"{1e3 * t:.2f}" for t in times[setting, name])
            print(f"{name} RBM {visible}x{hidden}, PCD-1, {count} particles: {setting}: "
                  f"{1e3 * seconds:.2f} ms a step (rounds: {rounds} ms)")
        report(f"jax.distributed overhead, RBM {visible}x{hidden} PCD-1 {count} particles",
               f"{ratio:.2f}x",
               "time of one step as 2 processes x 1 CPU device over 1 process x 2 devices")


if __name__ == "__main__":
    worker() if "--worker" in sys.argv else main()
