"""Metropolis–Hastings for ERGMs on sparse networks, many chains at once.

R's ergm samples exponential random graph models with Metropolis–Hastings and TNT
("tie / no tie") proposals: with probability 1/2 toggle a uniformly chosen existing tie
(off), otherwise toggle a uniformly chosen dyad. This module does the same in JAX
(``vmap`` over chains, ``lax.scan`` over proposals), for undirected and directed
networks, on a sparse state whose cost per proposal depends on the degree capacity D,
not on the number of nodes n:

* padded neighbour lists (undirected: one per node; directed: out- and in-lists),
  ``-1`` past each node's degree, updated per toggle (the last slot moves into the
  freed one); each slot also holds the position of its tie in
* an edge list (M, 2), so that an existing tie is drawn uniformly in O(1) and removed
  in O(D) (the last edge of the list moves into its place);
* the running statistics s(y), updated by ±Δs on each accepted toggle (float
  accumulation: compare with s of :func:`network_edges` after very long runs).

The model side is a ``change_fn(view) -> (k,)``, Δs = s(y, dyad on) − s(y, dyad off) of
one dyad, computed from a view (:class:`UndirectedDyadView`, :class:`DirectedDyadView`)
whose counts are taken with the dyad itself off; the attribute names are those of the
dense change statistics (:mod:`~numpyro_ugm.models.graph_statistics`). Degrees, shared
partners and two-paths cost O(D) to O(D²) per proposal, the gwesp partner sums O(D³)
(O(D²) and an (n + 1,) mark array for D > :data:`COMPARE_MAX_DEGREE`); whatever a
``change_fn`` does not use is never computed. The MH ratio is exact for TNT: with
P_tie(m) = 1/2 if m > 0 else 0 and N dyads, q(toggle d | y) = P_tie(m) y_d / m +
(1 − P_tie(m)) / N, and a toggle is accepted with probability
min(1, exp(±θ·Δs) q(d | y') / q(d | y)), the reverse q at the new edge count.

Every public function compiles once per shape of the state, ``change_fn`` and the
counts (``num_proposals``; ``num_samples`` and ``interval``): ``change_fn`` is a static
argument, so pass the same function object on every call (a fresh ``lambda`` per call
compiles again) and close over constants rather than passing them. The functions can
be called inside ``jax.jit`` too (with ``change_fn`` and the counts fixed Python
values).

The degree capacity D (``max_degree``) is static; a toggle that would give a node more
than D neighbours is not made, the chain's ``overflow`` flag is set (the chain has left
the target), and the public functions raise a ``ValueError`` asking for a larger
``max_degree`` (under ``jit``: call :func:`check_overflow` on the result). Random words
come from XLA's Philox generator seeded by the key; uniform integers come from 32-bit
words (:func:`_scaled`): index probabilities are uniform up to a relative error of
count / 2^32.
"""

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import as_key, check_count
from .graphs import check_edge_list

__all__ = ["NetworkChains", "UndirectedDyadView", "DirectedDyadView", "init_network_chains",
           "network_mh_step", "simulate_statistics", "network_edges", "dyad_view",
           "check_overflow", "default_max_degree", "DegreeOverflowError"]

#: proposals whose random words are drawn together (one generator call per block)
_BLOCK = 1024


