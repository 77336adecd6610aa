"""Checks of ``defaults_sweep.py``: every ready-made model of ``ugm.models`` at its
defaults, and the exact evaluation (``ugm.exact``) on them, against enumeration and
closed forms of ``_sweep_reference``."""

import jax
import jax.numpy as jnp
import numpy as np

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact
from numpyro_ugm.models import gaussian as gm

import _sweep_reference as ref
from _sweep_rows import check, close, flag, zcheck

KEY = jax.random.PRNGKey(0)
TOL32 = 2e-5  # float32 sums of a few hundred terms, relative to max(1, |value|)


def f32(params):
    return {k: jnp.asarray(v, jnp.float32) for k, v in params.items()}


def tol32(value):
    return TOL32 * max(1.0, abs(float(value)))


def rbm_problem(V=4, H=3, seed=1):
    rng = np.random.default_rng(seed)
    P = {"W": rng.normal(0, 1, (V, H)), "b": rng.normal(0, 1, V), "c": rng.normal(0, 1, H)}
    v, h = ref.states(V, (0, 1)), ref.states(H, (0, 1))
    E = v @ P["W"] @ h.T + (v @ P["b"])[:, None] + (h @ P["c"])[None, :]
    return P, v, h, E


@check("models")
def rbm_defaults(quick):
    V, H = 4, 3
    m = ugm.UGM(ugm.models.rbm, V, H)
    W0 = np.asarray(m.init_params(KEY)["W"], np.float64)
    P, v, h, E = rbm_problem(V, H)
    log_z = ref.logsumexp(E)
    p = ref.probabilities(E.ravel()).reshape(E.shape)
    data = v[np.random.default_rng(2).integers(0, len(v), 25)]
    free = ref.logsumexp(data @ P["W"] @ h.T + (data @ P["b"])[:, None] + h @ P["c"], 1)
    marg = exact.marginals(m, f32(P))
    draws = np.asarray(exact.sample(m, f32(P), jax.random.PRNGKey(3), 4000)["v"], np.float64)
    pv = p.sum(1) @ v
    se = np.sqrt(pv * (1 - pv) / len(draws))
    return [
        close("UGM(rbm, 4, 3).init_params(key)['W'].std()", "init_scale=0.01",
              W0.std(), 0.01, 0.005, note="random start, not W = 0"),
        flag("rbm init: columns of W distinct", "init_scale=0.01",
             f"{np.unique(W0, axis=1).shape[1]} distinct", f"{H} columns",
             np.unique(W0, axis=1).shape[1] == H),
        close("exact.log_partition(rbm 4x3)", "chunk_size=16384, sum_out='auto'",
              exact.log_partition(m, f32(P)), log_z, tol32(log_z)),
        close("exact.marginals(rbm)['v'][:, 1]", "chunk_size=16384",
              np.asarray(marg["v"])[:, 1], pv, 1e-5),
        close("exact.marginals(rbm)['h'][:, 1]", "chunk_size=16384",
              np.asarray(marg["h"])[:, 1], p.sum(0) @ h, 1e-5),
        close("exact.log_likelihood(rbm, {'v': 25 cases})", "h latent, summed out",
              exact.log_likelihood(m, f32(P), {"v": data.astype(np.int8)}),
              free.mean() - log_z, tol32(log_z)),
        close("exact.log_prob(rbm, {'v'})", "h summed out",
              exact.log_prob(m, f32(P), {"v": data.astype(np.int8)}), free - log_z,
              tol32(log_z)),
        close("exact.expectation(rbm, sum v)", "chunk_size=16384",
              exact.expectation(m, f32(P), lambda s: jnp.sum(s["v"])), pv.sum(), 1e-5),
        close("exact.num_enumerated(rbm 4x3)[0]", "sum_out='auto'",
              exact.num_enumerated(m)[0], 2 ** min(V, H), 0),
        zcheck("exact.sample(rbm, 4000)['v'].mean(0)", "chunk_size=16384",
               draws.mean(0), pv, (draws.mean(0) - pv) / se),
        close("pseudo_log_likelihood(rbm, {'v'}) (h latent)", "h summed out first",
              ugm.pseudo_log_likelihood(m, f32(P), {"v": data.astype(np.int8)}),
              rbm_pseudo_log_likelihood(P, data, h), 1e-4),
    ]


def rbm_pseudo_log_likelihood(P, v, h):
    """Mean Σ_i log p(v_i | v_−i) under the RBM's visible marginal (own)."""
    def free(x):
        return ref.logsumexp(x @ P["W"] @ h.T + (x @ P["b"])[:, None] + h @ P["c"], 1)

    total = np.zeros(len(v))
    for i in range(v.shape[1]):
        on, off = v.copy(), v.copy()
        on[:, i], off[:, i] = 1, 0
        f_on, f_off = free(on), free(off)
        total += np.where(v[:, i] == 1, f_on, f_off) - np.logaddexp(f_on, f_off)
    return total.mean()


