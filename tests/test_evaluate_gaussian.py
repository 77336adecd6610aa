"""Exact evaluation of models Gaussian in their real sites given the finite ones
(evaluate/_gaussian.py through ``ugm.exact``): a Gaussian MRF and a Gaussian–Bernoulli RBM
against closed forms written here with numpy (log Z = ½ log det(2πΣ) + ½ bᵀΣb; the RBM's
log Z and visible marginal as sums over 2^H Gaussian integrals), the error at a precision
that is not positive definite, the MLE of a full precision, and the samplers (Gibbs with
exact Gaussian draws, MALA, HMC, exact draws) by distribution tests that also reject a
wrong parameter."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import optax
import pytest
from scipy.special import logsumexp

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact


def gmrf(n):
    """f(x) = −½ xᵀPx + bᵀx, a full precision P."""
    x = numpyro.sample("x", ugm.Real(n))
    P = numpyro.param("P", jnp.eye(n))
    b = numpyro.param("b", jnp.zeros(n))
    numpyro.factor("q", -0.5 * x @ P @ x + b @ x)


gbrbm = ugm.models.gaussian_rbm


def gmrf_params(n=4, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n))
    P = (A @ A.T / n + np.eye(n)) * scale
    return {"P": P, "b": rng.normal(size=n)}


def gmrf_reference(P, b):
    """log Z, mean and covariance of exp(−½ xᵀPx + bᵀx), in float64."""
    S = np.linalg.inv(P)
    log_z = 0.5 * np.linalg.slogdet(2 * np.pi * S)[1] + 0.5 * b @ S @ b
    return log_z, S @ b, S


def gbrbm_params(D=3, H=2, seed=1):
    rng = np.random.default_rng(seed)
    return {"W": rng.normal(size=(D, H)), "b": rng.normal(size=D), "c": rng.normal(size=H)}


def gbrbm_reference(W, b, c):
    """log Z, the visible marginal's log density, p(h), E[v] and Cov[v], as sums over the
    2^H hidden configurations: ∫ exp f(v, h) dv = (2π)^{D/2} exp(½|b + Wh|² − ½|b|²
    + cᵀh), and v | h ~ N(b + Wh, I)."""
    D, H = W.shape
    hs = np.array(list(itertools.product([0.0, 1.0], repeat=H)))
    means = b + hs @ W.T  # (2^H, D)
    log_w = (0.5 * np.sum(means ** 2, 1) - 0.5 * b @ b + hs @ c
             + 0.5 * D * np.log(2 * np.pi))
    log_z = logsumexp(log_w)
    p = np.exp(log_w - log_z)
    mean = p @ means
    cov = np.eye(D) + np.einsum("k,ki,kj->ij", p, means, means) - np.outer(mean, mean)

    def log_marginal(v):  # log Σ_h exp f(v, h) − log Z
        f = (-0.5 * np.sum((v[:, None, :] - b) ** 2, -1)
             + np.einsum("nd,dk,hk->nh", v, W, hs) + hs @ c)
        return logsumexp(f, axis=1) - log_z

    return log_z, log_marginal, p @ hs, mean, cov


def as32(params):
    return {k: jnp.asarray(v, jnp.float32) for k, v in params.items()}


# --- default tests: closed forms ---------------------------------------------------------


def test_gmrf_log_z_moments_mle_gradient_and_not_normalizable():
    n = 4
    m = ugm.UGM(gmrf, n)
    params = gmrf_params(n)
    log_z, mean, cov = gmrf_reference(params["P"], params["b"])
    assert exact.num_enumerated(m) == (1, {"x": None})
    np.testing.assert_allclose(exact.log_partition(m, as32(params)), log_z, rtol=1e-5)
    mom = exact.moments(m, as32(params))
    assert mom.sites == ("x",)
    np.testing.assert_allclose(mom.mean["x"], mean, atol=1e-5)
    np.testing.assert_allclose(mom.covariance, cov, atol=1e-5)

    # the exact log-likelihood's gradient vanishes at the MLE: P = C⁻¹ (C the sample
    # covariance), b = P x̄ — and not at a perturbed P
    x = np.random.default_rng(2).normal(size=(50, n)) @ np.linalg.cholesky(cov).T + mean
    xbar, C = x.mean(0), np.cov(x.T, bias=True)
    P_hat = np.linalg.inv(C)
    mle = as32({"P": P_hat, "b": P_hat @ xbar})

    def grad_at(p):
        g = jax.grad(lambda q: exact.log_likelihood(m, q, {"x": x}))(p)
        return max(float(jnp.max(jnp.abs(v))) for v in g.values())

    assert grad_at(mle) < 1e-4
    assert grad_at({**mle, "P": mle["P"] * 1.1}) > 1e-2

    bad = as32({"P": np.diag([1.0, -0.5, 1.0, 1.0]), "b": np.zeros(n)})
    with pytest.raises(FloatingPointError, match=r"log_partition: the potential is not "
                       r"normalizable in the real site\(s\) \['x'\] at these parameters.*"
                       r"not positive definite \(smallest eigenvalue -0.5\)"):
        exact.log_partition(m, bad)


def test_gbrbm_log_z_and_visible_marginal():
    D, H = 3, 3
    m = ugm.UGM(gbrbm, D, H)
    params = gbrbm_params(D, H)
    log_z, log_marginal, _, _, _ = gbrbm_reference(**params)
    assert exact.num_enumerated(m) == (2 ** H, {"v": None})  # v integrated, h enumerated
    np.testing.assert_allclose(exact.log_partition(m, as32(params)), log_z, rtol=1e-5)
    v = np.random.default_rng(3).normal(size=(7, D)) * 2
    np.testing.assert_allclose(exact.log_prob(m, as32(params), {"v": v}), log_marginal(v),
                               rtol=1e-5)


# --- slow tests ---------------------------------------------------------------------------


@pytest.mark.slow
def test_gbrbm_moments_marginals_and_sampling_errors():
    D, H = 3, 4
    m = ugm.UGM(gbrbm, D, H)
    params = gbrbm_params(D, H, seed=5)
    _, _, h_mean, mean, cov = gbrbm_reference(**params)
    mom = exact.moments(m, as32(params))
    np.testing.assert_allclose(mom.mean["v"], mean, atol=1e-4)
    np.testing.assert_allclose(mom.covariance, cov, atol=1e-4)
    np.testing.assert_allclose(exact.marginals(m, as32(params))["h"][:, 1], h_mean, atol=1e-5)
    with pytest.raises(ValueError, match="real sites.*exact.moments"):
        exact.expectation(m, as32(params), lambda s: s["h"])

    def ebm():
        x = numpyro.sample("x", ugm.Real(2))
        numpyro.factor("q", -jnp.sum(x ** 4))

    with pytest.raises(ValueError, match=r"not quadratic in the real site\(s\) \['x'\].*"
                       r"annealed importance sampling"):
        exact.log_partition(ugm.UGM(ebm), {})


def mixed():
    """Two reals coupled to the first of a chain of six spins: the spins that do not touch
    a real (s1, s3, s5) are summed out in closed form, the reals integrated."""
    x = numpyro.sample("x", ugm.Real(2))
    s = numpyro.sample("s", ugm.Spin(6))
    J = numpyro.param("J", 0.5 * jnp.ones(5))
    w = numpyro.param("w", jnp.array([0.7, -0.3]))
    numpyro.factor("f", -0.5 * jnp.sum(x ** 2) - 0.3 * x[0] * x[1] + s[0] * (w @ x)
                   + jnp.sum(J * s[:-1] * s[1:]))


def partial():
    """A 3-variable GMRF in two sites, for marginals of either: f = −½ zᵀPz + bᵀz, z =
    (x, y)."""
    x = numpyro.sample("x", ugm.Real(2))
    y = numpyro.sample("y", ugm.Real(1))
    b = numpyro.param("b", 0.3)
    numpyro.factor("f", -0.5 * (x @ x) - y[0] ** 2 + 0.5 * x[0] * y[0] + b * y[0])


@pytest.mark.slow
def test_finite_sum_out_beside_reals_and_latent_reals():
    m = ugm.UGM(mixed)
    params = m.init_params(jax.random.PRNGKey(0))
    count, summed = exact.num_enumerated(m)
    assert count == 8 and summed["x"] is None and list(summed["s"]) == [1, 3, 5]
    P, J, w = np.array([[1.0, 0.3], [0.3, 1.0]]), 0.5 * np.ones(5), np.array([0.7, -0.3])
    terms = []
    for s in itertools.product([-1.0, 1.0], repeat=6):
        s, g = np.array(s), s[0] * w
        terms.append(0.5 * g @ np.linalg.solve(P, g) + J @ (s[:-1] * s[1:]) + np.log(2 * np.pi)
                     - 0.5 * np.log(np.linalg.det(P)))
    for sum_out in ("auto", False):
        np.testing.assert_allclose(exact.log_partition(m, params, sum_out=sum_out),
                                   logsumexp(terms), rtol=1e-5)
    draws = exact.sample(m, params, jax.random.PRNGKey(1), 20000)
    x = np.asarray(draws["x"])  # E[x] = 0 by symmetry; Cov = P⁻¹ + P⁻¹ w wᵀ P⁻¹
    cov = np.linalg.inv(P) + np.outer(np.linalg.solve(P, w), np.linalg.solve(P, w))
    np.testing.assert_allclose(exact.moments(m, params).covariance, cov, atol=1e-5)
    assert np.all(np.abs(x.mean(0)) < 4.5 * np.sqrt(np.diag(cov) / len(x)))

    m = ugm.UGM(partial)
    params = m.init_params(jax.random.PRNGKey(0))
    Pz = np.array([[1.0, 0.0, -0.5], [0.0, 1.0, 0.0], [-0.5, 0.0, 2.0]])
    S = np.linalg.inv(Pz)
    mu = S @ np.array([0.0, 0.0, 0.3])
    z = np.random.default_rng(0).normal(size=(5, 3))

    def log_normal(v, mean, cov):
        d = v - mean
        return (-0.5 * np.einsum("ni,ij,nj->n", d, np.linalg.inv(cov), d)
                - 0.5 * np.linalg.slogdet(2 * np.pi * cov)[1])

    np.testing.assert_allclose(exact.log_prob(m, params, {"x": z[:, :2]}),
                               log_normal(z[:, :2], mu[:2], S[:2, :2]), rtol=1e-5)
    np.testing.assert_allclose(exact.log_prob(m, params, {"y": z[:, 2:]}),
                               log_normal(z[:, 2:], mu[2:], S[2:, 2:]), rtol=1e-5)


@pytest.mark.slow
def test_gmrf_mle_exact_fit_and_pcd():
    """The exact fit reaches the MLE P̂ = C⁻¹, b̂ = P̂ x̄; PCD with Gibbs (exact Gaussian
    conditionals), averaged, comes within a quarter of the MLE's own standard error,
    se(P̂_ij) = sqrt((P̂_ii P̂_jj + P̂_ij²) / N), in two independent runs."""
    n, N = 4, 400
    m = ugm.UGM(gmrf, n)
    ref = gmrf_params(n, seed=7)
    _, mean, cov = gmrf_reference(ref["P"], ref["b"])
    x = np.random.default_rng(8).normal(size=(N, n)) @ np.linalg.cholesky(cov).T + mean
    xbar, C = x.mean(0), np.cov(x.T, bias=True)
    P_hat = np.linalg.inv(C)
    se = np.sqrt((np.outer(np.diag(P_hat), np.diag(P_hat)) + P_hat ** 2) / N)
    fit = ugm.fit_exact(m, {"x": x}, num_steps=200)
    np.testing.assert_allclose(fit.params["P"], P_hat, atol=2e-3)
    np.testing.assert_allclose(fit.params["b"], P_hat @ xbar, atol=2e-3)
    best = float(fit.log_likelihood)

    for seed in range(2):
        learner = ugm.MLE(m, ugm.PCD(200), ugm.averaged(optax.adam(0.02), start=1000))
        result = learner.run(jax.random.PRNGKey(seed), 2000, {"x": x})
        p = learner.get_params(result.state, averaged=True)
        error = np.abs(np.asarray(p["P"]) - P_hat) / se
        gap = best - float(exact.log_likelihood(m, p, {"x": x}))
        print(f"PCD-200 run {seed}: max |P - inv(C)| = "
              f"{np.abs(np.asarray(p['P']) - P_hat).max():.4f} = {error.max():.3f} se(P̂) "
              f"(se from {se.min():.3f} to {se.max():.3f}); exact log-likelihood "
              f"{best - gap:.5f} against {best:.5f} at the MLE")
        assert error.max() < 0.25
        assert gap < 1e-3


def z_scores(samples, num_chains, mean, cov):
    """|estimate − exact| / SE of the mean and of the centred second moments
    (x − μ)(x − μ)ᵀ, against exact moments (mean, cov); SE from the spread of the
    chains' means."""
    x = np.asarray(samples, float)
    iu = np.triu_indices(x.shape[1])
    stats = {"mean": x, "cov": ((x - mean)[:, :, None] * (x - mean)[:, None, :])[:, iu[0], iu[1]]}
    out = {}
    for k, v in stats.items():
        per_chain = v.reshape(num_chains, -1, v.shape[-1]).mean(1)
        est = per_chain.mean(0)
        se = per_chain.std(0, ddof=1) / np.sqrt(num_chains)
        exact_value = mean if k == "mean" else cov[iu]
        out[k] = (est, exact_value, np.abs(est - exact_value) / se)
    return out


