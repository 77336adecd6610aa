"""The independent side of ``defaults_sweep.py``: every reference number it compares the
package's against, computed here in plain numpy / scipy / scikit-learn / networkx, in
float64. Nothing here imports ``numpyro_ugm``.

* enumeration: :func:`states`, :func:`logsumexp`, exponential-family moments and the exact
  MLE by damped Newton (:func:`exp_family_mle`), the same optimizer run with the exact
  gradient (:func:`exact_gradient_path`);
* the VBM: :func:`vbm_features`, :func:`vbm_pseudo_mle`;
* Gaussians: :func:`glasso_admm` (the graphical lasso by ADMM), :func:`torus_adjacency`;
* ERGMs: :func:`graph_statistics_table` (edges, triangles and 2-stars of every graph on
  n nodes), :func:`logistic_mle` (scikit-learn, unpenalized, with the Fisher standard
  errors);
* Monte Carlo: :func:`batch_means_se` (the standard error of the mean of one correlated
  chain by batch means) and :func:`z_scores`.
"""

import itertools

import numpy as np
from scipy.special import logsumexp as _logsumexp


def states(n, values=(-1, 1)):
    """Every configuration of n variables over ``values``, (len(values)**n, n) float64."""
    return np.array(list(itertools.product(values, repeat=n)), np.float64)


def logsumexp(a, axis=None):
    return _logsumexp(np.asarray(a, np.float64), axis=axis)


def probabilities(energies):
    """exp(E − log Z) of a vector of log-potentials."""
    e = np.asarray(energies, np.float64)
    return np.exp(e - logsumexp(e))


def vbm_features(x):
    """The sufficient statistics of a fully visible Boltzmann machine, (…, n(n−1)/2 + n):
    the products x_i x_j (i < j, row-major) then x."""
    x = np.asarray(x, np.float64)
    i, j = np.triu_indices(x.shape[-1], 1)
    return np.concatenate([x[..., i] * x[..., j], x], -1)


def vbm_params(theta, n):
    """θ of :func:`vbm_features` -> (W upper triangular (n, n), b (n,))."""
    i, j = np.triu_indices(n, 1)
    W = np.zeros((n, n))
    W[i, j] = theta[:len(i)]
    return W, np.asarray(theta[len(i):])


def mean_log_likelihood(F, s_obs, theta):
    """Mean log-likelihood of data with mean statistics ``s_obs`` under the family of all
    configurations' statistics ``F`` (rows)."""
    return float(s_obs @ theta - logsumexp(F @ theta))


def exp_family_mle(F, s_obs, ridge=0.0, num_steps=200):
    """The exact MLE of an exponential family over the enumerated states' statistics
    ``F`` (rows) given the data's mean statistics ``s_obs`` (with ``ridge``: the MAP of
    a N(0, 1 / (N ridge)) prior per coordinate, i.e. the objective less ½ ridge |θ|²):
    Newton's method with backtracking on the concave objective. Returns (θ, mean
    log-likelihood, covariance of the statistics at θ)."""
    def objective(theta):
        return mean_log_likelihood(F, s_obs, theta) - 0.5 * ridge * theta @ theta

    theta = np.zeros(F.shape[1])
    value = objective(theta)
    for _ in range(num_steps):
        p = probabilities(F @ theta)
        mean = p @ F
        cov = (F * p[:, None]).T @ F - np.outer(mean, mean)
        hessian = cov + (ridge + 1e-12) * np.eye(len(mean))
        step = np.linalg.solve(hessian, s_obs - mean - ridge * theta)
        t = 1.0
        while t > 1e-10:
            new = objective(theta + t * step)
            if new >= value - 1e-14:
                break
            t /= 2
        theta, old, value = theta + t * step, value, new
        if abs(value - old) < 1e-15 and np.abs(s_obs - mean - ridge * theta).max() < 1e-10:
            break
    return theta, mean_log_likelihood(F, s_obs, theta), cov


def exact_gradient_path(F, s_obs, lr, num_steps):
    """Plain gradient ascent from θ = 0 with the exact gradient (what SGD at ``lr`` does
    when the negative phase is exact): the reference of a stochastic learner run for
    the same number of steps. Returns θ."""
    theta = np.zeros(F.shape[1])
    for _ in range(num_steps):
        theta = theta + lr * (s_obs - probabilities(F @ theta) @ F)
    return theta


def vbm_pseudo_mle(x):
    """Besag's maximum pseudo-likelihood of a spin VBM (W upper triangular, b) on data x
    (N, n) in ±1, by scipy's L-BFGS in float64: (W, b, mean pseudo-log-likelihood)."""
    from scipy.optimize import minimize

    x = np.asarray(x, np.float64)
    n = x.shape[1]
    i, j = np.triu_indices(n, 1)

    def negative(theta):
        W = np.zeros((n, n))
        W[i, j] = theta[:len(i)]
        sym = W + W.T
        field = x @ sym + theta[len(i):]
        margin = 2 * x * field
        value = np.sum(np.logaddexp(0, -margin)) / len(x)
        r = -2 * x * (1 / (1 + np.exp(margin))) / len(x)  # d value / d field
        g_sym = x.T @ r
        grad = np.concatenate([(g_sym + g_sym.T)[i, j], r.sum(0)])
        return value, grad

    res = minimize(negative, np.zeros(len(i) + n), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000})
    W, b = vbm_params(res.x, n)
    return W, b, -float(res.fun)


