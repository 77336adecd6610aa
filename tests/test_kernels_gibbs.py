"""The samplers sample the right distribution.

Every check compares draws against the exact distribution computed here by brute force
(itertools over all configurations, each evaluated with ``m.log_potential``). Chains start
uniformly at random, run independently (``vmap``), and only their final states are kept,
so the draws are i.i.d. from the kernel's distribution after ``num_steps`` steps. The
total-variation threshold is the sampling noise of that many i.i.d. exact draws (mean + 6
standard deviations of the TV of multinomial samples from the exact distribution, drawn
here), and every test also shows that it can fail: the uniform starting states, and for
some models the same kernel run at a wrong temperature, exceed the threshold.
"""

import functools
import itertools

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest

import numpyro_ugm as ugm

# --- brute force and statistics -------------------------------------------------------


def variables(m):
    """(site, domain) for each state site, in the order configurations are numbered."""
    return list(m.state_sites.items())


def all_states(m):
    """Every configuration (model representation, batched) in mixed-radix order (first
    variable of the first site most significant)."""
    ranges = [range(d.num_values) for _, d in variables(m) for _ in range(d.num_variables)]
    labels = np.array(list(itertools.product(*ranges)), np.int64).reshape(-1, len(ranges))
    out, pos = {}, 0
    for s, d in variables(m):
        block = labels[:, pos:pos + d.num_variables].reshape((-1,) + tuple(d.shape_))
        if isinstance(d, ugm.Categorical):
            out[s] = np.eye(d.num_categories, dtype=np.float32)[block]
        else:
            out[s] = np.asarray(d.values, np.float32)[block]
        pos += d.num_variables
    return out


def exact_log_probs(m, params, beta=1.0):
    """log p(x) ∝ beta · f(x) over all configurations (float64)."""
    f = jax.jit(jax.vmap(m.log_potential, in_axes=(None, 0)))(params, all_states(m))
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


@functools.lru_cache(maxsize=None)
def compiled_run(m, spec, num_chains, num_steps):
    """jit(key, params, beta) -> (initial positions, final positions, mean acceptance)
    of ``num_chains`` independent chains from uniform starts."""
    kernel = spec.build(m)

    @jax.jit
    def run(rng_key, params, beta):
        def logdensity(x):
            return beta * m.log_potential(params, x)

        init_key, run_key = jax.random.split(rng_key)
        start = m.random_state(init_key, (num_chains,))
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
GIBBS_2 = ugm.kernels.gibbs(sweeps=2)
METROPOLIS = ugm.kernels.metropolis()

# --- models ---------------------------------------------------------------------------


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


def potts_ring(n, K):
    """K-label Potts ring with one K×K coupling matrix per bond and fields."""
    J = numpyro.param("J", jnp.zeros((n, K, K)))
    h = numpyro.param("h", jnp.zeros((n, K)))
    x = numpyro.sample("x", ugm.Categorical(n, K))
    numpyro.factor("bonds", jnp.einsum("ia,iab,ib->", x, J, jnp.roll(x, -1, axis=0)))
    numpyro.factor("fields", jnp.sum(h * x))


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
def vbm8():
    m = ugm.UGM(ugm.models.vbm, 8)
    return m, random_params(m, 1, {"W": 0.5, "b": 0.4})


@functools.lru_cache(maxsize=None)
def binary3():
    m = ugm.UGM(binary_third_order, 7, ((0, 2, 4), (1, 3, 5), (2, 5, 6), (0, 1, 2)))
    return m, random_params(m, 2, {"W": 1.0, "b": 0.6, "T": 1.5})


@functools.lru_cache(maxsize=None)
def potts5():
    m = ugm.UGM(potts_ring, 5, 3)
    return m, random_params(m, 3, {"J": 0.9, "h": 0.5})


@functools.lru_cache(maxsize=None)
def abs7():
    m = ugm.UGM(abs_model, 7)
    return m, random_params(m, 4, {"J": 0.8, "a": 0.6, "c": 0.3, "b": 0.4})


@functools.lru_cache(maxsize=None)
def rbm53():
    m = ugm.UGM(ugm.models.rbm, 5, 3)
    return m, random_params(m, 5, {"W": 1.2, "b": 0.5, "c": 0.5})


# --- distribution tests ---------------------------------------------------------------


@pytest.mark.parametrize("spec,steps", [(GIBBS, 30), (GIBBS_RANDOM, 60), (METROPOLIS, 60)])
def test_spin_vbm(spec, steps):
    m, params = vbm8()
    assert len(m.blocks) == 8 and m.structure.multilinear
    wrong = 0.75 if spec in (GIBBS, METROPOLIS) else None
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)


