"""The sparse TNT sampler of :mod:`~numpyro_ugm.models.network_sampler` compiled to
machine code with numba, for models whose terms are all built in: the same proposals
(tie / no tie, triadic), the same Metropolis–Hastings ratio, the same change
statistics, one chain after another in a plain loop.

Why a second implementation. XLA runs the JAX sampler's step as ~40 kernels with
gathers and scatters between them: 1.4–3 µs per proposal per core, whatever the number
of chains (measured: faux.mesa.high, edges + nodematch + gwesp, 4 and 16 chains alike),
against ~0.3 µs for ergmx's Rust sampler. Here one proposal is a few hundred
instructions (0.2–0.35 µs: on a par with ergmx per core); shared partners are counted
with stamp marks (O(D) per set, O(D²) for gwesp's partner sums), the gw terms' powers
read from a table. The JAX sampler stays for terms users write themselves (a
``change_fn`` of a view) and under ``jit``. The kernel also gives the statistics of a
network and the change statistics of any dyads (:func:`native_statistics`,
:func:`native_design`: the MPLE's design).

The terms reach this module as data (:attr:`~numpyro_ugm.models.graph_terms.Term.native`):
dyad-independent terms as one of four forms of their covariate x(i, j) (node sums
U[i] + V[j], a table over two node codes, abs(a_i − a_j)^p, a dyadic matrix), which the
JAX side evaluates too (:mod:`~numpyro_ugm.models.graph_covariates`); structural terms
as an operation code and its parameters, whose change statistic is written here a
second time (the tests check each against the dense change statistics on every dyad of
random networks).

Random numbers: xoshiro256** per chain, seeded from the JAX key and the chain's index
(``first_chain + c``), so that chains split into groups sample as in one call and a key
gives the same draws on every run (not the JAX sampler's draws).
"""

import math
from typing import NamedTuple

import jax
import numpy as np

from .network_chains import NetworkChains

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; kept for clarity
    numba = None

__all__ = ["native_program", "native_chains", "native_run", "native_design",
           "native_statistics", "available"]

# --- the structural terms' operation codes ---------------------------------------------

OPS = {name: code for code, name in enumerate((
    "kstar", "triangle", "isolates", "degree", "gwesp", "gwdegree",           # undirected
    "mutual", "istar", "ostar", "ttriple", "ctriple", "idegree", "odegree",  # directed
    "gwidegree", "gwodegree", "isolates_directed", "gwesp_otp"))}

#: the most values a ``degree(d)`` term may count in the native sampler
MAX_PARAMS = 16


def available() -> bool:
    """Whether numba is importable (else the JAX sampler runs every model)."""
    return numba is not None


class NativeProgram(NamedTuple):
    """The terms of a model as arrays for the kernel (k statistics in all)."""

    k: int
    add_u: np.ndarray      # (n, k) float64: Δs += add_u[i] + add_v[j]
    add_v: np.ndarray
    tab_codes: np.ndarray  # (P, n) int32
    tab_values: np.ndarray  # (P, L, L, T) float64
    tab_cols: np.ndarray   # (P, T) int32, -1 unused
    abs_values: np.ndarray  # (A, n) float64
    abs_power: np.ndarray  # (A,) float64
    abs_cols: np.ndarray   # (A,) int32
    mat_values: np.ndarray  # (E, n, n) float64
    mat_cols: np.ndarray   # (E,) int32
    ops: np.ndarray        # (S,) int32
    op_cols: np.ndarray    # (S,) int32: first column
    op_ints: np.ndarray    # (S, MAX_PARAMS + 1) int32: count, then values
    powers: np.ndarray     # (S, n + 1) float64: r^t of the op's decay r (gw terms)


