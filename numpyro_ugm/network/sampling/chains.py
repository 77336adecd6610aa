"""The sparse state of many Markov chains over networks (:class:`NetworkChains`), that the
TNT sampler of :mod:`~numpyro_ugm.network.sampling.tnt` moves: made from a starting
network (:func:`init_network_chains`), changed one tie at a time, read back as edge lists
(:func:`network_edges`). Its cost per toggle depends on the degree capacity D, not on the
number of nodes n:

* padded neighbour lists (undirected: one per node; directed: out- and in-lists),
  ``-1`` past each node's degree, updated per toggle (the last slot moves into the
  freed one); each slot also holds the position of its tie in
* an edge list (M, 2), so that an existing tie is drawn uniformly in O(1) and removed
  in O(D) (the last edge of the list moves into its place);
* the running statistics s(y), updated by ±Δs on each accepted toggle (float
  accumulation: compare with s of :func:`network_edges` after very long runs).

The degree capacity D (``max_degree``) is static; a toggle that would give a node more
than D neighbours is not made, the chain's ``overflow`` flag is set (the chain has left
the target), and the sampler raises a :class:`DegreeOverflowError` (a ``ValueError``)
asking for a larger ``max_degree`` (under ``jit``: call :func:`check_overflow` on the
result).
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ...runtime.checks import check_count
from ..graphs import check_edge_list

__all__ = ["NetworkChains", "init_network_chains", "network_edges", "check_overflow",
           "default_max_degree", "DegreeOverflowError", "toggle_writes", "apply_writes",
           "largest_degree"]


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
    bits, in_bits : (C, n, W) uint32, or None
        The adjacency matrix's rows as bit sets, W = ⌈n / 32⌉ words (directed: ``bits``
        the out-neighbours, ``in_bits`` the in-neighbours), kept only when asked for
        (``adjacency_bits``): then a set intersection such as the shared partners of
        i and k is a popcount of W words instead of D² compares.
    """

    lists: jax.Array
    degree: jax.Array
    in_lists: Any
    in_degree: Any
    edges: jax.Array
    num_edges: jax.Array
    statistics: jax.Array
    overflow: jax.Array
    bits: Any = None
    in_bits: Any = None

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


# --- toggling one tie ----------------------------------------------------------------


def _find(row, value):
    """Slot of ``value`` in the padded list ``row`` (0 when absent)."""
    return jnp.argmax(row == value).astype(jnp.int32)


def toggle_writes(state, rows, i, j, a, b, add, remove):
    """The writes that add tie (i, j) (``add``) or remove it (``remove``); neither: no
    change; ``rows`` from :func:`~numpyro_ugm.network.sampling.views.gather_rows`, (a, b)
    the last edge of the list. A dict: field -> (index arrays, values); degrees are added
    to, the rest set. Its compiled pair, which leaves the same state, is written inline
    in the kernel of :mod:`~numpyro_ugm.network.sampling.compiled`.

    Removal moves the last slot of each of the two lists that hold the tie (i's list
    holding j, j's (in-)list holding i) into the freed slot, and the last edge (a, b) of
    the edge list into the freed position p, whose two list entries then say p. Every
    index and value is computed from the state before the toggle, and each array gets
    one scatter (writes that do not apply go to the out-of-bounds slot D or row M and
    are dropped), so that XLA can update the loop-carried buffers in place: a read that
    no scatter depends on, or a second scatter, made it copy whole arrays per proposal.
    """
    directed = state.in_lists is not None
    bit_writes = {} if state.bits is None else _bit_writes(state, rows, i, j, add | remove)
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
    writes.update(bit_writes)
    return writes, m + change


