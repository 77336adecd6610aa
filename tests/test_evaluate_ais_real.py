"""AIS (evaluate/ais.py) on real-valued states against closed forms: a Gaussian–Bernoulli
RBM (log Z a sum over the 2^H hidden states of Gaussian integrals), a Gaussian MRF
(log Z = ½ log det(2πΣ)), and a model whose real sites are not quadratic (MALA moves,
against quadrature on a grid)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import ais, _ais_setup


def gbrbm(D, H, declared=False):
    """The GB-RBM; ``declared``: its two layers declared as the Gibbs blocks (no
    structure analysis: a cheaper test)."""
    v = numpyro.sample("v", ugm.Real(D))
    h = numpyro.sample("h", ugm.Binary(H))
    W = numpyro.param("W", jnp.zeros((D, H)))
    b = numpyro.param("b", jnp.zeros(D))
    c = numpyro.param("c", jnp.zeros(H))
    energy = -0.5 * jnp.sum((v - b) ** 2) + v @ W @ h + c @ h
    if declared:
        ugm.factor("energy", energy, colors={"v": np.zeros(D, np.int64),
                                             "h": np.ones(H, np.int64)}, multilinear=True)
    else:
        numpyro.factor("energy", energy)


def gmrf(d):
    x = numpyro.sample("x", ugm.Real(d))
    P = numpyro.param("P", jnp.eye(d))
    numpyro.factor("quadratic", -0.5 * x @ P @ x)


def _gbrbm_params(D=6, H=3, seed=0):
    rng = np.random.default_rng(seed)
    return {"W": rng.normal(0, 1.0, (D, H)), "b": rng.normal(0, 0.5, D),
            "c": rng.normal(0, 0.5, H)}


def _gbrbm_log_terms(p):
    """Per hidden state h: log ∫ exp f(v, h) dv = c·h + ½|b + Wh|² − ½|b|² + (D/2) log 2π,
    and the hidden states."""
    W, b, c = p["W"], p["b"], p["c"]
    hs = np.array(list(itertools.product([0.0, 1.0], repeat=W.shape[1])))
    mean = b + hs @ W.T
    return (hs @ c + 0.5 * np.sum(mean ** 2, 1) - 0.5 * b @ b
            + 0.5 * len(b) * np.log(2 * np.pi)), hs


def _gbrbm_log_z(p):
    return float(np.logaddexp.reduce(_gbrbm_log_terms(p)[0]))


def _gbrbm_draws(p, n, seed):
    """Exact draws: h from its marginal, then v | h ~ N(b + W h, I)."""
    terms, hs = _gbrbm_log_terms(p)
    rng = np.random.default_rng(seed)
    h = hs[rng.choice(len(hs), n, p=np.exp(terms - np.logaddexp.reduce(terms)))]
    v = p["b"] + h @ p["W"].T + rng.standard_normal((n, len(p["b"])))
    return {"v": v.astype(np.float32), "h": h.astype(np.float32)}


def _gbrbm_free_energy(p, v):
    """log Σ_h exp f(v, h) per row of v."""
    hs = _gbrbm_log_terms(p)[1]
    return np.logaddexp.reduce(-0.5 * np.sum((v - p["b"]) ** 2, 1)[:, None]
                               + (v @ p["W"]) @ hs.T + hs @ p["c"], axis=1)


def _f32(p):
    return {k: jnp.asarray(v, jnp.float32) for k, v in p.items()}


def _check_within(estimate, stderr, truth, k=4.0):
    assert 1e-3 < float(stderr) < 0.2, float(stderr)  # not exact: a wrong run would show
    assert abs(float(estimate) - truth) < k * float(stderr), (float(estimate), truth,
                                                              float(stderr))


def test_gbrbm_log_z_both_directions_against_the_closed_form():
    """A Gaussian–Bernoulli RBM (v real, h binary summed out in the weights; v drawn
    exactly from its Gaussian conditional at each β) from a base Normal fitted to draws
    of v: with 4 βs and many chains, the forward estimate of log Z and the reverse one
    from exact draws are both within 4 standard errors of Σ_h of the Gaussian integrals,
    which a 2 % change of W would move by more than 10 standard errors. A real site's
    base is checked like a finite one's."""
    p = _gbrbm_params()
    m = ugm.UGM(gbrbm, 6, 3, declared=True).observe(["v"])
    params, truth = _f32(p), _gbrbm_log_z(p)
    assert _ais_setup.setup(m.target(), None, None, None, None).summed == ("h",)
    draws = _gbrbm_draws(p, 1000, seed=1)
    r = ais.log_partition(m, params, jax.random.PRNGKey(1), 1000, 4, tolerance=np.inf,
                          data={"v": draws["v"]}, reverse_from=draws)
    for estimate, stderr in ((r.lower, r.lower_stderr), (r.upper, r.upper_stderr)):
        _check_within(estimate, stderr, truth)
    wrong = _gbrbm_log_z({**p, "W": 1.02 * p["W"]})
    assert abs(wrong - truth) > 10 * float(r.stderr)
    natural = np.stack([np.zeros(6), np.ones(6)], -1)
    for bad, match in ((natural[:3], r"has shape \(3, 2\); expected \(6, 2\)"),
                       (natural * [1, -1], "precision lam <= 0")):
        with pytest.raises(ValueError, match=match):
            ais.log_partition(m, params, jax.random.PRNGKey(0), 4, 4,
                              base_log_probs={"v": bad})