def native_program(terms, num_nodes: int) -> NativeProgram | None:
    """The terms as a :class:`NativeProgram`, or None if one of them has no native form
    (a term a user built) or numba is missing."""
    if not available() or any(getattr(t, "native", None) is None for t in terms):
        return None
    n = int(num_nodes)
    k = sum(t.size for t in terms)
    add_u, add_v = np.zeros((n, k)), np.zeros((n, k))
    tables, absdiffs, matrices, ops = [], [], [], []
    col = 0
    for t in terms:
        kind, *args = t.native
        cols = np.arange(col, col + t.size, dtype=np.int32)
        if kind == "add":
            u, v = (np.asarray(a, float).reshape(n, t.size) for a in args)
            add_u[:, cols], add_v[:, cols] = u, v
        elif kind == "table":
            codes, values = args
            tables.append((np.asarray(codes, np.int32), np.asarray(values, float), cols))
        elif kind == "absdiff":
            absdiffs.append((np.asarray(args[0], float), float(args[1]), col))
        elif kind == "matrix":
            matrices.append((np.asarray(args[0], float), col))
        elif kind in OPS:
            ints = [int(x) for x in (args[0] if args else ())]
            if len(ints) > MAX_PARAMS:
                return None
            real = float(args[1]) if len(args) > 1 else 0.0
            ops.append((OPS[kind], col, ints, real))
        else:
            raise ValueError(f"network_native: unknown native form {kind!r} of term "
                             f"{t.names}")
        col += t.size
    L = max([v.shape[0] for _, v, _ in tables] + [1])
    T = max([len(c) for _, _, c in tables] + [1])
    tab_values = np.zeros((len(tables), L, L, T))
    tab_cols = np.full((len(tables), T), -1, np.int32)
    for p, (_, values, cols) in enumerate(tables):
        shape = values.shape
        tab_values[p, :shape[0], :shape[1], :len(cols)] = values.reshape(
            shape[0], shape[1], len(cols))
        tab_cols[p, :len(cols)] = cols
    op_ints = np.zeros((len(ops), MAX_PARAMS + 1), np.int32)
    for s, (_, _, ints, _) in enumerate(ops):
        op_ints[s, 0] = len(ints)
        op_ints[s, 1:1 + len(ints)] = ints
    return NativeProgram(
        k, add_u, add_v,
        np.asarray([c for c, _, _ in tables], np.int32).reshape(len(tables), n),
        tab_values, tab_cols,
        np.asarray([a for a, _, _ in absdiffs], float).reshape(len(absdiffs), n),
        np.asarray([p for _, p, _ in absdiffs], float),
        np.asarray([c for _, _, c in absdiffs], np.int32),
        np.asarray([m for m, _ in matrices], float).reshape(len(matrices), n, n),
        np.asarray([c for _, c in matrices], np.int32),
        np.asarray([o for o, _, _, _ in ops], np.int32),
        np.asarray([c for _, c, _, _ in ops], np.int32), op_ints,
        np.asarray([r ** np.arange(n + 1.0) for _, _, _, r in ops], float).reshape(
            len(ops), n + 1))


# --- the chains' state -----------------------------------------------------------------


def native_chains(state: NetworkChains) -> NetworkChains:
    """``state`` as writable numpy arrays for the kernel (running statistics in float64,
    directed placeholders (C, 1, 1, 2) for undirected networks); the kernel changes
    them in place, so each run works on a copy (:func:`native_run`)."""
    if state.bits is not None:
        state = state._replace(bits=None, in_bits=None)
    out = jax.tree.map(lambda x: np.array(x), state)
    out = out._replace(statistics=out.statistics.astype(np.float64))
    return out


def _directed_arrays(state):
    """(in_lists, in_degree) of a directed state, placeholders of an undirected one."""
    if state.in_lists is not None:
        return state.in_lists, state.in_degree
    C = state.lists.shape[0]
    return np.full((C, 1, 1, 2), -1, np.int32), np.zeros((C, 1), np.int32)


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

if numba is not None:
    # small helpers are inlined by LLVM; numba inlines (``_inline``) the functions that
    # take the model's ~20 arrays, whose calls made the kernel 2-2.5 times slower
    # (numba-level inlining of the small ones too doubled the compile time, 18 s -> 9 s
    # for the kernel without it, at the same speed)
    _jit = numba.njit(cache=True, nogil=True)
    _inline = numba.njit(cache=True, nogil=True, inline="always")
