"""Checks of ``defaults_sweep.py``: learning at the defaults — ``ugm.MLE`` with each
estimator (the docs' recipe: SGD 0.01 from the model's start), ``ugm.averaged``,
``ugm.fit_exact``, ``ugm.fit_pseudo_likelihood``, ``ugm.pseudo_log_likelihood`` — on a
spin VBM of 8 units, against the exact likelihood of ``_sweep_reference``."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

import numpyro_ugm as ugm

import _sweep_reference as ref
from _sweep_rows import check, close, flag

N_UNITS, N_CASES = 8, 300


@functools.lru_cache(maxsize=1)
def vbm_problem():
    """(data (N, n) int8 ±1 drawn exactly, statistics of every state F, the data's mean
    statistics) of a VBM with W_ij ~ N(0, 0.5²), b_i ~ N(0, 0.3²)."""
    rng = np.random.default_rng(0)
    W = np.triu(rng.normal(0, 0.5, (N_UNITS, N_UNITS)), 1)
    b = rng.normal(0, 0.3, N_UNITS)
    x = ref.states(N_UNITS)
    F = ref.vbm_features(x)
    p = ref.probabilities(F @ np.concatenate([W[np.triu_indices(N_UNITS, 1)], b]))
    data = x[rng.choice(len(x), N_CASES, p=p)]
    return data.astype(np.int8), F, ref.vbm_features(data).mean(0)


def own_log_likelihood(params):
    """Exact mean log-likelihood of the data at the package's parameters, by own
    enumeration."""
    _, F, s = vbm_problem()
    W = np.asarray(params["W"], np.float64)
    theta = np.concatenate([W[np.triu_indices(N_UNITS, 1)], np.asarray(params["b"], np.float64)])
    return ref.mean_log_likelihood(F, s, theta)


ESTIMATORS = {"CD()": lambda: ugm.CD(), "PCD(100)": lambda: ugm.PCD(100),
              "MCMCMLE(100)": lambda: ugm.MCMCMLE(100), "PF(100)": lambda: ugm.PF(100),
              "SMC(100)": lambda: ugm.SMC(100), "PSMC(100)": lambda: ugm.PSMC(100)}

DEFAULTS = {"CD()": "num_mcmc_steps=1, kernel=gibbs()",
            "PCD(100)": "num_mcmc_steps=1, kernel=gibbs()",
            "MCMCMLE(100)": "num_mcmc_steps=10, reset_every=10, restart_threshold=0.5",
            "PF(100)": "resample_threshold=0.9, rejuvenate_every=1, adaptive",
            "SMC(100)": "target_ess=0.9, num_mcmc_steps=1",
            "PSMC(100)": "target_ess=0.9, keep_fraction=0.5, redraw='tempered'"}


@check("learning")
def mle_estimators(quick):
    """Each estimator, SGD 0.01 from the start (the docs' recipe), against the same SGD
    run with the exact gradient: the estimator's own error, within 0.02 nats (the full
    run's largest is 0.008; the quick run's 500 steps end in the steep early phase, where
    MCMC-MLE's reweighted gradient lags by 0.01)."""
    data, F, s = vbm_problem()
    steps = 500 if quick else 2000
    path = ref.exact_gradient_path(F, s, 0.01, steps)
    reference = ref.mean_log_likelihood(F, s, path)
    _, best, _ = ref.exp_family_mle(F, s)
    rows = []
    for name, make in ESTIMATORS.items():
        learner = ugm.MLE(ugm.models.vbm, make(), optax.sgd(0.01))
        result = learner.run(jax.random.PRNGKey(1), steps, {"x": data}, N_UNITS,
                             progress_bar=False)
        ll = own_log_likelihood(result.params)
        rows.append(close(f"MLE(vbm, {name}, sgd(0.01)).run({steps} steps): exact LL",
                          DEFAULTS[name], ll, reference, 0.02,
                          note=f"ref: exact-gradient SGD; MLE {best:.4f}"))
    return rows


@check("learning")
def averaged_adam(quick):
    data, F, s = vbm_problem()
    steps = 3000  # Adam needs them to settle (quick mode too: 2 s)
    _, best, _ = ref.exp_family_mle(F, s)
    learner = ugm.MLE(ugm.models.vbm, ugm.PCD(100), ugm.averaged(optax.adam(0.01), steps // 2))
    result = learner.run(jax.random.PRNGKey(1), steps, {"x": data}, N_UNITS, progress_bar=False)
    ll = own_log_likelihood(learner.get_params(result.state, averaged=True))
    return [close(f"MLE(vbm, PCD(100), averaged(adam(0.01), {steps // 2})), {steps} steps",
                  "get_params(averaged=True)", ll, best, 0.01, note="ref: exact MLE (Newton)")]


@check("learning")
def fit_exact_vbm(quick):
    data, F, s = vbm_problem()
    theta, best, _ = ref.exp_family_mle(F, s)
    fit = ugm.fit_exact(ugm.models.vbm, {"x": data}, N_UNITS, progress_bar=False)
    W = np.asarray(fit.params["W"], np.float64)
    ours = np.concatenate([W[np.triu_indices(N_UNITS, 1)], np.asarray(fit.params["b"])])
    return [
        close("fit_exact(vbm 8, 300 cases).log_likelihood", "L-BFGS, num_steps=500, tol=1e-6",
              fit.log_likelihood, best, 2e-5, note=f"converged={bool(fit.converged)}"),
        close("fit_exact(vbm 8).params", "", ours, theta, 2e-3, note="ref: Newton, float64"),
    ]


@check("learning")
def pseudo_likelihood(quick):
    data, F, s = vbm_problem()
    W_ref, b_ref, pll_ref = ref.vbm_pseudo_mle(data)
    fit = ugm.fit_pseudo_likelihood(ugm.models.vbm, {"x": data}, N_UNITS, progress_bar=False)
    W = np.asarray(fit.params["W"], np.float64)
    rng = np.random.default_rng(3)
    P = {"W": np.triu(rng.normal(0, 0.5, (N_UNITS, N_UNITS)), 1), "b": rng.normal(0, 0.3, N_UNITS)}
    m = ugm.UGM(ugm.models.vbm, N_UNITS)
    ours = ugm.pseudo_log_likelihood(m, {k: jnp.asarray(v, jnp.float32) for k, v in P.items()},
                                     {"x": data})
    return [
        close("fit_pseudo_likelihood(vbm 8).params", "L-BFGS, num_steps=200, tol=1e-6",
              np.concatenate([W[np.triu_indices(N_UNITS, 1)], np.asarray(fit.params["b"])]),
              np.concatenate([W_ref[np.triu_indices(N_UNITS, 1)], b_ref]), 2e-3,
              note=f"converged={bool(fit.converged)}; ref: scipy L-BFGS on own PL"),
        close("pseudo_log_likelihood(vbm 8, θ, data)", "", ours,
              ref.vbm_pseudo_log_likelihood(P["W"], P["b"], data), 2e-5 * 8),
    ]


def crf_statistics(y, features):
    """Per example the multilabel CRF's statistics: (…, pairs (L(L−1)/2) | y ⊗ x | y)."""
    L = y.shape[-1]
    i, j = np.triu_indices(L, 1)
    outer = (y[..., :, None] * features[..., None, :]).reshape(y.shape[:-1] + (-1,))
    return np.concatenate([y[..., i] * y[..., j], outer, y], -1)


def crf_exact_path(features, labels, lr, num_steps):
    """SGD from 0 with the exact gradient of the mean conditional log-likelihood (own
    enumeration of the 2^L labelings per example): (θ, mean conditional LL)."""
    L = labels.shape[1]
    y = ref.states(L)
    T = crf_statistics(np.broadcast_to(y, (len(features),) + y.shape),
                       np.broadcast_to(features[:, None, :], (len(features), len(y),
                                                              features.shape[1])))  # (N, 2^L, k)
    observed = crf_statistics(labels, features).mean(0)

    def ll_and_grad(theta):
        e = T @ theta
        p = np.exp(e - ref.logsumexp(e, 1)[:, None])
        value = np.mean(crf_statistics(labels, features) @ theta - ref.logsumexp(e, 1))
        return value, observed - np.einsum("nk,nkj->j", p, T) / len(features)

    theta = np.zeros(T.shape[-1])
    for _ in range(num_steps):
        theta = theta + lr * ll_and_grad(theta)[1]
    return ll_and_grad(theta)[0], ll_and_grad


@check("learning")
def crf_learning(quick):
    """MLE of a multilabel CRF with per-example inputs, PCD(100) and SGD 0.01, against
    the same SGD with the exact conditional gradient."""
    L, d, N = 4, 3, 40
    rng = np.random.default_rng(7)
    feats = rng.normal(0, 1, (N, d)).astype(np.float32)
    labels = np.sign(feats @ rng.normal(0, 1, (d, L)) + rng.normal(0, 1, (N, L)))
    steps = 300 if quick else 1000
    reference, ll_and_grad = crf_exact_path(feats.astype(np.float64), labels, 0.05, steps)
    learner = ugm.MLE(ugm.models.multilabel_crf, ugm.PCD(100), optax.sgd(0.05))
    result = learner.run(jax.random.PRNGKey(1), steps, {"y": labels.astype(np.int8)},
                         inputs={"features": feats}, num_labels=L, progress_bar=False)
    P = {k: np.asarray(v, np.float64) for k, v in result.params.items()}
    theta = np.concatenate([P["W_E"][np.triu_indices(L, 1)], P["W_v"].ravel(), P["b"]])
    return [close(f"MLE(multilabel_crf, PCD(100), sgd(0.05)).run({steps}, inputs=40 "
                  "examples): exact conditional LL", "batch_size=None (all examples)",
                  ll_and_grad(theta)[0], reference, 0.01,
                  note="ref: exact-gradient SGD (own enumeration per example)")]


@check("learning")
def gaussian_learning(quick):
    """The graphical-lasso recipe of the docs (PCD(200), Adam with cosine decay from
    Θ = I) against ADMM's optimum, and a GB-RBM learned from the default start (its
    hidden units must not stay identical)."""
    from numpyro_ugm.models import gaussian as gm
    from _sweep_models import gaussian_data

    D, N, alpha = 5, 300, 0.1
    _, x = gaussian_data(D, N, 9)
    x = (x - x.mean(0)) / x.std(0)
    S = x.astype(np.float64).T @ x.astype(np.float64) / N
    steps = 400 if quick else 1000
    learner = ugm.MLE(ugm.models.sparse_gmrf, ugm.PCD(200),
                      optax.adam(optax.cosine_decay_schedule(0.02, steps, alpha=0.02)))
    result = learner.run(jax.random.PRNGKey(0), steps, {"x": x}, D, alpha, N,
                         progress_bar=False)
    L = np.asarray(result.params["L"], np.float64)
    best = ref.glasso_value(ref.glasso_admm(S, alpha), S, alpha)
    rows = [close(f"MLE(sparse_gmrf(5, 0.1, 300), PCD(200), adam cosine).run({steps})",
                  "start Θ = I (the model's)", gm.glasso_objective(L @ L.T, S, alpha), best,
                  0.02, note="glasso objective; ref: ADMM; docs: gap 0.003-0.01")]
    V, H = 6, 4
    v = np.random.default_rng(10).normal(0, 1, (200, V)).astype(np.float32)
    v[:, :3] += v[:, :1] * 1.5
    gb = ugm.MLE(ugm.models.gaussian_rbm, ugm.PCD(100), optax.adam(0.01)).run(
        jax.random.PRNGKey(0), 200, {"v": v}, V, H, progress_bar=False)
    W = np.asarray(gb.params["W"], np.float64)
    spread = float(np.min([np.abs(W[:, a] - W[:, b]).max() for a in range(H)
                           for b in range(a + 1, H)]))
    rows.append(flag("MLE(gaussian_rbm 6x4, PCD(100), adam(0.01)).run(200): columns of W",
                     "init_scale=0.01", f"closest columns differ by {spread:.3g}",
                     "columns distinct (> 1e-3)", spread > 1e-3,
                     note="at W = 0 they stay identical (issue 46 item 2)"))
    return rows


def rbm_exact_path(data, W, b, c, lr, num_steps):
    """SGD with the exact gradient of an RBM's mean log-likelihood (h summed out; own
    enumeration of v and h) from (W, b, c): the final (W, b, c) and their mean LL."""
    V, H = W.shape
    v, h = ref.states(V, (0, 1)), ref.states(H, (0, 1))

    def ll_and_grad(W, b, c):
        E = v @ W @ h.T + (v @ b)[:, None] + (h @ c)[None, :]
        p = ref.probabilities(E.ravel()).reshape(E.shape)
        ph = 1 / (1 + np.exp(-(data @ W + c)))                   # E[h | v] per case
        free = np.sum(np.logaddexp(0, data @ W + c), 1) + data @ b
        value = free.mean() - ref.logsumexp(E)
        gW = data.T @ ph / len(data) - v.T @ p @ h
        return value, (gW, data.mean(0) - p.sum(1) @ v, ph.mean(0) - p.sum(0) @ h)

    for _ in range(num_steps):
        _, (gW, gb, gc) = ll_and_grad(W, b, c)
        W, b, c = W + lr * gW, b + lr * gb, c + lr * gc
    return ll_and_grad(W, b, c)[0], ll_and_grad


@check("learning")
def rbm_learning(quick):
    """MLE of a binary RBM 6 x 3 from its default start (W ~ N(0, 0.01)) with CD-1 and
    PCD(100), SGD 0.05, against the same SGD from the same start with the exact
    gradient (h summed out in both)."""
    V, H, steps = 6, 3, 300 if quick else 1000
    rng = np.random.default_rng(13)
    proto = (rng.random((3, V)) < 0.5).astype(np.float64)
    data = np.abs(proto[rng.integers(0, 3, 200)] - (rng.random((200, V)) < 0.1))
    rows = []
    for name, estimator in (("CD()", ugm.CD()), ("PCD(100)", ugm.PCD(100))):
        learner = ugm.MLE(ugm.models.rbm, estimator, optax.sgd(0.05))
        state = learner.init(jax.random.PRNGKey(2), {"v": data.astype(np.int8)}, V, H)
        start = {k: np.asarray(a, np.float64) for k, a in learner.get_params(state).items()}
        reference, ll_and_grad = rbm_exact_path(data, start["W"], start["b"], start["c"],
                                                0.05, steps)
        result = learner.run(jax.random.PRNGKey(2), steps, {"v": data.astype(np.int8)}, V, H,
                             init_state=state, progress_bar=False)
        P = {k: np.asarray(a, np.float64) for k, a in result.params.items()}
        rows.append(close(f"MLE(rbm 6x3, {name}, sgd(0.05)).run({steps}): exact LL",
                          "init_scale=0.01 (the model's start), h summed out",
                          ll_and_grad(P["W"], P["b"], P["c"])[0], reference,
                          0.03 if name == "CD()" else 0.01,
                          note="ref: exact-gradient SGD from the same start"))
    return rows


@check("learning")
def fit_exact_map(quick):
    """``fit_exact`` with a prior (MAP): vbm(prior_scale=1) against own Newton on the
    mean log-likelihood plus log p(θ) / N."""
    data, F, s = vbm_problem()
    theta, _, _ = ref.exp_family_mle(F, s, ridge=1.0 / N_CASES)
    fit = ugm.fit_exact(ugm.models.vbm, {"x": data}, N_UNITS, prior_scale=1.0,
                        progress_bar=False)
    W = np.asarray(fit.params["W"], np.float64)
    ours = np.concatenate([W[np.triu_indices(N_UNITS, 1)], np.asarray(fit.params["b"])])
    return [close("fit_exact(vbm 8, prior_scale=1.0).params (MAP)", "L-BFGS, num_steps=500",
                  ours, theta, 2e-3, note=f"converged={bool(fit.converged)}; ref: Newton")]
