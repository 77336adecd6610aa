"""Compiled programs kept by repeated ``ugm.sample`` calls (issue 34, item 4): 200 calls on
VBM-10 (``ugm.models.vbm(10)``, 2 chains, Gibbs), each with a new ``num_samples`` (1, 2,
..., 200), then 16 calls with a new ``num_chains`` (1, ..., 16, 10 samples each).

For each series: XLA compilations (counted with ``jax.monitoring``'s backend-compile
event), traces of the model function (a counter in it), resident memory before and after
(``VmRSS``) and the peak, and the wall time. Before the fix every distinct count compiled
and kept a program of its own (about 3 s and 16 MB each); now counts up to the same power
of two share one.

Run: python benchmarks/bench_sample_memory.py [--calls 200] [--chains 16]
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from _report import peak_rss_mb, report

import numpyro_ugm as ugm

TRACES = [0]
COMPILES = [0]


def counted_vbm(n):
    """``ugm.models.vbm(n)``, counting how often it is traced."""
    TRACES[0] += 1
    W = numpyro.param("W", jnp.zeros((n, n)))
    b = numpyro.param("b", jnp.zeros(n))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("pairs", 0.5 * x @ jnp.triu(W, 1) @ x)
    numpyro.factor("fields", b @ x)


def _on_event(event, duration, **_):
    if event == "/jax/core/compile/backend_compile_duration":
        COMPILES[0] += 1


def rss_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def series(name, calls):
    """Run ``calls`` (a list of thunks) and report compiles, traces, memory and time."""
    jax.effects_barrier()
    rss0, compiles0, traces0 = rss_mb(), COMPILES[0], TRACES[0]
    t = time.perf_counter()
    for i, call in enumerate(calls):
        jax.block_until_ready(call())
        if (i + 1) % 25 == 0:
            print(f"  {name}: {i + 1} calls, {COMPILES[0] - compiles0} compiles, "
                  f"RSS {rss_mb():.0f} MB, {time.perf_counter() - t:.0f} s", flush=True)
    seconds = time.perf_counter() - t
    compiles, traces, rss1 = COMPILES[0] - compiles0, TRACES[0] - traces0, rss_mb()
    report(f"ugm.sample, {len(calls)} calls with distinct {name}: XLA compiles; model traces",
           f"{compiles}; {traces}", "VBM-10, 2 chains" if name == "num_samples" else
           "VBM-10, 10 samples")
    report(f"ugm.sample, {len(calls)} calls with distinct {name}: RSS before -> after "
           "(peak)", f"{rss0:.0f} -> {rss1:.0f} MB ({peak_rss_mb():.0f} MB)",
           f"{seconds:.0f} s in all")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--chains", type=int, default=16)
    args = parser.parse_args()
    jax.monitoring.register_event_duration_secs_listener(_on_event)
    m = ugm.UGM(counted_vbm, 10)
    rng = np.random.default_rng(0)
    params = {"W": jnp.asarray(0.3 * rng.standard_normal((10, 10)), jnp.float32),
              "b": jnp.asarray(0.3 * rng.standard_normal(10), jnp.float32)}
    key = jax.random.PRNGKey(0)
    ugm.sample(m, params, key, 1, num_chains=2)  # setup (structure analysis), not counted
    series("num_samples", [lambda n=n: ugm.sample(m, params, key, n, num_chains=2)
                           for n in range(1, args.calls + 1)])
    series("num_chains", [lambda c=c: ugm.sample(m, params, key, 10, num_chains=c)
                          for c in range(1, args.chains + 1)])


if __name__ == "__main__":
    main()