else:  # pragma: no cover
    def _jit(f):
        return f
    _inline = _jit


@_jit
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@_jit
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


@_jit
def _below(word, count):
    """A uniform integer in [0, count) from the top 32 bits of a 64-bit word."""
    return np.int64(((word >> np.uint64(32)) * np.uint64(count)) >> np.uint64(32))


@_jit
def _uniform(word):
    """A uniform float in (0, 1) from the top 53 bits."""
    return (np.float64(word >> np.uint64(11)) + 0.5) * (1.0 / 9007199254740992.0)


@_jit
def _slot(lists, c, i, degree_i, j):
    """Slot of j in i's list, or -1."""
    for s in range(degree_i):
        if lists[c, i, s, 0] == j:
            return s
    return -1


@_jit
def _mark(lists, c, i, degree_i, marks, stamp):
    for s in range(degree_i):
        marks[lists[c, i, s, 0]] = stamp


@_jit
def _count(lists, c, i, degree_i, marks, stamp):
    """#{x in i's list: marks[x] == stamp}."""
    total = 0
    for s in range(degree_i):
        if marks[lists[c, i, s, 0]] == stamp:
            total += 1
    return total


@_jit
def _binomial(x, k):
    """C(x, k) for integers x ≥ 0."""
    if x < k:
        return 0.0
    out = 1.0
    for t in range(k):
        out = out * (x - t) / (t + 1)
    return np.float64(np.round(out))


@_inline
def _dyadic(prog_u, prog_v, tab_codes, tab_values, tab_cols, abs_values, abs_power,
            abs_cols, mat_values, mat_cols, i, j, delta):
    """The dyad-independent terms' covariates x(i, j) into ``delta``."""
    for col in range(delta.shape[0]):
        delta[col] = prog_u[i, col] + prog_v[j, col]
    for p in range(tab_codes.shape[0]):
        a, b = tab_codes[p, i], tab_codes[p, j]
        for t in range(tab_cols.shape[1]):
            if tab_cols[p, t] >= 0:
                delta[tab_cols[p, t]] += tab_values[p, a, b, t]
    for p in range(abs_values.shape[0]):
        delta[abs_cols[p]] += abs(abs_values[p, i] - abs_values[p, j]) ** abs_power[p]
    for p in range(mat_values.shape[0]):
        delta[mat_cols[p]] += mat_values[p, i, j]


@_inline
def _undirected_change(ops, op_cols, op_ints, powers, lists, degree, c, i, j, value,
                       marks_i, marks_j, stamp, delta):
    """The structural terms' Δs of the undirected pair (i, j), counts with the pair off,
    set in their columns of ``delta`` (where :func:`_dyadic` left 0). Returns whether
    N(i) was marked with ``stamp`` in ``marks_i``."""
    d_i = degree[c, i] - value
    d_j = degree[c, j] - value
    shared = -1
    marked_j = False
    for s in range(ops.shape[0]):
        op, col = ops[s], op_cols[s]
        if op == 0:  # kstar(k): C(d_i, k-1) + C(d_j, k-1)
            k = op_ints[s, 1]
            delta[col] = _binomial(d_i, k - 1) + _binomial(d_j, k - 1)
        elif op == 1 or op == 4:  # triangle / gwesp: shared partners
            if shared < 0:
                _mark(lists, c, i, degree[c, i], marks_i, stamp)
                shared = _count(lists, c, j, degree[c, j], marks_i, stamp)
            if op == 1:
                delta[col] = shared
            else:
                # e^α (1 − r^s), e^α = 1/(1 − r); powers[s, t] = r^t
                total = (1.0 - powers[s, shared]) / (1.0 - powers[s, 1])
                if shared > 0:
                    if not marked_j:
                        _mark(lists, c, j, degree[c, j], marks_j, stamp)
                        marked_j = True
                    for t in range(degree[c, j]):
                        k = lists[c, j, t, 0]
                        if marks_i[k] == stamp:  # a common neighbour of i and j
                            sp_i = -value
                            sp_j = -value
                            for x in range(degree[c, k]):
                                y = lists[c, k, x, 0]
                                sp_i += marks_i[y] == stamp
                                sp_j += marks_j[y] == stamp
                            total += powers[s, sp_i] + powers[s, sp_j]
                delta[col] = total
        elif op == 2:  # isolates
            delta[col] = -((d_i == 0) * 1.0 + (d_j == 0) * 1.0)
        elif op == 3:  # degree(d...)
            for t in range(op_ints[s, 0]):
                d = op_ints[s, 1 + t]
                delta[col + t] = ((d_i + 1 == d) * 1.0 - (d_i == d) * 1.0
                                  + (d_j + 1 == d) * 1.0 - (d_j == d) * 1.0)
        elif op == 5:  # gwdegree: r^d_i + r^d_j
            delta[col] = powers[s, d_i] + powers[s, d_j]
    return shared >= 0