@check("models")
def vbm_defaults(quick):
    n = 6
    rng = np.random.default_rng(4)
    W, b = np.triu(rng.normal(0, 0.5, (n, n)), 1), rng.normal(0, 0.5, n)
    rows = []
    for domain, values in (("spin", (-1, 1)), ("binary", (0, 1))):
        x = ref.states(n, values)
        E = np.einsum("ki,ij,kj->k", x, W, x) + x @ b
        m = ugm.UGM(ugm.models.vbm, n, domain=domain)
        rows.append(close(f"exact.log_partition(vbm {n}, domain={domain!r})",
                          "fields=True", exact.log_partition(m, f32({"W": W, "b": b})),
                          ref.logsumexp(E), tol32(ref.logsumexp(E))))
    p0 = ugm.UGM(ugm.models.vbm, n).init_params(KEY)
    rows.append(flag("UGM(vbm, 6).init_params(key)", "prior_scale=None",
                     "W = 0, b = 0" if not any(np.any(v) for v in p0.values()) else "nonzero",
                     "W = 0, b = 0 (documented)",
                     not any(np.any(np.asarray(v)) for v in p0.values())))
    return rows


def gbrbm_reference(P):
    """log Z, E[v], Cov[v] of the unit-variance GB-RBM: v | h ~ N(b + W h, I)."""
    V, H = P["W"].shape
    h = ref.states(H, (0, 1))
    mu = P["b"] + h @ P["W"].T
    log_w = (0.5 * V * np.log(2 * np.pi) + 0.5 * (mu ** 2).sum(1)
             - 0.5 * (P["b"] ** 2).sum() + h @ P["c"])
    w = ref.probabilities(log_w)
    mean = w @ mu
    cov = np.eye(V) + (mu * w[:, None]).T @ mu - np.outer(mean, mean)
    return ref.logsumexp(log_w), mean, cov, h


@check("models")
def gaussian_rbm_defaults(quick):
    V, H = 3, 2
    m = ugm.UGM(ugm.models.gaussian_rbm, V, H)
    W0 = np.asarray(m.init_params(KEY)["W"], np.float64)
    rng = np.random.default_rng(5)
    P = {"W": rng.normal(0, 0.5, (V, H)), "b": rng.normal(0, 1, V), "c": rng.normal(0, 1, H)}
    log_z, mean, cov, h = gbrbm_reference(P)
    moments = exact.moments(m, f32(P))
    v = rng.normal(0, 1, (5, V))
    f = (-0.5 * ((v[:, None, :] - P["b"]) ** 2).sum(-1) + np.einsum("nv,vh,kh->nk", v, P["W"], h)
         + h @ P["c"])
    return [
        close("UGM(gaussian_rbm, 3, 2).init_params(key)['W'].std()", "init_scale=0.01",
              W0.std(), 0.01, 0.005, note="random start (issue 46 item 2)"),
        close("exact.log_partition(gaussian_rbm 3x2)", "v integrated, h enumerated",
              exact.log_partition(m, f32(P)), log_z, tol32(log_z)),
        close("exact.moments(gaussian_rbm).mean['v']", "", moments.mean["v"], mean, 1e-5),
        close("exact.moments(gaussian_rbm).covariance", "", moments.covariance, cov, 1e-5),
        close("exact.log_prob(gaussian_rbm, {'v'})", "h summed out",
              exact.log_prob(m, f32(P), {"v": v.astype(np.float32)}),
              ref.logsumexp(f, 1) - log_z, 1e-4),
    ]


def grid_energies(node, edge, w, v, size):
    x = ref.states(size * size)
    edges = ugm.models.grid_edges(size, size)
    node = np.asarray(node, np.float64).reshape(size * size, -1)
    return x, (x @ (node @ w) + (x[:, edges[:, 0]] * x[:, edges[:, 1]])
               @ (np.asarray(edge, np.float64) @ v))


@check("models")
def grid_crf_defaults(quick):
    y = np.random.default_rng(6).normal(0, 1, (3, 3))
    node, edge = ugm.models.image_features(y)
    m = ugm.UGM(ugm.models.grid_crf, node, edge)
    p0 = m.init_params(KEY)
    w, v = np.array([0.2, 0.8]), np.array([0.5, -0.3])
    _, E = grid_energies(node, edge, w, v, 3)
    return [
        flag("UGM(grid_crf, features).init_params(key)", "", fmt_zero(p0),
             "w = 0, v = 0 (documented)", not any(np.any(np.asarray(a)) for a in p0.values())),
        close("exact.log_partition(grid_crf 3x3)", "", exact.log_partition(
            m, f32({"w": w, "v": v})), ref.logsumexp(E), tol32(ref.logsumexp(E))),
    ]


