"""Exact log Z of a 20-spin VBM (2**20 configurations) by chunked enumeration.

For each setting, a fresh subprocess builds the model, compiles and runs
``exact.log_partition`` (and its gradient) and reports compile time, the median run time
after compilation, and the peak resident memory of the process (``ru_maxrss``) above the
resident size it had before the first call. A settings' log Z is checked against a
float64 numpy enumeration done in blocks.

Run: python benchmarks/bench_exact.py [--units 20] [--repeats 5]
"""

import argparse
import json

from _report import report, run_worker

WORKER = r"""
import json, resource, sys, time
import numpy as np
import jax, jax.numpy as jnp
import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact

n, chunk, sum_out, grad, repeats = json.loads(sys.argv[1])
sum_out = sum_out if sum_out == "auto" else bool(sum_out)
m = ugm.UGM(ugm.models.vbm, n)
rng = np.random.default_rng(0)
params = {"W": jnp.asarray(rng.normal(0, 1 / np.sqrt(n), (n, n)), jnp.float32),
          "b": jnp.asarray(rng.normal(0, 0.5, n), jnp.float32)}
num, _ = exact.num_enumerated(m, sum_out=sum_out)
f = lambda p: exact.log_partition(m, p, chunk_size=chunk, sum_out=sum_out)
fn = jax.jit(jax.value_and_grad(f) if grad else f)
jax.block_until_ready(params)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
out = jax.block_until_ready(fn(params))
first = time.perf_counter() - t
times = []
for _ in range(repeats):
    t = time.perf_counter()
    out = jax.block_until_ready(fn(params))
    times.append(time.perf_counter() - t)
run = float(np.median(times))
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
log_z = float(out[0] if grad else out)
print(json.dumps({"log_z": log_z, "compile": first - run, "run": run, "enumerated": num,
                  "peak_mb": (rss1 - rss0) / 1024, "rss_mb": rss1 / 1024}))
"""


def reference_log_z(n):
    """float64 numpy enumeration in blocks of 2**16 (same parameters as the worker)."""
    import numpy as np
    rng = np.random.default_rng(0)
    W = np.triu(rng.normal(0, 1 / np.sqrt(n), (n, n)).astype(np.float32).astype(float), 1)
    b = rng.normal(0, 0.5, n).astype(np.float32).astype(float)
    block = 2 ** 16
    parts = []
    for start in range(0, 2 ** n, block):
        idx = np.arange(start, min(start + block, 2 ** n))
        x = 2.0 * ((idx[:, None] >> np.arange(n)) & 1) - 1.0
        f = np.einsum("si,ij,sj->s", x, W, x) + x @ b
        top = f.max()
        parts.append(top + np.log(np.exp(f - top).sum()))
    parts = np.array(parts)
    return parts.max() + np.log(np.exp(parts - parts.max()).sum())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n = args.units
    expected = reference_log_z(n)
    settings = [  # (chunk, sum_out, grad)
        (2 ** 12, "auto", False),
        (2 ** 14, "auto", False),
        (2 ** 16, "auto", False),
        (2 ** 20, "auto", False),  # everything in one chunk, for contrast
        (2 ** 14, True, False),
        (2 ** 12, "auto", True),
        (2 ** 14, "auto", True),
        (2 ** 14, True, True),
    ]
    print(f"exact log Z, {n}-spin VBM ({2 ** n} configurations); float64 reference "
          f"{expected:.6f}")
    header = (f"{'chunk':>7} {'sum_out':>7} {'grad':>5} {'enumerated':>10} {'compile s':>9} "
              f"{'run s':>8} {'peak MB':>8} {'RSS MB':>7} {'|err|':>8}")
    print(header)
    print("-" * len(header))
    for chunk, sum_out, grad in settings:
        r = run_worker("-c", WORKER, json.dumps([n, chunk, sum_out, grad, args.repeats]))
        print(f"{chunk:>7} {str(sum_out):>7} {str(grad):>5} {r['enumerated']:>10} "
              f"{r['compile']:>9.2f} {r['run']:>8.3f} {r['peak_mb']:>8.1f} "
              f"{r['rss_mb']:>7.0f} {abs(r['log_z'] - expected):>8.1e}")
        if (chunk, sum_out, grad) == (2 ** 14, "auto", False):
            report(f"exact log Z, {n}-spin VBM ({2 ** n} states): run / compile / peak",
                   f"{r['run']:.3f} s / {r['compile']:.2f} s / {r['peak_mb']:.0f} MB",
                   f"chunk 2^14; |error| {abs(r['log_z'] - expected):.1e}")
    print("peak MB: growth of the process's maximum resident set during compile + runs.")


if __name__ == "__main__":
    main()
