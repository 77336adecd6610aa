"""Neural energies declared four ways (issue 47, item 3): a flax linen module
(``numpyro.contrib.module.flax_module``), a flax nnx module (``nnx_module``), a plain
pytree ``numpyro.param`` with a hand-written MLP, and an equinox module (``eqx_module``).

The four hold the same weights (copied between the layouts) and so compute the same
energy f(x) = 10 tanh(g(x) / 10) − |x|² / (2 · 3²), g a 2 → 16 → 16 → 1 SiLU MLP: each
is one pytree-valued parameter site, its log-potential and the learner's gradient are
those of the hand-written energy, it learns the same model from the same start and keys,
and its checkpoints restore.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import optax
import pytest

import numpyro_ugm as ugm
from numpyro_ugm import checkpoint

linen = pytest.importorskip("flax.linen")
nnx = pytest.importorskip("flax.nnx")
eqx = pytest.importorskip("equinox")
from numpyro.contrib.module import eqx_module, flax_module, nnx_module  # noqa: E402

WIDTH, BOUND, ENVELOPE = 16, 10.0, 3.0
BOX = (-4.0, 4.0)
WAYS = ("linen", "nnx", "pytree", "equinox")
#: the ways whose longer tests (learning, checkpoints) run by default; the others under
#: ``-m slow`` (the pytree and equinox ways share the learner's code with these)
FIRST, REST = ("linen", "nnx"), ("pytree", "equinox")
LONG_WAYS = [*FIRST, *(pytest.param(w, marks=pytest.mark.slow) for w in REST)]


# --- the network, four ways -------------------------------------------------------------


def weights(seed=0):
    """The reference weights: ``w{i}`` of shape (in, out) and ``b{i}`` per layer."""
    rng = np.random.default_rng(seed)
    sizes = (2, WIDTH, WIDTH, 1)
    out = {}
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        out[f"w{i}"] = jnp.asarray(rng.normal(size=(n_in, n_out)) / np.sqrt(n_in), jnp.float32)
        out[f"b{i}"] = jnp.asarray(0.1 * rng.normal(size=n_out), jnp.float32)
    return out


def mlp(w, x):
    """The hand-written network g(x)."""
    h = jax.nn.silu(x @ w["w0"] + w["b0"])
    h = jax.nn.silu(h @ w["w1"] + w["b1"])
    return (h @ w["w2"] + w["b2"])[..., 0]


def log_potential(w, x):
    """The hand-written energy f(x) at weights ``w`` (reference layout)."""
    g = mlp(w, x)
    return BOUND * jnp.tanh(g / BOUND) - 0.5 * jnp.sum(x ** 2, -1) / ENVELOPE ** 2


class LinenMLP(linen.Module):
    @linen.compact
    def __call__(self, x):
        x = jax.nn.silu(linen.Dense(WIDTH)(x))
        x = jax.nn.silu(linen.Dense(WIDTH)(x))
        return linen.Dense(1)(x)[..., 0]


class NnxMLP(nnx.Module):
    def __init__(self, rngs):
        self.l0 = nnx.Linear(2, WIDTH, rngs=rngs)
        self.l1 = nnx.Linear(WIDTH, WIDTH, rngs=rngs)
        self.l2 = nnx.Linear(WIDTH, 1, rngs=rngs)

    def __call__(self, x):
        return self.l2(jax.nn.silu(self.l1(jax.nn.silu(self.l0(x)))))[..., 0]


def eqx_mlp(w):
    """An equinox MLP holding ``w`` (equinox keeps each weight as (out, in))."""
    net = eqx.nn.MLP(2, "scalar", WIDTH, 2, activation=jax.nn.silu,
                     key=jax.random.PRNGKey(0))
    for i in range(3):
        net = eqx.tree_at(lambda n: (n.layers[i].weight, n.layers[i].bias), net,
                          (w[f"w{i}"].T, w[f"b{i}"]))
    return net


def dense_layers(prefix):
    """Reference layout <-> ``{prefix}{i}: {kernel, bias}`` (flax linen and nnx)."""
    def to(w):
        return {f"{prefix}{i}": {"kernel": w[f"w{i}"], "bias": w[f"b{i}"]} for i in range(3)}

    def back(p):
        return {k: p[f"{prefix}{k[1]}"]["kernel" if k[0] == "w" else "bias"]
                for k in weights()}

    return to, back


def eqx_layout():
    """Reference layout <-> the equinox parameters (the module, arrays only)."""
    def to(w):
        return eqx.filter(eqx_mlp(w), eqx.is_inexact_array)

    def back(p):
        return {k: (p.layers[int(k[1])].weight.T if k[0] == "w" else
                    p.layers[int(k[1])].bias) for k in weights()}

    return to, back


def ebm(network):
    """The EBM whose network ``network(x)`` is declared inside the model."""
    def model():
        x = numpyro.sample("x", ugm.Real(2))
        g = network(x)
        numpyro.factor("energy", BOUND * jnp.tanh(g / BOUND)
                       - 0.5 * jnp.sum(x ** 2) / ENVELOPE ** 2)

    return model


def way(name):
    """``(model, site, to, back)``: the model declaring its network ``name``'s way, its
    parameter site, and the maps from and to the reference layout."""
    if name == "linen":
        to, back = dense_layers("Dense_")
        network = lambda x: flax_module("net", LinenMLP(), input_shape=(2,))(x)  # noqa: E731
        return ebm(network), "net$params", to, back
    if name == "nnx":
        module = NnxMLP(nnx.Rngs(0))
        to, back = dense_layers("l")
        return ebm(lambda x: nnx_module("net", module)(x)), "net$params", to, back
    if name == "pytree":
        w0 = weights(1)  # its own initial values; the tests start it at weights()
        return (ebm(lambda x: mlp(numpyro.param("net", w0), x)), "net", lambda w: w,
                lambda p: p)
    to, back = eqx_layout()
    net = eqx_mlp(weights(1))
    return ebm(lambda x: eqx_module("net", net)(x)), "net$params", to, back


# --- data ---------------------------------------------------------------------------------


def eight_gaussians():
    """Train and test points of 8 Gaussians (radius 2, sd 0.2), and the mean test
    log-likelihood of the Normal fitted to the training points (the base)."""
    rng = np.random.default_rng(0)
    angles = np.arange(8) * np.pi / 4
    means = 2.0 * np.stack([np.cos(angles), np.sin(angles)], 1)
    train, test = (means[rng.integers(0, 8, n)] + 0.2 * rng.standard_normal((n, 2))
                   for n in (400, 1000))
    mu, sd = train.mean(0), train.std(0)
    base = np.mean(np.sum(-0.5 * ((test - mu) / sd) ** 2 - np.log(sd)
                          - 0.5 * np.log(2 * np.pi), 1))
    return train.astype(np.float32), test.astype(np.float32), float(base)


@pytest.fixture(scope="module")
def data():
    return eight_gaussians()


# --- tests --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", WAYS)
def test_the_network_is_one_pytree_valued_parameter_site(name):
    """The network's arrays are one ``numpyro.param`` site of the layout's structure;
    the model's own initial values pass the checks and map to the unconstrained space
    and back."""
    model, site, to, _ = way(name)
    m = ugm.UGM(model)
    assert list(m.param_sites) == [site]
    expected = to(weights())
    shape = m.param_sites[site].shape
    assert shape.structure == jax.tree.structure(expected)
    assert shape.leaf_shapes == tuple(jnp.shape(a) for a in jax.tree.leaves(expected))
    params = m.init_params(jax.random.PRNGKey(0))
    m.param_space.check(params)
    back = m.param_space.to_constrained(m.param_space.to_unconstrained(params))
    assert jax.tree.structure(back) == jax.tree.structure(params)


def test_the_four_ways_compute_the_hand_written_log_potential(data):
    """At the same weights, the four models' log-potentials are the hand-written f."""
    x = jnp.asarray(data[1][:50])
    reference = log_potential(weights(), x)
    for name in WAYS:
        model, site, to, _ = way(name)
        target = ugm.UGM(model).target()
        got = jax.vmap(target.logdensity_fn({site: to(weights())}))({"x": x})
        np.testing.assert_allclose(got, reference, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("name, path", [
    ("linen", r"\['Dense_1'\]\['bias'\]"), ("nnx", r"\['l1'\]\['bias'\]"),
    ("pytree", r"\['b1'\]"), ("equinox", r"\.layers\[1\]\.bias")])
def test_a_wrong_shape_is_an_error_naming_the_site_and_the_array(name, path, data):
    """A bias of the wrong size given to the learner: the error names the site and the
    array within it (its path in the layout), with both shapes."""
    model, site, to, _ = way(name)
    wrong = {**weights(), "b1": jnp.zeros(WIDTH + 1)}
    learner = ugm.MLE(model, ugm.PCD(8), optax.sgd(0.1))
    with pytest.raises(ValueError, match=rf"parameter site '{re.escape(site)}' has shape "
                                         rf"\(17,\) at {path}, the model expects \(16,\)$"):
        learner.init(jax.random.PRNGKey(0), {"x": data[0]}, init_params={site: to(wrong)})


@pytest.mark.parametrize("name", WAYS)
def test_the_learner_ascends_the_gradient_of_the_hand_written_energy(name, data):
    """One PCD update with SGD at rate 1 moves the weights by the learner's gradient:
    it is jax.grad of the hand-written mean f(data) − mean f(particles) at the same
    weights (the particles the update used)."""
    model, site, to, back = way(name)
    learner = ugm.MLE(model, ugm.PCD(16, kernel=ugm.kernels.mala()), optax.sgd(1.0))
    train = data[0][:100]
    state = learner.init(jax.random.PRNGKey(0), {"x": train},
                         init_params={site: to(weights())})
    new, _ = learner.update(state)
    moved = jax.tree.map(jnp.subtract, back(learner.get_params(new)[site]),
                         back(learner.get_params(state)[site]))
    particles = learner.particles(new)["x"]
    expected = jax.grad(lambda w: jnp.mean(log_potential(w, jnp.asarray(train)))
                        - jnp.mean(log_potential(w, particles)))(weights())
    for k in expected:
        np.testing.assert_allclose(moved[k], expected[k], rtol=1e-4, atol=2e-6,
                                   err_msg=f"{name} {k}")


def learn(name, train, test, steps=150, estimator=None, seed=1):
    """Test log-likelihood by quadrature after ``steps`` updates from ``weights()``
    (default: PCD-5 with unadjusted Langevin moves)."""
    model, site, to, _ = way(name)
    estimator = estimator or ugm.PCD(32, num_mcmc_steps=5,
                                     kernel=ugm.kernels.langevin(step_size=0.01))
    learner = ugm.MLE(model, estimator,
                      optax.adam(optax.cosine_decay_schedule(2e-2, steps, alpha=0.05)))
    result = learner.run(jax.random.PRNGKey(seed), steps, {"x": train}, batch_size=100,
                         init_params={site: to(weights())}, progress_bar=False)
    return ugm.quadrature.log_likelihood(model, result.params, {"x": test}, bounds=BOX,
                                         num_points=81).value


@pytest.fixture(scope="module")
def equinox_learned(data):
    return learn("equinox", *data[:2])


@pytest.mark.parametrize("name", ["linen", pytest.param("nnx", marks=pytest.mark.slow),
                                  pytest.param("pytree", marks=pytest.mark.slow)])
def test_each_way_learns_what_equinox_learns(name, data, equinox_learned):
    """From the same weights with the same keys, the learned test log-likelihood (by
    quadrature) is equinox's, and above the fitted Normal's.

    The chains move by unadjusted Langevin steps, continuous in the weights: equinox
    computes its layers as weight @ x, flax as x @ kernel, and the last-bit differences
    stay last-bit (measured: |linen − equinox| ≤ 2e-6 over three seeds). With MALA, an
    accept/reject decision that flips on such a difference sends a chain elsewhere and
    the two runs differ as two seeds do (0.002 to 0.14 over three seeds here)."""
    train, test, base = data
    got = learn(name, train, test)
    assert got > base + 0.1, (got, base)
    assert abs(got - equinox_learned) < 1e-4, (got, equinox_learned)


@pytest.mark.parametrize("name", LONG_WAYS)
def test_a_checkpoint_of_network_parameters_restores_and_continues(name, data, tmp_path):
    """A run of 4 updates checkpointed at 2: the restored state holds the network's
    arrays, and 2 updates from it give the 4-update run's weights."""
    model, site, to, back = way(name)

    def learner():
        return ugm.MLE(model, ugm.PCD(8, kernel=ugm.kernels.mala()), optax.adam(1e-2))

    train = {"x": data[0][:100]}
    result = learner().run(jax.random.PRNGKey(0), 4, train, init_params={site: to(weights())},
                           progress_bar=False, checkpoint_every=2, checkpoint_dir=tmp_path)
    again = learner()
    state, _ = again.restore(checkpoint.step_path(tmp_path, 2), train)
    assert int(state.step) == 2
    assert jax.tree.structure(state.params) == jax.tree.structure(result.state.params)
    resumed = again.run(None, 2, train, init_state=state, progress_bar=False)
    for a, b in zip(jax.tree.leaves(resumed.params), jax.tree.leaves(result.params)):
        np.testing.assert_array_equal(a, b)


def test_an_nnx_module_is_left_as_it_was_made(data):
    """``nnx_module`` calls a copy of the module at the site's value: after learning
    moved the weights, the module object holds the weights it was made with."""
    module = NnxMLP(nnx.Rngs(0))
    made = jax.tree.map(np.array, nnx.to_pure_dict(nnx.state(module, nnx.Param)))
    learner = ugm.MLE(ebm(lambda x: nnx_module("net", module)(x)), ugm.PCD(8),
                      optax.sgd(0.1))
    state, _ = learner.update(learner.init(jax.random.PRNGKey(0), {"x": data[0][:50]}))
    learned = learner.get_params(state)["net$params"]
    assert not np.allclose(learned["l0"]["kernel"], made["l0"]["kernel"])
    jax.tree.map(np.testing.assert_array_equal,
                 nnx.to_pure_dict(nnx.state(module, nnx.Param)), made)
