"""Checks of ``defaults_sweep.py``: drawing and scoring at the defaults — ``ugm.sample``
(each kernel), ``ugm.predict``, the numpyro adapters (``ugm.infer``), ``ugm.ais`` and
``ugm.quadrature`` — against enumeration, closed forms and scipy's quadrature, Monte
Carlo numbers in their own standard errors (batch means of one chain, the spread of
repeated calls, or the estimator's reported error)."""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from scipy import integrate

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import ais, exact

import _sweep_reference as ref
from _sweep_models import f32, gbrbm_reference, grid_energies
from _sweep_rows import check, close, flag, zcheck

SAMPLE_DEFAULTS = "num_chains=1, num_warmup=None, thinning=1"


@functools.lru_cache(maxsize=1)
def vbm8():
    """(params, exact mean of x, log Z, states, probabilities) of a spin VBM of 8 units,
    W_ij ~ N(0, 0.3²), b_i ~ N(0, 0.3²)."""
    rng = np.random.default_rng(11)
    n = 8
    W, b = np.triu(rng.normal(0, 0.3, (n, n)), 1), rng.normal(0, 0.3, n)
    x = ref.states(n)
    E = np.einsum("ki,ij,kj->k", x, W, x) + x @ b
    p = ref.probabilities(E)
    return {"W": W, "b": b}, p @ x, ref.logsumexp(E), x, p


@check("sampling")
def sample_finite_kernels(quick):
    P, mean, _, _, _ = vbm8()
    m = ugm.UGM(ugm.models.vbm, 8)
    num = 1000 if quick else 4000
    rows = []
    for name, kernel, what in (("default", None, "gibbs(): exact conditionals, no warm-up"),
                               ("metropolis()", ugm.kernels.metropolis(), "no warm-up"),
                               ("parallel_tempering()", ugm.kernels.parallel_tempering(),
                                "10 betas"),
                               ("tempered_transitions()", ugm.kernels.tempered_transitions(),
                                "betas 0.9..1")):
        x = np.asarray(ugm.sample(m, f32(P), jax.random.PRNGKey(0), num, kernel=kernel)["x"],
                       np.float64)
        rows.append(zcheck(f"sample(vbm 8, {num}, kernel={name}): E[x]",
                           f"{SAMPLE_DEFAULTS}; {what}", x.mean(0), mean,
                           ref.z_scores(x, mean), note="batch means"))
    return rows


def double_well():
    x = numpyro.sample("x", ugm.Real(()))
    numpyro.factor("f", -0.25 * x ** 4 + x ** 2 - 0.5 * x)


def well_density(x):
    return np.exp(-0.25 * x ** 4 + x ** 2 - 0.5 * x)


@functools.lru_cache(maxsize=1)
def well_moments():
    mass = integrate.quad(well_density, -np.inf, np.inf, epsabs=1e-13)[0]
    mean = integrate.quad(lambda x: x * well_density(x), -np.inf, np.inf, epsabs=1e-13)[0]
    return np.log(mass), mean / mass


@check("sampling")
def sample_real_kernels(quick):
    """The double well exp(−x⁴/4 + x² − x/2) on one Real site: the default kernel (MALA
    for a non-quadratic site) and rwm / hmc, each at its defaults."""
    _, mean = well_moments()
    m = ugm.UGM(double_well)
    num = 2000 if quick else 4000
    rows = []
    for name, kernel in (("default", None), ("rwm()", ugm.kernels.rwm()),
                         ("hmc()", ugm.kernels.hmc())):
        x, diag = ugm.sample(m, {}, jax.random.PRNGKey(0), num, kernel=kernel,
                             return_diagnostics=True)
        x = np.asarray(x["x"], np.float64)
        rows.append(zcheck(f"sample(double well, {num}, kernel={name}): E[x]",
                           f"{SAMPLE_DEFAULTS} (-> max(500, {num}) for an adaptive kernel)",
                           x.mean(), mean, ref.z_scores(x, mean),
                           note=f"acceptance {float(diag.acceptance[0]):.2f}; batch means"))
    return rows


