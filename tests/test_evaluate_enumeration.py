"""Exact evaluation by enumeration (evaluate/_enumeration.py, reached through ``exact``:
log Z, log-probabilities, log-likelihoods, marginals, expectations and their checks),
checked against brute force written here: itertools over every configuration, each
evaluated with ``m.target().log_potential`` and summed in float64. (The exact fits and exact
sampling of evaluate/exact.py: test_evaluate_exact.py; the models ``vbm``, ``rbm`` and
``potts`` are fixtures of conftest.py.)"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from helpers.models import normal_params, spins3
from helpers.states import all_states
from scipy.special import logsumexp

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact

# --- brute force ----------------------------------------------------------------------------


_BRUTE = {}


def brute_f(m, params, states):
    """f at each of a batch of states, float64 (one compiled function per model)."""
    if id(m) not in _BRUTE:
        _BRUTE[id(m)] = (m, jax.jit(jax.vmap(m.target().log_potential, in_axes=(None, 0))))
    f = _BRUTE[id(m)][1]
    return np.asarray(f(params, {k: jnp.asarray(v) for k, v in states.items()}), np.float64)


def brute_log_z(m, params):
    return logsumexp(brute_f(m, params, all_states(m)))


def brute_probs(m, params):
    states = all_states(m)
    f = brute_f(m, params, states)
    return states, np.exp(f - logsumexp(f))


def brute_grad_log_z(m, params):
    states, p = brute_probs(m, params)
    grads = jax.jit(jax.vmap(lambda x: jax.grad(m.target().log_potential)(params, x)))(states)
    return {k: np.einsum("s,s...->...", p, np.asarray(v, np.float64)) for k, v in grads.items()}


def brute_log_marginal(m, params, observed):
    """log Σ_latent exp f(observed_n, latent) for each example (model representation)."""
    latent = [s for s in m.target().state_sites if s not in observed]
    hidden = all_states(m, latent)
    num_hidden = len(next(iter(hidden.values())))
    num_examples = len(next(iter(observed.values())))
    states = {s: np.tile(v, (num_examples,) + (1,) * (v.ndim - 1)) for s, v in hidden.items()}
    for s, v in observed.items():
        states[s] = np.repeat(v, num_hidden, axis=0)
    f = brute_f(m, params, states).reshape(num_examples, num_hidden)
    return logsumexp(f, axis=1)


# --- models -------------------------------------------------------------------------------


def cubic(nx, ny):
    """Binary model with all third-order interactions z_i z_j z_k (i < j < k) and fields,
    z = (x, y): two sites, so that ``y`` can be latent (its variables interact)."""
    n = nx + ny
    T = numpyro.param("T", jnp.zeros((n, n, n)))
    b = numpyro.param("b", jnp.zeros(n))
    x = numpyro.sample("x", ugm.Binary(nx))
    y = numpyro.sample("y", ugm.Binary(ny))
    z = jnp.concatenate([x, y])
    i, j, k = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    mask = jnp.asarray((i < j) & (j < k), jnp.float32)
    numpyro.factor("triples", jnp.einsum("ijk,i,j,k->", mask * T, z, z, z))
    numpyro.factor("fields", b @ z)


def absolute(n):
    """Not multilinear: |Σ x| and |x_i - x_{i+1}| are not products of variables."""
    a = numpyro.param("a", 0.0)
    J = numpyro.param("J", jnp.zeros(n - 1))
    b = numpyro.param("b", jnp.zeros(n))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("total", a * jnp.abs(jnp.sum(x)) ** 1.5)
    numpyro.factor("steps", -J @ jnp.abs(x[1:] - x[:-1]))
    numpyro.factor("fields", b @ x)


def triangle_and_pair():
    """A triangle p - q - r with a 16-valued r, and a separate pair x1 - x2. The coloring
    puts r alone in the heaviest class; extending it to a maximal non-interacting set may
    add x1 or x2, not both."""
    A = numpyro.param("A", jnp.zeros((2, 16)))
    J = numpyro.param("J", jnp.zeros(2))
    b = numpyro.param("b", jnp.zeros(4))
    t = numpyro.sample("t", ugm.Binary(2))
    r = numpyro.sample("r", ugm.Categorical(1, num_categories=16))
    x = numpyro.sample("x", ugm.Spin(2))
    numpyro.factor("triangle", t @ A @ r[0] + J[0] * t[0] * t[1])
    numpyro.factor("pair", J[1] * x[0] * x[1])
    numpyro.factor("fields", b @ jnp.concatenate([t, x]))


# --- log Z -----------------------------------------------------------------------------------


def test_vbm_log_z_any_chunk_size(vbm):
    m, params = vbm
    expected = brute_log_z(m, params)
    # summing out one spin only halves the enumeration: not done unless asked for
    assert exact.num_enumerated(m) == (2 ** 9, {})
    num, summed = exact.num_enumerated(m, sum_out=True)
    assert num == 2 ** 8 and len(summed["x"]) == 1
    # chunks that do not divide the number of enumerated configurations
    for chunk_size, sum_out in ((37, True), (2 ** 14, True), (100, False), (2 ** 14, "auto")):
        got = exact.log_partition(m, params, chunk_size=chunk_size, sum_out=sum_out)
        np.testing.assert_allclose(got, expected, rtol=2e-6, err_msg=f"{chunk_size=}")
    with pytest.raises(ValueError, match="^log_partition: chunk_size must be an integer"):
        exact.log_partition(m, params, chunk_size=37.5)


@pytest.fixture(scope="module")
def third_order():
    m = ugm.UGM(cubic, 5, 3)
    return m, normal_params(m, 4, 0.8)


def test_third_order_binary_log_z(third_order):
    m, params = third_order
    assert m.target().structure.multilinear
    np.testing.assert_allclose(exact.log_partition(m, params, chunk_size=50),
                               brute_log_z(m, params), rtol=2e-6)


def test_potts_chain_log_z(potts):
    m, params = potts
    num, summed = exact.num_enumerated(m)
    assert num == 3 ** 3  # every other variable of the chain is summed out
    np.testing.assert_allclose(exact.log_partition(m, params, chunk_size=10),
                               brute_log_z(m, params), rtol=2e-6)
    np.testing.assert_allclose(exact.log_partition(m, params, sum_out=False),
                               brute_log_z(m, params), rtol=2e-6)


def test_sum_out_set_is_extended_but_stays_non_interacting():
    m = ugm.UGM(triangle_and_pair)
    params = normal_params(m, 8, 1.0)
    num, summed = exact.num_enumerated(m)
    assert num == 2 ** 3  # r (16 values) and one of x1, x2 summed out
    assert summed["r"] is None and len(summed["x"]) == 1
    np.testing.assert_allclose(exact.log_partition(m, params), brute_log_z(m, params),
                               rtol=2e-6)


def test_not_multilinear_is_enumerated_in_full():
    m = ugm.UGM(absolute, 7)
    params = normal_params(m, 5, 0.7)
    assert not m.target().structure.multilinear
    assert exact.num_enumerated(m) == (2 ** 7, {})
    np.testing.assert_allclose(exact.log_partition(m, params, chunk_size=29),
                               brute_log_z(m, params), rtol=2e-6)
    g = jax.grad(lambda p: exact.log_partition(m, p, chunk_size=29))(params)
    expected = brute_grad_log_z(m, params)
    for k in params:
        np.testing.assert_allclose(g[k], expected[k], atol=2e-5, err_msg=k)


def test_log_z_changes_with_params(vbm):
    """Guards against an answer that ignores the parameters."""
    m, params = vbm
    other = {k: v * 1.3 for k, v in params.items()}
    a, b = exact.log_partition(m, params), exact.log_partition(m, other)
    assert abs(float(a) - float(b)) > 0.1
    np.testing.assert_allclose(b, brute_log_z(m, other), rtol=2e-6)


# --- gradients ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["vbm", "potts", "rbm"])
def test_grad_log_z_is_model_expectation(name, request):
    m, params = request.getfixturevalue(name)
    g = jax.jit(jax.grad(lambda p: exact.log_partition(m, p, chunk_size=24,
                                                       sum_out=True)))(params)
    expected = brute_grad_log_z(m, params)
    for k in params:
        np.testing.assert_allclose(g[k], expected[k], atol=2e-5, err_msg=k)


# --- likelihood with latent sites -------------------------------------------------------------


def test_rbm_log_likelihood_hidden_summed(rbm):
    m, params = rbm
    rng = np.random.default_rng(0)
    v = rng.integers(0, 2, size=(13, 6)).astype(np.int8)
    log_z = brute_log_z(m, params)
    expected = brute_log_marginal(m, params, {"v": v.astype(np.float32)}) - log_z
    np.testing.assert_allclose(exact.log_prob(m, params, {"v": v}), expected, atol=2e-5)
    np.testing.assert_allclose(exact.log_likelihood(m, params, {"v": v}, chunk_size=4),
                               expected.mean(), atol=2e-5)
    # the other way round: hidden observed, visibles latent
    h = rng.integers(0, 2, size=(5, 4))
    expected = brute_log_marginal(m, params, {"h": h.astype(np.float32)}) - log_z
    np.testing.assert_allclose(exact.log_likelihood(m, params, {"h": h}), expected.mean(),
                               atol=2e-5)


def test_interacting_latent_sites_enumerated_per_example(third_order):
    m, params = third_order
    assert not m.target().structure.independent(("y",))  # no closed form: enumerated per example
    x = np.random.default_rng(1).integers(0, 2, size=(7, 5))
    expected = brute_log_marginal(m, params, {"x": x.astype(np.float32)}) - brute_log_z(m,
                                                                                       params)
    for chunk_size in (3, 2 ** 14):
        np.testing.assert_allclose(exact.log_prob(m, params, {"x": x}, chunk_size=chunk_size),
                                   expected, atol=2e-5)


def test_fully_observed_log_likelihood(potts):
    m, params = potts
    labels = np.random.default_rng(2).integers(0, 3, size=(11, 6))
    states = {"x": np.eye(3, dtype=np.float32)[labels]}
    expected = brute_f(m, params, states) - brute_log_z(m, params)
    np.testing.assert_allclose(exact.log_likelihood(m, params, {"x": labels}),
                               expected.mean(), atol=2e-5)


def test_log_likelihood_compiles_once_per_power_of_two_of_examples():
    """``log_likelihood`` and ``log_prob`` used to compile and keep a program for every
    data length (about 10 MB each, until memory ran out): the example axis is padded to a
    power of two and the padding masked, so 5 to 8 examples share one program (the model
    is traced only when a program is), and the values stay exact."""
    calls = []

    def counted_vbm(n):
        calls.append(1)  # runs only when the model is traced
        return ugm.models.vbm(n)

    m = ugm.UGM(counted_vbm, 5)
    params = normal_params(m, 3, 0.5)
    x = np.random.default_rng(4).choice([-1, 1], size=(9, 5)).astype(np.int8)
    expected = brute_f(m, params, {"x": x.astype(np.float32)}) - brute_log_z(m, params)
    exact.log_likelihood(m, params, {"x": x[:5]})
    exact.log_prob(m, params, {"x": x[:5]})
    traced = len(calls)
    for n in (5, 6, 7, 8):
        np.testing.assert_allclose(exact.log_likelihood(m, params, {"x": x[:n]}),
                                   expected[:n].mean(), atol=2e-5)
        got = exact.log_prob(m, params, {"x": x[:n]})
        assert got.shape == (n,)
        np.testing.assert_allclose(got, expected[:n], atol=2e-5)
    assert len(calls) == traced
    exact.log_likelihood(m, params, {"x": x})  # 9 examples: the next power of two
    assert len(calls) > traced
    # the padding stays out of gradients too
    grad = jax.grad(lambda p: exact.log_likelihood(m, p, {"x": x[:6]}))(params)
    want = jax.grad(lambda p: jnp.mean(jax.vmap(m.target().log_potential, (None, 0))(
        p, {"x": jnp.asarray(x[:6], jnp.float32)})) - exact.log_partition(m, p))(params)
    for k in want:
        np.testing.assert_allclose(grad[k], want[k], rtol=1e-4, atol=1e-5)


def test_evaluation_checks_its_chunk_size(rbm):
    m, params = rbm
    v = np.zeros((2, 6), np.int8)
    for call in (lambda c: exact.log_likelihood(m, params, {"v": v}, chunk_size=c),
                 lambda c: exact.log_prob(m, params, {"v": v}, chunk_size=c),
                 lambda c: exact.marginals(m, params, chunk_size=c),
                 lambda c: exact.expectation(m, params, lambda s: s["v"], chunk_size=c),
                 lambda c: exact.log_partition(m, params, chunk_size=c)):
        for bad in (0, 2.5, float("nan")):
            with pytest.raises(ValueError, match="chunk_size must be an integer >= 1"):
                call(bad)


def test_bad_data_is_rejected(rbm):
    m, params = rbm
    with pytest.raises(ValueError, match="outside the domain"):
        exact.log_likelihood(m, params, {"v": np.full((2, 6), 2)})
    with pytest.raises(KeyError, match="not state sites"):
        exact.log_likelihood(m, params, {"z": np.zeros((2, 6))})


# --- expectations and marginals -------------------------------------------------------------


@pytest.mark.parametrize("name", ["rbm", "potts"])
def test_marginals(name, request):
    m, params = request.getfixturevalue(name)
    states, p = brute_probs(m, params)
    got = exact.marginals(m, params, chunk_size=5)
    for s, d in m.target().state_sites.items():
        if isinstance(d, ugm.Categorical):
            onehot = states[s]
        else:
            onehot = np.stack([states[s] == v for v in d.values], -1).astype(np.float64)
        expected = np.einsum("s,s...->...", p, onehot)
        assert got[s].shape == tuple(d.shape_) + (d.num_values,)
        np.testing.assert_allclose(got[s], expected, atol=2e-6, err_msg=s)


def test_expectation_of_a_pytree(rbm):
    m, params = rbm
    states, p = brute_probs(m, params)
    fn = lambda x: {"vh": jnp.outer(x["v"], x["h"]), "n": jnp.sum(x["v"]) ** 2}  # noqa: E731
    got = exact.expectation(m, params, fn, chunk_size=100)
    vh = np.einsum("s,si,sj->ij", p, states["v"], states["h"])
    n2 = np.sum(p * states["v"].sum(1) ** 2)
    np.testing.assert_allclose(got["vh"], vh, atol=2e-6)
    np.testing.assert_allclose(got["n"], n2, rtol=2e-6)


# --- a large RBM against its independent closed form --------------------------------------------


def test_rbm_784x10_against_closed_form():
    V, H = 784, 10
    m = ugm.UGM(ugm.models.rbm, V, H)
    rng = np.random.default_rng(3)
    W, b, c = rng.normal(0, 0.1, (V, H)), rng.normal(0, 0.5, V), rng.normal(0, 0.5, H)
    params = {"W": jnp.asarray(W, jnp.float32), "b": jnp.asarray(b, jnp.float32),
              "c": jnp.asarray(c, jnp.float32)}
    num, summed = exact.num_enumerated(m)
    assert num == 2 ** H and summed == {"v": None}
    hs = np.array(list(itertools.product([0.0, 1.0], repeat=H)))  # (1024, H)
    terms = hs @ c + np.logaddexp(0.0, b[None, :] + hs @ W.T).sum(1)
    log_z = logsumexp(terms)
    np.testing.assert_allclose(exact.log_partition(m, params), log_z, rtol=1e-6)
    v = (rng.random((5, V)) < 0.3).astype(np.int8)
    free = v @ b + np.logaddexp(0.0, c + v @ W).sum(1)
    np.testing.assert_allclose(exact.log_prob(m, params, {"v": v}), free - log_z, rtol=1e-5)


# --- float64 ----------------------------------------------------------------------------------------


def test_float64(potts):
    m, params = potts
    with jax.enable_x64(True):
        params = {k: jnp.asarray(v, jnp.float64) * 2.0 for k, v in params.items()}
        got = exact.log_partition(m, params, chunk_size=7)
        assert got.dtype == jnp.float64
        states = all_states(m)
        f = jax.vmap(lambda x: m.target().log_potential(params, x))(
            {k: jnp.asarray(v, jnp.float64) for k, v in states.items()})
        np.testing.assert_allclose(got, logsumexp(np.asarray(f)), rtol=1e-12)


def test_too_many_configurations():
    m = ugm.UGM(ugm.models.vbm, 32)
    with pytest.raises(ValueError, match="exact enumeration would need"):
        exact.log_partition(m, {"W": jnp.zeros((32, 32)), "b": jnp.zeros(32)}, sum_out=False)


#: bad parameters of ``helpers.chain3`` and the error each gives (issue 13, item 1)
BAD_PARAMS = [
    (lambda p: {"hh": p["h"], "J": p["J"]}, KeyError,
     r"params has name\(s\) \['hh'\] that are not parameter sites of the model \(did you "
     r"mean 'h' for 'hh'\?\); its parameter sites are \['h', 'J'\]"),
    (lambda p: {"h": p["h"]}, KeyError, r"parameter site 'J' is missing from params"),
    (lambda p: {**p, "h": p["h"].at[1].set(jnp.nan)}, FloatingPointError,
     r"parameter site 'h' holds a non-finite value nan at index \(1,\)"),
    (lambda p: {**p, "h": jnp.ones(4)}, ValueError,
     r"parameter site 'h' has shape \(4,\), the model expects \(3,\)"),
    (lambda p: {**p, "J": 1}, TypeError, r"parameter site 'J' has dtype int\d+; parameters "
                                         r"are real-valued"),
]


def test_every_evaluation_checks_its_params():
    """A misspelled, missing, non-finite, misshapen or integer parameter is an error
    naming the site in every function that takes parameters (before it compiles
    anything), not a silent init value, NaN or raw JAX error; the right ones give the
    exact log Z, and traced ones are checked too."""
    m, params, log_z, data = spins3()
    calls = {
        "log_partition": lambda p: exact.log_partition(m, p),
        "log_likelihood": lambda p: exact.log_likelihood(m, p, data),
        "log_prob": lambda p: exact.log_prob(m, p, data),
        "marginals": lambda p: exact.marginals(m, p),
        "expectation": lambda p: exact.expectation(m, p, lambda x: x["x"]),
        "sample": lambda p: exact.sample(m, p, jax.random.PRNGKey(0), 2),
        "fit_exact": lambda p: ugm.fit_exact(m, data, params=p),
        "pseudo_log_likelihood": lambda p: ugm.pseudo_log_likelihood(m, p, data),
    }
    for bad, error, message in BAD_PARAMS:
        for name, call in calls.items():
            with pytest.raises(error, match=message):
                call(bad(params))
                pytest.fail(f"{name} accepted bad params")
    # sum_out=False: no structure analysis to pay for here
    np.testing.assert_allclose(exact.log_partition(m, params, sum_out=False), log_z,
                               rtol=1e-6)
    traced = jax.eval_shape(lambda p: exact.log_partition(m, p, sum_out=False), params)
    assert traced.shape == ()  # traced parameters pass the check (names, shapes, dtypes)
    with pytest.raises(KeyError, match="did you mean 'h' for 'hh'"):
        jax.eval_shape(lambda p: exact.log_partition(m, p), BAD_PARAMS[0][0](params))


def test_exact_evaluation_of_an_overflowing_potential_is_an_error():
    """log Z, log-probabilities, marginals and expectations that overflow to NaN or inf
    raise, naming the function and the parameter magnitudes; under a user's jit or grad
    (traced values) nothing is checked, and finite results pass."""
    m, params, log_z, data = spins3()
    overflow = {"h": jnp.full(3, 3e38, jnp.float32), "J": jnp.full((), 3e38, jnp.float32)}
    calls = {"log_partition": lambda p: exact.log_partition(m, p),
             r"log_likelihood \(its log Z\)": lambda p: exact.log_likelihood(m, p, data),
             r"log_prob \(its log Z\)": lambda p: exact.log_prob(m, p, data),
             "marginals": lambda p: exact.marginals(m, p),
             "expectation": lambda p: exact.expectation(m, p, lambda x: x["x"])}
    for owner, call in calls.items():
        with pytest.raises(FloatingPointError, match=rf"^{owner}: the result is (nan|-?inf) "
                           r"under the given params \(largest \|value\| per parameter site: "
                           r"\{'h': 3e\+38, 'J': 3e\+38\}\)"):
            call(overflow)
    assert float(jax.jit(calls["log_partition"])(params)) == pytest.approx(log_z, rel=1e-6)
    assert np.all(np.isfinite(jax.grad(lambda p: calls[
        r"log_likelihood \(its log Z\)"](p))(params)["h"]))