def report(name, scores, wrong):
    worst = max(float(s[2].max()) for s in scores.values())
    worst_wrong = max(float(s[2].max()) for s in wrong.values())
    rows = [f"{name}: max z = {worst:.2f} (against a wrong parameter: {worst_wrong:.1f})"]
    for k, (est, ex, z) in scores.items():
        i = int(np.argmax(z))
        rows.append(f"  {k}: worst entry {i}: exact {ex[i]:.4f}, estimate {est[i]:.4f}, "
                    f"z {z[i]:.2f}")
    print("\n".join(rows))
    return worst, worst_wrong


# 4 means + 10 second moments: |z| < 4.5 fails by chance with probability < 1e-4
Z_LIMIT, WRONG_LIMIT = 4.5, 10.0

KERNELS = {"gibbs": None, "mala": ugm.kernels.mala(),
           "hmc": ugm.kernels.hmc(num_integration_steps=5)}


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["exact", "gibbs", "mala", "hmc"])
def test_gmrf_sampler_moments(kernel):
    n, num_chains, num_samples = 4, 1000, 20
    m = ugm.UGM(gmrf, n)
    params = gmrf_params(n, seed=3)
    _, mean, cov = gmrf_reference(params["P"], params["b"])
    wrong = gmrf_reference(params["P"] * 1.15, params["b"])
    if kernel == "exact":
        draws = exact.sample(m, as32(params), jax.random.PRNGKey(0), num_chains * num_samples)
    else:
        draws = ugm.sample(m, as32(params), jax.random.PRNGKey(0), num_samples,
                           num_chains=num_chains, num_warmup=300, thinning=5,
                           kernel=KERNELS[kernel])
    worst, worst_wrong = report(f"GMRF {kernel}", z_scores(draws["x"], num_chains, mean, cov),
                                z_scores(draws["x"], num_chains, wrong[1], wrong[2]))
    assert worst < Z_LIMIT
    assert worst_wrong > WRONG_LIMIT


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["exact", "gibbs", "mala", "hmc"])
def test_gbrbm_sampler_moments(kernel):
    D, H, num_chains, num_samples = 3, 3, 1000, 20
    m = ugm.UGM(gbrbm, D, H)
    params = gbrbm_params(D, H, seed=4)
    _, _, h_mean, mean, cov = gbrbm_reference(**params)
    wrong = gbrbm_reference(**{**params, "W": params["W"] * 1.15})
    if kernel == "exact":
        draws = exact.sample(m, as32(params), jax.random.PRNGKey(0), num_chains * num_samples)
    else:
        draws = ugm.sample(m, as32(params), jax.random.PRNGKey(0), num_samples,
                           num_chains=num_chains, num_warmup=300, thinning=5,
                           kernel=KERNELS[kernel])
    scores = z_scores(draws["v"], num_chains, mean, cov)
    h = np.asarray(draws["h"], float).reshape(num_chains, num_samples, H).mean(1)
    scores["h"] = (h.mean(0), h_mean,
                   np.abs(h.mean(0) - h_mean) / (h.std(0, ddof=1) / np.sqrt(num_chains)))
    wrong_scores = z_scores(draws["v"], num_chains, wrong[3], wrong[4])
    worst, worst_wrong = report(f"GB-RBM {kernel}", scores, wrong_scores)
    assert worst < Z_LIMIT
    assert worst_wrong > WRONG_LIMIT
