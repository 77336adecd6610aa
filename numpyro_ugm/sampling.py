"""``sample``: draw configurations of a UGM with any kernel.

The chains run in one compiled program per model, kernel and *capacity*: the number of
draws rounded up to a power of two (the draws loop has a dynamic trip count, so padding
costs memory only) and the number of chains rounded up to a power of two up to 8, then
to a multiple of 8 (extra chains run and are dropped: padding them costs compute). So
calls with other counts on the same grid, keys, parameters, warm-up or thinning reuse
the program, and a process that asks for ever new counts keeps a few programs, not one
per count.
"""

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin

from .runtime.checks import as_key, check_count
from .runtime.compile_cache import cached
from .model.diagnose import check_diverged, check_finite, potential_is_finite
from .kernels import gibbs
from .kernels.base import as_spec, bound_kernel, end_adaptation, init_chains, step_chains
from .model.ugm import UGM
from .model.problem import build_problem
from .model.validation import check_normalizable
from .runtime.distributed import to_host, warn
from .runtime.runloop import capacity, chain_capacity
from .runtime.sharding import shard_particles, use_mesh
from .model.target import Target

__all__ = ["sample", "SampleDiagnostics", "R_HAT_LIMIT", "ACCEPTANCE_FLOOR", "MIN_DRAWS_FOR_R_HAT",
           "MIN_ADAPTIVE_WARMUP"]

#: ``sample`` warns when a variable's split R-hat over the chains exceeds this.
R_HAT_LIMIT = 1.1

#: ``sample`` warns when a chain's mean acceptance over its kept steps is below this.
ACCEPTANCE_FLOOR = 0.01

#: the fewest warm-up steps ``sample`` runs by default for a kernel that adapts its step
#: size (a gradient kernel: ``mala``, ``hmc``, ``rwm``, the default for real sites whose
#: potential is not quadratic): the adaptation moves log ε by ``adaptation_rate`` (0.05)
#: × (acceptance − target) per step, so it needs some hundreds of steps to settle
MIN_ADAPTIVE_WARMUP = 500

#: fewer draws per chain than this give no split R-hat or effective size (NaN): the
#: estimates of a few draws are noise, and a warning from them would be too
MIN_DRAWS_FOR_R_HAT = 20


class SampleDiagnostics(NamedTuple):
    """What ``sample(..., return_diagnostics=True)`` reports next to the draws.

    Attributes
    ----------
    acceptance : (num_chains,) array
        Each chain's mean acceptance over the kernel steps after the warm-up (1 for
        exact Gibbs draws; a gradient move's or a Metropolis sweep's acceptance).
    r_hat : dict of str -> array of the site's shape
        Split R-hat over the chains (numpyro's ``split_gelman_rubin``; NaN for a
        variable that never changes, or fewer than 4 draws per chain).
    ess : dict of str -> array of the site's shape
        Effective sample size over all chains (numpyro's ``effective_sample_size``).
    """

    acceptance: np.ndarray
    r_hat: dict
    ess: dict

    def worst(self):
        """(site, largest split R-hat, smallest effective size) over every variable
        (``(None, nan, nan)`` when no variable has a finite R-hat)."""
        worst = (None, float("nan"), float("nan"))
        for name, r in self.r_hat.items():
            if np.isfinite(r).any() and not np.nanmax(r) <= worst[1]:
                worst = (name, float(np.nanmax(r)), float(np.nanmin(self.ess[name])))
        return worst


