"""ERGM terms as data for the compiled sparse sampler
(:mod:`~numpyro_ugm.network.sampling.compiled`), and their change statistics compiled by
numba: the kernel's side of :attr:`~numpyro_ugm.network.terms.term.Term.native`.

Dyad-independent terms come as one of four forms of their covariate x(i, j) (node sums
U[i] + V[j], a table over two node codes, abs(a_i − a_j)^p, a dyadic matrix), which the
JAX side evaluates too (:mod:`~numpyro_ugm.network.terms.covariates`); structural terms
as a :class:`~numpyro_ugm.network.terms.term.CompiledOp`, whose change statistic is
written here a second time, one branch per
:class:`~numpyro_ugm.network.terms.term.Op` (the table of terms,
:data:`~numpyro_ugm.network.terms.structural.TABLE`, names each row's operations, and
the every-dyad test checks every row's examples against the dense change statistics
on random networks). The kernel reads the neighbour lists of
:mod:`~numpyro_ugm.network.terms.lists`. :func:`native_program` packs a model's terms into arrays;
:func:`native_design` and :func:`native_statistics` give the change statistics of any
dyads (the MPLE's design) and the statistics of a network. Shared partners are counted
with stamp marks (O(D) per set, O(D²) for gwesp's partner sums), the gw terms' powers
read from a table.
"""

from typing import Any, NamedTuple

import jax
import numpy as np

from ..graphs import check_edge_list
from .lists import (append, available, count_marked, empty_lists, find_slot, inline, jit,
                    mark)
from .term import COVARIATE_FORMS, CompiledOp, Op

__all__ = ["native_program", "NativeProgram", "native_chains", "check_state",
           "native_design", "native_statistics", "available", "dyad_change",
           "directed_arrays", "MAX_PARAMS"]

#: the most values a ``degree(d)`` term may count in the native sampler
MAX_PARAMS = 16


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
        cols = np.arange(col, col + t.size, dtype=np.int32)
        if isinstance(t.native, CompiledOp):
            op, ints, real = t.native
            if len(ints) > MAX_PARAMS:
                return None
            ops.append((int(op), col, [int(x) for x in ints], float(real)))
            col += t.size
            continue
        kind, *args = t.native
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
        else:
            raise ValueError(f"native_program: unknown native form {kind!r} of term "
                             f"{t.names}; covariate forms are {COVARIATE_FORMS}")
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


# --- the chains' state as numpy arrays -------------------------------------------------


def native_chains(state: Any) -> Any:
    """``state`` (:class:`~numpyro_ugm.network.sampling.chains.NetworkChains`) as
    writable numpy arrays for the kernel (running statistics in float64, no adjacency
    bit sets); the kernel changes them in place, so each run works on a copy
    (:func:`~numpyro_ugm.network.sampling.compiled.native_run`)."""
    if state.bits is not None:
        state = state._replace(bits=None, in_bits=None)
    out = jax.tree.map(lambda x: np.array(x), state)
    out = out._replace(statistics=out.statistics.astype(np.float64))
    return out


def directed_arrays(state) -> tuple[np.ndarray, np.ndarray]:
    """(in_lists, in_degree) of a directed state, placeholders (C, 1, 1, 2) and (C, 1)
    of an undirected one (the kernel's arguments are arrays either way)."""
    if state.in_lists is not None:
        return state.in_lists, state.in_degree
    C = state.lists.shape[0]
    return np.full((C, 1, 1, 2), -1, np.int32), np.zeros((C, 1), np.int32)


# --- change statistics -------------------------------------------------------------------


@jit
def _binomial(x, k):
    """C(x, k) for integers x ≥ 0."""
    if x < k:
        return 0.0
    out = 1.0
    for t in range(k):
        out = out * (x - t) / (t + 1)
    return np.float64(np.round(out))


@inline
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


@inline
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
        if op == Op.KSTAR:  # kstar(k): C(d_i, k-1) + C(d_j, k-1)
            k = op_ints[s, 1]
            delta[col] = _binomial(d_i, k - 1) + _binomial(d_j, k - 1)
        elif op == Op.TRIANGLE or op == Op.GWESP:  # triangle / gwesp: shared partners
            if shared < 0:
                mark(lists, c, i, degree[c, i], marks_i, stamp)
                shared = count_marked(lists, c, j, degree[c, j], marks_i, stamp)
            if op == Op.TRIANGLE:
                delta[col] = shared
            else:
                # e^α (1 − r^s), e^α = 1/(1 − r); powers[s, t] = r^t
                total = (1.0 - powers[s, shared]) / (1.0 - powers[s, 1])
                if shared > 0:
                    if not marked_j:
                        mark(lists, c, j, degree[c, j], marks_j, stamp)
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
        elif op == Op.ISOLATES:  # isolates
            delta[col] = -((d_i == 0) * 1.0 + (d_j == 0) * 1.0)
        elif op == Op.DEGREE:  # degree(d...)
            for t in range(op_ints[s, 0]):
                d = op_ints[s, 1 + t]
                delta[col + t] = ((d_i + 1 == d) * 1.0 - (d_i == d) * 1.0
                                  + (d_j + 1 == d) * 1.0 - (d_j == d) * 1.0)
        elif op == Op.GWDEGREE:  # r^d_i + r^d_j
            delta[col] = powers[s, d_i] + powers[s, d_j]
    return shared >= 0


