"""The sparse TNT sampler of :mod:`~numpyro_ugm.network.sampling.tnt` compiled to
machine code with numba, for models whose terms are all built in: the same proposals
(tie / no tie, triadic), the same Metropolis–Hastings ratio, the same change
statistics, one chain after another in a plain loop.

Why a second implementation. XLA runs the JAX sampler's step as some forty kernels
with gathers and scatters between them, a fixed cost per proposal whatever the number
of chains; here one proposal is a few hundred instructions, on a par per core with
ergmx's Rust sampler (measured: ``benchmarks/results/ergm_statnet.md``). The JAX
sampler stays for terms users write themselves (a ``change_fn`` of a view) and under
``jit``.

The terms reach this module as data, packed by
:func:`~numpyro_ugm.network.terms.compiled.native_program`, whose change
statistics :mod:`~numpyro_ugm.network.terms.compiled` computes. What the two samplers
share is written once where it can be and paired by name where it cannot: the
proposal probabilities and the ratio (:mod:`~numpyro_ugm.network.sampling.proposals`,
numba and JAX side by side, checked pair by pair); the triadic rate and the toggle of a
tie are written inline in the kernel, paired by comments with
:func:`~numpyro_ugm.network.sampling.proposals.triadic_rate` and
:func:`~numpyro_ugm.network.sampling.chains.toggle_writes`: as functions of their own
(numba-inlined or not) they cost proposals per second (measured:
``benchmarks/results/ergm_statnet.md``). test_chains.py checks the kernel's toggles against the JAX ones one
proposal at a time; the triadic rate is checked by the distribution tests.

Random numbers: xoshiro256** per chain, seeded from the JAX key and the chain's index
(``first_chain + c``), so that chains split into groups sample as in one call and a key
gives the same draws on every run (not the JAX sampler's draws).
"""

import jax
import numpy as np

from ...runtime.checks import check_count
from ..terms.compiled import NativeProgram, check_state, directed_arrays, dyad_change
from ..terms.lists import append, find_slot, inline, jit, mark, remove, retag
from .chains import NetworkChains
from .proposals import check_triadic, compiled_acceptance

__all__ = ["native_run", "seed_chains"]


def seed_chains(key_words, first_chain: int, num_chains: int) -> np.ndarray:
    """xoshiro256** states (C, 4) uint64 of chains ``first_chain`` … from the two 32-bit
    words of a JAX key (splitmix64 of the key and the chain index)."""
    base = (int(key_words[0]) << 32) | int(key_words[1])
    out = np.zeros((num_chains, 4), np.uint64)
    mask = (1 << 64) - 1
    for c in range(num_chains):
        x = (base ^ (0x9E3779B97F4A7C15 * (first_chain + c + 1))) & mask
        for w in range(4):
            x = (x + 0x9E3779B97F4A7C15) & mask
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
            out[c, w] = z ^ (z >> 31)
    return out


# --- the kernel ------------------------------------------------------------------------


@jit
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@jit
def _step(s0, s1, s2, s3):
    """One step of xoshiro256** with state (s0, s1, s2, s3): (64-bit word, new state)."""
    result = _rotl(s1 * np.uint64(5), 7) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return result, s0, s1, s2, s3


@jit
def _below(word, count):
    """A uniform integer in [0, count) from the top 32 bits of a 64-bit word."""
    return np.int64(((word >> np.uint64(32)) * np.uint64(count)) >> np.uint64(32))


@jit
def _uniform(word):
    """A uniform float in (0, 1) from the top 53 bits."""
    return (np.float64(word >> np.uint64(11)) + 0.5) * (1.0 / 9007199254740992.0)


@jit
def _neighbour(lists, degree, c, k, word):
    """A uniform neighbour of k (from a 64-bit word), or -1 if k has none."""
    if degree[c, k] == 0:
        return -1
    return lists[c, k, _below(word, degree[c, k]), 0]


@inline
def _triad(lists, degree, in_lists, in_degree, edges, c, m, directed, w0, w1, w2):
    """A triadic proposal (i, j, null): a uniform tie (``w1``) k − i in a random
    orientation (bit 0 of ``w0``) and a uniform neighbour j of k (``w2``); directed: the
    tie is i -> k and j an out-neighbour of k, or k -> j and i an in-neighbour of k.
    ``null`` (no tie, no such neighbour, j = i): a proposal of nothing, rejected."""
    if m == 0:
        return 0, 0, True
    e = _below(w1, m)
    flip = (w0 & np.uint64(1)) == np.uint64(1)
    if directed and not flip:
        k, j = edges[c, e, 0], edges[c, e, 1]
        i = _neighbour(in_lists, in_degree, c, k, w2)
    else:
        i, k = (edges[c, e, 0], edges[c, e, 1]) if flip else (edges[c, e, 1], edges[c, e, 0])
        j = _neighbour(lists, degree, c, k, w2)
    return i, j, i < 0 or j < 0 or i == j


