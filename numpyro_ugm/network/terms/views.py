"""Dyad views: what the change statistics of ERGM terms read about some dyads of the
current graph, computed from the dense dyad variables ``y``.

Every term's change statistic (:mod:`numpyro_ugm.network.terms.structural`,
:mod:`numpyro_ugm.network.terms.covariates`) is written once against these quantities;
the dense block-Gibbs path builds them here (from the adjacency rows of a block's nodes,
or from matrix products for every dyad at once) and the sparse Metropolis–Hastings
sampler (:mod:`numpyro_ugm.network.sampling.tnt`) from neighbour lists
(:mod:`numpyro_ugm.network.sampling.views`). All counts are taken with the dyad
itself **off**.

Both kinds: ``i``, ``j`` (the dyad's nodes; directed: the tie i → j), ``value`` (y_ij).

Undirected: ``degree_i``, ``degree_j``; ``shared`` = #(N(i) ∩ N(j));
``partner_terms(r)`` = Σ_{k ∈ N(i)∩N(j)} (r^{sp(i,k)} + r^{sp(j,k)}) (gwesp).

Directed: ``reverse`` (y_ji); ``out_i``, ``in_i``, ``out_j``, ``in_j`` (degrees);
``two_paths`` = #(out(i) ∩ in(j)), ``cycles`` = #(in(i) ∩ out(j)),
``shared_out`` = #(out(i) ∩ out(j)), ``shared_in`` = #(in(i) ∩ in(j));
``otp_partner_terms(r)`` = Σ_{b ∈ out(i)∩out(j)} r^{tp(i,b)} + Σ_{a ∈ in(i)∩in(j)} r^{tp(a,j)}
with tp(x, y) = #(out(x) ∩ in(y)) (directed gwesp on outgoing two-paths).
"""

import types

import jax
import jax.numpy as jnp

from ...conditionals import batch_aligned_zero
from ..graphs import adjacency, pair_tables, with_zero_pair

__all__ = ["DyadView", "all_dyads_view", "block_view", "PARTNER_CHUNK"]

#: common neighbours whose adjacency rows the partner terms gather at a time
PARTNER_CHUNK = 8


class DyadView(types.SimpleNamespace):
    """The quantities of some dyads (see the module docstring); the partner sums are
    methods, computed only for the terms that call them."""

    def partner_terms(self, r):
        return self._partner_terms(r)

    def otp_partner_terms(self, r):
        return self._otp_partner_terms(r)