@pytest.mark.parametrize("spec,steps", [(GIBBS, 30)])
def test_binary_third_order(spec, steps):
    m, params = binary3()
    st = m.structure
    assert st.multilinear
    assert len(m.blocks) < 7 and max(len(b["x"]) for b in m.blocks) > 1  # real blocks
    wrong = 0.75 if spec is GIBBS else None
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)


def gated_triple():
    """x1 and x2 interact only through T·x0·x1·x2: at a domain state with x0 = 0 their
    mixed derivative is 0, and a structure probe that misses the edge would update them
    as one block (a regression: that sampler had TV ≈ 0.35 here)."""
    T = numpyro.param("T", 4.0)
    b = numpyro.param("b", jnp.array([2.0, -2.0, -2.0, 0.5]))
    x = numpyro.sample("x", ugm.Binary(4))
    numpyro.factor("triple", T * x[0] * x[1] * x[2])
    numpyro.factor("fields", b @ x)
    numpyro.factor("pair", x[0] * x[3])


def test_gated_third_order_interaction():
    m = ugm.UGM(gated_triple)
    assert all(not {1, 2} <= set(np.asarray(b["x"]).tolist()) for b in m.blocks)
    params = m.init_params(jax.random.PRNGKey(0))
    check_tv(m, params, GIBBS, 20000, 30)


@pytest.mark.parametrize("spec,steps", [(GIBBS, 30), (METROPOLIS, 40)])
def test_categorical_potts(spec, steps):
    m, params = potts5()
    assert m.structure.multilinear and len(m.blocks) == 3  # odd ring
    wrong = 0.75 if spec is METROPOLIS else None
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)


@pytest.mark.parametrize("spec,steps", [(GIBBS, 30), (GIBBS_RANDOM, 60)])
def test_not_multilinear_exact_conditionals(spec, steps):
    m, params = abs7()
    assert not m.structure.multilinear  # Gibbs evaluates f at each value
    assert len(m.blocks) < 7  # the graph from flips still gives blocks
    wrong = 0.75 if spec is GIBBS else None
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)


@pytest.mark.parametrize("spec,steps", [(GIBBS_2, 15)])
def test_rbm_joint(spec, steps):
    m, params = rbm53()
    assert m.blocks == [{"v": None}, {"h": None}]
    wrong = 0.75
    check_tv(m, params, spec, 20000, steps, wrong_beta=wrong)


def test_metropolis_acceptance_is_reported():
    m, params = vbm8()
    *_, acceptance = run_chains(m, params, METROPOLIS, 20000, 60)
    assert 0.05 < acceptance < 0.95
    *_, acceptance = run_chains(m, params, GIBBS, 20000, 30)
    assert acceptance == 1.0


# --- more than max_unrolled blocks: the scanned padded-table path ---------------------


@functools.lru_cache(maxsize=None)
def vbm18():
    m = ugm.UGM(ugm.models.vbm, 18)
    params = random_params(m, 6, {"W": 0.2, "b": 0.3})
    states = all_states(m)
    p = np.exp(exact_log_probs(m, params))
    x = states["x"].astype(np.float64)
    mean = p @ x
    second = np.einsum("s,si,sj->ij", p, x, x)
    return m, params, mean, second


def moment_z_scores(mean, second, draws):
    """z-scores of the empirical E[x_i] and E[x_i x_j] (i < j) of i.i.d. spin draws."""
    x = np.asarray(draws, np.float64)
    n = len(x)
    iu = np.triu_indices(len(mean), 1)
    z_mean = (x.mean(0) - mean) / np.sqrt((1 - mean ** 2) / n)
    emp = (x.T @ x / n)[iu]
    z_pair = (emp - second[iu]) / np.sqrt((1 - second[iu] ** 2) / n)
    return np.concatenate([z_mean, z_pair])


@pytest.mark.parametrize("spec", [GIBBS, GIBBS_RANDOM])
def test_more_blocks_than_unrolled(spec):
    m, params, mean, second = vbm18()
    assert len(m.blocks) == 18 > spec.max_unrolled
    num = 10000
    _, final, _ = run_chains(m, params, spec, num, 25)
    z = moment_z_scores(mean, second, final["x"])
    assert np.max(np.abs(z)) < 5.0, f"max |z| = {np.max(np.abs(z)):.2f} over {len(z)} moments"
    if spec is GIBBS:  # the same check rejects a run at the wrong temperature
        _, wrong, _ = run_chains(m, params, spec, num, 25, beta=0.75)
        assert np.max(np.abs(moment_z_scores(mean, second, wrong["x"]))) > 5.0


# --- inner kernel of blackjax SMC -----------------------------------------------------


