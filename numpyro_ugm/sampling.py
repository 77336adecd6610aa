"""``sample``: draw configurations of a UGM with any kernel."""

import functools
from typing import Any

import jax
import jax.numpy as jnp

from ._checks import as_key, check_count
from .kernels import gibbs
from .kernels.base import as_spec, step_chains
from .model import UGM
from .diagnose import check_finite, potential_is_finite
from .compile_cache import cached


def sample(m: UGM, params: dict, rng_key: jax.Array, num_samples: int, *,
           num_chains: int = 1, num_warmup: int = 0, thinning: int = 1, kernel: Any = None,
           init_state: dict | None = None) -> dict:
    """Draw samples of every state site by MCMC.

    Parameters
    ----------
    m : UGM
    params : dict
        Parameters (constrained space).
    rng_key : jax PRNGKey
    num_samples : int
        Samples kept per chain.
    num_chains : int
        Independent chains, run in parallel (vmapped), started uniformly at random.
    num_warmup : int
        Kernel steps discarded at the start of each chain.
    thinning : int
        Kernel steps between kept samples.
    kernel : KernelSpec, optional
        Default: systematic-scan block Gibbs.
    init_state : dict, optional
        Starting positions (model representation, leading axis ``num_chains``).

    Returns
    -------
    dict of str -> array ``(num_chains * num_samples, *site_shape)``
        Data representation (±1, 0/1, integer labels), chain-major.

    Raises
    ------
    FloatingPointError
        If the log-potential is not finite at a draw, or it or the conditional log-odds
        are not finite at a chain's last state (e.g. parameters that overflow): checked
        once, after the run, on f at the kept draws and on one gradient per chain.
    """
    num_samples = check_count("sample", "num_samples", num_samples)
    num_chains = check_count("sample", "num_chains", num_chains)
    thinning = check_count("sample", "thinning", thinning)
    num_warmup = check_count("sample", "num_warmup", num_warmup, minimum=0)
    rng_key = as_key(rng_key, "sample")
    m.param_space.check(params)
    spec = as_spec(kernel, gibbs())
    init_key, run_key = jax.random.split(rng_key)
    position = (m.target().random_state(init_key, (num_chains,)) if init_state is None
                else init_state)
    run = cached(m.cache_key, ("sample", spec, num_samples),
                   lambda: jax.jit(functools.partial(_run, m, spec.build(m.target()), num_samples)))
    draws, ok = run(params, run_key, position, num_warmup, thinning)
    check_finite(m.target(), "sample", params, ok, draws,
                   lambda i: f"draw {i[0]} of chain {i[1]}")
    return {n: m.state_sites[n].from_model(jnp.swapaxes(v, 0, 1).reshape(
        (num_chains * num_samples,) + v.shape[2:])) for n, v in draws.items()}


def _run(m, kernel, num_samples, params, key, position, num_warmup, thinning):
    """The chains of :func:`sample`, compiled once per model, kernel and ``num_samples``
    (parameters, key, start, warm-up and thinning are arguments): the draws and whether
    f is finite at each (at the last, also its conditional log-odds)."""
    logdensity = m.logdensity_fn(params)
    states = jax.vmap(lambda x: kernel.init(x, logdensity))(position)

    def steps(states, key, n):
        return jax.lax.fori_loop(0, n, lambda i, s: step_chains(
            kernel, jax.random.fold_in(key, i), s, logdensity)[0], states)

    warm_key, draw_key = jax.random.split(key)
    states = steps(states, warm_key, num_warmup)

    def draw(states, key):
        states = steps(states, key, thinning)
        return states, (states.position, jnp.isfinite(jax.vmap(logdensity)(states.position)))

    states, (draws, ok) = jax.lax.scan(draw, states, jax.random.split(draw_key, num_samples))
    last = jax.vmap(lambda x: potential_is_finite(m.target(), params, x))(states.position)
    return draws, ok.at[-1].set(ok[-1] & last)
