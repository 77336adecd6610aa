"""Shared small models, data and brute-force references for the tests.

One place for what several test modules use, with the same sizes, seeds and keys as
before they were shared:

* brute force over every configuration: ``all_states`` (mixed-radix order, first
  variable of the first site most significant), ``exact_log_probs``, ``config_index``;
* the sampler check: ``total_variation``, ``tv_threshold`` (i.i.d. sampling noise),
  ``run_chains`` / ``check_tv`` and the kernel specs ``GIBBS``, ``GIBBS_RANDOM``,
  ``GIBBS_2``, ``METROPOLIS``;
* small models with their parameters: ``spins3`` (3 spins with a known log Z, for the
  checks of bad input), ``vbm8`` (8 spins, the kernels' target), ``potts5`` (a
  5-variable 3-label Potts ring), ``small_rbm`` (RBM 12x6 with 300 exact draws),
  ``vbm8_path`` (8 spins, θ_0 and θ_1 of the estimators' parameter path), ``binary3``
  (a 7-variable binary ring with third-order factors, blocks of several sizes), ``abs7``
  (7 spins with a potential that is not multilinear in code);
* the estimators' Monte Carlo checks: ``schedule``, ``path``, ``mean_and_se``,
  ``check_close``, ``at`` and their constants;
* data: ``spins`` (40 random ±1 rows of 6), the CRF images (``crf_data``);
* the exact evaluation's parameters and Potts chain: ``normal_params``, ``potts_chain``
  (the models built from them are fixtures of ``conftest.py``);
* the numpyro adapters' checks: ``run_mcmc``, the noisy Ising chain beside NUTS
  (``noisy_ising`` with ``Y``, ``COUPLING``, ``MU``) and ``check_posterior`` against its
  exact posterior (``noisy_ising_posterior``);
* the posterior samplers' checks: ``ising_chain`` (6 spins, a coupling and a field with
  Normal priors), 50 cases from it with its posterior's mean and standard deviation by
  quadrature (``chain_posterior_data``, the ``chain_posterior`` fixture of
  ``conftest.py``) and ``_check_agreement``;
* ERGMs: ``brute_statistics`` (the statistics by their definitions), ``ergm_model`` (one
  traced model per size and statistics), ``TRIAD`` and ``triad6_problem_data`` (500
  graphs on 6 nodes and their exact MLE, the ``triad6_problem`` fixture of
  ``conftest.py``).

Functions that build models or data are cached (``functools.lru_cache``): within one
process every test shares the traced model, its structure and its compiled functions.
"""

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import optax
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import MCMC

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact
from numpyro_ugm.models import ergm, image_features

# --- brute force and statistics -------------------------------------------------------


def model_values(domain, labels):
    """Labels -> model representation, written independently of the library."""
    labels = np.asarray(labels)
    if isinstance(domain, ugm.Categorical):
        return np.eye(domain.num_categories, dtype=np.float32)[labels]
    return np.asarray(domain.values, np.float32)[labels]


def all_states(m, sites=None):
    """Every configuration of ``sites`` (default: all state sites), batched."""
    sites = list(m.target().state_sites) if sites is None else list(sites)
    domains = [m.target().state_sites[s] for s in sites]
    ranges = [range(d.num_values) for d in domains for _ in range(d.num_variables)]
    labels = np.array(list(itertools.product(*ranges)), np.int64).reshape(-1, len(ranges))
    out, pos = {}, 0
    for s, d in zip(sites, domains):
        block = labels[:, pos:pos + d.num_variables].reshape((-1,) + tuple(d.shape_))
        out[s] = model_values(d, block)
        pos += d.num_variables
    return out


def variables(m):
    """(site, domain) for each state site, in the order configurations are numbered."""
    return list(m.target().state_sites.items())


def exact_log_probs(m, params, beta=1.0):
    """log p(x) ∝ beta · f(x) over all configurations (float64)."""
    f = jax.jit(jax.vmap(m.target().log_potential, in_axes=(None, 0)))(params, all_states(m))
    f = beta * np.asarray(f, np.float64)
    return f - np.logaddexp.reduce(f)


