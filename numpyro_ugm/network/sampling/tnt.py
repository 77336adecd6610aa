"""Metropolis–Hastings for ERGMs on sparse networks, many chains at once.

R's ergm samples exponential random graph models with Metropolis–Hastings and TNT
("tie / no tie") proposals: with probability 1/2 toggle a uniformly chosen existing tie
(off), otherwise toggle a uniformly chosen dyad; for triangle and shared-partner terms
a share ``triadic`` of the proposals may instead close or open a triangle (a uniform
tie k − i and a uniform neighbour j of k: toggle (i, j); directed: two-paths
i → k → j), with the mixture's probability of the dyad in the ratio. This module does the same in JAX
(``vmap`` over chains, ``lax.scan`` over proposals), for undirected and directed
networks, on the sparse state of :mod:`~numpyro_ugm.network.sampling.chains`, whose cost
per proposal depends on the degree capacity D, not on the number of nodes n.

The model side is a ``change_fn(view) -> (k,)``, Δs of one dyad from a view of
:mod:`~numpyro_ugm.network.sampling.views`. The MH ratio is exact for TNT: with
P_tie(m) = 1/2 if m > 0 else 0 and N dyads, q(toggle d | y) = P_tie(m) y_d / m +
(1 − P_tie(m)) / N, and a toggle is accepted with probability
min(1, exp(±θ·Δs) q(d | y') / q(d | y)), the reverse q at the new edge count
(:mod:`~numpyro_ugm.network.sampling.proposals`, shared with the compiled kernel).

Every public function compiles once per shape of the state, ``change_fn`` and the
counts (``num_proposals``; ``num_samples`` and ``interval``): ``change_fn`` is a static
argument, so pass the same function object on every call (a fresh ``lambda`` per call
compiles again) and close over constants rather than passing them. The functions can
be called inside ``jax.jit`` too (with ``change_fn`` and the counts fixed Python
values).

A toggle that would give a node more than D neighbours is not made and the public
functions raise a ``ValueError`` asking for a larger ``max_degree`` (under ``jit``: call
:func:`~numpyro_ugm.network.sampling.chains.check_overflow` on the result). Random words
come from XLA's Philox generator seeded by the key; uniform integers come from 32-bit
words (:func:`_scaled`): index probabilities are uniform up to a relative error of
count / 2^32.
"""

from typing import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ...runtime.checks import as_key, check_count
from .chains import NetworkChains, apply_writes, check_overflow, toggle_writes
from .proposals import check_triadic, log_acceptance, triadic_rate
from .views import gather_rows, view_of

__all__ = ["network_mh_step", "simulate_statistics"]

#: proposals whose random words are drawn together (one generator call per block)
_BLOCK = 1024


# --- one proposal of one chain -------------------------------------------------------


def _scaled(word, count):
    """floor(word · count / 2^32) for uint32 ``word`` and ``count`` < 2^31: a uniform
    integer in [0, count) from a uniform 32-bit word (exact 32x32 -> 64-bit product from
    16-bit halves; no 64-bit types needed)."""
    count = jnp.asarray(count).astype(jnp.uint32)
    low = jnp.uint32(0xFFFF)
    a1, a0 = word >> 16, word & low
    b1, b0 = count >> 16, count & low
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    middle = (p00 >> 16) + (p01 & low) + (p10 & low)
    return (p11 + (p01 >> 16) + (p10 >> 16) + (middle >> 16)).astype(jnp.int32)


def _triad(state, words, tie, m, triadic):
    """The triadic part of the mixture: with probability ``triadic``, a dyad that closes
    a two-path through the uniformly drawn tie ``tie``. Undirected: the tie in a random
    orientation (bit 30 of ``words[0]``) is k − i, and j a uniform neighbour of k
    (``words[3]``). Directed: the tie is the first leg i → k and j a uniform
    out-neighbour of k, or the second leg k → j and i a uniform in-neighbour of k.
    Returns (use, i, j, null); ``null`` (j = i, k without the neighbour to draw, or no
    tie at all): a proposal of nothing, rejected."""
    dtype = state.statistics.dtype
    u = ((words[0] & jnp.uint32(0xFFFF)).astype(dtype) + 0.5) * (2.0 ** -16)
    use = u < triadic
    flip = ((words[0] >> 30) & 1) == 1
    k = jnp.where(flip, tie[1], tie[0])
    out = state.lists[k, _scaled(words[3], jnp.maximum(state.degree[k], 1)), 0]
    if state.in_lists is None:
        i, j = jnp.where(flip, tie[0], tie[1]), out
    else:
        into = state.in_lists[k, _scaled(words[3], jnp.maximum(state.in_degree[k], 1)), 0]
        i, j = jnp.where(flip, tie[0], into), jnp.where(flip, out, tie[1])
    return use, i, j, use & ((m == 0) | (j == i) | (i < 0) | (j < 0))