def fmt_zero(params):
    return "all 0" if not any(np.any(np.asarray(a)) for a in params.values()) else "nonzero"


def multilabel_reference(features, labels, L):
    """The conditional MLE of multilabel_crf by scipy's L-BFGS on own enumeration:
    (mean conditional log-likelihood at the optimum)."""
    from scipy.optimize import minimize

    y = ref.states(L)
    i, j = np.triu_indices(L, 1)
    pair = y[:, i] * y[:, j]
    d = features.shape[1]

    def negative(theta):
        we, wv, b = theta[:len(i)], theta[len(i):len(i) + L * d].reshape(L, d), theta[-L:]
        fields = features @ wv.T + b                              # (N, L)
        all_e = pair @ we + fields @ y.T                         # (N, 2^L)
        obs = (labels[:, i] * labels[:, j]) @ we + np.sum(labels * fields, 1)
        return -np.mean(obs - ref.logsumexp(all_e, 1))

    res = minimize(negative, np.zeros(len(i) + L * d + L), method="L-BFGS-B",
                   options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 5000})
    return -float(res.fun)


@check("models")
def multilabel_crf_defaults(quick):
    L, d, N = 4, 3, 40
    rng = np.random.default_rng(7)
    feats = rng.normal(0, 1, (N, d)).astype(np.float32)
    labels = np.sign(feats @ rng.normal(0, 1, (d, L)) + rng.normal(0, 1, (N, L)))
    m = ugm.UGM(ugm.models.multilabel_crf, features=feats[0], num_labels=L)
    P = {"W_E": rng.normal(0, 1, (L, L)), "W_v": rng.normal(0, 1, (L, d)), "b": rng.normal(0, 1, L)}
    y = ref.states(L)
    E = (np.einsum("ki,ij,kj->k", y, np.triu(P["W_E"], 1), y)
         + y @ (P["W_v"] @ feats[0].astype(np.float64) + P["b"]))
    fit = ugm.fit_exact(ugm.models.multilabel_crf, {"y": labels.astype(np.int8)},
                        num_labels=L, inputs={"features": feats}, progress_bar=False)
    best = multilabel_reference(feats.astype(np.float64), labels, L)
    return [
        close("exact.log_partition(multilabel_crf L=4)", "bias=True",
              exact.log_partition(m, f32(P)), ref.logsumexp(E), tol32(ref.logsumexp(E))),
        close("fit_exact(multilabel_crf, inputs=40 examples).log_likelihood",
              "L-BFGS, num_steps=500, tol=1e-6", fit.log_likelihood, best, 1e-4,
              note=f"converged={bool(fit.converged)}"),
    ]


