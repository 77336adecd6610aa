"""The learner's compiled steps (learn/steps.py): a scan built for a power-of-two capacity,
so runs of other lengths reuse it and continue one another bit-identically."""

import jax
import numpy as np
from helpers.learning import make

import numpyro_ugm as ugm


def test_runs_of_other_lengths_reuse_the_compiled_steps(spins, count_traces):
    """The compiled scan is built for a power-of-two capacity, not the run's length:
    runs of 5 to 8 steps share one program, and continue one another bit-identically
    (12 steps at once run on a program built for 16)."""
    model = count_traces(ugm.models.vbm)
    learner = make(model=model)
    parts = learner.run(jax.random.PRNGKey(1), 5, spins, 6, progress_bar=False)
    with model.unchanged("a run of 7 steps after one of 5"):
        parts = learner.run(None, 7, spins, 6, init_state=parts.state, progress_bar=False)
    whole = make().run(jax.random.PRNGKey(1), 12, spins, 6, progress_bar=False)
    for name in whole.params:
        np.testing.assert_array_equal(parts.params[name], whole.params[name])