def vbm_pseudo_log_likelihood(W, b, x):
    """Mean Besag pseudo-log-likelihood of spin data x under the VBM (W upper, b)."""
    x = np.asarray(x, np.float64)
    field = x @ (W + W.T) + b
    return float(-np.sum(np.logaddexp(0, -2 * x * field)) / len(x))


def glasso_admm(S, alpha, rho=1.0, num_steps=20000):
    """The graphical lasso's optimum Θ (off-diagonal L1 penalty α, scikit-learn's
    objective) by ADMM (Boyd et al. 2011, sec. 6.5), float64."""
    Z, U = np.eye(len(S)), np.zeros_like(S)
    for _ in range(num_steps):
        lam, Q = np.linalg.eigh(rho * (Z - U) - S)
        theta = Q @ np.diag((lam + np.sqrt(lam ** 2 + 4 * rho)) / (2 * rho)) @ Q.T
        V = theta + U
        Z = np.sign(V) * np.maximum(np.abs(V) - alpha / rho, 0.0)
        np.fill_diagonal(Z, np.diag(V))
        U = U + theta - Z
    return Z


def glasso_value(theta, S, alpha):
    """scikit-learn's graphical-lasso objective −log det Θ + tr(SΘ) + α Σ_{i≠j} |Θ_ij|."""
    sign, logdet = np.linalg.slogdet(theta)
    if sign <= 0:
        return float("inf")
    off = np.abs(theta).sum() - np.abs(np.diag(theta)).sum()
    return float(-logdet + np.sum(S * theta) + alpha * off)


def torus_adjacency(size):
    """Nearest-neighbour adjacency of a size × size torus, row-major sites."""
    A = np.zeros((size * size, size * size))
    for r in range(size):
        for c in range(size):
            for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0)):
                A[r * size + c, ((r + dr) % size) * size + (c + dc) % size] += 1
    return A


def graph_statistics_table(n):
    """(edge indicator rows (2^D, D) in the upper-triangle order, a dict of statistics
    per graph: 'edges', 'triangle', 'kstar2', 'degree' (2^D, n)) of every undirected
    graph on n nodes (D = n(n−1)/2)."""
    rows, cols = np.triu_indices(n, 1)
    D = len(rows)
    codes = np.arange(2 ** D, dtype=np.int64)
    Y = ((codes[:, None] >> np.arange(D)) & 1).astype(np.int8)
    index = {(a, b): k for k, (a, b) in enumerate(zip(rows, cols))}
    triangles = np.zeros(len(codes))
    for a, b, c in itertools.combinations(range(n), 3):
        triangles += Y[:, index[a, b]] & Y[:, index[a, c]] & Y[:, index[b, c]]
    degree = np.zeros((len(codes), n))
    for k, (a, b) in enumerate(zip(rows, cols)):
        degree[:, a] += Y[:, k]
        degree[:, b] += Y[:, k]
    return Y, {"edges": Y.sum(1).astype(np.float64), "triangle": triangles,
               "kstar2": (degree * (degree - 1) / 2).sum(1), "degree": degree}


def logistic_mle(X, y):
    """Unpenalized logistic regression with an intercept (scikit-learn), and its Fisher
    standard errors and log-likelihood (own): (coefficients with the intercept first,
    standard errors, log-likelihood)."""
    from sklearn.linear_model import LogisticRegression

    fit = LogisticRegression(C=np.inf, tol=1e-12, max_iter=100000).fit(X, y)
    beta = np.concatenate([fit.intercept_, fit.coef_.ravel()])
    design = np.column_stack([np.ones(len(X)), X])
    eta = design @ beta
    p = 1 / (1 + np.exp(-eta))
    info = (design * (p * (1 - p))[:, None]).T @ design
    loglik = float(np.sum(y * eta - np.logaddexp(0, eta)))
    return beta, np.sqrt(np.diag(np.linalg.inv(info))), loglik


def batch_means_se(x, num_batches=20):
    """Standard error of the mean of a correlated chain (first axis: draws, in order), by
    the spread of ``num_batches`` consecutive batch means."""
    x = np.asarray(x, np.float64)
    usable = len(x) // num_batches * num_batches
    means = x[:usable].reshape((num_batches, -1) + x.shape[1:]).mean(1)
    return means.std(0, ddof=1) / np.sqrt(num_batches)


def z_scores(x, reference, num_batches=20):
    """(mean − reference) / batch-means standard error, per variable, of one chain x."""
    x = np.asarray(x, np.float64)
    return (x.mean(0) - reference) / batch_means_se(x, num_batches)
