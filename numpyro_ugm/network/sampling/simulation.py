"""Simulating an ERGM's statistics at given parameters with persistent chains, the
negative phase of :func:`~numpyro_ugm.network.fit_ergm`, its standard errors, its
log-likelihood and its goodness of fit.

Two samplers behind one interface, :class:`NetworkSimulator`:

* ``"gibbs"``: the package's block-Gibbs kernel on the dense dyad variables of
  :func:`~numpyro_ugm.models.ergm` (matchings; one dyad per block with gwesp), best for
  small or dense networks;
* ``"sparse"``: Metropolis–Hastings with tie / no-tie proposals on neighbour lists
  (:mod:`~numpyro_ugm.network.sampling.tnt`), R ergm's sampler, best for large sparse
  networks.

Both keep their chains between calls (each call continues where the last stopped) and
return the sampled statistics as (num_chains, num_draws, k) arrays, one compiled
program per shape (θ is an argument, never a constant).
"""

import concurrent.futures
import functools
import os

import jax
import jax.numpy as jnp
import numpy as np

from ...runtime.checks import check_count, split_key
from ...kernels.base import init_chains, step_chains
from ...kernels.block_gibbs import gibbs
from ...model.ugm import UGM
from .moments import multivariate_effective_size, stationary_start
from ..model import ergm
from ..terms.structural import statistics_of
from ..graphs import pair_tables
from .chains import (DegreeOverflowError, default_max_degree, init_network_chains,
                             network_edges)
from .compiled import native_run
from .guard import DensityGuard
from ..terms.compiled import native_chains, native_program
from .tnt import network_mh_step, simulate_statistics

__all__ = ["NetworkSimulator", "dense_simulator", "sparse_simulator", "native_sampler",
           "adaptive_simulate", "lengthen_sample", "change_function", "triadic_weight",
           "chain_groups"]


class NetworkSimulator:
    """Persistent chains of an ERGM; ``simulate(theta, rng_key, num_draws, interval,
    burnin=None)`` -> statistics (num_chains, num_draws, k) and the chains moved on (first
    ``burnin`` steps, default the simulator's, when θ differs from the last call's: at
    the same θ the chains are already there, so repeated samples, the final sample and
    the bridges' repeats burn in once); ``networks()`` the chains' current networks as
    edge arrays (m, 2); ``rewind()`` puts the chains back where they were when θ last
    changed (the MCMLE's trust region, after a step whose chains ran away).

    ``chains`` is the dict whose ``"now"`` entry ``simulate`` reads and replaces (the
    chains' state, immutable arrays: a checkpoint is a reference)."""

    def __init__(self, simulate, networks, name, burnin, chains):
        self._simulate, self._networks, self.name = simulate, networks, name
        self.burnin = int(burnin)
        self._chains = chains
        self._theta = None
        self._checkpoint = None

    def simulate(self, theta, rng_key, num_draws: int, interval: int,
                 burnin: int | None = None) -> np.ndarray:
        theta = np.asarray(theta, np.float32)
        burnin = self.burnin if burnin is None else int(burnin)
        if self._theta is not None and np.array_equal(theta, self._theta):
            burnin = 0
        else:
            self._checkpoint = (self._theta, self._chains["now"])
        # θ as numpy float32: the compiled sampler reads it on the host, the JAX ones
        # convert it (a jnp.asarray here compiled a program in each new process)
        stats = np.asarray(self._simulate(theta, rng_key, int(num_draws), int(interval),
                                          burnin))
        self._theta = theta
        return stats

    def rewind(self) -> None:
        """Return the chains (and the θ they were at) to their state before the last
        change of θ."""
        if self._checkpoint is not None:
            self._theta, self._chains["now"] = self._checkpoint

    def networks(self) -> list[np.ndarray]:
        return self._networks()

    def snapshot(self) -> tuple:
        """The chains and the θ they are at, for :meth:`restore` (immutable arrays: a
        reference, no copy)."""
        return self._theta, self._chains["now"]

    def restore(self, snapshot: tuple) -> None:
        """Put the chains back where :meth:`snapshot` found them (e.g. the fit's final
        sample at θ̂, for simulations at the estimate)."""
        self._theta, self._chains["now"] = snapshot