def _sum_over_common(common, rows_of, term):
    """Σ_k common_k · term(rows) over the nodes k with common_k > 0 (one dyad), whose
    rows ``rows_of(ks)`` (chunk, n) are gathered :data:`PARTNER_CHUNK` at a time."""
    n = common.shape[0]
    chunk = PARTNER_CHUNK
    width = -(-n // chunk) * chunk
    count = jnp.sum(common > 0)
    order = jnp.nonzero(common > 0, size=width, fill_value=0)[0]

    def body(carry):
        start, total = carry
        ks = jax.lax.dynamic_slice(order, (start,), (chunk,))
        weight = jnp.where(start + jnp.arange(chunk) < count, common[ks], 0)
        return start + chunk, total + jnp.sum(weight * term(rows_of(ks)))

    zero = jnp.zeros((), common.dtype)
    return jax.lax.while_loop(lambda c: c[0] < count, body, (0, zero))[1]


def block_view(y, n, idx, directed=False) -> DyadView:
    """:class:`DyadView` of the dyads ``idx`` (b,) of one graph ``y`` (E,), from the
    adjacency rows (and, directed, columns) of their nodes: O(b·n); the partner terms
    also gather the rows of the dyad's c common neighbours, O(b·n·(c + 1)) (under
    ``vmap`` the largest c of the batch)."""
    pair, nodes_i, nodes_j = (jnp.asarray(t) for t in pair_tables(n, directed))
    padded = with_zero_pair(y)
    i, j = nodes_i[idx], nodes_j[idx]
    # static idx: the tables below are constants; batched (with y, under vmap) by the
    # zero, their gathers from y are chain-major
    zero = batch_aligned_zero(y)
    value = padded[idx + zero]
    if not directed:
        row_i, row_j = padded[pair[i] + zero], padded[pair[j] + zero]  # (b, n)

        def partner_terms(r):
            def one(row_i, row_j, v):
                return _sum_over_common(
                    row_i * row_j, lambda ks: padded[pair[ks]],
                    lambda rows: r ** (rows @ row_i - v) + r ** (rows @ row_j - v))
            return jax.vmap(one)(row_i, row_j, value)

        return DyadView(i=i, j=j, value=value, degree_i=jnp.sum(row_i, -1) - value,
                        degree_j=jnp.sum(row_j, -1) - value,
                        shared=jnp.sum(row_i * row_j, -1), _partner_terms=partner_terms)
    pair_t = pair.T
    out_i, in_i = padded[pair[i] + zero], padded[pair_t[i] + zero]
    out_j, in_j = padded[pair[j] + zero], padded[pair_t[j] + zero]

    def otp_partner_terms(r):
        def one(out_i, in_i, out_j, in_j, v):
            # b ∈ out(i)∩out(j): tp(i, b) = out(i)·in(b), less the path i→j→b;
            # a ∈ in(i)∩in(j): tp(a, j) = out(a)·in(j), less the path a→i→j
            via_b = _sum_over_common(out_i * out_j, lambda ks: padded[pair_t[ks]],
                                     lambda cols: r ** (cols @ out_i - v))
            via_a = _sum_over_common(in_i * in_j, lambda ks: padded[pair[ks]],
                                     lambda rows: r ** (rows @ in_j - v))
            return via_b + via_a
        return jax.vmap(one)(out_i, in_i, out_j, in_j, value)

    return DyadView(i=i, j=j, value=value, reverse=padded[pair[j, i] + zero],
                    out_i=jnp.sum(out_i, -1) - value, in_i=jnp.sum(in_i, -1),
                    out_j=jnp.sum(out_j, -1), in_j=jnp.sum(in_j, -1) - value,
                    two_paths=jnp.sum(out_i * in_j, -1), cycles=jnp.sum(in_i * out_j, -1),
                    shared_out=jnp.sum(out_i * out_j, -1),
                    shared_in=jnp.sum(in_i * in_j, -1), _otp_partner_terms=otp_partner_terms)


def all_dyads_view(y, n, directed=False) -> DyadView:
    """:class:`DyadView` of every dyad of one graph ``y`` (E,), from matrix products of
    the adjacency: O(n²) memory, O(n³) work."""
    _, i, j = pair_tables(n, directed)
    A = adjacency(y, n, directed)
    if not directed:
        d = jnp.sum(A, -1)
        sp = A @ A

        def partner_terms(r):
            # B = A ∘ r^{sp}; (B A)_ij + (B A)_ji sums r^{sp_ik} (resp. r^{sp_jk}) over
            # the common neighbours k; with y_ij on, each sp counts the pair once too many
            BA = (A * r ** sp) @ A
            return (BA[i, j] + BA[j, i]) * r ** (-y)

        return DyadView(i=jnp.asarray(i), j=jnp.asarray(j), value=y, degree_i=d[i] - y,
                        degree_j=d[j] - y, shared=sp[i, j], _partner_terms=partner_terms)
    out, inn = jnp.sum(A, -1), jnp.sum(A, -2)
    tp = A @ A

    def otp_partner_terms(r):
        B = A * r ** tp
        return ((B @ A.T)[i, j] + (A.T @ B)[i, j]) * r ** (-y)

    return DyadView(i=jnp.asarray(i), j=jnp.asarray(j), value=y, reverse=A[j, i],
                    out_i=out[i] - y, in_i=inn[i], out_j=out[j], in_j=inn[j] - y,
                    two_paths=tp[i, j], cycles=tp[j, i], shared_out=(A @ A.T)[i, j],
                    shared_in=(A.T @ A)[i, j], _otp_partner_terms=otp_partner_terms)
