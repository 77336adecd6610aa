"""Shared pieces of the lattice benchmarks (bench_gibbs_grid.py, bench_gmrf_lattice.py):
the checkerboard packing of a hand-written sweep, and interleaved timing."""

import time

import jax
import jax.numpy as jnp
import numpy as np


def checkerboard_packing(size):
    """``(pack, unpack)``: a batch of ``(chains, size, size)`` grids to the two colours of
    the checkerboard, each ``(chains, size, size // 2)`` (row r of colour a holds the
    columns of parity r % 2), and back."""
    rows = np.arange(size)[:, None]
    cols_a = 2 * np.arange(size // 2)[None, :] + rows % 2
    cols_b = 2 * np.arange(size // 2)[None, :] + 1 - rows % 2

    def pack(x):
        return x[:, rows, cols_a], x[:, rows, cols_b]

    def unpack(packed):
        a, b = packed
        x = jnp.zeros(a.shape[:1] + (size, size), a.dtype)
        return x.at[:, rows, cols_a].set(a).at[:, rows, cols_b].set(b)

    return pack, unpack


def interleaved_best(runs, states, repeats, key):
    """Best seconds per call of each ``runs[name](key, state)``, timed interleaved (one
    call of each per round, so that load from elsewhere hits all); returns the times and
    the final states."""
    best = {name: np.inf for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            key, sub = jax.random.split(key)
            t = time.perf_counter()
            states[name] = jax.block_until_ready(run(sub, states[name]))
            best[name] = min(best[name], time.perf_counter() - t)
    return best, states
