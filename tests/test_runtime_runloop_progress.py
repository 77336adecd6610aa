"""Progress bars that count updates, with a rate and ETA measured after compilation
(issue 46, item 7)."""

import re
import time

import jax
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