@_inline
def _directed_change(ops, op_cols, op_ints, powers, lists, degree, in_lists,
                     in_degree, c, i, j, value, reverse, marks_a, marks_b, marks_c, stamp,
                     delta):
    """The structural terms' Δs of the tie i -> j, counts with the tie off, set in their
    columns of ``delta``. Marks: a = out(i), b = in(j), c = in(i), each made when first
    needed."""
    out_i = degree[c, i] - value
    in_i = in_degree[c, i]
    out_j = degree[c, j]
    in_j = in_degree[c, j] - value
    marked_a = marked_b = marked_c = False
    for s in range(ops.shape[0]):
        op, col = ops[s], op_cols[s]
        if op == 6:  # mutual
            delta[col] = reverse
        elif op == 7:  # istar(k)
            delta[col] = _binomial(in_j, op_ints[s, 1] - 1)
        elif op == 8:  # ostar(k)
            delta[col] = _binomial(out_i, op_ints[s, 1] - 1)
        elif op == 9 or op == 10 or op == 16:
            if not marked_a:
                _mark(lists, c, i, degree[c, i], marks_a, stamp)
                marked_a = True
            if op == 9:  # ttriple: shared out + shared in + two-paths
                if not marked_c:
                    _mark(in_lists, c, i, in_degree[c, i], marks_c, stamp)
                    marked_c = True
                delta[col] = (_count(lists, c, j, degree[c, j], marks_a, stamp)
                              + _count(in_lists, c, j, in_degree[c, j], marks_c, stamp)
                              + _count(in_lists, c, j, in_degree[c, j], marks_a, stamp))
            elif op == 10:  # ctriple: cycles #(in(i) ∩ out(j))
                if not marked_c:
                    _mark(in_lists, c, i, in_degree[c, i], marks_c, stamp)
                    marked_c = True
                delta[col] = _count(lists, c, j, degree[c, j], marks_c, stamp)
            else:  # gwesp OTP
                if not marked_b:
                    _mark(in_lists, c, j, in_degree[c, j], marks_b, stamp)
                    marked_b = True
                two_paths = _count(in_lists, c, j, in_degree[c, j], marks_a, stamp)
                total = (1.0 - powers[s, two_paths]) / (1.0 - powers[s, 1])
                for t in range(degree[c, j]):  # b ∈ out(i) ∩ out(j): r^tp(i, b)
                    b = lists[c, j, t, 0]
                    if marks_a[b] == stamp:
                        tp = _count(in_lists, c, b, in_degree[c, b], marks_a, stamp) - value
                        total += powers[s, tp]
                for t in range(in_degree[c, i]):  # a ∈ in(i) ∩ in(j): r^tp(a, j)
                    a = in_lists[c, i, t, 0]
                    if marks_b[a] == stamp:
                        tp = _count(lists, c, a, degree[c, a], marks_b, stamp) - value
                        total += powers[s, tp]
                delta[col] = total
        elif op == 11 or op == 12:  # idegree(d...) of j / odegree(d...) of i
            d0 = in_j if op == 11 else out_i
            for t in range(op_ints[s, 0]):
                d = op_ints[s, 1 + t]
                delta[col + t] = (d0 + 1 == d) * 1.0 - (d0 == d) * 1.0
        elif op == 13:  # gwidegree
            delta[col] = powers[s, in_j]
        elif op == 14:  # gwodegree
            delta[col] = powers[s, out_i]
        elif op == 15:  # isolates (directed)
            delta[col] = -(((out_i + in_i) == 0) * 1.0 + ((out_j + in_j) == 0) * 1.0)