def _bit_writes(state, rows, i, j, toggle):
    """The writes that flip bit j of i's row and bit i of j's row of the adjacency
    bit sets (directed: i's out-row, j's in-row) when ``toggle``."""
    n = state.bits.shape[-2]

    def flip(row, other):
        word = other >> 5
        return word, row[word] ^ (jnp.uint32(1) << (other & 31).astype(jnp.uint32))

    node_i, node_j = jnp.where(toggle, i, n), jnp.where(toggle, j, n)
    word_i, value_i = flip(rows["bits"][0], j)
    if state.in_bits is None:
        word_j, value_j = flip(rows["bits"][1], i)
        return {"bits": ((jnp.stack([node_i, node_j]), jnp.stack([word_i, word_j])),
                         jnp.stack([value_i, value_j]))}
    word_j, value_j = flip(rows["in_bits"][1], i)
    return {"bits": ((node_i, word_i), value_i), "in_bits": ((node_j, word_j), value_j)}


def apply_writes(state, writes, num_edges):
    """``state`` with the writes of :func:`toggle_writes` made (one scatter per array)."""
    updated = {}
    for name, (index, values) in writes.items():
        at = getattr(state, name).at[index]
        updated[name] = (at.add(values, mode="drop") if name.endswith("degree")
                         else at.set(values, mode="drop"))
    return state._replace(num_edges=num_edges, **updated)


# --- building and reading the state ----------------------------------------------------


def default_max_degree(edges: ArrayLike, num_nodes: int, directed: bool) -> int:
    """max(2 · the largest (in- or out-) degree of ``edges``, 16)."""
    e = np.asarray(edges, np.int64).reshape(-1, 2)
    return max(2 * largest_degree(e, num_nodes, directed), 16)


def largest_degree(e, n, directed):
    """The largest degree (directed: in- or out-degree) of the edge list ``e`` (m, 2)."""
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


def _bit_rows(heads, tails, n):
    """(n, ⌈n / 32⌉) uint32: bit ``tails[k]`` set in row ``heads[k]``."""
    rows = np.zeros((n, -(-n // 32)), np.uint32)
    np.bitwise_or.at(rows, (heads, tails >> 5), np.left_shift(1, tails & 31).astype(np.uint32))
    return rows


def init_network_chains(edges: ArrayLike, num_nodes: int, num_chains: int, *,
                        directed: bool, statistics0: ArrayLike,
                        max_degree: int | None = None,
                        adjacency_bits: bool = False, host: bool = False) -> NetworkChains:
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
    adjacency_bits : bool
        Also keep the adjacency matrix as bit sets (``bits``: n⌈n / 32⌉ words per chain,
        twice for directed networks), for change statistics that count shared partners
        or two-paths (gwesp's partner sums: a popcount of ⌈n / 32⌉ words per neighbour
        instead of D² compares).
    host : bool
        numpy arrays instead of JAX arrays (the compiled sampler's chains: no JAX
        program is compiled to make them).

    Returns
    -------
    NetworkChains
    """
    n = check_count("init_network_chains", "num_nodes", num_nodes, minimum=2)
    C = check_count("init_network_chains", "num_chains", num_chains)
    for name, flag in (("directed", directed), ("adjacency_bits", adjacency_bits),
                       ("host", host)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"init_network_chains: {name} must be True or False, got "
                            f"{flag!r}")
    e = _check_edges(edges, n, bool(directed))
    observed = largest_degree(e, n, directed)
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
    bits = in_bits = None
    if adjacency_bits:
        bits = _bit_rows(e[:, 0], e[:, 1], n) if directed else _bit_rows(
            e.ravel(), e[:, ::-1].ravel(), n)
        in_bits = _bit_rows(e[:, 1], e[:, 0], n) if directed else None

    xp = np if host else jnp

    def stack(x):
        return None if x is None else xp.asarray(np.broadcast_to(x, (C,) + x.shape).copy())

    return NetworkChains(
        lists=stack(lists), degree=stack(deg), in_lists=stack(in_lists),
        in_degree=stack(in_deg), edges=stack(edge_list),
        num_edges=xp.full((C,), len(e), np.int32), statistics=stack(s0),
        overflow=xp.zeros((C,), bool), bits=stack(bits), in_bits=stack(in_bits))


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