@check("sampling")
def sample_gaussian_models(quick):
    """Exact Gibbs on real sites: the CAR lattice and a Gaussian-Bernoulli RBM."""
    size, kappa, rho = 4, 1.3, 0.6
    num = 1000 if quick else 4000
    x = np.asarray(ugm.sample(ugm.UGM(ugm.models.lattice_gmrf, size),
                              f32({"kappa": kappa, "rho": rho}), jax.random.PRNGKey(0),
                              num)["x"], np.float64)
    A = ref.torus_adjacency(size)
    C = np.linalg.inv(kappa * (np.eye(size * size) - rho / 4 * A))
    stats = np.stack([(x ** 2).mean((1, 2)), (x * np.roll(x, 1, 1)).mean((1, 2))], 1)
    rows = [zcheck(f"sample(lattice_gmrf 4, {num}): E[x²], E[x_i x_i+1]", SAMPLE_DEFAULTS,
                   stats.mean(0), [C[0, 0], C[0, 1]], ref.z_scores(stats, [C[0, 0], C[0, 1]]))]
    rng = np.random.default_rng(5)
    P = {"W": rng.normal(0, 0.5, (3, 2)), "b": rng.normal(0, 1, 3), "c": rng.normal(0, 1, 2)}
    _, mean, _, _ = gbrbm_reference(P)
    v = np.asarray(ugm.sample(ugm.UGM(ugm.models.gaussian_rbm, 3, 2), f32(P),
                              jax.random.PRNGKey(0), num)["v"], np.float64)
    rows.append(zcheck(f"sample(gaussian_rbm 3x2, {num}): E[v]", SAMPLE_DEFAULTS, v.mean(0),
                       mean, ref.z_scores(v, mean)))
    return rows


def predicted_marginal_z(model_args, P, exact_marginals, inputs=None):
    """|z| of the default call (rng_key=None) against the exact marginals, in the spread
    of 8 calls with other keys: (default marginals, z)."""
    calls = [ugm.predict(ugm.models.grid_crf if inputs is not None else ugm.UGM(
        ugm.models.grid_crf, *model_args), P, inputs, rng_key=None if k == 0 else
        jax.random.PRNGKey(100 + k)).marginals["x"] for k in range(9)]
    calls = np.asarray(calls, np.float64)[..., 1]
    spread = calls[1:].std(0, ddof=1)
    return calls[0], (calls[0] - exact_marginals) / np.maximum(spread, 1e-6)


@check("sampling")
def predict_defaults(quick):
    rng = np.random.default_rng(6)
    y = rng.normal(0, 1, (3, 3))
    node, edge = ugm.models.image_features(y)
    w, v = np.array([0.2, 0.8]), np.array([0.5, -0.3])
    P = f32({"w": w, "v": v})
    states, E = grid_energies(node, edge, w, v, 3)
    p = ref.probabilities(E)
    marg = (p @ ((states + 1) / 2)).reshape(3, 3)
    ours, z = predicted_marginal_z((node, edge), P, marg)
    rows = [zcheck("predict(grid_crf 3x3, method='marginal').marginals",
                   "16 chains, 500 draws, 100 warm-up, gibbs(), Rao-Blackwell", ours, marg, z,
                   note="s.e.: spread of 8 calls")]
    best = ugm.predict(ugm.UGM(ugm.models.grid_crf, node, edge), P, None, "map")
    rows.append(close("predict(grid_crf 3x3, method='map').log_potential",
                      "8 chains, 500 annealing steps, beta 0.1 -> 1000", best.log_potential,
                      E.max(), 1e-4, note="ref: max over the 512 labelings"))
    images = rng.normal(0, 1, (3, 3, 3))
    feats = [ugm.models.image_features(im) for im in images]
    inputs = {"node_features": jnp.stack([f[0] for f in feats]),
              "edge_features": jnp.stack([f[1] for f in feats])}
    exact_marg = np.stack([(ref.probabilities(grid_energies(f[0], f[1], w, v, 3)[1])
                            @ ((states + 1) / 2)).reshape(3, 3) for f in feats])
    ours, z = predicted_marginal_z(None, P, exact_marg, inputs)
    rows.append(zcheck("predict(grid_crf, P, inputs=3 images).marginals", "method='marginal'",
                       ours, exact_marg, z, note="s.e.: spread of 8 calls"))
    return rows + [bimodal_prediction()]