def dense_simulator(net, statistics, terms, y_start, num_chains: int, *, burnin: int,
                    decay: float) -> NetworkSimulator:
    """A :class:`NetworkSimulator` of block-Gibbs chains (one step: a sweep over every
    block) started at ``y_start`` (E,), the observed network; each call first runs
    ``burnin`` sweeps (by default) at the new θ, then records a draw every ``interval``
    sweeps."""
    m = UGM(ergm, net, statistics, decay=decay)
    kernel = gibbs().build(m.target())
    y = {"now": jnp.broadcast_to(jnp.asarray(y_start, jnp.float32),
                                 (num_chains, len(y_start)))}
    compiled = {}

    def program(num_draws, interval):
        @jax.jit
        def run(theta, rng_key, y0, burnin):
            f = m.target().logdensity_fn({"theta": theta})
            states = init_chains(kernel, {"y": y0}, f)

            def sweep(states, step_key):
                return step_chains(kernel, step_key, states, f)[0], None

            def draw(states, draw_key):
                states = jax.lax.scan(sweep, states, jax.random.split(draw_key, interval))[0]
                return states, statistics_of(states.position["y"], net, terms)

            first, second = jax.random.split(rng_key)
            states = jax.lax.fori_loop(  # burnin is traced: one program for any burn-in
                0, burnin, lambda t, s: sweep(s, jax.random.fold_in(first, t))[0], states)
            states, stats = jax.lax.scan(draw, states, jax.random.split(second, num_draws))
            return states.position["y"], jnp.swapaxes(stats, 0, 1)
        return run

    def simulate(theta, rng_key, num_draws, interval, burnin):
        shape = (num_draws, interval)
        if shape not in compiled:
            compiled[shape] = program(*shape)
        run = compiled[shape]
        y["now"], stats = run(theta, rng_key, y["now"], jnp.int32(burnin))
        return stats

    def networks():
        _, i, j = pair_tables(net.num_nodes, net.directed)
        return [np.stack([i[row > 0], j[row > 0]], 1) for row in np.asarray(y["now"])]

    return NetworkSimulator(simulate, networks, "gibbs", burnin, y)


def change_function(terms):
    """``change_fn(view) -> (k,)``: Δs of one dyad from a sparse sampler's view, every
    term's change statistic side by side (the same object for the same terms, so the
    compiled programs that take it as a static argument are reused)."""
    return _change_function(tuple(terms))


@functools.lru_cache(maxsize=64)
def _change_function(terms):
    def change_fn(view):
        return jnp.concatenate([t.change(view) for t in terms], axis=-1)
    return change_fn


#: terms (by their first coefficient's name) that count closed two-paths
_TRIADIC = ("triangle", "ttriple", "ctriple")


def triadic_weight(terms) -> float:
    """The share of triadic proposals that :func:`sparse_simulator` uses by default: 0.5
    for models with a triangle, transitive or cyclic triple or shared-partner term
    (gwesp), whose statistics TNT proposals barely move in sparse networks (a random
    dyad almost never closes a two-path), else 0."""
    return 0.5 if any(t.dependence == "partners" or t.names[0] in _TRIADIC
                      for t in terms) else 0.0


#: the most memory that :func:`sparse_simulator` gives the adjacency bit sets
BITS_MAX_BYTES = 2 ** 29


