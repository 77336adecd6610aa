"""Exact distributions of small models by enumeration, and distribution tests of samplers against them (total variation with a replicated threshold)."""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np

import numpyro_ugm as ugm


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