@inline
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
        if op == Op.MUTUAL:
            delta[col] = reverse
        elif op == Op.ISTAR:
            delta[col] = _binomial(in_j, op_ints[s, 1] - 1)
        elif op == Op.OSTAR:
            delta[col] = _binomial(out_i, op_ints[s, 1] - 1)
        elif op == Op.TTRIPLE or op == Op.CTRIPLE or op == Op.GWESP_OTP:
            if not marked_a:
                mark(lists, c, i, degree[c, i], marks_a, stamp)
                marked_a = True
            if op == Op.TTRIPLE:  # ttriple: shared out + shared in + two-paths
                if not marked_c:
                    mark(in_lists, c, i, in_degree[c, i], marks_c, stamp)
                    marked_c = True
                delta[col] = (
                    count_marked(lists, c, j, degree[c, j], marks_a, stamp)
                    + count_marked(in_lists, c, j, in_degree[c, j], marks_c, stamp)
                    + count_marked(in_lists, c, j, in_degree[c, j], marks_a, stamp))
            elif op == Op.CTRIPLE:  # ctriple: cycles #(in(i) ∩ out(j))
                if not marked_c:
                    mark(in_lists, c, i, in_degree[c, i], marks_c, stamp)
                    marked_c = True
                delta[col] = count_marked(lists, c, j, degree[c, j], marks_c, stamp)
            else:  # gwesp OTP
                if not marked_b:
                    mark(in_lists, c, j, in_degree[c, j], marks_b, stamp)
                    marked_b = True
                two_paths = count_marked(in_lists, c, j, in_degree[c, j], marks_a, stamp)
                total = (1.0 - powers[s, two_paths]) / (1.0 - powers[s, 1])
                for t in range(degree[c, j]):  # b ∈ out(i) ∩ out(j): r^tp(i, b)
                    b = lists[c, j, t, 0]
                    if marks_a[b] == stamp:
                        tp = count_marked(in_lists, c, b, in_degree[c, b], marks_a,
                                          stamp) - value
                        total += powers[s, tp]
                for t in range(in_degree[c, i]):  # a ∈ in(i) ∩ in(j): r^tp(a, j)
                    a = in_lists[c, i, t, 0]
                    if marks_b[a] == stamp:
                        tp = count_marked(lists, c, a, degree[c, a], marks_b, stamp) - value
                        total += powers[s, tp]
                delta[col] = total
        elif op == Op.IDEGREE or op == Op.ODEGREE:  # of j / of i
            d0 = in_j if op == Op.IDEGREE else out_i
            for t in range(op_ints[s, 0]):
                d = op_ints[s, 1 + t]
                delta[col + t] = (d0 + 1 == d) * 1.0 - (d0 == d) * 1.0
        elif op == Op.GWIDEGREE:
            delta[col] = powers[s, in_j]
        elif op == Op.GWODEGREE:
            delta[col] = powers[s, out_i]
        elif op == Op.ISOLATES_DIRECTED:
            delta[col] = -(((out_i + in_i) == 0) * 1.0 + ((out_j + in_j) == 0) * 1.0)


@inline
def dyad_change(lists, degree, in_lists, in_degree, directed, add_u, add_v, tab_codes,
                tab_values, tab_cols, abs_values, abs_power, abs_cols, mat_values, mat_cols,
                ops, op_cols, op_ints, powers, c, i, j, value, marks_a, marks_b, marks_c,
                stamp, delta):
    """Δs of the dyad (i, j) (tie i -> j; ``value`` whether it is on) into ``delta``:
    the covariate terms, then the structural ones with marks stamped ``stamp``. Returns
    whether N(i) was marked in ``marks_a`` (undirected)."""
    _dyadic(add_u, add_v, tab_codes, tab_values, tab_cols, abs_values, abs_power,
            abs_cols, mat_values, mat_cols, i, j, delta)
    if directed:
        reverse = 1.0 if find_slot(lists, c, j, degree[c, j], i) >= 0 else 0.0
        _directed_change(ops, op_cols, op_ints, powers, lists, degree, in_lists,
                         in_degree, c, i, j, value, reverse, marks_a, marks_b, marks_c,
                         stamp, delta)
        return False
    return _undirected_change(ops, op_cols, op_ints, powers, lists, degree, c, i, j,
                              value, marks_a, marks_b, stamp, delta)