@jit
def _run(lists, degree, in_lists, in_degree, edges, num_edges,
         statistics, rng, directed, theta, add_u, add_v, tab_codes, tab_values, tab_cols,
         abs_values, abs_power, abs_cols, mat_values, mat_cols, ops, op_cols, op_ints,
         powers, burnin, num_draws, interval, triadic, ratio_weight, out):
    """``burnin`` proposals, then ``num_draws`` × ``interval`` with the statistics
    recorded into ``out`` (C, num_draws, k) after each interval, for every chain in
    turn. Returns (accepted (C,), the first chain that needed more than D neighbours
    or -1). Longer than 80 lines on purpose: the triadic rate and the toggle inline
    (see the module docstring for what splitting them cost)."""
    C, n, D = lists.shape[0], lists.shape[1], lists.shape[2]
    k = statistics.shape[1]
    N = n * (n - 1) if directed else n * (n - 1) // 2
    accepted = np.zeros(C, np.int64)
    marks_a, marks_b, marks_c = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(
        n, np.int64)
    delta = np.zeros(k)
    stamp = 0
    total = burnin + num_draws * interval
    # the lists that hold each tie's second end: in-lists, or the same lists undirected
    back, back_degree = (in_lists, in_degree) if directed else (lists, degree)
    for c in range(C):
        r0, r1, r2, r3 = rng[c, 0], rng[c, 1], rng[c, 2], rng[c, 3]
        record, draw = burnin + interval, 0
        th = theta[c]
        for step in range(total):
            m = num_edges[c]
            w0, r0, r1, r2, r3 = _step(r0, r1, r2, r3)
            w1, r0, r1, r2, r3 = _step(r0, r1, r2, r3)
            w2, r0, r1, r2, r3 = _step(r0, r1, r2, r3)
            null = False
            if triadic > 0.0 and _uniform(w0) < triadic:
                i, j, null = _triad(lists, degree, in_lists, in_degree, edges, c, m,
                                    directed, w0, w1, w2)
            elif ((w0 >> np.uint64(1)) & np.uint64(1)) == np.uint64(1) and m > 0:
                e = _below(w1, m)
                i, j = edges[c, e, 0], edges[c, e, 1]
            else:
                i = _below(w1, n)
                j = _below(w2, n - 1)
                if j >= i:
                    j += 1
            w3, r0, r1, r2, r3 = _step(r0, r1, r2, r3)
            u = _uniform(w3)
            if not null:
                if not directed and degree[c, i] > degree[c, j]:
                    i, j = j, i  # scan the shorter list; (i, j) is the same pair
                slot_i = find_slot(lists, c, i, degree[c, i], j)
                value = 1 if slot_i >= 0 else 0
                stamp += 1
                marked_i = dyad_change(
                    lists, degree, in_lists, in_degree, directed, add_u, add_v, tab_codes,
                    tab_values, tab_cols, abs_values, abs_power, abs_cols, mat_values,
                    mat_cols, ops, op_cols, op_ints, powers, c, i, j, value, marks_a,
                    marks_b, marks_c, stamp, delta)
                sign = 1.0 - 2.0 * value
                log_accept = 0.0
                for col in range(k):
                    log_accept += th[col] * delta[col]
                log_accept *= sign
                # the triadic rate: the numba pair of proposals.triadic_rate, written here
                # (a function of its own cost 8 % of the proposals per second with
                # triadic = 0.5, measured: see the module docstring)
                rate = 0.0
                if triadic > 0.0:
                    if directed:  # k ∈ out(i) ∩ in(j): (1/outdeg k + 1/indeg k) / 2
                        stamp += 1
                        mark(lists, c, i, degree[c, i], marks_a, stamp)
                        for t in range(in_degree[c, j]):
                            kk = in_lists[c, j, t, 0]
                            if marks_a[kk] == stamp:
                                rate += 0.5 * (1.0 / degree[c, kk] + 1.0 / in_degree[c, kk])
                    else:  # k ∈ N(i) ∩ N(j): 1 / d_k
                        if not marked_i:
                            mark(lists, c, i, degree[c, i], marks_a, stamp)
                        for t in range(degree[c, j]):
                            kk = lists[c, j, t, 0]
                            if marks_a[kk] == stamp:
                                rate += 1.0 / degree[c, kk]
                # the TNT ratio (proposals.py; the JAX pair: proposals.log_acceptance)
                if u < compiled_acceptance(log_accept, m, value, N, triadic, rate,
                                           ratio_weight):
                    # the toggle: the numba pair of chains.toggle_writes, written here (a
                    # function of its own cost 4 %; test_chains.py checks the two alike)
                    if value == 0:
                        if degree[c, i] >= D or back_degree[c, j] >= D:
                            return accepted, c
                        e = m
                        edges[c, e, 0], edges[c, e, 1] = i, j
                        append(lists, degree, c, i, j, e)
                        append(back, back_degree, c, j, i, e)
                        num_edges[c] = m + 1
                    else:
                        e = lists[c, i, slot_i, 1]
                        remove(lists, degree, c, i, slot_i)
                        remove(back, back_degree, c, j,
                                find_slot(back, c, j, back_degree[c, j], i))
                        last = m - 1
                        if e != last:  # the last edge moves into position e
                            a, b = edges[c, last, 0], edges[c, last, 1]
                            edges[c, e, 0], edges[c, e, 1] = a, b
                            retag(lists, degree, c, a, b, e)
                            retag(back, back_degree, c, b, a, e)
                        num_edges[c] = last
                    for col in range(k):
                        statistics[c, col] += sign * delta[col]
                    accepted[c] += 1
            if step + 1 == record:  # the end of an interval
                for col in range(k):
                    out[c, draw, col] = statistics[c, col]
                draw += 1
                record += interval
    return accepted, -1