class NetworkChains(NamedTuple):
    """The sparse state of several chains (leading axis: chains).

    A node's list holds, per slot, a neighbour (``-1`` past the degree) and the position
    of that tie in ``edges``: one array, so that a toggle updates it with one scatter.
    Undirected networks have one list per node and ``in_lists`` / ``in_degree`` None;
    directed ones hold out-neighbours in ``lists`` and in-neighbours in ``in_lists``.

    Attributes
    ----------
    lists : (C, n, D, 2) int32
        ``[..., 0]`` the (out-)neighbours, ``[..., 1]`` the position of the tie.
    degree : (C, n) int32
        Degrees (out-degrees).
    in_lists, in_degree : (C, n, D, 2), (C, n) int32, or None
        In-neighbour lists of directed networks.
    edges : (C, M, 2) int32
        The ties (i, j) (i -> j when directed); rows ``num_edges`` on are unused.
    num_edges : (C,) int32
    statistics : (C, k) float
        s(y), updated on every accepted toggle.
    overflow : (C,) bool
        Whether a toggle needed more than D neighbours (the chain is then invalid).
    """

    lists: jax.Array
    degree: jax.Array
    in_lists: Any
    in_degree: Any
    edges: jax.Array
    num_edges: jax.Array
    statistics: jax.Array
    overflow: jax.Array

    @property
    def directed(self) -> bool:
        return self.in_lists is not None

    @property
    def num_nodes(self) -> int:
        return self.lists.shape[-3]

    @property
    def max_degree(self) -> int:
        return self.lists.shape[-2]

    @property
    def num_chains(self) -> int:
        return self.lists.shape[0]

    @property
    def neighbours(self) -> jax.Array:
        """(C, n, D) (out-)neighbours, ``-1`` past the degree."""
        return self.lists[..., 0]

    @property
    def in_neighbours(self) -> jax.Array | None:
        """(C, n, D) in-neighbours (directed), ``-1`` past the in-degree."""
        return None if self.in_lists is None else self.in_lists[..., 0]


# --- views: what a change statistic sees of one dyad ---------------------------------


def _safe(nodes, n):
    """Node ids with the padding ``-1`` mapped to ``n`` (an always-unmarked entry)."""
    return jnp.where(nodes >= 0, nodes, n)


#: largest degree capacity D for which set membership is tested by comparing with every
#: slot (D² compares per partner sum, no n-sized buffer); above it, by marks in an
#: (n + 1,) array (one scatter, then one gather per test)
COMPARE_MAX_DEGREE = 16


def _membership(row, n):
    """``contains(ids) -> bool array``: which of ``ids`` (any shape; ``-1`` = none) are
    in the padded list ``row``."""
    if row.shape[0] <= COMPARE_MAX_DEGREE:
        return lambda ids: jnp.any((ids[..., None] == row) & (ids[..., None] >= 0), -1)
    marks = jnp.zeros(n + 1, bool).at[_safe(row, n)].set(row >= 0)
    return lambda ids: marks[_safe(ids, n)]


def _num_common(a, b):
    """|a ∩ b| of two padded lists without repeats (D², no n-sized buffer)."""
    return jnp.sum((a[:, None] == b[None, :]) & (a[:, None] >= 0))


class UndirectedDyadView:
    """One dyad (i, j) of an undirected network, counts taken with the pair off.

    Attributes: ``i``, ``j`` (int32), ``value`` y_ij, ``degree_i``, ``degree_j``,
    ``shared`` = #(N(i) ∩ N(j)) (float); :meth:`partner_terms` for gwesp.
    """

    def __init__(self, lists, rows, i, j, dtype):
        self._lists = lists
        row_i, row_j = rows["lists"][0, :, 0], rows["lists"][1, :, 0]
        degree_i, degree_j = rows["degree"][0], rows["degree"][1]
        self._row_i, self._row_j = row_i, row_j
        on = jnp.any(row_i == j)
        self.i, self.j = i, j
        self.value = on.astype(dtype)
        self.degree_i = (degree_i - on).astype(dtype)
        self.degree_j = (degree_j - on).astype(dtype)
        self.shared = _num_common(row_i, row_j).astype(dtype)

    def partner_terms(self, r):
        """Σ_{k ∈ N(i)∩N(j)} (r^{sp(i,k)} + r^{sp(j,k)}), sp = shared partners with the
        pair (i, j) off (gwesp's change statistic is e^α(1 − r^shared) + this)."""
        n = self._lists.shape[0]
        in_i, in_j = _membership(self._row_i, n), _membership(self._row_j, n)
        common = in_i(self._row_j)  # (D,): k = row_j[s] is also i's neighbour
        rows_k = self._lists[jnp.maximum(self._row_j, 0), :, 0]  # (D, D): N(k)
        v = self.value
        # j ∈ N(k) for every such k: with the pair on, N(i) holds j (and N(j) holds i)
        sp_i = jnp.sum(in_i(rows_k), -1) - v
        sp_j = jnp.sum(in_j(rows_k), -1) - v
        return jnp.sum(jnp.where(common, r ** sp_i + r ** sp_j, 0))


