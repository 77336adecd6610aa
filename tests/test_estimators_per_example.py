"""The per-example (CRF) estimator wrapper (estimators/per_example.py): an update moves
only the chains of the batch's examples, each exactly as the wrapped estimator on the
model bound to that example's inputs; the wrapper turns the log Z check off. (Learning a
CRF with it end to end: test_learn_crf.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro

import numpyro_ugm as ugm
from numpyro_ugm.model.validation import validate_data
from numpyro_ugm.estimators.per_example import ConditionalBatch, PerExample


def chain_crf(n, field):
    """A chain of spins whose unary field is a per-example input."""
    J = numpyro.param("J", jnp.asarray(0.3))
    y = numpyro.sample("y", ugm.Spin(n))
    numpyro.factor("unary", jnp.sum(field * y))
    numpyro.factor("pairs", J * jnp.sum(y[:-1] * y[1:]))


def test_per_example_wrapper_updates_only_the_batch_examples():
    n, num = 4, 3
    fields = jnp.asarray(np.random.default_rng(2).normal(size=(num, n)), jnp.float32)
    m = ugm.UGM(chain_crf, n, field=fields[0]).observe(["y"])
    data = validate_data(m.target().state_sites, {"y": np.ones((num, n), np.int8)})
    params = m.init_params(jax.random.PRNGKey(0))
    wrapper = PerExample(ugm.PCD(8))
    assert wrapper.num_particles == 8
    state = wrapper.init(jax.random.PRNGKey(1), m.target(), params,
                         ConditionalBatch(data, {"field": fields}))
    assert state.position["y"].shape == (num, 8, n)
    index = jnp.array([2, 0])
    take = lambda tree: jax.tree.map(lambda a: a[index], tree)  # noqa: E731
    key = jax.random.PRNGKey(3)
    new, particles, info = wrapper.update(
        key, state, m.target(), params, ConditionalBatch(take(data), {"field": fields[index]}, index))
    assert particles.position["y"].shape == (2, 8, n)
    np.testing.assert_array_equal(new.position["y"][1], state.position["y"][1])  # kept
    # example 2's chains: exactly the wrapped estimator run on the model bound to its
    # inputs, with the wrapper's key for it
    own_key = jax.random.split(key, 2)[0]
    own, _, _ = ugm.PCD(8).update(own_key, jax.tree.map(lambda a: a[2], state),
                                  m.target().bind(field=fields[2]), params,
                                  {"y": data["y"][2][None]})
    np.testing.assert_array_equal(new.position["y"][2], own.position["y"])
    assert float(info.ess) == 8.0


def test_per_example_turns_the_log_z_check_off():
    """One case bounds log Z weakly, and under vmap the re-anneal branch would run for
    every example at every update."""
    assert PerExample(ugm.PF(8)).estimator.check_log_z is False
    assert PerExample(ugm.MCMCMLE(8)).estimator == ugm.MCMCMLE(8, check_log_z=False)
    assert PerExample(ugm.PCD(8)).estimator == ugm.PCD(8)