def gaussian_data(D, N, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(0, 1, (D, D))
    theta = A @ A.T / D + np.eye(D)
    x = rng.multivariate_normal(np.zeros(D), np.linalg.inv(theta), N)
    return theta, x.astype(np.float32)


@check("models")
def sparse_gmrf_defaults(quick):
    D, N, alpha = 4, 200, 0.1
    theta, x = gaussian_data(D, N, 0)
    m = ugm.UGM(ugm.models.sparse_gmrf, D)
    P = {"L": np.linalg.cholesky(theta)}
    S = x.astype(np.float64).T @ x.astype(np.float64) / N
    fit = ugm.fit_exact(ugm.models.sparse_gmrf, {"x": x}, D, progress_bar=False)
    L = np.asarray(fit.params["L"], np.float64)
    fit_map = ugm.fit_exact(ugm.models.sparse_gmrf, {"x": x}, D, alpha, N, progress_bar=False)
    Lm = np.asarray(fit_map.params["L"], np.float64)
    best = ref.glasso_value(ref.glasso_admm(S, alpha), S, alpha)
    init = ugm.UGM(ugm.models.sparse_gmrf, D, alpha, N).init_params(KEY)["L"]
    log_z = 0.5 * D * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(theta)[1]
    return [
        close("UGM(sparse_gmrf, 4, 0.1, 200).init_params(key)['L']", "MAP start",
              np.asarray(init), np.eye(D), 0, note="Θ = I (issue 46 item 3)"),
        close("exact.log_partition(sparse_gmrf 4)", "", exact.log_partition(m, f32(P)),
              log_z, tol32(log_z)),
        close("exact.moments(sparse_gmrf).covariance", "",
              exact.moments(m, f32(P)).covariance, np.linalg.inv(theta), 1e-5),
        close("fit_exact(sparse_gmrf 4).params: Θ = L Lᵀ", "L-BFGS, num_steps=500",
              L @ L.T, np.linalg.inv(S), 1e-3 * np.abs(np.linalg.inv(S)).max()),
        close("fit_exact(sparse_gmrf(4, α=0.1, N)): glasso objective", "L-BFGS, num_steps=500",
              gm.glasso_objective(Lm @ Lm.T, S, alpha), best, 1e-5,
              known="F3", note=f"converged={bool(fit_map.converged)}, warns (L-BFGS stalls at the L1 kink); ref: ADMM = sklearn lars"),
    ]


@check("models")
def lattice_gmrf_defaults(quick):
    from scipy.optimize import minimize
    from scipy.stats import multivariate_normal

    size, kappa, rho, n = 4, 1.3, 0.6, 500
    A = ref.torus_adjacency(size)
    Q = kappa * (np.eye(size * size) - rho / 4 * A)
    C = np.linalg.inv(Q)
    m = ugm.UGM(ugm.models.lattice_gmrf, size)
    P = {"kappa": kappa, "rho": rho}
    fields = np.asarray(gm.lattice_draws(jax.random.PRNGKey(1), n, size, kappa, rho), np.float64)
    flat = fields.reshape(n, -1)

    def negative(t):
        k, r = np.exp(t[0]), np.tanh(t[1])
        return -multivariate_normal(np.zeros(size * size), np.linalg.inv(
            k * (np.eye(size * size) - r / 4 * A))).logpdf(flat).mean()

    own = minimize(negative, [0.0, 0.0], method="Nelder-Mead",
                   options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 4000}).x
    own = np.array([np.exp(own[0]), np.tanh(own[1])])
    mle = gm.lattice_mle(fields)
    fit = ugm.fit_exact(ugm.models.lattice_gmrf, {"x": fields.astype(np.float32)}, size,
                        progress_bar=False)
    emp = np.cov(flat.T, bias=True)
    se = np.sqrt((np.outer(np.diag(C), np.diag(C)) + C ** 2) / n)
    log_z = 0.5 * size * size * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(Q)[1]
    ll = multivariate_normal(np.zeros(size * size), C).logpdf(flat).mean()
    return [
        close("exact.log_partition(lattice_gmrf 4)", "", exact.log_partition(m, f32(P)),
              log_z, tol32(log_z)),
        close("lattice_moments(4, 1.3, 0.6)", "", gm.lattice_moments(size, kappa, rho),
              [C[0, 0], C[0, 1]], 1e-10),
        close("lattice_log_likelihood(fields, 1.3, 0.6)", "",
              gm.lattice_log_likelihood(fields, kappa, rho), ll, 1e-9),
        close("lattice_mle(fields)", "xatol=1e-10", [mle["kappa"], mle["rho"]], own, 1e-5),
        close("fit_exact(lattice_gmrf 4).params", "L-BFGS, num_steps=500",
              [fit.params["kappa"], fit.params["rho"]], own, 1e-4),
        zcheck("lattice_draws(key, 500, 4, 1.3, 0.6): covariance", "",
               emp[0, :3], C[0, :3], (emp - C) / se, tol=4.5),
    ]


@check("models")
def ergm_model_defaults(quick):
    import networkx as nx

    n = 5
    G = nx.Graph([(0, 1), (1, 2), (0, 2), (2, 3), (3, 4)])
    Y, stats = ref.graph_statistics_table(n)
    F = np.stack([stats["edges"], stats["triangle"]], 1)
    rows, cols = np.triu_indices(n, 1)
    obs = np.array([[int(G.has_edge(a, b)) for a, b in zip(rows, cols)]], np.int8)
    theta_ref, ll_ref, _ = ref.exp_family_mle(F, F[int((obs[0].astype(np.int64) << np.arange(len(rows))).sum())])
    m = ugm.UGM(ugm.models.ergm, G)
    theta = np.array([-0.3, 0.4])
    fit = ugm.fit_exact(ugm.models.ergm, {"y": obs}, G, progress_bar=False)
    return [
        close("exact.log_partition(ergm(G5), θ)", "statistics=('edges', 'triangles')",
              exact.log_partition(m, f32({"theta": theta})), ref.logsumexp(F @ theta), 1e-5),
        close("fit_exact(ergm, {'y': G5})", "L-BFGS, num_steps=500",
              fit.params["theta"], theta_ref, 1e-3, note=f"converged={bool(fit.converged)}"),
    ]