class DirectedDyadView:
    """One tie i -> j of a directed network, counts taken with the tie off.

    Attributes: ``i``, ``j`` (int32), ``value`` y_ij, ``reverse`` y_ji, ``out_i``,
    ``in_i``, ``out_j``, ``in_j``, ``two_paths`` = #(out(i) ∩ in(j)), ``cycles`` =
    #(in(i) ∩ out(j)), ``shared_out`` = #(out(i) ∩ out(j)), ``shared_in`` =
    #(in(i) ∩ in(j)) (float); :meth:`otp_partner_terms` for directed gwesp (OTP).
    """

    def __init__(self, out_lists, in_lists, rows, i, j, dtype):
        self._out, self._in = out_lists, in_lists
        out_i, out_j = rows["lists"][0, :, 0], rows["lists"][1, :, 0]
        in_i, in_j = rows["in_lists"][0, :, 0], rows["in_lists"][1, :, 0]
        self._rows = out_i, in_i, out_j, in_j
        on = jnp.any(out_i == j)
        self.i, self.j = i, j
        self.value = on.astype(dtype)
        self.reverse = jnp.any(out_j == i).astype(dtype)
        self.out_i = (rows["degree"][0] - on).astype(dtype)
        self.in_i = rows["in_degree"][0].astype(dtype)
        self.out_j = rows["degree"][1].astype(dtype)
        self.in_j = (rows["in_degree"][1] - on).astype(dtype)
        self.two_paths = _num_common(out_i, in_j).astype(dtype)
        self.cycles = _num_common(in_i, out_j).astype(dtype)
        self.shared_out = _num_common(out_i, out_j).astype(dtype)
        self.shared_in = _num_common(in_i, in_j).astype(dtype)

    def otp_partner_terms(self, r):
        """Σ_{b ∈ out(i)∩out(j)} r^{tp(i,b)} + Σ_{a ∈ in(i)∩in(j)} r^{tp(a,j)},
        tp(x, y) = #(out(x) ∩ in(y)) with the tie i -> j off (directed gwesp, OTP:
        e^α(1 − r^two_paths) + this)."""
        out_i, in_i, out_j, in_j = self._rows
        n, v = self._out.shape[0], self.value
        in_out_i, in_in_j = _membership(out_i, n), _membership(in_j, n)
        # b ∈ out(j) also in out(i); tp(i, b) = #(out(i) ∩ in(b)), less j when i -> j is on
        common_b = in_out_i(out_j)
        tp_b = jnp.sum(in_out_i(self._in[jnp.maximum(out_j, 0), :, 0]), -1) - v
        # a ∈ in(i) also in in(j); tp(a, j) = #(out(a) ∩ in(j)), less i when i -> j is on
        common_a = in_in_j(in_i)
        tp_a = jnp.sum(in_in_j(self._out[jnp.maximum(in_i, 0), :, 0]), -1) - v
        return (jnp.sum(jnp.where(common_b, r ** tp_b, 0))
                + jnp.sum(jnp.where(common_a, r ** tp_a, 0)))