def bimodal_prediction():
    """A 4×4 grid CRF with coupling 0.9 and weak fields (two modes): the default call is
    either right (within 0.05 of the exact marginals) or says that its chains disagree."""
    y = 0.3 * np.random.default_rng(0).normal(0, 1, (4, 4))
    node, edge = ugm.models.image_features(y)
    w, v = np.array([0.0, 0.3]), np.array([0.9, 0.0])
    states, E = grid_energies(node, edge, w, v, 4)
    exact_marg = ref.probabilities(E) @ ((states + 1) / 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pred = ugm.predict(ugm.UGM(ugm.models.grid_crf, node, edge), f32({"w": w, "v": v}))
    error = float(np.abs(np.asarray(pred.marginals["x"])[..., 1].ravel() - exact_marg).max())
    warned = any("chains disagree" in str(c.message) for c in caught)
    return flag("predict(grid_crf 4x4, coupling 0.9: two modes).marginals",
                "16 chains, 500 draws, 100 warm-up", f"max error {error:.3f}, "
                f"{'warned' if warned else 'no warning'}", "within 0.05, or a warning",
                error <= 0.05 or warned, note="ref: enumeration of 2^16 labelings")


def noisy_chain(y):
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    x = numpyro.sample("x", ugm.Spin(4))
    numpyro.factor("ising", 0.5 * jnp.sum(x[1:] * x[:-1]))
    numpyro.sample("y", dist.Normal(x, sigma).to_event(1), obs=y)


def noisy_chain_posterior(y):
    """E[σ | y] by quadrature over σ of the sum over the 16 labelings (own)."""
    x = ref.states(4)
    prior_x = np.exp(0.5 * np.sum(x[:, 1:] * x[:, :-1], 1))

    def joint(s):
        like = np.exp(-0.5 * np.sum((y - x) ** 2, 1) / s ** 2) / s ** 4
        return np.exp(-0.5 * s ** 2) * np.sum(prior_x * like)

    mass = integrate.quad(joint, 0, np.inf)[0]
    return integrate.quad(lambda s: s * joint(s), 0, np.inf)[0] / mass


@check("sampling")
def infer_adapters(quick):
    from numpyro.infer import MCMC, NUTS, HMCGibbs

    P, mean, _, _, _ = vbm8()
    num = 1000 if quick else 4000
    mcmc = MCMC(ugm.infer.UGMSampler(ugm.models.vbm, params=f32(P)), num_warmup=100,
                num_samples=num, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), 8)
    x = np.asarray(mcmc.get_samples()["x"], np.float64)
    rows = [zcheck(f"MCMC(infer.UGMSampler(vbm 8)), {num} draws: E[x]", "kernel=gibbs()",
                   x.mean(0), mean, ref.z_scores(x, mean))]
    y = np.array([0.9, 1.4, -0.2, -1.1])
    fn = ugm.infer.gibbs_fn(noisy_chain, y)
    mcmc = MCMC(HMCGibbs(NUTS(noisy_chain), gibbs_fn=fn, gibbs_sites=fn.sites),
                num_warmup=500, num_samples=num, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), y)
    s = np.asarray(mcmc.get_samples()["sigma"], np.float64)
    target = noisy_chain_posterior(y)
    rows.append(zcheck(f"HMCGibbs(NUTS, infer.gibbs_fn(noisy chain)), {num}: E[σ | y]",
                       "kernel=gibbs(), num_mcmc_steps=1", s.mean(), target,
                       ref.z_scores(s[:, None], target)))
    mcmc = MCMC(ugm.infer.UGMSampler(double_well), num_warmup=500, num_samples=num,
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0))
    x = np.asarray(mcmc.get_samples()["x"], np.float64)
    _, mean = well_moments()
    frozen = float(mcmc.last_state.kernel_state.adapting) == 0.0
    rows.append(zcheck(f"MCMC(infer.UGMSampler(double well)), {num}: E[x]",
                       "kernel=gibbs() (MALA on the real site)", x.mean(), mean,
                       ref.z_scores(x, mean), note="step size " + (
                           "frozen after the warm-up" if frozen else "STILL ADAPTING")))
    rows.append(flag("UGMSampler(double well): step size adapted in the warm-up only",
                     "num_warmup=500", "frozen" if frozen else "still adapting", "frozen",
                     frozen))
    return rows


@check("evaluate")
def ais_defaults(quick):
    P, _, log_z, x, p = vbm8()
    m = ugm.UGM(ugm.models.vbm, 8)
    key = jax.random.PRNGKey(0)
    r = ais.log_partition(m, f32(P), key)
    data = x[np.random.default_rng(12).choice(len(x), 100, p=p)]
    ll = np.mean(np.log(p[(((data + 1) / 2) @ 2 ** np.arange(7, -1, -1)).astype(int)]))
    rl = ais.log_likelihood(m, f32(P), {"x": data.astype(np.int8)}, key)
    draws = exact.sample(m, f32(P), jax.random.PRNGKey(3), 100)
    br = ais.log_partition(m, f32(P), key, reverse_from=draws)
    rr = ais.log_likelihood(m, f32(P), {"x": data.astype(np.int8)}, key, reverse=True)
    defaults = "num_chains=100, betas=None (14,500), tolerance=1"
    return [
        zcheck("ais.log_partition(vbm 8)", defaults, r.log_z, log_z, (r.log_z - log_z) / r.stderr),
        zcheck("ais.log_likelihood(vbm 8, 100 cases)", defaults, rl.log_likelihood, ll,
               (rl.log_likelihood - ll) / rl.stderr),
        bracket_row("ais.log_partition(vbm 8, reverse_from=100 exact draws)", br, log_z),
        bracket_row("ais.log_likelihood(vbm 8, reverse=True) (RAISE)", rr, ll),
    ]