def config_index(m, position):
    """Index of each configuration of a batch of positions (see all_states)."""
    index = np.zeros(jax.tree.leaves(position)[0].shape[0], np.int64)
    for s, d in variables(m):
        x = np.asarray(position[s])
        if isinstance(d, ugm.Categorical):
            assert np.all(x.sum(-1) == 1) and np.all((x == 0) | (x == 1)), "not one-hot"
            labels = x.argmax(-1)
        else:
            assert np.all(np.isin(x, d.values)), f"values outside {d.values}"
            labels = (x == d.values[1]).astype(np.int64)
        for lab in labels.reshape(len(index), -1).T:
            index = index * d.num_values + lab
    return index


def total_variation(p, index):
    q = np.bincount(index, minlength=len(p)) / len(index)
    return 0.5 * np.abs(p - q).sum()


def tv_threshold(p, num_samples, replicates=200, seed=0):
    """mean + 6 sd of the TV between p and the empirical distribution of ``num_samples``
    i.i.d. draws from p: a correct sampler stays below it."""
    rng = np.random.default_rng(seed)
    q = rng.multinomial(num_samples, p, size=replicates) / num_samples
    tv = 0.5 * np.abs(q - p).sum(-1)
    return tv.mean() + 6 * tv.std()


#: XLA options of the samplers' checks with 20,000 chains: they run for seconds at the
#: suite's backend optimization level 0 (XLA_FLAGS in the Makefile); LLVM's level 1 runs
#: them 3-5 times faster for ~1-2 s more compilation (abs7 with Gibbs: 0.9 s compile +
#: 6.7 s run -> 1.7 s + 2.1 s); a few thousand chains gain less than that
RUN_HEAVY = {"xla_backend_optimization_level": 1}


@functools.lru_cache(maxsize=None)
def compiled_run(m, spec, num_chains, num_steps):
    """jit(key, params, beta) -> (initial positions, final positions, mean acceptance)
    of ``num_chains`` independent chains from uniform starts (compiled with
    ``RUN_HEAVY`` from 20,000 chains on)."""
    kernel = spec.build(m.target())

    @functools.partial(jax.jit, compiler_options=RUN_HEAVY if num_chains >= 20000 else None)
    def run(rng_key, params, beta):
        def logdensity(x):
            return beta * m.target().log_potential(params, x)

        init_key, run_key = jax.random.split(rng_key)
        start = m.target().random_state(init_key, (num_chains,))
        states = jax.vmap(kernel.init, (0, None))(start, logdensity)

        def one_step(states, key):
            keys = jax.random.split(key, num_chains)
            states, info = jax.vmap(lambda k, s: kernel.step(k, s, logdensity))(keys, states)
            return states, jnp.mean(info.acceptance_rate)

        states, acceptance = jax.lax.scan(one_step, states, jax.random.split(run_key, num_steps))
        return start, states.position, jnp.mean(acceptance)

    return run


def run_chains(m, params, spec, num_chains, num_steps, seed=0, beta=1.0):
    run = compiled_run(m, spec, num_chains, num_steps)
    start, final, acceptance = run(jax.random.PRNGKey(seed), params, beta)
    return jax.device_get(start), jax.device_get(final), float(acceptance)


def check_tv(m, params, spec, num_chains, num_steps, wrong_beta=None, seed=0):
    """Draws of ``spec`` are within the i.i.d. threshold of the exact distribution; the
    uniform starts (and a run at ``wrong_beta``) are not."""
    p = np.exp(exact_log_probs(m, params))
    threshold = tv_threshold(p, num_chains)
    start, final, acceptance = run_chains(m, params, spec, num_chains, num_steps, seed)
    tv = total_variation(p, config_index(m, final))
    tv_start = total_variation(p, config_index(m, start))
    assert tv < threshold, f"{spec}: TV {tv:.4f} >= threshold {threshold:.4f}"
    assert tv_start > threshold, f"uniform starts pass: TV {tv_start:.4f} (test is blind)"
    if wrong_beta is not None:
        _, wrong, _ = run_chains(m, params, spec, num_chains, num_steps, seed, wrong_beta)
        tv_wrong = total_variation(p, config_index(m, wrong))
        assert tv_wrong > threshold, (f"run at beta={wrong_beta} passes: TV {tv_wrong:.4f} "
                                      f"< {threshold:.4f} (test is blind)")
    return tv, threshold, acceptance