def _gather(state, i, j, a, b):
    """The rows a proposal reads, one gather per array: lists (and degrees) of i and j,
    and those of the edge (a, b) that a removal would move. Undirected: ``lists`` rows
    of i, j, a, b; directed: out-lists of i, j, a and in-lists of i, j, b."""
    if state.in_lists is None:
        return {"lists": state.lists[jnp.stack([i, j, a, b])],
                "degree": state.degree[jnp.stack([i, j])]}
    return {"lists": state.lists[jnp.stack([i, j, a])],
            "in_lists": state.in_lists[jnp.stack([i, j, b])],
            "degree": state.degree[jnp.stack([i, j])],
            "in_degree": state.in_degree[jnp.stack([i, j])]}


def _view(state, rows, i, j):
    """The view of dyad (i, j) of one chain's state (no chain axis) from its rows."""
    dtype = state.statistics.dtype
    if state.in_lists is None:
        return UndirectedDyadView(state.lists, rows, i, j, dtype)
    return DirectedDyadView(state.lists, state.in_lists, rows, i, j, dtype)


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


def _find(row, value):
    """Slot of ``value`` in the padded list ``row`` (0 when absent)."""
    return jnp.argmax(row == value).astype(jnp.int32)


def _toggle_writes(state, rows, i, j, a, b, add, remove):
    """The writes that add tie (i, j) (``add``) or remove it (``remove``); neither: no
    change; ``rows`` from :func:`_gather`, (a, b) the last edge of the list. A dict:
    field -> (index arrays, values); degrees are added to, the rest set.

    Removal moves the last slot of each of the two lists that hold the tie (i's list
    holding j, j's (in-)list holding i) into the freed slot, and the last edge (a, b) of
    the edge list into the freed position p, whose two list entries then say p. Every
    index and value is computed from the state before the toggle, and each array gets
    one scatter (writes that do not apply go to the out-of-bounds slot D or row M and
    are dropped), so that XLA can update the loop-carried buffers in place: a read that
    no scatter depends on, or a second scatter, made it copy whole arrays per proposal.
    """
    directed = state.in_lists is not None
    D = state.lists.shape[-2]
    M = state.edges.shape[0]
    m = state.num_edges
    last_edge = m - 1
    # the rows: (list A of i holding j, list B of j holding i, A of a, B of b)
    if directed:
        row_i, row_j = rows["lists"][0], rows["in_lists"][1]
        row_a, row_b = rows["lists"][2], rows["in_lists"][2]
        deg_i, deg_j = rows["degree"][0], rows["in_degree"][1]
    else:
        row_i, row_j, row_a, row_b = (rows["lists"][k] for k in range(4))
        deg_i, deg_j = rows["degree"][0], rows["degree"][1]
    # where the tie sits: slot of j in i's list (A), of i in j's list (B), edge position
    slot_a, last_a = _find(row_i[:, 0], j), deg_i - 1
    slot_b, last_b = _find(row_j[:, 0], i), deg_j - 1
    position = row_i[slot_a, 1]
    move = remove & (position != last_edge)  # then (a, b) goes to `position`
    moved = jnp.stack([a, b])

    def list_writes(row, deg, node, other, slot, last):
        """Rows, slots and (neighbour, position) values of one list's two writes:
        append ``other``, or move the last slot into ``slot`` and clear the last."""
        tail = slot != last
        first = jnp.where(add, deg, jnp.where(remove, slot, D))
        second = jnp.where(remove & tail, last, D)
        tail_nbr, tail_id = row[last, 0], row[last, 1]
        tail_id = jnp.where(move & (tail_id == last_edge), position, tail_id)
        value = jnp.where(add, jnp.stack([other, m]),
                          jnp.where(tail, jnp.stack([tail_nbr, tail_id]),
                                    jnp.stack([-1, 0])))
        return (jnp.stack([node, node]), jnp.stack([first, second]),
                jnp.stack([value, jnp.array([-1, 0], jnp.int32)]))

    def fix_write(row, node, other, removals):
        """The moved edge's entry (``other`` in ``node``'s list ``row``, at its slot after
        the removal's own slot moves; ``removals``: (node, freed slot, last slot)) now
        points at ``position``."""
        slot = _find(row[:, 0], other)
        for owner, freed, last in removals:
            slot = jnp.where((node == owner) & (slot == last), freed, slot)
        return node[None], jnp.where(move, slot, D)[None], jnp.stack([other, position])[None]

    def join(*writes):
        return tuple(jnp.concatenate(parts) for parts in zip(*writes))

    write_a = list_writes(row_i, deg_i, i, j, slot_a, last_a)
    write_b = list_writes(row_j, deg_j, j, i, slot_b, last_b)
    change = add.astype(jnp.int32) - remove
    # the edge list: append at m, or move the last edge into the freed position
    edge_row = jnp.where(add, m, jnp.where(move, position, M))
    writes = {"edges": (edge_row, jnp.where(add, jnp.stack([i, j]), moved))}
    if directed:
        rows_a, slots_a, values_a = join(write_a, fix_write(row_a, a, b,
                                                            [(i, slot_a, last_a)]))
        rows_b, slots_b, values_b = join(write_b, fix_write(row_b, b, a,
                                                            [(j, slot_b, last_b)]))
        writes.update(lists=((rows_a, slots_a), values_a),
                      in_lists=((rows_b, slots_b), values_b),
                      degree=(i, change), in_degree=(j, change))
    else:
        # a fix may hit the slot that a row move writes: both write (other, position)
        removals = [(i, slot_a, last_a), (j, slot_b, last_b)]
        rows, slots, values = join(write_a, write_b, fix_write(row_a, a, b, removals),
                                   fix_write(row_b, b, a, removals))
        writes.update(lists=((rows, slots), values),
                      degree=(jnp.stack([i, j]), change))
    return writes, m + change