@_inline
def _delta(lists, degree, in_lists, in_degree, directed, add_u, add_v, tab_codes,
           tab_values, tab_cols, abs_values, abs_power, abs_cols, mat_values, mat_cols,
           ops, op_cols, op_ints, powers, c, i, j, value, marks_a, marks_b, marks_c,
           stamp, delta):
    """Δs of the dyad (i, j) (tie i -> j; ``value`` whether it is on) into ``delta``:
    the covariate terms, then the structural ones with marks stamped ``stamp``. Returns
    whether N(i) was marked in ``marks_a`` (undirected)."""
    _dyadic(add_u, add_v, tab_codes, tab_values, tab_cols, abs_values, abs_power,
            abs_cols, mat_values, mat_cols, i, j, delta)
    if directed:
        reverse = 1.0 if _slot(lists, c, j, degree[c, j], i) >= 0 else 0.0
        _directed_change(ops, op_cols, op_ints, powers, lists, degree, in_lists,
                         in_degree, c, i, j, value, reverse, marks_a, marks_b, marks_c,
                         stamp, delta)
        return False
    return _undirected_change(ops, op_cols, op_ints, powers, lists, degree, c, i, j,
                              value, marks_a, marks_b, stamp, delta)


@_jit
def _remove(lists, degree, c, i, s):
    """Move the last slot of i's list into slot s."""
    last = degree[c, i] - 1
    lists[c, i, s, 0], lists[c, i, s, 1] = lists[c, i, last, 0], lists[c, i, last, 1]
    lists[c, i, last, 0] = -1
    degree[c, i] = last


@_jit
def _neighbour(lists, degree, c, k, word):
    """A uniform neighbour of k (from a 64-bit word), or -1 if k has none."""
    if degree[c, k] == 0:
        return -1
    return lists[c, k, _below(word, degree[c, k]), 0]


@_inline
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


@_jit
def _append(lists, degree, c, i, j, position):
    """Add j, at edge position ``position``, to the end of i's list."""
    lists[c, i, degree[c, i], 0] = j
    lists[c, i, degree[c, i], 1] = position
    degree[c, i] += 1


@_jit
def _retag(lists, degree, c, i, j, position):
    """Set the edge position of the slot holding j in i's list."""
    lists[c, i, _slot(lists, c, i, degree[c, i], j), 1] = position