def adjacency_bits_pay(terms, num_nodes: int, max_degree: int, num_chains: int,
                       directed: bool) -> bool:
    """Whether :func:`sparse_simulator` keeps the chains' adjacency as bit sets
    (``init_network_chains(adjacency_bits=True)``): when a term counts shared partners
    or closed two-paths, D² ≥ 16 W (a partner sum's D popcounts of W = ⌈n / 32⌉ words
    against its D³ compares, or D² gathers above
    :data:`~numpyro_ugm.network.sampling.views.COMPARE_MAX_DEGREE`) and the bit sets
    fit in :data:`BITS_MAX_BYTES`. Measured (edges + covariates + gwesp, 16 chains,
    2-core CPU, proposals per second with / without): faux.mesa.high (n = 205, D = 26)
    2.0x, faux.dixon.high (n = 248, D = 38) 1.9x, faux.magnolia.high (n = 1,461,
    D = 16, D² < 16 W) 0.7-1.1x."""
    words = -(-num_nodes // 32)
    size = num_chains * num_nodes * words * 4 * (2 if directed else 1)
    return (triadic_weight(terms) > 0 and max_degree ** 2 >= 16 * words
            and size <= BITS_MAX_BYTES)


def chain_groups(num_chains: int, threads: int | None = None) -> list[tuple[int, int]]:
    """(first chain, size) of the groups that :func:`sparse_simulator` runs side by side,
    one per thread: ``threads`` (default: the CPU's cores when JAX runs on the CPU, else
    1; at most ``num_chains``) groups of near-equal size. XLA runs a CPU program on the
    thread that calls it, so groups on separate threads use separate cores (2-core CPU,
    32 chains: 1.8x the proposals per second of one call); the draws do not depend on
    the grouping (:func:`~numpyro_ugm.network.sampling.tnt.network_mh_step`'s
    ``first_chain``)."""
    if threads is None:
        threads = _cores() if jax.default_backend() == "cpu" else 1
    G = min(check_count("sparse_simulator", "threads", threads), num_chains)
    sizes = [num_chains // G + (g < num_chains % G) for g in range(G)]
    return [(sum(sizes[:g]), size) for g, size in enumerate(sizes)]


def _cores():
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@functools.lru_cache(maxsize=1)
def _pool():
    """The threads that run groups of chains (made as needed, up to 64)."""
    return concurrent.futures.ThreadPoolExecutor(max(_cores(), 64),
                                                 thread_name_prefix="numpyro_ugm-chains")


def _each_group(fn, groups):
    """``[fn(group) for group in groups]``, the groups on the thread pool when there are
    several (the first error raised, after every group has finished)."""
    if len(groups) == 1:
        return [fn(groups[0])]
    futures = [_pool().submit(fn, group) for group in groups]
    concurrent.futures.wait(futures)
    return [f.result() for f in futures]


def native_sampler(terms, num_nodes: int, native: bool | None = None):
    """The terms as a program of the compiled sampler
    (:mod:`~numpyro_ugm.network.sampling.compiled`), or None for the JAX sampler: ``native``
    None picks the compiled one when every term is built in, True requires it (an error
    naming a term without a native form), False refuses it."""
    if native is not None and not isinstance(native, (bool, np.bool_)):
        raise TypeError(f"sparse_simulator: native must be None, True or False, got "
                        f"{native!r}")
    if native is False:
        return None
    program = native_program(terms, num_nodes)
    if program is None and native:
        user = [t.names[0] for t in terms if getattr(t, "native", None) is None]
        raise ValueError(f"sparse_simulator: native=True needs numba and terms that are "
                         f"all built in; {user or 'numba'} cannot run compiled (pass "
                         f"native=None to use the JAX sampler for them)")
    return program


def sparse_simulator(net, terms, edges, observed, num_chains: int, *, burnin: int,
                     max_degree: int | None = None, triadic: float | None = None,
                     threads: int | None = None,
                     native: bool | None = None) -> NetworkSimulator:
    """A :class:`NetworkSimulator` of tie / no-tie Metropolis–Hastings chains (a share
    ``triadic`` of triadic proposals, default :func:`triadic_weight`) started at the
    observed ties ``edges`` (m, 2) with statistics ``observed``; each call first runs
    ``burnin`` proposals (by default) at the new θ, then records a draw every
    ``interval`` proposals. The chains run in groups on ``threads`` threads
    (:func:`chain_groups`), compiled by numba when every term is built in
    (:mod:`~numpyro_ugm.network.sampling.compiled`; ``native``: see :func:`native_sampler`),
    else in JAX (:mod:`~numpyro_ugm.network.sampling.tnt`). A chain that outgrows the
    neighbour lists restarts them all at the observed network with 1.5 times the
    capacity (unless ``max_degree`` fixes it)."""
    change_fn = change_function(terms)
    triadic = triadic_weight(terms) if triadic is None else triadic
    default_burnin = int(burnin)
    groups = chain_groups(num_chains, threads)
    program = native_sampler(terms, net.num_nodes, native)

    def start(capacity):
        capacity = capacity or default_max_degree(edges, net.num_nodes, net.directed)
        bits = program is None and adjacency_bits_pay(terms, net.num_nodes, capacity,
                                                      num_chains, net.directed)
        states = tuple(init_network_chains(edges, net.num_nodes, size, directed=net.directed,
                                           statistics0=observed, max_degree=capacity,
                                           adjacency_bits=bits, host=program is not None)
                       for _, size in groups)
        return states if program is None else tuple(native_chains(s) for s in states)

    chains = {"now": start(max_degree)}

    def simulate(theta, rng_key, num_draws, interval, burnin):
        if program is not None:
            words = _key_words(rng_key)

            def run(group):
                (offset, _), state = group
                state, stats, _, full = native_run(state, program, theta, words, offset,
                                                   burnin, num_draws, interval, triadic)
                if full >= 0:
                    raise DegreeOverflowError(
                        f"network sampler: chain {offset + full} needed a node with more "
                        f"than max_degree={state.max_degree} neighbours; pass a larger "
                        f"max_degree (or check that theta is not degenerate)")
                return state, stats
        else:
            first, second = jax.random.split(rng_key)

            def run(group):
                (offset, _), state = group
                if burnin:
                    state = network_mh_step(first, state, theta, change_fn, burnin, triadic,
                                            first_chain=offset)[0]
                return simulate_statistics(second, state, theta, change_fn, num_draws,
                                           interval, triadic, first_chain=offset)

        while True:
            states = chains["now"]
            try:
                results = _each_group(run, list(zip(groups, states)))
                chains["now"] = tuple(state for state, _ in results)
                return np.concatenate([np.asarray(stats) for _, stats in results])
            except DegreeOverflowError:
                # a node outgrew the neighbour lists: the chains restart at the observed
                # network with 1.5 times the capacity (unless the user fixed it); the
                # cost per proposal grows with it (partner sums: D³ compares up to 32)
                capacity = states[0].max_degree
                if max_degree is not None or capacity >= net.num_nodes - 1:
                    raise
                chains["now"] = start(min(-(-3 * capacity // 2), net.num_nodes - 1))
                burnin = max(burnin, default_burnin)  # the restarted chains burn in

    def networks():
        return [e for state in chains["now"] for e in network_edges(state)]

    return NetworkSimulator(simulate, networks, "sparse", burnin, chains)


def _key_words(rng_key):
    """The last two 32-bit words of a JAX key (typed or raw), the compiled sampler's
    seed."""
    if jnp.issubdtype(rng_key.dtype, jax.dtypes.prng_key):
        rng_key = jax.random.key_data(rng_key)
    return [int(w) for w in np.asarray(rng_key, np.uint32).ravel()[-2:]]


def lengthen_sample(draw, stats: np.ndarray, num_draws: int, effective_size: float,
                    max_interval: int, current: dict, *, payload: list | None = None,
                    stop=None, check=None, report=None) -> tuple:
    """Continue a sample until its multivariate effective size reaches
    ``effective_size``, ergm 4's adaptive sampling (``MCMC.effectiveSize``), the loop of
    :func:`adaptive_simulate` and of the goodness of fit's draws at θ̂.

    Drop the start that the Geweke test finds not yet stationary
    (:func:`~numpyro_ugm.network.sampling.moments.stationary_start`, at most half);
    while the chains still move, or the rest's effective size falls short, draw
    ``num_draws`` more per chain (``draw(interval) -> (stats (C, num_draws, k), payload
    list or None)``, continuing the chains), thinning by 2 and doubling
    ``current["interval"]`` and ``current["burnin"]`` whenever a chain holds
    ``2 num_draws`` draws, up to ``max_interval``. ``payload`` (one entry per draw, e.g.
    the networks) is cut and thinned with the draws; ``stop(stats)`` ends it as soon as
    it is true, ``check(stats, ess)`` may raise before each longer draw (the density
    guard), ``report(message)`` hears each doubling.

    Returns
    -------
    (stats, payload, effective size)
        The effective size is 0 when the chains were still moving at the end.
    """
    report = report or (lambda message: None)
    while True:
        cut = stationary_start(stats)
        if cut:
            stats = stats[:, cut:]
            payload = None if payload is None else payload[cut:]
        ess = 0.0 if cut is None else multivariate_effective_size(stats)
        if ess >= effective_size or (stop is not None and stop(stats)):
            return stats, payload, ess
        if check is not None:
            check(stats, ess)
        if 2 * current["interval"] > max_interval and stats.shape[1] >= num_draws:
            report(f"interval {current['interval']} (the largest): effective sample "
                   f"size {ess:.1f}" + (", chains not stationary" if cut is None else ""))
            return stats, payload, ess
        more, extra = draw(current["interval"])
        stats = np.concatenate([stats, np.asarray(more, np.float64)], axis=1)
        payload = None if payload is None else payload + extra
        if stats.shape[1] >= 2 * num_draws and 2 * current["interval"] <= max_interval:
            stats = stats[:, 1::2]
            payload = None if payload is None else payload[1::2]
            current["interval"] *= 2
            current["burnin"] *= 2
            report(("chains not stationary" if cut is None else
                    f"effective sample size {ess:.1f} < {effective_size:g}")
                   + f": interval {current['interval']}, burn-in {current['burnin']}")


def adaptive_simulate(simulator: NetworkSimulator, num_draws: int, interval: int,
                      burnin: int, effective_size: float | None, max_interval: int,
                      verbose: bool = False, guard: DensityGuard | None = None):
    """``simulate(theta, rng_key)`` for
    :func:`~numpyro_ugm.network.estimation.mcmle.mcmle`, ergm 4's
    adaptive sampling (``MCMC.effectiveSize``): after the burn-in at the new θ, draw
    ``num_draws`` per chain and continue them, thinned, with a doubling interval up to
    ``max_interval`` until the sample's multivariate effective size reaches
    ``effective_size`` (:func:`lengthen_sample`); ``stop(stats)`` (the MCMLE's trust
    region) ends it as soon as it is true of the draws so far (at a new θ first of the
    burn-in, drawn as a sample of ``num_draws`` draws); before each longer draw the
    ``guard`` (:class:`~numpyro_ugm.network.sampling.guard.DensityGuard`) raises
    :class:`~numpyro_ugm.network.sampling.guard.ChainsRanAwayError` when a chain ran
    away to a dense graph. Also returns the interval and burn-in reached (shared: later
    samples start there) and ``rewind()``, which returns the chains and the interval to
    where they were before the last change of θ."""
    current = {"interval": interval, "burnin": burnin}
    checkpoint = {"theta": None, "current": dict(current)}

    def report(message):
        if verbose:
            print(message)

    def simulate(theta, rng_key, stop=None):
        new = checkpoint["theta"] is None or not np.array_equal(theta, checkpoint["theta"])
        if new:
            checkpoint.update(theta=np.array(theta), current=dict(current))
        burnin = current["burnin"]
        if stop is not None and new and burnin >= num_draws:
            # the burn-in drawn as a sample, screened: a step whose chains run away is
            # stopped before the longer sample proper
            rng_key, sub = split_key(rng_key)
            warm = np.asarray(simulator.simulate(theta, sub, num_draws, burnin // num_draws,
                                                 0), np.float64)
            if stop(warm):
                return warm
            burnin = 0
        rng_key, sub = split_key(rng_key)
        stats = np.asarray(simulator.simulate(theta, sub, num_draws, current["interval"],
                                              burnin), np.float64)
        if effective_size is None:
            return stats
        keys = {"now": rng_key}

        def draw(step):
            keys["now"], sub = split_key(keys["now"])
            return simulator.simulate(theta, sub, num_draws, step, 0), None

        def check(stats, ess):
            if guard is not None:
                guard.check(simulator.networks(), stats, ess, effective_size,
                            current["interval"], theta)

        return lengthen_sample(draw, stats, num_draws, effective_size, max_interval,
                               current, stop=stop, check=check, report=report)[0]

    def rewind():
        simulator.rewind()
        current.update(checkpoint["current"])
        checkpoint["theta"] = None

    return simulate, current, rewind