def _apply_writes(state, writes, num_edges):
    """``state`` with the writes of :func:`_toggle_writes` made (one scatter per array)."""
    updated = {}
    for name, (index, values) in writes.items():
        at = getattr(state, name).at[index]
        updated[name] = (at.add(values, mode="drop") if name.endswith("degree")
                         else at.set(values, mode="drop"))
    return state._replace(num_edges=num_edges, **updated)


def _proposal(state, words, theta, change_fn, ratio_weight, live=True):
    """One TNT proposal and its MH accept / reject, one chain. ``words`` (5,) uint32:
    tie-or-dyad, edge position, the dyad's two nodes, the acceptance uniform; ``live``
    False: rejected whatever it is (the padding of a block). ``ratio_weight`` multiplies
    the log proposal ratio: 1 (the tests use 0 to check that a missing ratio shows)."""
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
    a, b = ends[1, 0], ends[1, 1]

    rows = _gather(state, i, j, a, b)
    view = _view(state, rows, i, j)
    on = view.value > 0
    delta = jnp.asarray(change_fn(view), dtype)
    if delta.shape != state.statistics.shape:
        raise ValueError(f"change_fn must return the {state.statistics.shape[0]} change "
                         f"statistics of the dyad as shape {state.statistics.shape} (one "
                         f"per entry of statistics0), got shape {delta.shape}")
    sign = 1 - 2 * view.value

    def q(edges_now, value):  # TNT proposal probability of this dyad
        tie_part = 0.5 * value / jnp.maximum(edges_now, 1).astype(dtype)
        return jnp.where(edges_now > 0, tie_part + 0.5 / num_dyads, 1.0 / num_dyads)

    log_ratio = (jnp.log(q(m + 1 - 2 * on, 1 - view.value)) - jnp.log(q(m, view.value)))
    log_accept = sign * jnp.sum(theta * delta) + ratio_weight * log_ratio
    # uniform in (0, 1) from the top 24 bits of the last word
    u = ((words[4] >> 8).astype(dtype) + 0.5) * (2.0 ** -24)
    accept = (jnp.log(u) < log_accept) & live
    if directed:
        full = (~on) & ((rows["degree"][0] >= D) | (rows["in_degree"][1] >= D))
    else:
        full = (~on) & jnp.any(rows["degree"] >= D)
    overflow = state.overflow | (accept & full)
    accept = accept & ~full
    writes, num_edges = _toggle_writes(state, rows, i, j, a, b, accept & ~on, accept & on)
    statistics = state.statistics + jnp.where(accept, sign * delta, 0)
    state = _apply_writes(state, writes, num_edges)
    return state._replace(statistics=statistics, overflow=overflow), accept


