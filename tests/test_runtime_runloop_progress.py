"""Progress bars that count updates, with a rate and ETA measured after compilation
(issue 46, item 7)."""

import re
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import numpyro_ugm as ugm
from numpyro_ugm.runtime import runloop


class Recorded(runloop.tqdm):
    """The bar, its last line kept."""

    lines = []

    def update(self, n=1):
        super().update(n)
        Recorded.lines.append(str(self))

    def close(self):
        if not self.disable:
            Recorded.lines.append(str(self))
        super().close()


def test_a_thinned_run_counts_updates(monkeypatch):
    """Before: thinning=10 showed 10/10 for 100 updates."""
    monkeypatch.setattr(runloop, "tqdm", Recorded)
    Recorded.lines = []
    data = {"x": np.where(np.random.default_rng(0).random((20, 4)) < 0.5, 1, -1)}
    ugm.MLE(ugm.models.vbm, ugm.PCD(4), optax.sgd(0.01)).run(
        jax.random.PRNGKey(0), 100, data, 4, thinning=10, progress_bar=True)
    assert re.search(r"100/100 \[.*update", Recorded.lines[-1]), Recorded.lines[-1]


def test_the_rate_leaves_out_the_first_chunk(monkeypatch):
    """The first chunk compiles: before, its time went into the rate (an ETA of 13
    minutes for a 10-second run)."""
    monkeypatch.setattr(runloop, "tqdm", Recorded)
    Recorded.lines = []

    def advance(state, length):
        time.sleep(2.0 if state == 0 else 0.1)
        return state + length, {"step": np.arange(length)}

    runloop.run_loop(advance, 0, 10, chunk=1, progress_bar=True)
    early = next(line for line in Recorded.lines if " 3/10 " in line)  # the third chunk
    rate = float(re.search(r"([\d.]+)(?:step|it)/s", early).group(1))
    assert rate > 5, early  # about 10 steps/s; before, below 1 (an ETA of 10 s, not 1)


def test_a_float32_fit_stops_converged_at_the_dtypes_resolution():
    """Item 6. Before: a gradient-norm tolerance of 1e-6 that float32 cannot reach on an
    objective of order 1e4: all 100 steps ran and reported converged=False, at the
    optimum reached within a few steps."""
    x = jnp.asarray(np.random.default_rng(0).normal(size=(5000, 4)), jnp.float32)

    def loss(p):
        z = x @ p
        return 1e4 * jnp.mean(jnp.logaddexp(0.0, z) - 0.3 * z), 0.0

    result = runloop.minimize(loss, jnp.zeros(4, jnp.float32), None, 100,
                              progress_bar=False)
    assert result.converged and result.num_steps < 10, (result.num_steps, result.grad_norm)
    assert float(result.grad_norm) > 1e-6  # not by the absolute tolerance
    # the optimum in float64 (Newton's method)
    x64, p = np.asarray(x, np.float64), np.zeros(4)
    for _ in range(20):
        s = 1 / (1 + np.exp(-x64 @ p))
        p -= np.linalg.solve(x64.T @ (x64 * (s * (1 - s))[:, None]), x64.T @ (s - 0.3))
    np.testing.assert_allclose(result.params, p, atol=1e-6)
