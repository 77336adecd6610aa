"""Parameters (numpyro_ugm/params.py): the one check of user-supplied values, and the
maps between constrained and unconstrained values."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact


def model():
    scale = numpyro.param("scale", jnp.ones(2), constraint=dist.constraints.positive)
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0))
    x = numpyro.sample("x", ugm.Spin(2))
    numpyro.factor("f", beta * x[0] * x[1] + jnp.sum(scale * x))


@pytest.fixture(scope="module")
def m():
    return ugm.UGM(model)


GOOD = {"scale": jnp.array([0.5, 2.0]), "beta": jnp.asarray(0.3)}


@pytest.mark.parametrize("params, error, message", [
    ({"scale": GOOD["scale"], "bta": GOOD["beta"]}, KeyError, r"did you mean 'beta' for 'bta'"),
    ({"scale": GOOD["scale"]}, KeyError, r"parameter site 'beta' is missing"),
    ({**GOOD, "scale": jnp.ones(3)}, ValueError, r"'scale' has shape \(3,\), the model "
     r"expects \(2,\)"),
    ({**GOOD, "beta": jnp.asarray(1)}, TypeError, r"'beta' has dtype int32"),
    ({**GOOD, "beta": jnp.asarray(np.nan)}, FloatingPointError, r"'beta' holds a non-finite"),
    ({**GOOD, "scale": jnp.array([0.5, -1.0])}, ValueError,
     r"'scale' holds -1.0 at index \(1,\), outside its support"),
])
def test_bad_params_are_errors_naming_the_site(m, params, error, message):
    """A positive parameter given -1 was accepted by exact.log_partition and Exchange
    before: the check now looks at the support too."""
    with pytest.raises(error, match=message):
        m.param_space.check(params)
    with pytest.raises(error, match=message):  # every entry point runs the same check
        exact.log_partition(m, params)


def test_transforms_round_trip_and_the_jacobian_is_the_derivative(m):
    space = m.param_space
    m.param_space.check(GOOD)
    u = space.to_unconstrained(GOOD)
    np.testing.assert_allclose(u["scale"], np.log(GOOD["scale"]), rtol=1e-6)
    back = space.to_constrained(u)
    for name in GOOD:
        np.testing.assert_allclose(back[name], GOOD[name], rtol=1e-6)
    # log |d theta / d u| = sum(u) for the exp map of a positive site, 0 for a real one
    got = float(space.log_abs_det_jacobian(u))
    assert got == pytest.approx(float(jnp.sum(u["scale"])), rel=1e-6)
    assert space.has_prior and not ugm.UGM(
        lambda: numpyro.factor("f", jnp.sum(numpyro.sample("x", ugm.Spin(2))))
    ).param_space.has_prior


def test_a_neural_network_declared_by_eqx_module_is_one_pytree_valued_site():
    """``numpyro.contrib.module.eqx_module`` declares a network's arrays as one
    ``numpyro.param`` site holding a pytree: checked leaf by leaf, mapped leaf by leaf."""
    eqx = pytest.importorskip("equinox")
    from numpyro.contrib.module import eqx_module

    net = eqx.nn.Linear(2, "scalar", key=jax.random.PRNGKey(0))  # a network of one layer

    def ebm():
        x = numpyro.sample("x", ugm.Real(2))
        numpyro.factor("e", eqx_module("net", net)(x))

    m = ugm.UGM(ebm)
    params = m.init_params(jax.random.PRNGKey(1))
    space = m.param_space
    space.check(params)
    back = space.to_constrained(space.to_unconstrained(params))
    assert jax.tree.structure(back) == jax.tree.structure(params)
    wrong = {"net$params": eqx.tree_at(lambda n: n.bias, params["net$params"], jnp.zeros(4))}
    with pytest.raises(ValueError, match=r"'net\$params' has shape \(4,\) at \.bias, the "
                                         r"model expects \(1,\)$"):
        space.check(wrong)


def mlp_ebm():
    """An energy of a hand-written network whose weights are one pytree-valued site."""
    x = numpyro.sample("x", ugm.Real(2))
    w = numpyro.param("net", {"hidden": {"w": jnp.ones((2, 3)), "b": jnp.zeros(3)},
                              "out": {"w": jnp.ones(3)}})
    numpyro.factor("e", jnp.tanh(x @ w["hidden"]["w"] + w["hidden"]["b"]) @ w["out"]["w"])


@pytest.mark.parametrize("change, message", [
    (lambda w: {**w, "hidden": {**w["hidden"], "w": jnp.ones((2, 4))}},
     r"'net' has shape \(2, 4\) at \['hidden'\]\['w'\], the model expects \(2, 3\)$"),
    (lambda w: {**w, "hidden": {**w["hidden"], "b": jnp.ones(4)},
                "out": {"w": jnp.ones(4)}},
     r"'net' has shape \(4,\) at \['hidden'\]\['b'\], the model expects \(3,\) "
     r"\(and 1 other array"),
    (lambda w: {**w, "out": {"weight": jnp.ones(3)}},
     r"'net' lacks \['out'\]\['w'\] and holds \['out'\]\['weight'\], not in the "
     r"model's \(the model's site holds 3 arrays"),
], ids=["one shape", "two shapes", "structure"])
def test_a_wrong_pytree_value_is_an_error_naming_the_array(change, message):
    """A pytree-valued site given an array of another shape, or another structure: the
    error names the array by its path. Before: both structures and all leaf shapes
    printed whole (``TreeShape(structure=PyTreeDef(...), leaf_shapes=(...))`` twice),
    which for a network of many layers did not say which array was wrong."""
    m = ugm.UGM(mlp_ebm)
    params = m.init_params(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match=message):
        m.param_space.check({"net": change(params["net"])})
