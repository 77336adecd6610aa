"""Exact fits and exact sampling (evaluate/exact.py: ``fit_exact``, ``exact.sample``),
checked against brute force written here (scipy optimizers over every configuration,
frequencies against the exact marginals). The enumeration these build on (log Z,
log-probabilities, marginals): test_evaluate_enumeration.py."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import optax
import pytest
from helpers.models import chain3, potts_chain, spins3
from scipy.optimize import minimize
from scipy.special import logsumexp

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact


def test_exact_sample_of_an_overflowing_potential_is_an_error():
    m = spins3()[0]
    overflow = {"h": jnp.full(3, 3e38, jnp.float32), "J": jnp.zeros((), jnp.float32)}
    with pytest.raises(FloatingPointError, match=r"exact.sample: the log-potential or its "
                       r"conditional log-odds are not finite at configuration \d+ .*factor "
                       r"'f' = -?inf.*'h': 3e\+38"):
        exact.sample(m, overflow, jax.random.PRNGKey(0), 2)


def test_fit_map_matches_brute_force_optimum(vbm):
    m, _ = vbm
    n, prior = 9, 1.0
    rng = np.random.default_rng(4)
    x = np.where(rng.random((30, n)) < 0.7, 1, -1)
    x[:, 1] = x[:, 0] * np.where(rng.random(30) < 0.85, 1, -1)  # a strong coupling
    x[:, 2] = x[:, 0]  # a pair that always agrees: without the prior the MLE would not exist
    result = ugm.fit_exact(m, {"x": x}, num_steps=300)

    # brute force in float64: features x_i x_j (i < j) and x_i, Gaussian prior on all of W, b
    X = np.array(list(itertools.product([-1.0, 1.0], repeat=n)))
    iu = np.triu_indices(n, 1)
    phi = lambda s: np.concatenate([(s[:, :, None] * s[:, None, :])[:, iu[0], iu[1]], s], 1)  # noqa
    data_mean, phi_all = phi(x.astype(float)).mean(0), phi(X)

    def neg_objective(theta):
        f = phi_all @ theta
        log_z = logsumexp(f)
        p = np.exp(f - log_z)
        obj = data_mean @ theta - log_z - 0.5 * theta @ theta / prior ** 2 / len(x)
        grad = data_mean - p @ phi_all - theta / prior ** 2 / len(x)
        return -obj, -grad

    k = len(iu[0])
    opt = minimize(neg_objective, np.zeros(k + n), jac=True, method="BFGS",
                   options={"gtol": 1e-10})
    W = np.asarray(result.params["W"])
    theta = np.concatenate([W[iu], np.asarray(result.params["b"])])
    np.testing.assert_allclose(theta, opt.x, atol=3e-3)
    # entries of W the model does not use sit at the prior mode
    np.testing.assert_allclose(np.tril(W), 0.0, atol=1e-3)
    # objective: the brute force omits the prior's normalizing constant and the unused entries
    const = -0.5 * (n * n + n) * np.log(2 * np.pi * prior ** 2) / len(x)
    np.testing.assert_allclose(result.objective, -opt.fun + const, atol=2e-5)
    assert float(result.grad_norm) < 1e-3
    assert result.trace["objective"][0] < float(result.objective) - 0.1
    # the gradient is ~0 at the result, by the brute-force gradient (the entries of W
    # that f does not use only feel the prior and were checked above)
    assert np.max(np.abs(neg_objective(theta)[1])) < 1e-4


def test_exact_samples_follow_the_marginals(potts, count_traces):
    _, params = potts
    model = count_traces(potts_chain)  # the fixture's model, its tracing counted
    m = ugm.UGM(model, 6, 3)
    p = np.asarray(exact.marginals(m, params)["x"])
    # 729 configurations: Gumbel-max over chunks of 100, and inverse CDF over one chunk
    for chunk in (100, exact.DEFAULT_CHUNK_SIZE):
        before = model.calls
        draws = exact.sample(m, params, jax.random.PRNGKey(0), 4000, chunk_size=chunk)
        assert model.calls > before  # each chunk size is a program of its own
        assert draws["x"].shape == (4000, 6)
        freq = np.stack([(np.asarray(draws["x"]) == k).mean(0) for k in range(3)], -1)
        assert np.max(np.abs(freq - p)) < 4 * np.sqrt(0.25 / 4000)
    # second calls (the same key and parameters, then others) reuse the compiled draw
    with model.unchanged("a second exact.sample"):
        draws = exact.sample(m, params, jax.random.PRNGKey(0), 4000, chunk_size=100)
        other = exact.sample(m, jax.tree.map(lambda v: -v, params), jax.random.PRNGKey(1),
                             4000, chunk_size=100)
    assert not np.array_equal(other["x"], draws["x"])
    for settings in ({"num_samples": 40.5}, {"num_samples": 40, "chunk_size": 2.5}):
        with pytest.raises(ValueError, match="^exact.sample: (num_samples|chunk_size) must"):
            exact.sample(m, params, jax.random.PRNGKey(0), **settings)


def test_exact_samples_of_a_model_summed_out_entirely():
    """Independent variables are all summed out (one enumerated configuration, of no
    labels) and then drawn from their conditionals."""
    def independent():
        theta = numpyro.param("theta", jnp.array([1.0, -0.5, 0.0]))
        x = numpyro.sample("x", ugm.Binary(3))
        numpyro.factor("fields", theta @ x)

    m = ugm.UGM(independent)
    assert exact.num_enumerated(m)[0] == 1
    draws = exact.sample(m, {"theta": jnp.array([1.0, -0.5, 0.0])}, jax.random.PRNGKey(0),
                         4000)
    p = 1 / (1 + np.exp(-np.array([1.0, -0.5, 0.0])))
    assert np.max(np.abs(np.asarray(draws["x"]).mean(0) - p)) < 4 * np.sqrt(0.25 / 4000)


def test_fit_mle_rbm_with_adam_increases_likelihood(rbm):
    m, _ = rbm
    v = np.random.default_rng(5).integers(0, 2, size=(20, 6))
    v[:, 1] = v[:, 0]
    result = ugm.fit_exact(m, {"v": v}, num_steps=150, optimizer=optax.adam(0.05),
                       rng_key=jax.random.PRNGKey(0))
    assert result.num_steps == 150 and not result.converged
    ll0 = result.trace["log_likelihood"][0]
    np.testing.assert_allclose(result.log_likelihood,
                               exact.log_likelihood(m, result.params, {"v": v}), atol=1e-5)
    assert float(result.log_likelihood) > ll0 + 0.5
    with pytest.raises(TypeError, match="already a UGM"):
        ugm.fit_exact(m, {"v": v}, 6)


def test_map_of_a_constrained_parameter_is_the_mode_of_its_density(vbm):
    """MAP maximizes mean log p(x; θ) + log p(θ) / N in θ itself (no log-Jacobian of the
    map to the unconstrained space, where the optimizer runs): here θ > 0 with a
    LogNormal(0, 1) prior; the optimum with the Jacobian (+ log θ / N) is 0.64, not 0.36."""
    from scipy.optimize import minimize_scalar
    from scipy.stats import lognorm

    def model():
        t = numpyro.sample("t", numpyro.distributions.LogNormal(0.0, 1.0))
        x = numpyro.sample("x", ugm.Spin(9))
        numpyro.factor("f", t * x[0])

    # the VBM's interaction graph (complete) covers this one's: no analysis to pay for,
    # and no variable summed out in closed form (512 configurations enumerated)
    m = ugm.UGM(model).replace(structure=vbm[0].target().structure)
    x = np.ones((3, 9), np.int8)
    x[2, 0] = -1
    result = ugm.fit_exact(m, {"x": x}, num_steps=200, optimizer=optax.sgd(1.0), tol=1e-7)

    def objective(t, jacobian):  # x_1 .. x_8 are uniform, independent of t
        ll = t * x[:, 0].mean() - np.log(2 * np.cosh(t))
        return -(ll + (lognorm.logpdf(t, 1.0) + jacobian * np.log(t)) / len(x))

    modes = [minimize_scalar(objective, (0.1, 2.0), args=(j,), bounds=(1e-6, 10.0),
                             method="bounded", options={"xatol": 1e-10}).x for j in (0, 1)]
    assert abs(modes[1] - modes[0]) > 0.2  # the two objectives differ here
    np.testing.assert_allclose(result.params["t"], modes[0], atol=1e-4)


def test_fits_compile_once_per_model(rbm, count_traces):
    """A second exact fit (or pseudo-likelihood fit) on the same model, with other data of
    the same shape and another step count (of the same power-of-two capacity), reuses the
    compiled steps (it does not trace the model) and gives what a freshly traced model
    gives."""
    from numpyro_ugm.learn import fit_exact, fit_pseudo_likelihood

    model = count_traces(ugm.models.rbm)  # the fixture's model, its tracing counted
    m = ugm.UGM(model, *rbm[0].args)
    # given initial parameters: the default ones would be drawn by tracing the model
    start = m.init_params(jax.random.PRNGKey(0))
    rng = np.random.default_rng(7)
    first, second = ({"v": rng.integers(0, 2, size=(20, 6))} for _ in range(2))
    for fit, name in ((fit_exact, "fit_exact"), (fit_pseudo_likelihood, "fit_pseudo_likelihood")):
        opt = optax.adam(0.05)
        before = model.calls
        fit(m, first, params=start, num_steps=30, optimizer=opt)
        assert model.calls > before  # the first fit traced its steps
        with model.unchanged(f"a second {name}"):
            again = fit(m, second, params=start, num_steps=20, optimizer=opt)
        fresh = fit(ugm.UGM(ugm.models.rbm, *m.args), second, params=start, num_steps=20,
                    optimizer=opt)
        assert again.num_steps == fresh.num_steps == 20
        for k in again.params:
            np.testing.assert_allclose(again.params[k], fresh.params[k], rtol=1e-6,
                                       atol=1e-6)


def test_evaluation_takes_a_model_function_without_arguments_and_refuses_one_that_needs_them():
    """``exact.log_partition(ugm.models.vbm, params)`` (a model function where a UGM is
    due) raised ``AttributeError: 'function' object has no attribute 'param_space'``; every
    evaluation entry point now traces a model function without arguments (as the ones
    that take data did) and, for one that needs them, says to pass ``ugm.UGM(model,
    *model_args)``, naming itself and the function."""
    m, params, log_z, data = spins3()
    fn = chain3  # takes no arguments
    np.testing.assert_allclose(exact.log_partition(fn, params), log_z, rtol=1e-6)
    np.testing.assert_allclose(exact.marginals(fn, params)["x"],
                               exact.marginals(m, params)["x"], rtol=1e-6)
    vbm = ugm.UGM(ugm.models.vbm, 3)
    p = vbm.init_params(jax.random.PRNGKey(0))
    x = {"x": np.ones((2, 3), np.int8)}
    message = (r"takes a traced model, ugm.UGM\(model, \*model_args\), or a model function "
               r"without arguments; tracing vbm\(\) without arguments failed \(.*num_units"
               r".*\): pass ugm.UGM\(vbm, ...\)")
    for owner, call in (("exact.log_partition", lambda: exact.log_partition(ugm.models.vbm, p)),
                        ("exact.log_likelihood",
                         lambda: exact.log_likelihood(ugm.models.vbm, p, x)),
                        ("exact.sample", lambda: exact.sample(ugm.models.vbm, p,
                                                              jax.random.PRNGKey(0), 2)),
                        ("ais.log_partition", lambda: ugm.ais.log_partition(
                            ugm.models.vbm, p, jax.random.PRNGKey(0))),
                        ("pseudo_log_likelihood",
                         lambda: ugm.pseudo_log_likelihood(ugm.models.vbm, p, x))):
        with pytest.raises(TypeError, match=f"^{owner}: {message}"):
            call()
    with pytest.raises(TypeError, match=r"^exact.moments: the model must be a ugm.UGM"):
        exact.moments("vbm", p)
