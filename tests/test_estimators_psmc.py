"""PSMC (estimators/psmc.py): the merge of the bridged persistent particles with the fresh
ones, and what the fresh particles find that a stale set cannot. (The adaptive tempering
behind it: test_estimators_tempering.py; its log Z and gradient against exact
enumeration: test_estimators_base.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact


def test_merge_weighs_each_set_by_its_size_times_its_normalizer():
    from numpyro_ugm.estimators.psmc import merge

    first = ({"x": jnp.zeros((3, 2))}, jnp.log(jnp.array([0.5, 0.25, 0.25])), jnp.log(2.0),
             jnp.asarray(0.04))
    second = ({"x": jnp.ones((1, 2))}, jnp.zeros(1), jnp.log(6.0), jnp.asarray(0.09))
    position, log_weights, log_z, log_z_var, share = merge(first, second)
    # (3·2 + 1·6) / 4 = 3; the second set holds 6 / 12 of the mass
    np.testing.assert_allclose(float(jnp.exp(log_z)), 3.0, rtol=1e-6)
    np.testing.assert_allclose(np.exp(log_weights), [0.25, 0.125, 0.125, 0.5], rtol=1e-6)
    np.testing.assert_allclose(float(share), 0.5, rtol=1e-6)
    np.testing.assert_allclose(float(log_z_var), 0.25 * 0.04 + 0.25 * 0.09, rtol=1e-6)
    assert position["x"].shape == (4, 2) and float(position["x"][3, 0]) == 1.0


@pytest.mark.slow
def test_psmc_fresh_particles_find_the_mass_a_stale_set_cannot_see():
    """Persistent particles stuck in one mode of a two-mode target (single-site Gibbs
    cannot cross): the bridge alone (``keep_fraction=1``) never sees the other mode;
    the fresh particles' own tempering does, and their normalizer estimate wins them
    weight: the merged set is closer to that mode's exact mass (0.69) than the bridge
    alone (0) or the paper's uniform re-draw (``redraw="uniform-heuristic"``, 0.99).
    Not all the way (0.47): the merge is exact for properly weighted persistent
    particles, which stuck ones are not."""
    from numpyro_ugm.estimators.psmc import PSMCState

    m = ugm.UGM(ugm.models.vbm, 8, fields=True)
    W = jnp.triu(jnp.full((8, 8), 0.6), 1)
    before = {"W": W, "b": jnp.full((8,), 0.3)}   # the + mode dominates
    after = {"W": W, "b": jnp.full((8,), -0.05)}  # the − mode now holds most of the mass
    states = np.asarray(exact.sample(m, after, jax.random.PRNGKey(0), 20000)["x"])
    exact_minus = float(np.mean(states.sum(1) < 0))
    num = 200
    # all in the + mode, as stuck chains at θ_{t−1}
    stuck = jax.tree.map(jnp.ones_like, m.target().random_state(jax.random.PRNGKey(1), (num,)))
    state = PSMCState(stuck, jnp.full((num,), -jnp.log(num)), before,
                      exact.log_partition(m, before), jnp.zeros(()))
    error = {}
    for name, psmc in (("tempered", ugm.PSMC(num)), ("bridge", ugm.PSMC(num, keep_fraction=1.0)),
                       ("heuristic", ugm.PSMC(num, redraw="uniform-heuristic"))):
        minus = []
        update = jax.jit(lambda key, psmc=psmc: psmc.update(key, state, m.target(), after, None))
        for seed in range(3):
            _, particles, info = update(jax.random.PRNGKey(seed))
            w = np.exp(np.asarray(particles.log_weights))
            minus.append(float(w @ (np.asarray(particles.position["x"]).sum(1) < 0)))
        error[name] = np.mean(minus) - exact_minus
        if name == "tempered":
            assert float(info.fresh_share) > 0.5
    assert exact_minus > 0.6 and error["bridge"] < -0.55, (error, exact_minus)
    assert error["heuristic"] > 0.2, error
    assert abs(error["tempered"]) < min(abs(error["bridge"]), abs(error["heuristic"])) - 0.05


def test_psmc_may_keep_a_single_particle():
    assert ugm.PSMC(4, keep_fraction=0.25).num_keep == 1