@pytest.mark.slow
def test_gmrf_log_z_and_its_bracket_against_half_log_det():
    """A Gaussian MRF −½ xᵀPx (dense P: one variable per Gibbs block, exact Gaussian
    draws): forward AIS from the base N(0, 1) and reverse AIS from exact draws are both
    within 4 standard errors of ½ log det(2πΣ)."""
    d = 4
    rng = np.random.default_rng(1)
    A = rng.normal(size=(d, d))
    P = A @ A.T / d + 0.3 * np.eye(d)
    truth = 0.5 * np.linalg.slogdet(2 * np.pi * np.linalg.inv(P))[1]
    draws = rng.multivariate_normal(np.zeros(d), np.linalg.inv(P), 2000)
    r = ais.log_partition(ugm.UGM(gmrf, d), {"P": jnp.asarray(P, jnp.float32)},
                          jax.random.PRNGKey(2), 2000, 6, tolerance=np.inf,
                          reverse_from={"x": draws.astype(np.float32)})
    for estimate, stderr in ((r.lower, r.lower_stderr), (r.upper, r.upper_stderr)):
        _check_within(estimate, stderr, truth)
    wrong = 0.5 * np.linalg.slogdet(2 * np.pi * np.linalg.inv(1.2 * P))[1]
    assert abs(wrong - truth) > 10 * float(r.stderr)


@pytest.mark.slow
def test_gbrbm_log_likelihood_and_raise_bracket_against_the_closed_form():
    """The mean log-likelihood of exact draws of v (base fitted to their mean and
    variance, h summed out): the forward estimate is within 4 standard errors of the
    closed form, and the RAISE estimate from the cases (a stochastic lower bound) lies
    below it within 4 of its standard errors; the bracket is narrow."""
    p = _gbrbm_params(seed=3)
    m, params = ugm.UGM(gbrbm, 6, 3), _f32(p)
    v = _gbrbm_draws(p, 500, seed=4)["v"]
    truth = float(np.mean(_gbrbm_free_energy(p, v.astype(float)))) - _gbrbm_log_z(p)
    r = ais.log_likelihood(m, params, {"v": v}, jax.random.PRNGKey(5), 500, 200,
                           reverse=True)
    _check_within(r.log_likelihood, r.stderr, truth)
    assert float(r.lower) < truth + 4 * float(r.lower_stderr), (float(r.lower), truth)
    assert abs(float(r.width)) < 0.1, float(r.width)


@pytest.mark.slow
def test_gmrf_log_z_with_a_fitted_base_and_a_long_schedule():
    """Forward and reverse estimates with the base fitted to the data (draws of the
    GMRF) and 200 βs: both within 4 standard errors of ½ log det(2πΣ), and within 0.05
    nats of each other."""
    d = 6
    rng = np.random.default_rng(2)
    A = rng.normal(size=(d, d))
    P = A @ A.T / d + 0.2 * np.eye(d)
    truth = 0.5 * np.linalg.slogdet(2 * np.pi * np.linalg.inv(P))[1]
    draws = {"x": rng.multivariate_normal(np.zeros(d), np.linalg.inv(P), 500)
             .astype(np.float32)}
    r = ais.log_partition(ugm.UGM(gmrf, d), {"P": jnp.asarray(P, jnp.float32)},
                          jax.random.PRNGKey(3), 500, 200, data=draws, reverse_from=draws)
    for estimate, stderr in ((r.lower, r.lower_stderr), (r.upper, r.upper_stderr)):
        assert abs(float(estimate) - truth) < 4 * float(stderr) + 1e-3
    assert abs(float(r.width)) < 0.05


def quartic(D, H):
    v = numpyro.sample("v", ugm.Real(D))
    h = numpyro.sample("h", ugm.Binary(H))
    W = numpyro.param("W", jnp.zeros((D, H)))
    c = numpyro.param("c", jnp.zeros(H))
    numpyro.factor("energy", -0.25 * jnp.sum(v ** 4) - 0.5 * jnp.sum(v ** 2) + v @ W @ h
                   + c @ h)


@pytest.mark.slow
def test_non_quadratic_real_sites_are_moved_by_mala_against_quadrature():
    """v not quadratic (a quartic term): v is moved by MALA (adapted along the path),
    h drawn by Gibbs and summed out in the weights; log Z = log Σ_h ∫ exp f(v, h) dv by
    quadrature on a grid. Three forward runs with the default kernel and one with
    ``mala()`` given (not a block kernel: each move first draws h, and the kernel state
    is rebuilt there with the step size adapted so far), each within 4 standard errors."""
    D, H = 2, 2
    rng = np.random.default_rng(0)
    p = {"W": rng.normal(0, 1.0, (D, H)), "c": rng.normal(0, 0.5, H)}
    grid = np.linspace(-6, 6, 1201)
    V = np.stack(np.meshgrid(grid, grid, indexing="ij"), -1).reshape(-1, D)
    hs = np.array(list(itertools.product([0.0, 1.0], repeat=H)))
    f = ((-0.25 * np.sum(V ** 4, 1) - 0.5 * np.sum(V ** 2, 1))[:, None]
         + (V @ p["W"]) @ hs.T + hs @ p["c"])
    truth = np.logaddexp.reduce(f.ravel()) + D * np.log(grid[1] - grid[0])
    m = ugm.UGM(quartic, D, H).observe(["v"])  # h latent: summed out
    assert m.target().structure.moved == ("v",)
    for seed, kernel in ((0, None), (1, None), (2, None), (3, ugm.kernels.mala())):
        r = ais.log_partition(m, _f32(p), jax.random.PRNGKey(seed), 200, 200, kernel=kernel)
        _check_within(r.log_z, r.stderr, truth)