def sample(m: UGM, params: dict, rng_key: jax.Array, num_samples: int, *,
           num_chains: int = 1, num_warmup: int | None = None, thinning: int = 1,
           kernel: Any = None,
           init_state: dict | None = None, mesh: jax.sharding.Mesh | None = None,
           return_diagnostics: bool = False):
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
    num_warmup : int, optional
        Kernel steps discarded at the start of each chain; a gradient kernel adapts its
        step size during them only. Default: none for a kernel that adapts nothing
        (block Gibbs, Metropolis); for one that adapts its step size (a gradient kernel,
        also the default's move of real sites whose potential is not quadratic)
        ``max(MIN_ADAPTIVE_WARMUP, num_samples * thinning)`` steps (without a warm-up such
        a kernel keeps its initial step size and its chains their starting points).
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
    return_diagnostics : bool
        Also return a :class:`SampleDiagnostics`: each chain's acceptance, and the split
        R-hat and effective sample size of every variable over the chains.

    Returns
    -------
    dict of str -> array ``(num_chains * num_samples, *site_shape)``
        Data representation (±1, 0/1, integer labels, real values), chain-major. With
        ``return_diagnostics``, the pair ``(draws, SampleDiagnostics)``.

    Warns
    -----
    RuntimeWarning
        When ``num_warmup=0`` is given with a kernel that adapts its step size (it then
        never adapts). When the chains disagree — a variable's split R-hat above :data:`R_HAT_LIMIT`
        (chains stuck where they started, or in different modes) — or a chain's mean
        acceptance is below :data:`ACCEPTANCE_FLOOR` (it hardly moves): the draws are
        then not a sample of the model. The message names the site, the worst R-hat and
        effective size and the acceptance range.

    Raises
    ------
    FloatingPointError
        If the log-potential is not finite at a draw, or it or the conditional log-odds
        are not finite at a chain's last state (e.g. parameters that overflow): checked
        once, after the run, on f at the kept draws and on one gradient per chain; or if
        chains of a real site diverged (see :data:`~numpyro_ugm.model.diagnose.DIVERGED`),
        or would (the potential visibly not normalizable, found before the run by
        :func:`~numpyro_ugm.model.validation.check_normalizable`).

    Notes
    -----
    The compiled chains are kept (:mod:`~numpyro_ugm.runtime.compile_cache`) per model, kernel,
    ``num_samples`` rounded up to a power of two and ``num_chains`` rounded up to a
    power of two up to 8, then to a multiple of 8
    (:func:`~numpyro_ugm.runtime.runloop.chain_capacity`; with a ``mesh``, to a power of
    two, which the device count divides): a chain count off that grid runs the extra
    chains of the rounded count (at most 7 past 8 chains), and the draws are buffered at
    the rounded counts.
    The padding changes no number: the keys of a chain and of a draw do not depend on the
    counts, so the draws are the first chains' first draws of any longer run with the
    same key and settings.
    """
    num_samples = check_count("sample", "num_samples", num_samples)
    num_chains = check_count("sample", "num_chains", num_chains)
    thinning = check_count("sample", "thinning", thinning)
    if num_warmup is not None:
        num_warmup = check_count("sample", "num_warmup", num_warmup, minimum=0)
    rng_key = as_key(rng_key, "sample")
    problem = build_problem(m)
    problem.param_model.space.check(params)
    check_normalizable(problem.target, params, "sample")
    spec = as_spec(kernel, gibbs())
    num_warmup = _warmup(bound_kernel(spec, problem.target).tuning is not None, num_warmup,
                         num_samples * thinning)
    draws, diagnostics = _sample(problem.target, params, rng_key, spec, num_samples,
                                 num_chains, num_warmup, thinning, init_state, mesh,
                                 with_diagnostics=True)
    _warn_if_unconverged(diagnostics)
    return (draws, diagnostics) if return_diagnostics else draws


def _warmup(adapts: bool, num_warmup: int | None, kept_steps: int) -> int:
    """The warm-up of :func:`sample`: ``num_warmup`` if given (with a warning when it is 0
    and the kernel adapts its step size), else none for a kernel that adapts nothing and
    ``max(MIN_ADAPTIVE_WARMUP, kept_steps)`` for one that does."""
    if num_warmup is None:
        return max(MIN_ADAPTIVE_WARMUP, kept_steps) if adapts else 0
    if adapts and num_warmup == 0:
        warn("sample: the kernel adapts its step size during the warm-up only, and "
             "num_warmup=0: it keeps its initial step size and the chains their starting "
             "points; leave num_warmup unset (a warm-up of max(MIN_ADAPTIVE_WARMUP, "
             "num_samples * thinning) steps), give num_warmup > 0, or pass a kernel with "
             "adapt=False and a step size of your own", RuntimeWarning, stacklevel=3)
    return num_warmup


def _diagnostics(draws: dict, acceptance: np.ndarray) -> SampleDiagnostics:
    """Split R-hat and effective size of every variable of ``draws`` (site -> (chains,
    samples, *shape), data representation), NaN where undefined."""
    r_hat, ess = {}, {}
    for name, v in draws.items():
        v = np.asarray(v, np.float64)
        shape = v.shape[2:]
        if v.shape[1] < MIN_DRAWS_FOR_R_HAT:
            r_hat[name] = ess[name] = np.full(shape, np.nan)
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            r_hat[name] = np.asarray(split_gelman_rubin(v), np.float64)
            ess[name] = np.asarray(effective_sample_size(v), np.float64)
        constant = np.all(v == v[:1, :1], axis=(0, 1))
        r_hat[name] = np.where(constant, np.nan, r_hat[name])
        ess[name] = np.where(constant, np.nan, ess[name])
    return SampleDiagnostics(np.asarray(acceptance, np.float64), r_hat, ess)


def _warn_if_unconverged(diagnostics: SampleDiagnostics):
    """The warning of :func:`sample` when the chains disagree or hardly move."""
    site, r_hat, ess = diagnostics.worst()
    acceptance = diagnostics.acceptance
    low = acceptance < ACCEPTANCE_FLOOR
    if not r_hat > R_HAT_LIMIT and not low.any():
        return
    problems = []
    if r_hat > R_HAT_LIMIT:
        problems.append(f"split R-hat {r_hat:.3g} > {R_HAT_LIMIT} at site {site!r} (effective "
                        f"sample size {ess:.3g}): the chains disagree")
    if low.any():
        problems.append(f"{int(low.sum())} of {low.size} chains accepted less than "
                        f"{ACCEPTANCE_FLOOR:.0%} of their moves (they hardly move)")
    warn(f"sample: {'; '.join(problems)} (acceptance per chain {acceptance.min():.3g} to "
         f"{acceptance.max():.3g}); the draws are not yet a sample of the model: use a longer "
         "warm-up, more draws, another step size or kernel, or check that the model is "
         "normalizable", RuntimeWarning, stacklevel=3)


def _sample(target: Target, params, rng_key, spec, num_samples, num_chains, num_warmup,
            thinning, init_state, mesh=None, with_diagnostics=False):
    """:func:`sample` on a target, arguments checked (with ``with_diagnostics``: the pair
    of the draws and their :class:`SampleDiagnostics`)."""
    # chains split over a mesh keep a power of two, which its device count divides
    chains = capacity(num_chains) if mesh is not None else chain_capacity(num_chains)
    size = (capacity(num_samples), chains)
    start = None if init_state is None else _padded_start(target, init_state, num_chains,
                                                          size[1])
    run = cached(target.cache_key, ("sample", spec, size, start is None, mesh),
                 lambda: jax.jit(functools.partial(_run, target, bound_kernel(spec, target),
                                                   size)))
    with use_mesh(mesh):
        draws, ok, accepted = run(params, rng_key, start, num_samples, num_warmup, thinning)
    # chains split over processes are gathered
    draws, ok, accepted = to_host((draws, ok, accepted))
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
    out = {n: jax.device_put(v.reshape((num_chains * num_samples,) + v.shape[2:]))
           for n, v in draws.items()}
    if not with_diagnostics:
        return out
    acceptance = np.asarray(accepted)[:num_chains] / (num_samples * thinning)
    return out, _diagnostics(draws, acceptance)


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
    log-odds), and each chain's summed acceptance over the kept steps. Entries past
    ``num_samples`` are padding."""
    samples, chains = size
    init_key, key = jax.random.split(key)
    position = shard_particles(target.random_state(init_key, (chains,)) if start is None
                               else start)
    logdensity = target.logdensity_fn(params)
    states = init_chains(kernel, position, logdensity)

    def steps(states, key, n):
        return jax.lax.fori_loop(0, n, lambda i, s: step_chains(
            kernel, jax.random.fold_in(key, i), s, logdensity)[0], states)

    def counted_steps(carry, key, n):
        """``n`` steps, adding each chain's acceptance to the running sum."""
        def one(i, carry):
            states, total = carry
            states, info = step_chains(kernel, jax.random.fold_in(key, i), states, logdensity)
            rate = getattr(info, "acceptance_rate", jnp.ones(()))
            return states, total + jnp.broadcast_to(rate, total.shape).astype(total.dtype)
        return jax.lax.fori_loop(0, n, one, carry)

    warm_key, draw_key = jax.random.split(key)
    states = end_adaptation(steps(states, warm_key, num_warmup))
    keys = jax.random.split(draw_key, samples)  # the first n are those of split(key, n)
    buffers = (jax.tree.map(lambda v: jnp.zeros((samples,) + v.shape, v.dtype),
                            states.position),
               jnp.zeros((samples, chains), bool))

    def draw(i, carry):
        (states, total), (draws, ok) = carry
        states, total = counted_steps((states, total), keys[i], thinning)
        finite = jnp.isfinite(jax.vmap(logdensity)(states.position))
        return (states, total), (jax.tree.map(lambda b, v: b.at[i].set(v), draws,
                                              states.position), ok.at[i].set(finite))

    total = jnp.zeros(chains, jnp.float32)
    (states, total), (draws, ok) = jax.lax.fori_loop(0, num_samples, draw,
                                                     ((states, total), buffers))
    last = jax.vmap(lambda x: potential_is_finite(target, params, x))(states.position)
    ok = ok.at[num_samples - 1].set(ok[num_samples - 1] & last)
    domains = target.state_sites
    return ({n: domains[n].from_model(jnp.swapaxes(v, 0, 1)) for n, v in draws.items()}, ok,
            total)