def adaptive_smc(m, params, spec, num_particles, seed=0, num_mcmc_steps=2):
    """blackjax adaptive tempered SMC from uniform particles to p(·; θ) with our kernel
    as the move; returns (final particles, normalized weights, log Z estimate, steps)."""
    kernel = spec.build(m)
    algorithm = blackjax.adaptive_tempered_smc(
        logprior_fn=lambda x: 0.0,
        loglikelihood_fn=lambda x: m.log_potential(params, x),
        mcmc_step_fn=kernel.step, mcmc_init_fn=kernel.init, mcmc_parameters={},
        resampling_fn=blackjax.smc.resampling.systematic, target_ess=0.5,
        num_mcmc_steps=num_mcmc_steps)

    @jax.jit
    def run(rng_key):
        init_key, key = jax.random.split(rng_key)
        state = algorithm.init(m.random_state(init_key, (num_particles,)))

        def cond(carry):
            return carry[0].tempering_param < 1.0

        def body(carry):
            state, key, log_z, steps = carry
            key, step_key = jax.random.split(key)
            state, info = algorithm.step(step_key, state)
            return state, key, log_z + info.log_likelihood_increment, steps + 1

        state, _, log_z, steps = jax.lax.while_loop(
            cond, body, (state, key, jnp.zeros(()), jnp.zeros((), jnp.int32)))
        return state.particles, state.weights, log_z + m.log_num_states, steps

    return jax.device_get(run(jax.random.PRNGKey(seed)))


@pytest.mark.parametrize("spec", [GIBBS, METROPOLIS])
def test_inner_kernel_of_blackjax_adaptive_tempered_smc(spec):
    m, params = vbm8()
    f = jax.vmap(m.log_potential, in_axes=(None, 0))(params, all_states(m))
    log_z = float(np.logaddexp.reduce(np.asarray(f, np.float64)))
    p = np.exp(exact_log_probs(m, params))
    x = all_states(m)["x"].astype(np.float64)
    mean, second = p @ x, np.einsum("s,si,sj->ij", p, x, x)

    particles, weights, log_z_hat, steps = adaptive_smc(m, params, spec, 8000)
    assert steps > 2  # really tempered
    assert abs(log_z_hat - log_z) < 0.05, (log_z_hat, log_z)
    xs = particles["x"].astype(np.float64)
    assert np.all(np.isin(xs, (-1.0, 1.0)))
    w = weights / weights.sum()
    err = np.concatenate([w @ xs - mean, (np.einsum("n,ni,nj->ij", w, xs, xs) - second)
                          [np.triu_indices(8, 1)]])
    assert np.max(np.abs(err)) < 0.05, np.max(np.abs(err))
    # the tolerance is tight enough to reject the distribution at another temperature
    q = np.exp(exact_log_probs(m, params, 0.75))
    wrong = np.concatenate([q @ x - mean, (np.einsum("s,si,sj->ij", q, x, x) - second)
                            [np.triu_indices(8, 1)]])
    assert np.max(np.abs(wrong)) > 0.1


# --- kernel contract ------------------------------------------------------------------


def test_kernel_contract_and_jit_vmap():
    m, params = potts5()
    logdensity = functools.partial(m.log_potential, params)
    for spec in (GIBBS, GIBBS_RANDOM, METROPOLIS):
        kernel = spec.build(m)
        position = m.random_state(jax.random.PRNGKey(0))
        state = kernel.init(position, logdensity)
        new, info = jax.jit(kernel.step, static_argnums=2)(jax.random.PRNGKey(1), state,
                                                           logdensity)
        assert type(new) is type(state) and set(new.position) == {"x"}
        assert new.position["x"].shape == (5, 3) and new.position["x"].dtype == jnp.float32
        assert info.acceptance_rate.shape == ()
        config_index(m, jax.tree.map(lambda a: a[None], new.position))  # one-hot check


def test_spec_validation():
    with pytest.raises(ValueError, match="scan"):
        ugm.kernels.gibbs(scan="sequential")
    with pytest.raises(ValueError, match="sweeps"):
        ugm.kernels.gibbs(sweeps=0)
    with pytest.raises(ValueError, match="sweeps"):
        ugm.kernels.metropolis(sweeps=0)


def test_sample_labels_distribution():
    from numpyro_ugm.kernels.base import sample_labels

    n = 200000
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    for probs in ([[0.2, 0.8], [0.9, 0.1]], [[0.1, 0.2, 0.3, 0.4], [0.0, 0.5, 0.5, 0.0]]):
        logits = jnp.log(jnp.array(probs))
        draws = np.asarray(jax.vmap(lambda k, lg=logits: sample_labels(k, lg))(keys))
        for row, p in enumerate(probs):
            freq = np.bincount(draws[:, row], minlength=len(p)) / n
            np.testing.assert_allclose(freq, p, atol=5 * np.sqrt(0.25 / n))
            assert np.all(freq[np.asarray(p) == 0] == 0)  # impossible labels never drawn