def random_params(m, seed, scales):
    """Parameters drawn N(0, scale²) per site (``scales``: site -> scale)."""
    rng = np.random.default_rng(seed)
    params = m.init_params(jax.random.PRNGKey(seed))
    return {n: jnp.asarray(scales[n] * rng.standard_normal(np.shape(v)), jnp.float32)
            for n, v in params.items()}


GIBBS = ugm.kernels.gibbs()
GIBBS_RANDOM = ugm.kernels.gibbs(scan="random")
GIBBS_2 = ugm.kernels.gibbs(num_sweeps=2)
METROPOLIS = ugm.kernels.metropolis()

# --- models ---------------------------------------------------------------------------


def potts_ring(n, K):
    """K-label Potts ring with one K×K coupling matrix per bond and fields."""
    J = numpyro.param("J", jnp.zeros((n, K, K)))
    h = numpyro.param("h", jnp.zeros((n, K)))
    x = numpyro.sample("x", ugm.Categorical(n, num_categories=K))
    numpyro.factor("bonds", jnp.einsum("ia,iab,ib->", x, J, jnp.roll(x, -1, axis=0)))
    numpyro.factor("fields", jnp.sum(h * x))


def spin_chain(n):
    """``n`` spins in a chain with one coupling ``w`` per bond (0.5 to start)."""
    w = numpyro.param("w", 0.5 * jnp.ones(n - 1))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("pairs", jnp.sum(w * x[:-1] * x[1:]))


def chain3():
    """Three spins in a chain: fields ``h`` and one coupling ``J``."""
    h = numpyro.param("h", jnp.zeros(3))
    J = numpyro.param("J", jnp.zeros(()))
    x = numpyro.sample("x", ugm.Spin(3))
    numpyro.factor("f", h @ x + J * (x[0] * x[1] + x[1] * x[2]))


@functools.lru_cache(maxsize=None)
def spins3():
    """``chain3`` traced, its parameters, their exact log Z (brute force, float64) and
    two examples: the tiny model of the checks of bad input."""
    m = ugm.UGM(chain3)
    h, J = np.array([0.5, -1.0, 0.25]), 0.75
    x = np.array(list(itertools.product([-1.0, 1.0], repeat=3)))
    log_z = np.logaddexp.reduce(x @ h + J * (x[:, 0] * x[:, 1] + x[:, 1] * x[:, 2]))
    params = {"h": jnp.asarray(h, jnp.float32), "J": jnp.asarray(J, jnp.float32)}
    return m, params, float(log_z), {"x": np.array([[1, -1, 1], [1, 1, 1]], np.int8)}


@functools.lru_cache(maxsize=None)
def vbm8():
    m = ugm.UGM(ugm.models.vbm, 8)
    return m, random_params(m, 1, {"W": 0.5, "b": 0.4})


@functools.lru_cache(maxsize=None)
def potts5():
    m = ugm.UGM(potts_ring, 5, 3)
    return m, random_params(m, 3, {"J": 0.9, "h": 0.5})


def binary_third_order(n, triples):
    """Binary ring with pairwise couplings, fields and third-order factors."""
    W = numpyro.param("W", jnp.zeros(n))
    b = numpyro.param("b", jnp.zeros(n))
    T = numpyro.param("T", jnp.zeros(len(triples)))
    x = numpyro.sample("x", ugm.Binary(n))
    numpyro.factor("ring", jnp.sum(W * x * jnp.roll(x, -1)))
    numpyro.factor("fields", b @ x)
    i, j, k = (np.array(t) for t in zip(*triples))
    numpyro.factor("triples", jnp.sum(T * x[i] * x[j] * x[k]))


def abs_model(n):
    """Spins with |.| on chain bonds and the square of a sum (not multilinear in code,
    though the square is a sum of pairs on the domain)."""
    J = numpyro.param("J", jnp.zeros(n - 1))
    a = numpyro.param("a", jnp.zeros(n - 1))
    c = numpyro.param("c", jnp.zeros(()))
    b = numpyro.param("b", jnp.zeros(n))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("bonds", jnp.sum(J * jnp.abs(x[:-1] + x[1:] + a)))
    numpyro.factor("square", c * (x[0] + x[3] + x[n - 1]) ** 2)
    numpyro.factor("fields", b @ x)