@jit
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
        value = 0 if add else (1 if find_slot(lists, 0, i, degree[0, i], j) >= 0 else 0)
        dyad_change(lists, degree, in_lists, in_degree, directed, add_u, add_v, tab_codes,
                    tab_values, tab_cols, abs_values, abs_power, abs_cols, mat_values,
                    mat_cols, ops, op_cols, op_ints, powers, 0, i, j, value, marks_a,
                    marks_b, marks_c, d + 1, delta)
        out[d] = delta
        if add:
            append(lists, degree, 0, i, j, d)
            append(back, back_degree, 0, j, i, d)


def check_state(owner: str, state: Any, program: NativeProgram) -> int:
    """The chains' count, after checking that ``state`` is numpy chains
    (:func:`native_chains` of :class:`~numpyro_ugm.network.sampling.chains.NetworkChains`)
    of the network and statistics of ``program``: the kernel reads node and column
    indices unchecked."""
    if not isinstance(getattr(state, "lists", None), np.ndarray):
        raise TypeError(f"{owner}: state must be NetworkChains of numpy arrays "
                        f"(native_chains(init_network_chains(...))), got "
                        f"{type(state).__name__}")
    if not isinstance(program, NativeProgram):
        raise TypeError(f"{owner}: program must be a NativeProgram (native_program), got "
                        f"{type(program).__name__}")
    n, k = program.add_u.shape
    if state.lists.shape[1] != n or state.statistics.shape[1:] != (k,):
        raise ValueError(f"{owner}: the state has {state.lists.shape[1]} nodes and "
                         f"{state.statistics.shape[1:]} statistics; the program is for {n} "
                         f"nodes and {k} statistics")
    return state.lists.shape[0]


def native_design(state: Any, program: NativeProgram, heads, tails) -> np.ndarray:
    """Δs (b, k) of the dyads (heads[d], tails[d]) (ties heads -> tails) of the first
    chain of ``state`` (:func:`native_chains`), as the kernel computes them: the MPLE's
    design, and for checking against the JAX terms."""
    check_state("native_design", state, program)
    n = program.add_u.shape[0]
    heads = np.atleast_1d(np.asarray(heads))
    tails = np.atleast_1d(np.asarray(tails))
    if (heads.ndim != 1 or heads.shape != tails.shape
            or not np.issubdtype(heads.dtype, np.integer)
            or not np.issubdtype(tails.dtype, np.integer)):
        raise ValueError(f"native_design: heads and tails must be integer arrays of one "
                         f"shape (b,), got {heads.shape} {heads.dtype} and {tails.shape} "
                         f"{tails.dtype}")
    bad = (heads < 0) | (heads >= n) | (tails < 0) | (tails >= n) | (heads == tails)
    if bad.any():
        d = int(np.flatnonzero(bad)[0])
        raise ValueError(f"native_design: dyad {d} ({heads[d]}, {tails[d]}) is not a pair "
                         f"of distinct nodes in [0, {n})")
    out = np.zeros((len(heads), program.k))
    in_lists, in_degree = directed_arrays(state)
    _design(state.lists, state.degree, in_lists, in_degree, state.in_lists is not None,
            *program[1:], heads.astype(np.int64), tails.astype(np.int64), False, out)
    return out


def native_statistics(program: NativeProgram, empty, edges, num_nodes: int,
                      directed: bool) -> np.ndarray:
    """s(y) (k,) of the network ``edges`` (m, 2; checked: no loops, repeats or nodes out
    of range): the statistics ``empty`` (k,) of the empty graph plus the Δs of its ties
    added one at a time."""
    edges = check_edge_list("native_statistics", "edges", edges, num_nodes, directed)
    empty = np.asarray(empty, np.float64)
    if empty.shape != (program.k,):
        raise ValueError(f"native_statistics: empty must have shape ({program.k},), got "
                         f"{empty.shape}")
    degrees = [np.bincount(column, minlength=num_nodes) for column in
               ((edges[:, 0], edges[:, 1]) if directed else (edges.ravel(),))]
    if program.add_u.shape[0] != num_nodes:
        raise ValueError(f"native_statistics: the program is for {program.add_u.shape[0]} "
                         f"nodes, the network has {num_nodes}")
    capacity = max(int(np.max(degrees)), 1)
    lists, degree = empty_lists(1, num_nodes, capacity)
    if directed:
        in_lists, in_degree = empty_lists(1, num_nodes, capacity)
    else:
        in_lists, in_degree = np.full((1, 1, 1, 2), -1, np.int32), np.zeros((1, 1), np.int32)
    out = np.zeros((len(edges), program.k))
    _design(lists, degree, in_lists, in_degree, bool(directed), *program[1:],
            edges[:, 0], edges[:, 1], True, out)
    return empty + out.sum(axis=0)
