"""What the learner checks and keys its compiled steps on (learn/setup.py): data of the
same layout reuses the compiled steps, and the data used is always the data passed."""

import jax
import numpy as np
from helpers.learning import make

import numpyro_ugm as ugm


def test_data_changed_in_place_or_at_a_reused_address_is_the_data_used(spins, count_traces):
    """The learner uses the data passed on each call (not a copy cached by the arrays'
    identity), and data of the same layout reuses the compiled steps."""
    x = np.array(spins["x"])
    model = count_traces(ugm.models.vbm)
    learner = make(model=model)
    # the model's initial parameters (zeros), given: drawing them would trace the model
    start = {"W": np.zeros((6, 6), np.float32), "b": np.zeros(6, np.float32)}
    learner.run(jax.random.PRNGKey(1), 5, {"x": x}, 6, init_params=start, progress_bar=False)
    x[:] = -x  # in place: the same array object
    with model.unchanged("a second run on data of the same layout"):
        changed = learner.run(jax.random.PRNGKey(1), 5, {"x": x}, 6, init_params=start,
                              progress_bar=False)
    fresh = make().run(jax.random.PRNGKey(1), 5, {"x": x.copy()}, 6, progress_bar=False)
    for name in fresh.params:
        np.testing.assert_array_equal(changed.params[name], fresh.params[name])
