"""What a change statistic of the sparse-network sampler sees of one dyad: views
(:class:`UndirectedDyadView`, :class:`DirectedDyadView`) of a dyad of one chain of
:class:`~numpyro_ugm.network.sampling.chains.NetworkChains`, read from its neighbour lists.

The model side of :mod:`~numpyro_ugm.network.sampling.tnt` is a
``change_fn(view) -> (k,)``, Δs = s(y, dyad on) − s(y, dyad off) of one dyad, computed from
a view whose counts are taken with the dyad itself off; the attribute names are those of
the dense change statistics (:mod:`~numpyro_ugm.network.terms.structural`). Degrees, shared
partners and two-paths cost O(D) to O(D²) per proposal, the gwesp partner sums O(D³)
(O(D²) and an (n + 1,) mark array for D > :data:`COMPARE_MAX_DEGREE`); when the state
keeps its adjacency as bit sets (``adjacency_bits``), shared partners and two-paths are
popcounts of ⌈n / 32⌉ words and the partner sums D of them. Whatever a ``change_fn``
does not use is never computed. :func:`dyad_view` gives the view of a dyad
for checking a change function by hand.
"""

import jax
import jax.numpy as jnp

from .chains import NetworkChains

__all__ = ["UndirectedDyadView", "DirectedDyadView", "dyad_view", "gather_rows", "view_of",
           "in_both", "has_bit", "COMPARE_MAX_DEGREE"]


def _safe(nodes, n):
    """Node ids with the padding ``-1`` mapped to ``n`` (an always-unmarked entry)."""
    return jnp.where(nodes >= 0, nodes, n)


#: largest degree capacity D for which set membership is tested by comparing with every
#: slot (D² compares per partner sum, no n-sized buffer); above it, by marks in an
#: (n + 1,) array (one scatter, then one gather per test). Measured with edges + gwesp,
#: 32 chains, 2-core CPU: compares are 2× faster at D = 24 and 1.3× at D = 32, marks
#: 5× faster at D = 48 (n = 1,461 and 10⁴ alike)
COMPARE_MAX_DEGREE = 32


def _membership(row, n):
    """``contains(ids) -> bool array``: which of ``ids`` (any shape; ``-1`` = none) are
    in the padded list ``row``."""
    if row.shape[0] <= COMPARE_MAX_DEGREE:
        return lambda ids: jnp.any((ids[..., None] == row) & (ids[..., None] >= 0), -1)
    marks = jnp.zeros(n + 1, bool).at[_safe(row, n)].set(row >= 0)
    return lambda ids: marks[_safe(ids, n)]


def in_both(a, b):
    """Which entries of the padded list ``a`` are also in ``b`` (D², no n-sized buffer;
    padding never)."""
    return jnp.any((a[:, None] == b[None, :]) & (a[:, None] >= 0), -1)


def _num_common(a, b):
    """|a ∩ b| of two padded lists without repeats."""
    return jnp.sum(in_both(a, b))


def has_bit(bit_row, ids):
    """Which of ``ids`` (any shape; ``-1`` = none) are set in the bit set ``bit_row``
    (W,) uint32."""
    safe = jnp.maximum(ids, 0)
    word = bit_row[safe >> 5] >> (safe & 31).astype(jnp.uint32)
    return ((word & 1) == 1) & (ids >= 0)


def _popcount(a, b):
    """|a ∩ b| of bit sets (..., W): summed over the last axis."""
    return jnp.sum(jax.lax.population_count(a & b), -1)