@functools.lru_cache(maxsize=None)
def binary3():
    m = ugm.UGM(binary_third_order, 7, ((0, 2, 4), (1, 3, 5), (2, 5, 6), (0, 1, 2)))
    return m, random_params(m, 2, {"W": 1.0, "b": 0.6, "T": 1.5})


@functools.lru_cache(maxsize=None)
def abs7():
    m = ugm.UGM(abs_model, 7)
    return m, random_params(m, 4, {"J": 0.8, "a": 0.6, "c": 0.3, "b": 0.4})


@functools.lru_cache(maxsize=None)
def small_rbm(scale=1.0):
    m = ugm.UGM(ugm.models.rbm, 12, 6).observe(["v"])
    rng = np.random.default_rng(0)
    params = {k: jnp.asarray(scale * rng.standard_normal(np.shape(v)), jnp.float32)
              for k, v in m.init_params(jax.random.PRNGKey(0)).items()}
    data = exact.sample(m, params, jax.random.PRNGKey(1), 300)
    return m, params, {"v": data["v"]}


# --- the estimators against exact enumeration -------------------------------------

NUM_PARTICLES = 200
PATH_STEPS = 10  # updates along θ_0 → θ_1
Z_MAX = 4.0  # standard errors allowed
SLACK = 0.02  # absolute slack on top (bias O(1/S) of self-normalized weights, float32)


@functools.lru_cache(maxsize=None)
def vbm8_path():
    """8 fully connected spins with fields (256 states); θ_0 and the end θ_1 of a path."""
    m = ugm.UGM(ugm.models.vbm, 8).observe(["x"])
    start = random_params(m, 1, {"W": 0.5, "b": 0.4})
    step = random_params(m, 2, {"W": 0.2, "b": 0.2})
    end = jax.tree.map(jnp.add, start, step)
    return m, start, end


def schedule(num_still, jumps=()):
    """Positions t on the line θ_0 + t (θ_1 − θ_0) of successive updates: ``num_still``
    at θ_0, PATH_STEPS moving slowly to θ_1, then big ``jumps`` further along."""
    return tuple(np.concatenate([np.zeros(num_still),
                                 np.arange(1, PATH_STEPS + 1) / PATH_STEPS, jumps]))


def path(start, end, times):
    """Stacked parameters θ_0 + t (θ_1 − θ_0) for each t of ``times``."""
    t = jnp.asarray(times, jnp.float32)
    return jax.tree.map(lambda a, b: a[None] + t.reshape((-1,) + (1,) * a.ndim)
                        * (b - a)[None], start, end)


def mean_and_se(samples):
    """Mean over the leading (seed) axis and its standard error."""
    return samples.mean(0), samples.std(0, ddof=1) / np.sqrt(samples.shape[0])


def check_close(estimates, exact_value, what, abs_tol):
    """Mean over seeds within Z_MAX standard errors + SLACK of ``exact_value``, and
    its largest error below ``abs_tol``. Returns (max error, max z)."""
    mean, se = mean_and_se(np.asarray(estimates, np.float64))
    error = np.abs(mean - np.asarray(exact_value, np.float64))
    bad = error > Z_MAX * se + SLACK
    assert not np.any(bad), (f"{what}: error {error[bad]} > {Z_MAX} se {se[bad]} + {SLACK}")
    assert error.max() < abs_tol, f"{what}: max error {error.max():.4f} >= {abs_tol}"
    return error.max(), (error / np.maximum(se, 1e-12)).max()


def at(tree, index):
    return jax.tree.map(lambda a: a[index], tree)


# --- data ----------------------------------------------------------------------------


def spins_data():
    """40 random ±1 rows of 6 spins (the learner's small data set)."""
    rng = np.random.default_rng(0)
    return {"x": rng.choice(np.array([-1, 1], np.int8), size=(40, 6))}


def make(k=1, lr=0.05, model=ugm.models.vbm):
    """MLE of the spin VBM (or ``model``) with PCD-k (32 particles) and SGD."""
    return ugm.MLE(model, ugm.PCD(32, num_mcmc_steps=k), optax.sgd(lr))