@_jit
def _run(lists, degree, in_lists, in_degree, edges, num_edges,
         statistics, rng, directed, theta, add_u, add_v, tab_codes, tab_values, tab_cols,
         abs_values, abs_power, abs_cols, mat_values, mat_cols, ops, op_cols, op_ints,
         powers, burnin, num_draws, interval, triadic, ratio_weight, out):
    """``burnin`` proposals, then ``num_draws`` × ``interval`` with the statistics
    recorded into ``out`` (C, num_draws, k) after each interval, for every chain in
    turn. Returns (accepted (C,), the first chain that needed more than D neighbours
    or -1)."""
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
                slot_i = _slot(lists, c, i, degree[c, i], j)
                value = 1 if slot_i >= 0 else 0
                stamp += 1
                marked_i = _delta(lists, degree, in_lists, in_degree, directed, add_u, add_v,
                                  tab_codes, tab_values, tab_cols, abs_values, abs_power,
                                  abs_cols, mat_values, mat_cols, ops, op_cols, op_ints,
                                  powers, c, i, j, value, marks_a, marks_b, marks_c,
                                  stamp, delta)
                sign = 1.0 - 2.0 * value
                log_accept = 0.0
                for col in range(k):
                    log_accept += th[col] * delta[col]
                log_accept *= sign
                # the proposal probabilities of the dyad now and after the toggle
                rate = 0.0
                if triadic > 0.0:
                    if directed:  # k ∈ out(i) ∩ in(j): (1/outdeg k + 1/indeg k) / 2
                        stamp += 1
                        _mark(lists, c, i, degree[c, i], marks_a, stamp)
                        for t in range(in_degree[c, j]):
                            kk = in_lists[c, j, t, 0]
                            if marks_a[kk] == stamp:
                                rate += 0.5 * (1.0 / degree[c, kk] + 1.0 / in_degree[c, kk])
                    else:  # k ∈ N(i) ∩ N(j): 1 / d_k
                        if not marked_i:
                            _mark(lists, c, i, degree[c, i], marks_a, stamp)
                        for t in range(degree[c, j]):
                            kk = lists[c, j, t, 0]
                            if marks_a[kk] == stamp:
                                rate += 1.0 / degree[c, kk]
                m_after = m + 1 - 2 * value
                q_now = _q(m, value, N, triadic, rate)
                q_after = _q(m_after, 1 - value, N, triadic, rate)
                ratio = q_after / q_now  # one exp per proposal, no logs
                if ratio_weight != 1.0:
                    ratio = ratio ** ratio_weight
                if u < math.exp(log_accept) * ratio:
                    if value == 0:
                        if degree[c, i] >= D or back_degree[c, j] >= D:
                            return accepted, c
                        e = m
                        edges[c, e, 0], edges[c, e, 1] = i, j
                        _append(lists, degree, c, i, j, e)
                        _append(back, back_degree, c, j, i, e)
                        num_edges[c] = m + 1
                    else:
                        e = lists[c, i, slot_i, 1]
                        _remove(lists, degree, c, i, slot_i)
                        _remove(back, back_degree, c, j,
                                _slot(back, c, j, back_degree[c, j], i))
                        last = m - 1
                        if e != last:  # the last edge moves into position e
                            a, b = edges[c, last, 0], edges[c, last, 1]
                            edges[c, e, 0], edges[c, e, 1] = a, b
                            _retag(lists, degree, c, a, b, e)
                            _retag(back, back_degree, c, b, a, e)
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


@_jit
def _q(m, value, N, triadic, rate):
    """The probability that a proposal picks a dyad (``value``: a tie) when the network
    has m ties: TNT, mixed with the triadic proposal's ``rate`` / m."""
    if m > 0:
        tnt = 0.5 * value / m + 0.5 / N
    else:
        tnt = 1.0 / N
    if triadic == 0.0:
        return tnt
    return (1.0 - triadic) * tnt + triadic * rate / max(m, 1)


def native_run(state: NetworkChains, program: NativeProgram, theta, key_words,
               first_chain: int, burnin: int, num_draws: int, interval: int,
               triadic: float, ratio_weight: float = 1.0):
    """Run the chains of ``state`` (from :func:`native_chains`; not changed: the kernel
    works on a copy): ``burnin`` proposals, then ``num_draws`` draws ``interval``
    proposals apart, at ``theta`` (k,) or (C, k); chain c's generator seeded from
    ``key_words`` (two 32-bit words) and ``first_chain + c``. Returns (new state,
    statistics (C, num_draws, k), acceptance rate (C,), the first chain that needed
    more than D neighbours or -1: that chain stopped there, the others may not have
    run)."""
    state = jax.tree.map(np.array, state)
    C = state.lists.shape[0]
    theta = np.ascontiguousarray(np.broadcast_to(np.asarray(theta, float), (C, program.k)))
    rng = seed_chains(key_words, first_chain, C)
    out = np.zeros((C, num_draws, program.k))
    in_lists, in_degree = _directed_arrays(state)
    accepted, overflow = _run(
        state.lists, state.degree, in_lists, in_degree, state.edges, state.num_edges,
        state.statistics, rng, state.in_lists is not None, theta, *program[1:],
        int(burnin), int(num_draws), int(interval), float(triadic), float(ratio_weight),
        out)
    total = burnin + num_draws * interval
    return state, out, accepted / max(total, 1), int(overflow)