class UndirectedDyadView:
    """One dyad (i, j) of an undirected network, counts taken with the pair off.

    Attributes: ``i``, ``j`` (int32), ``value`` y_ij, ``degree_i``, ``degree_j``,
    ``shared`` = #(N(i) ∩ N(j)) (float); :meth:`partner_terms` for gwesp.
    """

    def __init__(self, lists, rows, i, j, dtype, bits=None):
        self._lists, self._bits = lists, bits
        row_i, row_j = rows["lists"][0, :, 0], rows["lists"][1, :, 0]
        degree_i, degree_j = rows["degree"][0], rows["degree"][1]
        self._row_i, self._row_j = row_i, row_j
        on = jnp.any(row_i == j)
        self.i, self.j = i, j
        self.value = on.astype(dtype)
        self.degree_i = (degree_i - on).astype(dtype)
        self.degree_j = (degree_j - on).astype(dtype)
        if bits is None:
            self.shared = _num_common(row_i, row_j).astype(dtype)
        else:
            self._bits_i, self._bits_j = rows["bits"][0], rows["bits"][1]
            self.shared = _popcount(self._bits_i, self._bits_j).astype(dtype)

    def partner_terms(self, r):
        """Σ_{k ∈ N(i)∩N(j)} (r^{sp(i,k)} + r^{sp(j,k)}), sp = shared partners with the
        pair (i, j) off (gwesp's change statistic is e^α(1 − r^shared) + this)."""
        v = self.value
        if self._bits is not None:  # popcounts of the neighbours' bit rows
            common = has_bit(self._bits_i, self._row_j)
            rows_k = self._bits[jnp.maximum(self._row_j, 0)]  # (D, W): N(k)
            sp_i = _popcount(rows_k, self._bits_i) - v
            sp_j = _popcount(rows_k, self._bits_j) - v
            return jnp.sum(jnp.where(common, r ** sp_i + r ** sp_j, 0))
        n = self._lists.shape[0]
        in_i, in_j = _membership(self._row_i, n), _membership(self._row_j, n)
        common = in_i(self._row_j)  # (D,): k = row_j[s] is also i's neighbour
        rows_k = self._lists[jnp.maximum(self._row_j, 0), :, 0]  # (D, D): N(k)
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

    def __init__(self, out_lists, in_lists, rows, i, j, dtype, bits=None, in_bits=None):
        self._out, self._in = out_lists, in_lists
        self._bits, self._in_bits = bits, in_bits
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
        if bits is None:
            common = _num_common
            sets = out_i, in_i, out_j, in_j
        else:
            common = _popcount
            sets = rows["bits"][0], rows["in_bits"][0], rows["bits"][1], rows["in_bits"][1]
            self._bit_rows = sets
        s_out_i, s_in_i, s_out_j, s_in_j = sets
        self.two_paths = common(s_out_i, s_in_j).astype(dtype)
        self.cycles = common(s_in_i, s_out_j).astype(dtype)
        self.shared_out = common(s_out_i, s_out_j).astype(dtype)
        self.shared_in = common(s_in_i, s_in_j).astype(dtype)

    def otp_partner_terms(self, r):
        """Σ_{b ∈ out(i)∩out(j)} r^{tp(i,b)} + Σ_{a ∈ in(i)∩in(j)} r^{tp(a,j)},
        tp(x, y) = #(out(x) ∩ in(y)) with the tie i -> j off (directed gwesp, OTP:
        e^α(1 − r^two_paths) + this)."""
        out_i, in_i, out_j, in_j = self._rows
        n, v = self._out.shape[0], self.value
        if self._bits is not None:  # popcounts of the bit rows of b and a
            bits_out_i, _, _, bits_in_j = self._bit_rows
            common_b = has_bit(bits_out_i, out_j)
            tp_b = _popcount(self._in_bits[jnp.maximum(out_j, 0)], bits_out_i) - v
            common_a = has_bit(bits_in_j, in_i)
            tp_a = _popcount(self._bits[jnp.maximum(in_i, 0)], bits_in_j) - v
            return (jnp.sum(jnp.where(common_b, r ** tp_b, 0))
                    + jnp.sum(jnp.where(common_a, r ** tp_a, 0)))
        in_out_i, in_in_j = _membership(out_i, n), _membership(in_j, n)
        # b ∈ out(j) also in out(i); tp(i, b) = #(out(i) ∩ in(b)), less j when i -> j is on
        common_b = in_out_i(out_j)
        tp_b = jnp.sum(in_out_i(self._in[jnp.maximum(out_j, 0), :, 0]), -1) - v
        # a ∈ in(i) also in in(j); tp(a, j) = #(out(a) ∩ in(j)), less i when i -> j is on
        common_a = in_in_j(in_i)
        tp_a = jnp.sum(in_in_j(self._out[jnp.maximum(in_i, 0), :, 0]), -1) - v
        return (jnp.sum(jnp.where(common_b, r ** tp_b, 0))
                + jnp.sum(jnp.where(common_a, r ** tp_a, 0)))


def gather_rows(state, i, j, a, b):
    """The rows a proposal reads, one gather per array: lists (and degrees) of i and j,
    and those of the edge (a, b) that a removal would move. Undirected: ``lists`` rows
    of i, j, a, b; directed: out-lists of i, j, a and in-lists of i, j, b."""
    pair = jnp.stack([i, j])
    bits = {} if state.bits is None else {"bits": state.bits[pair]}
    if state.in_lists is None:
        return {"lists": state.lists[jnp.stack([i, j, a, b])],
                "degree": state.degree[pair], **bits}
    if state.in_bits is not None:
        bits["in_bits"] = state.in_bits[pair]
    return {"lists": state.lists[jnp.stack([i, j, a])],
            "in_lists": state.in_lists[jnp.stack([i, j, b])],
            "degree": state.degree[pair], "in_degree": state.in_degree[pair], **bits}


def view_of(state, rows, i, j):
    """The view of dyad (i, j) of one chain's state (no chain axis) from its rows."""
    dtype = state.statistics.dtype
    if state.in_lists is None:
        return UndirectedDyadView(state.lists, rows, i, j, dtype, state.bits)
    return DirectedDyadView(state.lists, state.in_lists, rows, i, j, dtype, state.bits,
                            state.in_bits)


def dyad_view(state: NetworkChains, i: int, j: int, chain: int = 0):
    """The view that ``change_fn`` gets for dyad (i, j) (tie i -> j) of one chain: for
    checking a change function by hand."""
    one = jax.tree.map(lambda x: x[chain], state)
    i, j = jnp.asarray(i, jnp.int32), jnp.asarray(j, jnp.int32)
    return view_of(one, gather_rows(one, i, j, i, j), i, j)