#: labels of every training image: an "L" (neighbours agree and disagree, so the
#: conditional ML estimate is finite; a 3×3 "X" is a checkerboard and is not)
TRUTH = np.array([[1, 1, -1], [1, 1, -1], [-1, -1, -1]], np.int8)
NUM_EXAMPLES = 10


def features(y):
    node, edge = jax.vmap(image_features)(jnp.asarray(y, jnp.float32))
    return {"node_features": node, "edge_features": edge}


def crf3(u):
    """A 3-spin chain CRF: a field ``w * u`` per spin from the inputs ``u``, fixed pairs."""
    w = numpyro.param("w", 0.3)
    x = numpyro.sample("x", ugm.Spin(3))
    numpyro.factor("nodes", w * jnp.sum(u * x))
    numpyro.factor("pairs", x[0] * x[1] + x[1] * x[2])


@functools.lru_cache(maxsize=None)
def crf_data():
    """10 noisy copies (N(0, 1) noise) of TRUTH, their features and the grid CRF traced
    with the first image's inputs."""
    rng = np.random.default_rng(0)
    y = TRUTH[None] + rng.normal(size=(NUM_EXAMPLES, 3, 3))
    inputs = features(y)
    data = {"x": np.broadcast_to(TRUTH, (NUM_EXAMPLES, 3, 3)).copy()}
    m = ugm.UGM(ugm.models.grid_crf, **{k: v[0] for k, v in inputs.items()})
    return m, inputs, data


def adjacency_crf(adjacency):
    """5 spins coupled by J along the edges of an input adjacency matrix (a CRF whose
    interaction graph is an input)."""
    J = numpyro.param("J", 0.5)
    x = numpyro.sample("x", ugm.Spin(5))
    numpyro.factor("pairs", J * x @ jnp.triu(adjacency, 1) @ x)


def adjacency(*edges):
    """5×5 symmetric 0/1 adjacency matrix of ``edges``."""
    a = np.zeros((5, 5), np.float32)
    for i, j in edges:
        a[i, j] = a[j, i] = 1.0
    return a


#: example 0 has the chain 0-1-2 only; the others add the edge 3-4, so the blocks found
#: for example 0 alone put 3 and 4 together
SPARSE, DENSE = adjacency((0, 1), (1, 2)), adjacency((0, 1), (1, 2), (3, 4))


@functools.lru_cache(maxsize=None)
def adjacency_crf_data():
    """8 examples (the first SPARSE, the others DENSE), their labels and the model
    traced with the first example's adjacency."""
    inputs = {"adjacency": np.stack([SPARSE] + [DENSE] * 7)}
    x = np.array([[1, 1, -1, 1, 1], [1, 1, 1, -1, -1], [-1, -1, -1, 1, -1],
                  [1, 1, 1, 1, 1], [-1, -1, 1, 1, 1], [1, -1, -1, -1, -1],
                  [-1, -1, -1, -1, 1], [1, 1, 1, 1, 1]], np.int8)
    return ugm.UGM(adjacency_crf, adjacency=SPARSE), inputs, {"x": x}


# --- exact evaluation (test_evaluate_enumeration.py, test_evaluate_exact.py) -----------


def normal_params(m, seed, scale):
    """N(0, scale²) draws for every parameter (numpy: no compilation per shape)."""
    rng = np.random.default_rng(seed)
    return {n: jnp.asarray(scale * rng.standard_normal(s.shape), jnp.float32)
            for n, s in m.param_sites.items()}


def potts_chain(n, k):
    """A chain of n variables with k labels: pairwise couplings J and fields h."""
    J = numpyro.param("J", jnp.zeros((k, k)))
    h = numpyro.param("h", jnp.zeros((n, k)))
    x = numpyro.sample("x", ugm.Categorical(n, num_categories=k))
    numpyro.factor("pairs", jnp.einsum("ik,kl,il->", x[:-1], J, x[1:]))
    numpyro.factor("fields", jnp.sum(h * x))


# --- the numpyro adapters (test_infer_*.py): MCMC runs, a noisy Ising chain beside NUTS ---


def run_mcmc(kernel, *args, num_warmup, num_samples, num_chains=1, method="vectorized",
             seed=0, thinning=1, **kwargs):
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                chain_method=method, thinning=thinning, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), *args, **kwargs)
    return mcmc