def _proposal(state, words, theta, change_fn, ratio_weight, live=True, triadic=0.0):
    """One proposal and its MH accept / reject, one chain: TNT, or with probability
    ``triadic`` (a static float) a triadic one (:func:`_triad`). ``words`` (5,)
    uint32: tie-or-dyad (and the triadic choice and orientation), edge position, the
    dyad's two nodes (the triadic neighbour), the acceptance uniform; ``live`` False:
    rejected whatever it is (the padding of a block). ``ratio_weight`` multiplies the log
    proposal ratio: 1 (the tests use 0 to check that a missing ratio shows)."""
    n, D = state.lists.shape[0], state.lists.shape[1]
    directed = state.in_lists is not None
    num_dyads = n * (n - 1) if directed else n * (n - 1) // 2
    dtype = state.statistics.dtype
    m = state.num_edges
    use_tie = ((words[0] >> 31) == 1) & (m > 0)
    # a uniform tie, and the last edge of the list (moved if a tie is removed)
    ends = state.edges[jnp.stack([_scaled(words[1], jnp.maximum(m, 1)),
                                  jnp.maximum(m - 1, 0)])]
    first = _scaled(words[2], n)
    second = _scaled(words[3], n - 1)
    second = second + (second >= first)  # uniform over the n(n−1) pairs without i == j
    i = jnp.where(use_tie, ends[0, 0], first)
    j = jnp.where(use_tie, ends[0, 1], second)
    if triadic:
        use_triad, ti, tj, null = _triad(state, words, ends[0], m, triadic)
        i, j = jnp.where(use_triad, ti, i), jnp.where(use_triad, tj, j)
        live = live & ~null
        i = jnp.where(null, 0, i)  # any valid dyad: the proposal is refused
        j = jnp.where(null, 1, j)
    a, b = ends[1, 0], ends[1, 1]

    rows = gather_rows(state, i, j, a, b)
    view = view_of(state, rows, i, j)
    on = view.value > 0
    delta = jnp.asarray(change_fn(view), dtype)
    if delta.shape != state.statistics.shape:
        raise ValueError(f"change_fn must return the {state.statistics.shape[0]} change "
                         f"statistics of the dyad as shape {state.statistics.shape} (one "
                         f"per entry of statistics0), got shape {delta.shape}")
    sign = 1 - 2 * view.value
    rate = triadic_rate(state, rows, view.value) if triadic else 0.0
    log_accept = log_acceptance(sign, theta, delta, m, view.value, num_dyads, triadic, rate,
                                ratio_weight)
    # uniform in (0, 1) from the top 24 bits of the last word
    u = ((words[4] >> 8).astype(dtype) + 0.5) * (2.0 ** -24)
    accept = (jnp.log(u) < log_accept) & live
    if directed:
        full = (~on) & ((rows["degree"][0] >= D) | (rows["in_degree"][1] >= D))
    else:
        full = (~on) & jnp.any(rows["degree"] >= D)
    overflow = state.overflow | (accept & full)
    accept = accept & ~full
    writes, num_edges = toggle_writes(state, rows, i, j, a, b, accept & ~on, accept & on)
    statistics = state.statistics + jnp.where(accept, sign * delta, 0)
    state = apply_writes(state, writes, num_edges)
    return state._replace(statistics=statistics, overflow=overflow), accept


