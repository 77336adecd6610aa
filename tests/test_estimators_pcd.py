"""PCD-k (estimators/pcd.py): ``num_particles`` persistent chains, carried from one update
to the next, ``num_mcmc_steps`` kernel steps under the current parameters, uniform weights.
(Its gradient against exact enumeration: test_estimators_base.py; PF with unit weights
is PCD: test_estimators_pf.py.)"""

import jax
import jax.numpy as jnp
import numpy as np

import numpyro_ugm as ugm


def test_chains_persist_across_updates_and_ignore_the_batch():
    """Fields of 8 (no couplings) turn every spin of every chain to +1 in one sweep;
    then couplings of 3 and no fields freeze them there (a flip costs 42 nats): the
    second update's particles are still all +1, as carried in the state (chains started
    afresh at each update would be random under the second parameters' symmetric,
    frozen distribution, about half of them −1). The state's position is the particles'
    position, the weights are uniform, and the batch does not enter (PCD's chains never
    start at the data)."""
    m = ugm.UGM(ugm.models.vbm, 8)
    target = m.target()
    pcd = ugm.PCD(16)
    fields = {"W": jnp.zeros((8, 8)), "b": jnp.full(8, 8.0)}
    frozen = {"W": jnp.full((8, 8), 3.0), "b": jnp.zeros(8)}
    state = jax.jit(lambda key: pcd.init(key, target, fields, None))(jax.random.PRNGKey(0))
    start = np.asarray(state.position["x"])
    assert start.shape == (16, 8) and np.any(start == -1)  # random, not yet moved
    update = jax.jit(lambda key, state, params: pcd.update(key, state, target, params, None))
    state, particles, info = update(jax.random.PRNGKey(1), state, fields)
    np.testing.assert_array_equal(np.asarray(particles.position["x"]), np.ones((16, 8)))
    state, particles, info = update(jax.random.PRNGKey(2), state, frozen)
    np.testing.assert_array_equal(np.asarray(particles.position["x"]), np.ones((16, 8)))
    np.testing.assert_array_equal(np.asarray(state.position["x"]),
                                  np.asarray(particles.position["x"]))
    np.testing.assert_allclose(np.asarray(particles.log_weights), np.full(16, -np.log(16.0)),
                               rtol=1e-6)
    assert float(info.ess) == 16.0