Y = np.array([1.2, 0.3, -0.2, 0.9, -1.1, 0.1], np.float32)
COUPLING, MU = 0.7, 1.0
POSTERIOR_TOLERANCE = 4.5  # Monte Carlo standard errors


def noisy_ising(y, coupling, mu):
    """Ising chain prior over spins x, y_i ~ N(mu x_i, sigma), sigma ~ LogNormal."""
    sigma = numpyro.sample("sigma", dist.LogNormal(-0.5, 0.5))
    x = numpyro.sample("x", ugm.Spin(y.shape[0]))
    numpyro.factor("ising", coupling * jnp.sum(x[:-1] * x[1:]))
    numpyro.sample("y", dist.Normal(mu * x, sigma), obs=y)


def noisy_ising_posterior(y, coupling, mu):
    """E[sigma | y] and E[x | y]: all 2^n spin states, quadrature over log sigma."""
    xs = np.array(list(itertools.product([-1.0, 1.0], repeat=len(y))))
    log_s = np.linspace(np.log(0.02), np.log(8.0), 8001)
    s = np.exp(log_s)
    log_prior = -0.5 * ((log_s + 0.5) / 0.5) ** 2  # LogNormal(-0.5, 0.5) in log sigma
    resid = np.asarray(y, np.float64)[None, None, :] - mu * xs[None]
    log_lik = (-0.5 * (resid / s[:, None, None]) ** 2 - np.log(s)[:, None, None]).sum(-1)
    ising = coupling * (xs[:, :-1] * xs[:, 1:]).sum(1)
    log_joint = log_prior[:, None] + ising[None, :] + log_lik
    w = np.exp(log_joint - log_joint.max())
    w /= w.sum()
    return float(w.sum(1) @ s), w.sum(0) @ xs


def check_posterior(samples):
    """MCMC means within POSTERIOR_TOLERANCE standard errors of the exact ones; the exact answer
    without the Ising prior is not."""
    sigma, x = np.asarray(samples["sigma"]), np.asarray(samples["x"], np.float64)
    mean_sigma, mean_x = noisy_ising_posterior(Y, COUPLING, MU)
    free_sigma, free_x = noisy_ising_posterior(Y, 0.0, MU)
    se_sigma = sigma.std() / np.sqrt(effective_sample_size(sigma[None]))
    se_x = x.std(0) / np.sqrt(effective_sample_size(x[None]))
    z_sigma = (sigma.mean() - mean_sigma) / se_sigma
    z_x = (x.mean(0) - mean_x) / se_x
    print(f"E[sigma]: MCMC {sigma.mean():.4f} ± {se_sigma:.4f}, exact {mean_sigma:.4f} "
          f"(z {z_sigma:+.2f}; without the prior {free_sigma:.4f}); E[x] z-scores "
          f"{np.round(z_x, 2)}, max |E[x] - exact| {np.max(np.abs(x.mean(0) - mean_x)):.4f}")
    assert abs(z_sigma) < POSTERIOR_TOLERANCE
    assert np.all(np.abs(z_x) < POSTERIOR_TOLERANCE)
    assert abs(free_sigma - mean_sigma) > POSTERIOR_TOLERANCE * se_sigma, "test is blind"
    assert np.max(np.abs((free_x - mean_x) / se_x)) > POSTERIOR_TOLERANCE, "test is blind"


# --- the posterior samplers (test_posterior*.py): a spin chain with a posterior on a grid ---

#: spins of ``ising_chain``
NUM_SPINS = 6


def ising_chain(prior_scale=1.0):
    """A chain of spins with one coupling β and one field h, both with Normal priors."""
    beta = numpyro.sample("beta", dist.Normal(0.0, prior_scale))
    h = numpyro.sample("h", dist.Normal(0.0, prior_scale))
    x = numpyro.sample("x", ugm.Spin(NUM_SPINS))
    numpyro.factor("pair", beta * jnp.sum(x[1:] * x[:-1]))
    numpyro.factor("field", h * jnp.sum(x))


def _statistics(x):
    """The chain's sufficient statistics: Σ x_i x_(i+1) and Σ x_i."""
    x = np.asarray(x, float)
    return np.stack([np.sum(x[..., 1:] * x[..., :-1], -1), np.sum(x, -1)], -1)