def _seed(rng_key, first_chain, num_chains):
    """The 128-bit states of XLA's Philox generator (``lax.rng_bit_generator``), one per
    chain: chain c's from ``fold_in(rng_key, first_chain + c)`` (its key words twice), so
    that a chain's random numbers do not depend on the other chains and chains split
    into groups (``first_chain`` their offset) sample as they would in one call."""
    def one(c):
        words = jax.random.fold_in(rng_key, c).astype(jnp.uint32)
        return jnp.concatenate([words, words])[:4]

    return jax.vmap(one)(first_chain + jnp.arange(num_chains, dtype=jnp.int32))


def _advance(rng, state, theta, change_fn, num_proposals, ratio_weight, triadic=0.0):
    """``num_proposals`` proposals of every chain of ``state``: (rng, state, accepted
    (C,)), ``rng`` the chains' generator states (C, 4) (:func:`_seed`). Each chain's
    random words are drawn a block of :data:`_BLOCK` proposals at a time by XLA's Philox
    generator (threefry compiles far slower on CPU); the last block is shortened so no
    proposal is wasted (all blocks have one size)."""
    C = state.num_edges.shape[0]
    num_blocks = -(-num_proposals // _BLOCK)
    size = -(-num_proposals // num_blocks)
    spare = num_blocks * size - num_proposals  # < num_blocks proposals to skip
    theta_axis = 0 if theta.ndim == 2 else None

    def chain(state, words, theta, active):
        def body(state, xs):
            w, live = xs
            return _proposal(state, w, theta, change_fn, ratio_weight, live, triadic)

        state, accepted = jax.lax.scan(body, state, (words, active))
        return state, jnp.sum(accepted, dtype=jnp.int32)

    def block(carry, index):
        rng, state, accepted = carry
        # lax.map, not vmap: rng_bit_generator's batching rule draws every row from
        # the first state
        rng, words = jax.lax.map(lambda r: jax.lax.rng_bit_generator(
            r, (size, 5), jnp.uint32, algorithm=jax.lax.RandomAlgorithm.RNG_PHILOX), rng)
        active = index * size + jnp.arange(size) < num_proposals if spare else \
            jnp.ones(size, bool)
        state, acc = jax.vmap(chain, in_axes=(0, 0, theta_axis, None))(state, words,
                                                                        theta, active)
        return (rng, state, accepted + acc), None

    carry = (rng, state, jnp.zeros(C, jnp.int32))
    if num_blocks == 1:
        return block(carry, 0)[0]
    return jax.lax.scan(block, carry, jnp.arange(num_blocks))[0]


def _mh_chains(rng_key, state, theta, change_fn, num_proposals, ratio_weight,
               triadic=0.0, first_chain=0):
    rng = _seed(rng_key, first_chain, state.num_edges.shape[0])
    _, state, accepted = _advance(rng, state, theta, change_fn, num_proposals,
                                  ratio_weight, triadic)
    return state, {"acceptance_rate": accepted / num_proposals}


_mh_jit = jax.jit(_mh_chains, static_argnames=("change_fn", "num_proposals", "triadic"))


def _simulate_chains(rng_key, state, theta, change_fn, num_samples, interval,
                     ratio_weight, triadic=0.0, first_chain=0):
    def one(carry, _):
        rng, state = carry
        rng, state, _ = _advance(rng, state, theta, change_fn, interval, ratio_weight,
                                 triadic)
        return (rng, state), state.statistics

    rng = _seed(rng_key, first_chain, state.num_edges.shape[0])
    (_, state), stats = jax.lax.scan(one, (rng, state), None, length=num_samples)
    return state, jnp.swapaxes(stats, 0, 1)


_simulate_jit = jax.jit(_simulate_chains,
                        static_argnames=("change_fn", "num_samples", "interval", "triadic"))


# --- public functions ----------------------------------------------------------------


def _check_run(owner, state, theta):
    if not isinstance(state, NetworkChains):
        raise TypeError(f"{owner}: state must be a NetworkChains (init_network_chains), "
                        f"got {type(state).__name__}")
    theta = jnp.asarray(theta, state.statistics.dtype)
    k = state.statistics.shape[-1]
    if theta.shape not in ((k,), (state.num_chains, k)):
        raise ValueError(f"{owner}: theta must have shape ({k},) or ({state.num_chains}, "
                         f"{k}) (one value per statistic), got {theta.shape}")
    return theta


def network_mh_step(rng_key, state: NetworkChains, theta: ArrayLike,
                    change_fn: Callable, num_proposals: int,
                    triadic: float = 0.0, *,
                    first_chain: int = 0) -> tuple[NetworkChains, dict]:
    """``num_proposals`` TNT Metropolis–Hastings proposals on every chain (with
    probability ``triadic`` each, a triadic proposal instead).

    Parameters
    ----------
    rng_key : PRNG key
    state : NetworkChains
    theta : array (k,) or (num_chains, k)
        Natural parameters (one row per chain, or shared).
    change_fn : callable
        ``change_fn(view) -> (k,)``: Δs of one dyad from an
        :class:`~numpyro_ugm.network.sampling.views.UndirectedDyadView` or
        :class:`~numpyro_ugm.network.sampling.views.DirectedDyadView`. Static: the same
        object reuses the compiled step.
    num_proposals : int
    triadic : float
        Probability of a triadic proposal: a uniform tie (k, i) and a uniform neighbour
        j of k, toggling (i, j), which closes or opens the triangle i − k − j (directed:
        the tie is i → k or k → j of a two-path i → k → j, toggling i → j). The MH ratio
        uses the mixture's probability of the dyad, (1 − triadic) q_TNT + triadic
        Σ_{k ∈ N(i)∩N(j)} 1/(m d_k) (directed: the mean of 1/outdeg k and 1/indeg k over
        the two-paths), in both directions. Terms that count triangles or shared
        partners (gwesp) mix far faster with it in sparse networks, where a TNT dyad
        almost never has one.
    first_chain : int
        Index of the first chain of ``state``: chain c draws its random numbers from
        ``fold_in(rng_key, first_chain + c)`` alone, so chains split into groups (run on
        several threads or devices) move exactly as they would in one call.

    Returns
    -------
    (NetworkChains, dict)
        The new state and ``{"acceptance_rate": (num_chains,)}``.

    Raises
    ------
    ValueError
        If a chain overflowed its ``max_degree`` (outside ``jit``; see
        :func:`~numpyro_ugm.network.sampling.chains.check_overflow`).
    """
    count = check_count("network_mh_step", "num_proposals", num_proposals)
    theta = _check_run("network_mh_step", state, theta)
    triadic = check_triadic("network_mh_step", triadic)
    offset = check_count("network_mh_step", "first_chain", first_chain, minimum=0)
    state, info = _mh_jit(as_key(rng_key, "network_mh_step"), state, theta, change_fn,
                          count, 1.0, triadic, jnp.int32(offset))
    check_overflow(state)
    return state, info


def simulate_statistics(rng_key, state: NetworkChains, theta: ArrayLike,
                        change_fn: Callable, num_samples: int, interval: int,
                        triadic: float = 0.0, *,
                        first_chain: int = 0) -> tuple[NetworkChains, jax.Array]:
    """Statistics of every chain after each of ``num_samples`` runs of ``interval``
    proposals (one ``lax.scan``; burn in with :func:`network_mh_step`).

    Parameters
    ----------
    rng_key : PRNG key
    state : NetworkChains
    theta : array (k,) or (num_chains, k)
    change_fn : callable
        As in :func:`network_mh_step` (static).
    num_samples : int
        Statistics recorded per chain.
    interval : int
        Proposals per chain between records (ergm's ``MCMC.interval``).
    triadic, first_chain
        As in :func:`network_mh_step`.

    Returns
    -------
    (NetworkChains, jax.Array (num_chains, num_samples, k))
        The final state and the running statistics s(y) after each interval.

    Raises
    ------
    ValueError
        If a chain overflowed its ``max_degree`` (outside ``jit``).
    """
    samples = check_count("simulate_statistics", "num_samples", num_samples)
    steps = check_count("simulate_statistics", "interval", interval)
    theta = _check_run("simulate_statistics", state, theta)
    triadic = check_triadic("simulate_statistics", triadic)
    offset = check_count("simulate_statistics", "first_chain", first_chain, minimum=0)
    state, stats = _simulate_jit(as_key(rng_key, "simulate_statistics"), state, theta,
                                 change_fn, samples, steps, 1.0, triadic, jnp.int32(offset))
    check_overflow(state)
    return state, stats