def _seed(key):
    """The 128-bit state of XLA's Philox generator (``lax.rng_bit_generator``) from a
    raw PRNG key (2 words): key words = the PRNG key, counter = the PRNG key."""
    return jnp.concatenate([key, key]).astype(jnp.uint32)


def _advance(rng, state, theta, change_fn, num_proposals, ratio_weight):
    """``num_proposals`` proposals of every chain of ``state``: (rng, state, accepted
    (C,)). The random words of all chains are drawn a block of :data:`_BLOCK` proposals
    at a time by XLA's Philox generator (threefry compiles far slower on CPU); the last
    block is shortened so no proposal is wasted (all blocks have one size)."""
    C = state.num_edges.shape[0]
    num_blocks = -(-num_proposals // _BLOCK)
    size = -(-num_proposals // num_blocks)
    spare = num_blocks * size - num_proposals  # < num_blocks proposals to skip
    theta_axis = 0 if theta.ndim == 2 else None

    def chain(state, words, theta, active):
        def body(state, xs):
            w, live = xs
            return _proposal(state, w, theta, change_fn, ratio_weight, live)

        state, accepted = jax.lax.scan(body, state, (words, active))
        return state, jnp.sum(accepted, dtype=jnp.int32)

    def block(carry, index):
        rng, state, accepted = carry
        rng, words = jax.lax.rng_bit_generator(rng, (C, size, 5), jnp.uint32,
                                               algorithm=jax.lax.RandomAlgorithm.RNG_PHILOX)
        active = index * size + jnp.arange(size) < num_proposals if spare else \
            jnp.ones(size, bool)
        state, acc = jax.vmap(chain, in_axes=(0, 0, theta_axis, None))(state, words,
                                                                        theta, active)
        return (rng, state, accepted + acc), None

    carry = (rng, state, jnp.zeros(C, jnp.int32))
    if num_blocks == 1:
        return block(carry, 0)[0]
    return jax.lax.scan(block, carry, jnp.arange(num_blocks))[0]


def _mh_chains(key, state, theta, change_fn, num_proposals, ratio_weight):
    _, state, accepted = _advance(_seed(key), state, theta, change_fn, num_proposals,
                                  ratio_weight)
    return state, {"acceptance_rate": accepted / num_proposals}


_mh_jit = jax.jit(_mh_chains, static_argnames=("change_fn", "num_proposals"))


def _simulate_chains(key, state, theta, change_fn, num_samples, interval, ratio_weight):
    def one(carry, _):
        rng, state = carry
        rng, state, _ = _advance(rng, state, theta, change_fn, interval, ratio_weight)
        return (rng, state), state.statistics

    (_, state), stats = jax.lax.scan(one, (_seed(key), state), None, length=num_samples)
    return state, jnp.swapaxes(stats, 0, 1)


_simulate_jit = jax.jit(_simulate_chains,
                        static_argnames=("change_fn", "num_samples", "interval"))


# --- public functions ----------------------------------------------------------------


def default_max_degree(edges: ArrayLike, num_nodes: int, directed: bool) -> int:
    """max(2 · the largest (in- or out-) degree of ``edges``, 16)."""
    e = np.asarray(edges, np.int64).reshape(-1, 2)
    return max(2 * _largest_degree(e, num_nodes, directed), 16)


def _largest_degree(e, n, directed):
    if directed:
        return int(max(np.bincount(e[:, 0], minlength=n).max(initial=0),
                       np.bincount(e[:, 1], minlength=n).max(initial=0)))
    return int(np.bincount(e.ravel(), minlength=n).max(initial=0))


def _check_edges(edges, n, directed):
    return check_edge_list("init_network_chains", "edges", edges, n, directed)


def _lists(heads, tails, positions, n, D):
    """Padded lists (n, D, 2) holding (``tails[k]``, ``positions[k]``) in the list of
    ``heads[k]``, and the list lengths."""
    lists = np.zeros((n, D, 2), np.int32)
    lists[..., 0] = -1
    deg = np.zeros(n, np.int32)
    for h, t, p in zip(heads.tolist(), tails.tolist(), positions.tolist()):
        lists[h, deg[h]] = t, p
        deg[h] += 1
    return lists, deg


def init_network_chains(edges: ArrayLike, num_nodes: int, num_chains: int, *,
                        directed: bool, statistics0: ArrayLike,
                        max_degree: int | None = None) -> NetworkChains:
    """Chains that all start at the network ``edges``.

    Parameters
    ----------
    edges : array (num_edges, 2) of int
        The starting ties (i, j), 0-based (i -> j when ``directed``); no self-loops or
        repeats.
    num_nodes : int
        Number of nodes n (at least 2).
    num_chains : int
    directed : bool
    statistics0 : array (k,)
        s(y0) of the starting network, in the order of the change statistics that the
        sampler will be given (the running statistics start here).
    max_degree : int, optional
        Degree capacity D of the neighbour lists (static: the cost per proposal grows
        with it). Default :func:`default_max_degree`. A toggle that needs more makes
        the sampler raise.

    Returns
    -------
    NetworkChains
    """
    n = check_count("init_network_chains", "num_nodes", num_nodes, minimum=2)
    C = check_count("init_network_chains", "num_chains", num_chains)
    if not isinstance(directed, (bool, np.bool_)):
        raise TypeError(f"init_network_chains: directed must be True or False, got "
                        f"{directed!r}")
    e = _check_edges(edges, n, bool(directed))
    observed = _largest_degree(e, n, directed)
    if max_degree is None:
        D = default_max_degree(e, n, directed)
    else:
        D = check_count("init_network_chains", "max_degree", max_degree)
        if D < observed:
            raise ValueError(f"init_network_chains: max_degree={D} is below the largest "
                             f"degree of the starting network, {observed}")
    dtype = jnp.result_type(float)
    s0 = np.asarray(statistics0, dtype)
    if s0.ndim != 1 or s0.shape[0] < 1:
        raise ValueError(f"init_network_chains: statistics0 must have shape (k,), got "
                         f"{s0.shape}")
    if not np.all(np.isfinite(s0)):
        raise ValueError(f"init_network_chains: statistics0 must be finite, got {s0}")
    positions = np.arange(len(e))
    if directed:
        lists, deg = _lists(e[:, 0], e[:, 1], positions, n, D)
        in_lists, in_deg = _lists(e[:, 1], e[:, 0], positions, n, D)
        capacity = n * D
    else:  # each edge in both lists
        lists, deg = _lists(e.ravel(), e[:, ::-1].ravel(), np.repeat(positions, 2), n, D)
        in_lists = in_deg = None
        capacity = n * D // 2 + 1
    edge_list = np.zeros((capacity, 2), np.int32)
    edge_list[:len(e)] = e

    def stack(x):
        return None if x is None else jnp.asarray(np.broadcast_to(x, (C,) + x.shape).copy())

    return NetworkChains(
        lists=stack(lists), degree=stack(deg), in_lists=stack(in_lists),
        in_degree=stack(in_deg), edges=stack(edge_list),
        num_edges=jnp.full((C,), len(e), jnp.int32),
        statistics=jnp.asarray(np.broadcast_to(s0, (C,) + s0.shape).copy()),
        overflow=jnp.zeros((C,), bool))


class DegreeOverflowError(ValueError):
    """A chain needed more neighbours than its lists hold (``max_degree``)."""


def check_overflow(state: NetworkChains) -> None:
    """Raise :class:`DegreeOverflowError` (a ``ValueError``) if a chain of ``state`` needed more than ``max_degree``
    neighbours (its samples no longer follow the model); nothing under ``jit``."""
    flags = state.overflow
    if isinstance(flags, jax.core.Tracer):
        return
    flags = np.asarray(flags)
    if flags.any():
        raise DegreeOverflowError(
            f"network sampler: {int(flags.sum())} of {flags.size} chains needed a node with "
            f"more than max_degree={state.max_degree} neighbours, so their toggles were "
            f"refused and their samples are not from the model; pass a larger max_degree "
            f"to init_network_chains (or check that theta is not degenerate)")


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


def network_mh_step(key, state: NetworkChains, theta: ArrayLike,
                    change_fn: Callable, num_proposals: int) -> tuple[NetworkChains, dict]:
    """``num_proposals`` TNT Metropolis–Hastings proposals on every chain.

    Parameters
    ----------
    key : PRNG key
    state : NetworkChains
    theta : array (k,) or (num_chains, k)
        Natural parameters (one row per chain, or shared).
    change_fn : callable
        ``change_fn(view) -> (k,)``: Δs of one dyad from an :class:`UndirectedDyadView`
        or :class:`DirectedDyadView`. Static: the same object reuses the compiled step.
    num_proposals : int

    Returns
    -------
    (NetworkChains, dict)
        The new state and ``{"acceptance_rate": (num_chains,)}``.

    Raises
    ------
    ValueError
        If a chain overflowed its ``max_degree`` (outside ``jit``; see
        :func:`check_overflow`).
    """
    count = check_count("network_mh_step", "num_proposals", num_proposals)
    theta = _check_run("network_mh_step", state, theta)
    state, info = _mh_jit(as_key(key, "network_mh_step"), state, theta, change_fn, count,
                          1.0)
    check_overflow(state)
    return state, info


def simulate_statistics(key, state: NetworkChains, theta: ArrayLike, change_fn: Callable,
                        num_samples: int, interval: int) -> tuple[NetworkChains, jax.Array]:
    """Statistics of every chain after each of ``num_samples`` runs of ``interval``
    proposals (one ``lax.scan``; burn in with :func:`network_mh_step`).

    Parameters
    ----------
    key : PRNG key
    state : NetworkChains
    theta : array (k,) or (num_chains, k)
    change_fn : callable
        As in :func:`network_mh_step` (static).
    num_samples : int
        Statistics recorded per chain.
    interval : int
        Proposals per chain between records (ergm's ``MCMC.interval``).

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
    state, stats = _simulate_jit(as_key(key, "simulate_statistics"), state, theta,
                                 change_fn, samples, steps, 1.0)
    check_overflow(state)
    return state, stats


def network_edges(state: NetworkChains) -> list[np.ndarray]:
    """The ties of every chain: a list of (m, 2) int arrays (undirected: i < j per
    row), rows sorted."""
    edges = np.asarray(state.edges)
    counts = np.asarray(state.num_edges)
    out = []
    for e, m in zip(edges, counts):
        e = e[:m].astype(np.int64)
        if not state.directed:
            e = np.sort(e, 1)
        out.append(e[np.lexsort((e[:, 1], e[:, 0]))])
    return out


def dyad_view(state: NetworkChains, i: int, j: int, chain: int = 0):
    """The view that ``change_fn`` gets for dyad (i, j) (tie i -> j) of one chain: for
    checking a change function by hand."""
    one = jax.tree.map(lambda x: x[chain], state)
    i, j = jnp.asarray(i, jnp.int32), jnp.asarray(j, jnp.int32)
    return _view(one, _gather(one, i, j, i, j), i, j)
