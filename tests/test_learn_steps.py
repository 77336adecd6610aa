"""The learner's compiled steps (learn/steps.py): a scan built for a power-of-two capacity,
so runs of other lengths reuse it and continue one another bit-identically, and the one
attempt that MLE.update compiles per layout of the state."""

import jax
import jax.numpy as jnp
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


def test_update_runs_one_program_from_kept_or_new_leaves(spins, count_traces):
    """``MLE.update`` runs one compiled attempt per layout of the state, settled on the
    host: continuing from the state it returned (whose leaves it keeps), from an older
    state or from one of new arrays (flattened again) traces nothing again, and each
    result is ``core.update``'s."""
    model = count_traces(ugm.models.vbm)
    learner = make(model=model)
    state = learner.init(jax.random.PRNGKey(0), spins, 6)
    batch = learner.prepare(spins)
    first, _ = learner.update(state, batch)
    with model.unchanged("updates after the first"):
        second, _ = learner.update(first, batch)
        older, _ = learner.update(state, batch)
        rebuilt, _ = learner.update(jax.tree.map(jnp.array, first), batch)
    step = jax.jit(learner.core.update)
    for ours, theirs in ((older, step(state, batch.batch)[0]),
                         (second, step(first, batch.batch)[0]),
                         (rebuilt, step(first, batch.batch)[0])):
        assert jax.tree.structure(ours) == jax.tree.structure(theirs)
        for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs)):
            np.testing.assert_array_equal(a, b)
