"""``sample``: draw configurations of a UGM with any kernel.

The chains run in one compiled program per model, kernel and *capacity*: the number of
draws and the number of chains, each rounded up to a power of two (the draws loop has a
dynamic trip count; extra chains run and are dropped). So calls with other counts up to
the same powers of two, keys, parameters, warm-up or thinning reuse the program, and a
process that asks for ever new counts keeps a few programs, not one per count.
"""

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .runtime.checks import as_key, check_count
from .runtime.compile_cache import cached
from .model.diagnose import check_diverged, check_finite, potential_is_finite
from .kernels import gibbs
from .kernels.base import as_spec, bound_kernel, end_adaptation, init_chains, step_chains
from .model.ugm import UGM
from .model.problem import build_problem
from .runtime.distributed import to_host
from .runtime.runloop import capacity
from .runtime.sharding import shard_particles, use_mesh
from .model.target import Target

__all__ = ["sample"]


def sample(m: UGM, params: dict, rng_key: jax.Array, num_samples: int, *,
           num_chains: int = 1, num_warmup: int = 0, thinning: int = 1, kernel: Any = None,
           init_state: dict | None = None, mesh: jax.sharding.Mesh | None = None) -> dict:
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
        Independent chains, run in parallel (vmapped), started from the base
        distribution (uniform on finite sites, the base Normal of real ones).
    num_warmup : int
        Kernel steps discarded at the start of each chain; a gradient kernel adapts its
        step size during them only.
    thinning : int
        Kernel steps between kept samples.
    kernel : KernelSpec, optional
        Default: systematic-scan block Gibbs (with MALA for real sites whose potential
        is not quadratic).
    init_state : dict, optional
        Starting positions (model representation, leading axis ``num_chains``).
    mesh : jax.sharding.Mesh, optional
        Split the chains over the mesh's first axis (several devices, or several
        processes under ``jax.distributed``: every process gets all the draws); the same
        draws. The chains are split when the mesh axis divides ``num_chains`` rounded up
        to a power of two.

    Returns
    -------
    dict of str -> array ``(num_chains * num_samples, *site_shape)``
        Data representation (±1, 0/1, integer labels, real values), chain-major.

    Raises
    ------
    FloatingPointError
        If the log-potential is not finite at a draw, or it or the conditional log-odds
        are not finite at a chain's last state (e.g. parameters that overflow): checked
        once, after the run, on f at the kept draws and on one gradient per chain; or if
        chains of a real site diverged (see :data:`~numpyro_ugm.model.diagnose.DIVERGED`).

    Notes
    -----
    The compiled chains are kept (:mod:`~numpyro_ugm.runtime.compile_cache`) per model, kernel,
    and ``num_samples`` and ``num_chains`` rounded up to powers of two: a chain count
    that is not a power of two runs the extra chains of the rounded count, and the draws
    are buffered at the rounded counts (at most 4 times the memory of the draws kept).
    The padding changes no number: the keys of a chain and of a draw do not depend on the
    counts, so the draws are the first chains' first draws of any longer run with the
    same key and settings.
    """
    num_samples = check_count("sample", "num_samples", num_samples)
    num_chains = check_count("sample", "num_chains", num_chains)
    thinning = check_count("sample", "thinning", thinning)
    num_warmup = check_count("sample", "num_warmup", num_warmup, minimum=0)
    rng_key = as_key(rng_key, "sample")
    problem = build_problem(m)
    problem.param_model.space.check(params)
    return _sample(problem.target, params, rng_key, as_spec(kernel, gibbs()), num_samples,
                   num_chains, num_warmup, thinning, init_state, mesh)


def _sample(target: Target, params, rng_key, spec, num_samples, num_chains, num_warmup,
            thinning, init_state, mesh=None):
    """:func:`sample` on a target, arguments checked."""
    size = (capacity(num_samples), capacity(num_chains))
    start = None if init_state is None else _padded_start(target, init_state, num_chains,
                                                          size[1])
    run = cached(target.cache_key, ("sample", spec, size, start is None, mesh),
                 lambda: jax.jit(functools.partial(_run, target, bound_kernel(spec, target),
                                                   size)))
    with use_mesh(mesh):
        draws, ok = run(params, rng_key, start, num_samples, num_warmup, thinning)
    draws, ok = to_host((draws, ok))  # chains split over processes are gathered
    ok = ok[:num_samples, :num_chains]
    draws = {n: v[:num_chains, :num_samples] for n, v in draws.items()}
    if target.real_sites:
        check_diverged(target, "sample", params,
                       {n: draws[n].reshape((-1,) + draws[n].shape[2:])
                        for n in target.real_sites})
    if not ok.all():
        domains = target.state_sites
        positions = {n: domains[n].to_model(np.swapaxes(v, 0, 1)) for n, v in draws.items()}
        check_finite(target, "sample", params, ok, positions,
                     lambda i: f"draw {i[0]} of chain {i[1]}")
    # device_put, not jnp.asarray: that compiles a copy for every new shape
    return {n: jax.device_put(v.reshape((num_chains * num_samples,) + v.shape[2:]))
            for n, v in draws.items()}


def _padded_start(target, init_state, num_chains, chains):
    """``init_state`` checked (every state site, leading axis ``num_chains``) and padded
    to ``chains`` chains with copies of its first chain."""
    missing = [n for n in target.state_sites if n not in init_state]
    unknown = [n for n in init_state if n not in target.state_sites]
    if missing or unknown:
        raise KeyError(f"sample: init_state must hold every state site "
                       f"{list(target.state_sites)} and no other; missing {missing}, "
                       f"unknown {unknown}")
    start = {}
    for n, v in init_state.items():
        v = np.asarray(v)
        if v.ndim == 0 or v.shape[0] != num_chains:
            raise ValueError(f"sample: init_state site {n!r} has shape {v.shape}; expected "
                             f"a leading axis of num_chains = {num_chains}")
        start[n] = np.concatenate([v, np.repeat(v[:1], chains - num_chains, 0)])
    return start


def _run(target, kernel, size, params, key, start, num_samples, num_warmup, thinning):
    """The chains of :func:`sample`, compiled once per target, kernel and ``size`` (the
    capacities of draws and chains; parameters, key, start, the counts, warm-up and
    thinning are arguments): the draws, chain-major in the data representation, and
    whether f is finite at each draw (draw-major; at the last, also its conditional
    log-odds). Entries past ``num_samples`` are padding."""
    samples, chains = size
    init_key, key = jax.random.split(key)
    position = shard_particles(target.random_state(init_key, (chains,)) if start is None
                               else start)
    logdensity = target.logdensity_fn(params)
    states = init_chains(kernel, position, logdensity)

    def steps(states, key, n):
        return jax.lax.fori_loop(0, n, lambda i, s: step_chains(
            kernel, jax.random.fold_in(key, i), s, logdensity)[0], states)

    warm_key, draw_key = jax.random.split(key)
    states = end_adaptation(steps(states, warm_key, num_warmup))
    keys = jax.random.split(draw_key, samples)  # the first n are those of split(key, n)
    buffers = (jax.tree.map(lambda v: jnp.zeros((samples,) + v.shape, v.dtype),
                            states.position),
               jnp.zeros((samples, chains), bool))

    def draw(i, carry):
        states, (draws, ok) = carry
        states = steps(states, keys[i], thinning)
        finite = jnp.isfinite(jax.vmap(logdensity)(states.position))
        return states, (jax.tree.map(lambda b, v: b.at[i].set(v), draws, states.position),
                        ok.at[i].set(finite))

    states, (draws, ok) = jax.lax.fori_loop(0, num_samples, draw, (states, buffers))
    last = jax.vmap(lambda x: potential_is_finite(target, params, x))(states.position)
    ok = ok.at[num_samples - 1].set(ok[num_samples - 1] & last)
    domains = target.state_sites
    return {n: domains[n].from_model(jnp.swapaxes(v, 0, 1)) for n, v in draws.items()}, ok