def native_run(state: NetworkChains, program: NativeProgram, theta, key_words,
               first_chain: int, burnin: int, num_draws: int, interval: int,
               triadic: float, ratio_weight: float = 1.0):
    """Run the chains of ``state`` (from
    :func:`~numpyro_ugm.network.terms.compiled.native_chains`; not changed: the
    kernel works on a copy): ``burnin`` proposals, then ``num_draws`` draws
    ``interval`` proposals apart, at ``theta`` (k,) or (C, k), with a share ``triadic``
    of triadic proposals; chain c's generator seeded from ``key_words`` (two 32-bit
    words) and ``first_chain + c``; ``ratio_weight`` multiplies the log proposal ratio
    (1; the tests use 0 to show that a missing ratio is seen). Returns (new state,
    statistics (C, num_draws, k), acceptance rate (C,), the first chain that needed
    more than D neighbours or -1: that chain stopped there, the others may not have
    run)."""
    owner = "native_run"
    C = check_state(owner, state, program)
    theta = np.asarray(theta, np.float64)
    if theta.shape not in ((program.k,), (C, program.k)) or not np.all(np.isfinite(theta)):
        raise ValueError(f"{owner}: theta must be finite, of shape ({program.k},) or "
                         f"({C}, {program.k}), got {theta.shape}: {theta}")
    words = np.asarray(key_words)
    if words.shape != (2,) or not np.issubdtype(words.dtype, np.integer):
        raise ValueError(f"{owner}: key_words must be two integers (a JAX key's words), "
                         f"got {key_words!r}")
    first_chain = check_count(owner, "first_chain", first_chain, minimum=0)
    burnin = check_count(owner, "burnin", burnin, minimum=0)
    num_draws = check_count(owner, "num_draws", num_draws, minimum=0)
    interval = check_count(owner, "interval", interval)
    triadic = check_triadic(owner, triadic)
    state = jax.tree.map(np.array, state)
    theta = np.ascontiguousarray(np.broadcast_to(theta, (C, program.k)))
    rng = seed_chains(words, first_chain, C)
    out = np.zeros((C, num_draws, program.k))
    in_lists, in_degree = directed_arrays(state)
    accepted, overflow = _run(
        state.lists, state.degree, in_lists, in_degree, state.edges, state.num_edges,
        state.statistics, rng, state.in_lists is not None, theta, *program[1:], burnin,
        num_draws, interval, triadic, float(ratio_weight), out)
    total = burnin + num_draws * interval
    return state, out, accepted / max(total, 1), int(overflow)