def _check_agreement(samples, by_chain, mean, sd, sd_tolerance=0.15):
    """Means within 4 Monte Carlo standard errors (effective sample size from numpyro),
    standard deviations within ``sd_tolerance`` (relative)."""
    for i, site in enumerate(("beta", "h")):
        ess = float(effective_sample_size(np.asarray(by_chain[site])))
        assert ess > 200, (site, ess)
        est_mean, est_sd = float(np.mean(samples[site])), float(np.std(samples[site]))
        assert abs(est_mean - mean[i]) < 4 * sd[i] / np.sqrt(ess), (site, est_mean, mean[i])
        assert abs(est_sd / sd[i] - 1) < sd_tolerance, (site, est_sd, sd[i])


@functools.lru_cache(maxsize=None)
def chain_posterior_data():
    """50 cases from β = 0.5, h = −0.2, and the posterior's mean and standard deviation
    by quadrature on a grid (log Z by brute force over the 64 states)."""
    m = ugm.UGM(ising_chain)
    data = ugm.exact.sample(m, {"beta": jnp.float32(0.5), "h": jnp.float32(-0.2)},
                            jax.random.PRNGKey(0), 50)
    states = np.array(list(itertools.product([-1, 1], repeat=NUM_SPINS)))
    s_all, s_data = _statistics(states), _statistics(data["x"]).sum(0)
    grid = np.linspace(-1.5, 1.5, 601)
    B, H = np.meshgrid(grid, grid, indexing="ij")
    theta = np.stack([B, H], -1)
    energies = theta @ s_all.T  # (601, 601, 64)
    top = energies.max(-1)
    log_z = top + np.log(np.exp(energies - top[..., None]).sum(-1))
    log_post = theta @ s_data - 50 * log_z - 0.5 * (B ** 2 + H ** 2)
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    mean = np.array([(w * B).sum(), (w * H).sum()])
    sd = np.sqrt(np.array([(w * B ** 2).sum(), (w * H ** 2).sum()]) - mean ** 2)
    return data, mean, sd


# --- ERGMs (test_models_*.py): statistics by their definitions, shared models ------------


TRIAD = ("edges", "twostars", "triangles")


def brute_statistics(A, decay=0.5):
    """The statistics from their definitions (loops over nodes and triples)."""
    n = len(A)
    d = A.sum(1)
    r = 1 - math.exp(-decay)
    triangles = sum(A[i, j] * A[j, k] * A[i, k]
                    for i, j, k in itertools.combinations(range(n), 3))
    shared = {(i, j): sum(A[i, k] * A[j, k] for k in range(n))
              for i, j in itertools.combinations(range(n), 2)}
    return {"edges": A.sum() / 2,
            "twostars": sum(math.comb(int(x), 2) for x in d),
            "threestars": sum(math.comb(int(x), 3) for x in d),
            "triangles": triangles,
            "isolates": int(np.sum(d == 0)),
            "gwesp": math.exp(decay) * sum(1 - r ** s for (i, j), s in shared.items()
                                           if A[i, j]),
            "gwdegree": math.exp(decay) * sum(1 - r ** int(x) for x in d)}


_MODELS = {}


def ergm_model(n, statistics):
    """One traced UGM per (n, statistics), shared by the tests (structure analysis and
    compiled functions are cached on it)."""
    key = (n, tuple(statistics))
    if key not in _MODELS:
        _MODELS[key] = ugm.UGM(ergm, n, tuple(statistics))
    return _MODELS[key]


@functools.lru_cache(maxsize=None)
def triad6_problem_data():
    """500 graphs on 6 nodes from the triad ERGM at a known θ and their exact MLE."""
    n, theta_true = 6, jnp.array([-1.0, 0.15, 0.4])
    m = ergm_model(n, TRIAD)
    data = exact.sample(m, {"theta": theta_true}, jax.random.PRNGKey(11), 500)
    density = float(np.mean(data["y"]))
    assert 0.15 < density < 0.85  # not degenerate
    best = ugm.fit_exact(m, data, num_steps=200, tol=1e-5)
    assert best.converged
    return m, theta_true, data, best
