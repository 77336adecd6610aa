"""CD-k (estimators/cd.py): one chain starts at each example of the batch and takes
``num_mcmc_steps`` kernel steps under the current parameters; the weights are uniform.
(Its gradient against exact enumeration: test_estimators_base.py.)"""

import jax
import jax.numpy as jnp
import numpy as np

import numpyro_ugm as ugm
from numpyro_ugm.model.validation import validate_data


def test_chains_start_at_the_batch_and_move_under_the_current_parameters():
    """Two settings of a 4-spin VBM whose one Gibbs sweep has a known outcome: couplings
    of 3 freeze an aligned configuration (a flip costs 18 nats), so the particles are the
    batch itself (a CD that started anywhere else, e.g. at random states, would not give
    the batch back); fields of 8 and no couplings turn every spin to +1 (a flip back has
    odds e^-16), so an all −1 batch comes back all +1 (a CD that did not move, or moved
    under other parameters, would not)."""
    m = ugm.UGM(ugm.models.vbm, 4)
    target = m.target()
    rows = np.where(np.arange(8)[:, None] % 2 == 0, 1, -1) * np.ones(4, np.int8)
    batch = validate_data(m.target().state_sites, {"x": rows.astype(np.int8)})
    cd = ugm.CD(num_mcmc_steps=1)
    state = cd.init(jax.random.PRNGKey(0), target, None, batch)
    update = jax.jit(lambda key, params, batch: cd.update(key, state, target, params, batch))
    frozen = {"W": jnp.full((4, 4), 3.0), "b": jnp.zeros(4)}
    _, particles, info = update(jax.random.PRNGKey(1), frozen, batch)
    np.testing.assert_array_equal(np.asarray(particles.position["x"]), rows)
    np.testing.assert_allclose(np.asarray(particles.log_weights), np.full(8, -np.log(8.0)),
                               rtol=1e-6)
    assert float(info.ess) == 8.0
    fields = {"W": jnp.zeros((4, 4)), "b": jnp.full(4, 8.0)}
    down = validate_data(m.target().state_sites, {"x": -np.ones((8, 4), np.int8)})
    _, particles, _ = update(jax.random.PRNGKey(2), fields, down)
    np.testing.assert_array_equal(np.asarray(particles.position["x"]), np.ones((8, 4)))