@_jit
def _design(lists, degree, in_lists, in_degree, directed, add_u, add_v, tab_codes,
            tab_values, tab_cols, abs_values, abs_power, abs_cols, mat_values, mat_cols,
            ops, op_cols, op_ints, powers, heads, tails, add, out):
    """Δs of the dyads (heads[d], tails[d]) of chain 0 into ``out`` (b, k); with
    ``add`` each dyad (off) is made a tie after its Δs are taken, so that the rows of
    ``out`` sum to s(y) − s(empty) of the ties added one at a time to an empty chain."""
    n, k = lists.shape[1], out.shape[1]
    marks_a, marks_b, marks_c = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(
        n, np.int64)
    delta = np.zeros(k)
    back, back_degree = (in_lists, in_degree) if directed else (lists, degree)
    for d in range(heads.shape[0]):
        i, j = heads[d], tails[d]
        value = 0 if add else (1 if _slot(lists, 0, i, degree[0, i], j) >= 0 else 0)
        _delta(lists, degree, in_lists, in_degree, directed, add_u, add_v, tab_codes,
               tab_values, tab_cols, abs_values, abs_power, abs_cols, mat_values, mat_cols,
               ops, op_cols, op_ints, powers, 0, i, j, value, marks_a, marks_b, marks_c,
               d + 1, delta)
        out[d] = delta
        if add:
            _append(lists, degree, 0, i, j, d)
            _append(back, back_degree, 0, j, i, d)


def native_design(state: NetworkChains, program: NativeProgram, heads, tails) -> np.ndarray:
    """Δs (b, k) of the dyads (heads[d], tails[d]) (ties heads -> tails) of the first
    chain of ``state`` (:func:`native_chains`), as the kernel computes them: the MPLE's
    design, and for checking against the JAX terms."""
    heads = np.atleast_1d(np.asarray(heads, np.int64))
    tails = np.atleast_1d(np.asarray(tails, np.int64))
    out = np.zeros((len(heads), program.k))
    in_lists, in_degree = _directed_arrays(state)
    _design(state.lists, state.degree, in_lists, in_degree, state.in_lists is not None,
            *program[1:], heads, tails, False, out)
    return out


def native_statistics(program: NativeProgram, empty, edges, num_nodes: int,
                      directed: bool) -> np.ndarray:
    """s(y) (k,) of the network ``edges`` (m, 2; no loops or repeats): the statistics
    ``empty`` (k,) of the empty graph plus the Δs of its ties added one at a time."""
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    n = int(num_nodes)
    degrees = np.bincount(edges.ravel() if not directed else edges[:, 0], minlength=n)
    if directed:
        degrees = np.maximum(degrees, np.bincount(edges[:, 1], minlength=n))
    D = max(int(degrees.max(initial=0)), 1)
    lists = np.full((1, n, D, 2), -1, np.int32)
    shape = (1, n, D, 2) if directed else (1, 1, 1, 2)
    in_lists = np.full(shape, -1, np.int32)
    degree, in_degree = np.zeros((1, n), np.int32), np.zeros((1, shape[1]), np.int32)
    out = np.zeros((len(edges), program.k))
    _design(lists, degree, in_lists, in_degree, bool(directed), *program[1:], edges[:, 0],
            edges[:, 1], True, out)
    return np.asarray(empty, np.float64) + out.sum(axis=0)