def bracket_row(call, r, truth):
    """Whether the bracket holds the exact value within 3 of each end's errors, ends
    sorted."""
    lo, hi = float(r.lower), float(r.upper)
    ok = (lo <= hi and lo - 3 * float(r.lower_stderr) <= truth
          <= hi + 3 * float(r.upper_stderr))
    return flag(call, f"lower from {r.lower_from}, upper from {r.upper_from}",
                f"[{lo:.4f}, {hi:.4f}]", f"{truth:.4f}", ok, note="within 3 s.e. of the ends")


@check("evaluate")
def ais_gaussian_rbm(quick):
    rng = np.random.default_rng(5)
    P = {"W": rng.normal(0, 0.5, (3, 2)), "b": rng.normal(0, 1, 3), "c": rng.normal(0, 1, 2)}
    log_z, _, _, h = gbrbm_reference(P)
    m = ugm.UGM(ugm.models.gaussian_rbm, 3, 2)
    v = np.asarray(exact.sample(m, f32(P), jax.random.PRNGKey(4), 50)["v"], np.float64)
    f = (-0.5 * ((v[:, None, :] - P["b"]) ** 2).sum(-1)
         + np.einsum("nv,vh,kh->nk", v, P["W"], h) + h @ P["c"])
    ll = np.mean(ref.logsumexp(f, 1)) - log_z
    r = ais.log_likelihood(m, f32(P), {"v": v.astype(np.float32)}, jax.random.PRNGKey(0))
    size, kappa, rho = 4, 1.3, 0.6
    Q = kappa * (np.eye(size * size) - rho / 4 * ref.torus_adjacency(size))
    lattice_z = 0.5 * size * size * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(Q)[1]
    rl = ais.log_partition(ugm.UGM(ugm.models.lattice_gmrf, size),
                           f32({"kappa": kappa, "rho": rho}), jax.random.PRNGKey(0))
    return [zcheck("ais.log_likelihood(gaussian_rbm 3x2, 50 exact draws)",
                   "num_chains=100, betas=None, base Normal fitted to the data",
                   r.log_likelihood, ll, (r.log_likelihood - ll) / r.stderr),
            zcheck("ais.log_partition(lattice_gmrf 4, κ=1.3, ρ=0.6)",
                   "num_chains=100, betas=None, base N(0, 1) (no data)", rl.log_z, lattice_z,
                   (rl.log_z - lattice_z) / rl.stderr)]


def plane():
    x = numpyro.sample("x", ugm.Real(2))
    numpyro.factor("f", -0.25 * jnp.sum(x ** 2) ** 2 + 0.8 * x[0] * x[1])


@check("evaluate")
def quadrature_defaults(quick):
    log_z, mean = well_moments()
    q = ugm.quadrature
    z2 = integrate.dblquad(lambda b, a: np.exp(-0.25 * (a * a + b * b) ** 2 + 0.8 * a * b),
                           -10, 10, -10, 10, epsabs=1e-12)[0]
    points = np.array([0.3, 1.0, 1.1, 0.9])
    own_lp = np.log(well_density(points)) - log_z
    lp = q.log_prob(double_well, {}, {"x": points.astype(np.float32)})
    ll = q.log_likelihood(double_well, {}, {"x": points.astype(np.float32)})
    defaults = "bounds=None (base mean ± 8 s.d.), num_points=4001 (1-D) / 401 (2-D)"
    return [
        close("quadrature.log_partition(double well)", defaults,
              q.log_partition(double_well, {}).value, log_z, 1e-6),
        close("quadrature.expectation(double well, x)", defaults,
              q.expectation(double_well, {}, lambda s: s["x"]).value, mean, 1e-6),
        close("quadrature.log_partition(quartic on the plane)", defaults,
              q.log_partition(plane, {}).value, np.log(z2), 1e-6),
        close("quadrature.log_prob(double well, {'x': 4 points})", defaults, lp.value, own_lp,
              1e-4, note=f"reported error {float(lp.error):.2g}"),
        close("quadrature.log_likelihood(double well, 4 points)", defaults, ll.value,
              own_lp.mean(), 1e-4, note=f"reported error {float(ll.error):.2g}"),
    ]
