"""``Target`` (numpyro_ugm/model/target.py): what the algorithms see of a model — built once
per model copy, the only owner of the fields the algorithms read (the model repeats
none of them), its free energy the exact sum over the latent sites."""

import dataclasses
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers.crf import crf3 as crf

import numpyro_ugm as ugm
from numpyro_ugm.model.target import Target


def test_built_once_per_model_copy_with_the_models_fields():
    m = ugm.UGM(ugm.models.rbm, 4, 3)
    t = m.target()
    assert isinstance(t, Target) and m.target() is t
    assert list(t.state_sites) == ["v", "h"] and t.structure.blocks == t.blocks
    shared = {n for n in dir(ugm.UGM) if not n.startswith("_")} & {
        n for n in dir(Target) if not n.startswith("_")} | (
        {n for n in vars(m) if not n.startswith("_")} & {f.name for f in dataclasses.fields(t)})
    assert not shared, f"members on both UGM and Target: {sorted(shared)}"
    assert t.latent_sites == () and t.observed_sites == ("v", "h")
    observed = m.observe(["v"])
    latent = observed.target()
    assert latent is not t and latent.latent_sites == ("h",)
    assert latent.observed_sites == ("v",) and latent.structure is t.structure
    assert t.log_num_states == pytest.approx(7 * np.log(2))
    draws = t.random_state(jax.random.PRNGKey(0), (5,))
    assert draws["v"].shape == (5, 4) and set(np.unique(draws["h"])) <= {0.0, 1.0}
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.latent_sites = ("v",)  # immutable


def test_free_energy_is_the_log_sum_over_the_latent_sites():
    m = ugm.UGM(ugm.models.rbm, 4, 3).observe(["v"])
    t = m.target()
    params = jax.tree.map(lambda a: a + 0.7 * jax.random.normal(jax.random.PRNGKey(1), a.shape),
                          m.init_params(jax.random.PRNGKey(0)))
    vs = jnp.asarray([[1, 0, 1, 1], [0, 0, 1, 0]], jnp.float32)
    hs = np.array(list(itertools.product([0.0, 1.0], repeat=3)), np.float32)
    want = [np.logaddexp.reduce([float(m.target().log_potential(params, {"v": v, "h": jnp.asarray(h)}))
                                 for h in hs]) for v in vs]
    np.testing.assert_allclose(t.free_energies(params, {"v": vs}), want, rtol=1e-5)
    assert float(t.free_energy(params, {"v": vs[0]})) == pytest.approx(want[0], rel=1e-5)
    # nothing latent: F is f itself
    full = ugm.UGM(ugm.models.rbm, 4, 3).target()
    state = {"v": vs[0], "h": jnp.asarray(hs[3])}
    assert float(full.free_energy(params, state)) == pytest.approx(
        float(m.target().log_potential(params, state)), rel=1e-6)


def test_bind_gives_each_examples_log_density_under_vmap():
    m = ugm.UGM(crf, u=jnp.ones(3))
    t = m.target()
    params = {"w": jnp.asarray(0.7)}
    state = {"x": jnp.array([1.0, -1.0, 1.0])}
    us = jnp.arange(6.0).reshape(2, 3)
    got = jax.vmap(lambda u: t.bind(u=u).logdensity_fn(params)(state))(us)
    want = [ugm.UGM(crf, u=u).target().log_potential(params, state) for u in us]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    energies = t.free_energies(params, {"x": jnp.stack([state["x"]] * 2)}, {"u": us})
    np.testing.assert_allclose(energies, want, rtol=1e-6)
