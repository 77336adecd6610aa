"""Graph statistics s(y) of an exponential random graph model and their change
statistics Δ_e s(y) = s(y with e on) − s(y with e off).

The statistics (:data:`STATISTICS`) are functions of the symmetric adjacency A built
from the edge variables (:func:`~numpyro_ugm.models.graphs.adjacency`). They are written
**multilinearly** where they can be — each term a product of distinct edge variables
(2-stars as ((Σ_j y_ij)² − Σ_j y_ij²)/2 per node, triangles as trace(A³)/6, ...) — so
their gradient is the change statistics too; ``gwesp`` and ``gwdegree`` hold
(1 − e^{−α})^k for counts k and are not multilinear.

The samplers never differentiate the whole graph's statistics: the model's factor gives
its own conditionals, the change statistics of a block of pairs computed from the
adjacency rows of the block's nodes (degrees, and shared partners A_i·A_j): O(n) per pair
for edges, twostars, threestars, triangles, isolates and gwdegree, so O(n²) for a block
that is a perfect matching and O(n³) per sweep. ``gwesp`` also needs the shared partners
of the pair's neighbouring edges: it gathers the rows of the pair's c common neighbours,
O(n·(c + 1)) per pair (under ``vmap`` over chains, c is the largest in the batch), so a
sweep of a sparse graph costs O(n³) too, with one pair per update. All pairs at once
(:func:`change_statistics`, the MPLE) come from matrix products: O(n³) work, O(n²)
memory.
"""

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .graphs import adjacency, num_nodes_of, pair_tables, with_zero_pair

__all__ = ["STATISTICS", "DEFAULT_DECAY", "PARTNER_CHUNK", "ergm_statistics",
           "change_statistics", "parse_statistics", "statistics_of", "change_statistics_of",
           "is_multilinear"]

#: default decay α of the geometrically weighted statistics (statnet's ``fixed=TRUE``)
DEFAULT_DECAY = 0.5

# --- statistics s(y) ------------------------------------------------------------------
# Each is a function of the adjacency A (..., n, n) built from y and the decay. Those
# marked multilinear are sums of products of distinct edge variables as written, so a
# gradient in y gives their change statistics too (the structure analysis relies on it).


def _edges(A, decay):
    return jnp.sum(A, axis=(-2, -1)) / 2


def _twostars(A, decay):
    # Σ_i C(d_i, 2) written multilinearly: ((Σ_j A_ij)² − Σ_j A_ij²) / 2 per node
    d = jnp.sum(A, -1)
    return jnp.sum(d * d - jnp.sum(A * A, -1), -1) / 2


def _threestars(A, decay):
    # Σ_i C(d_i, 3) as the elementary symmetric polynomial e3 = (p1³ − 3 p1 p2 + 2 p3)/6
    p1, p2, p3 = (jnp.sum(A ** k, -1) for k in (1, 2, 3))
    return jnp.sum(p1 ** 3 - 3 * p1 * p2 + 2 * p3, -1) / 6


def _triangles(A, decay):
    # trace(A³)/6: with a zero diagonal every term A_ab A_bc A_ca has three distinct
    # pairs, so this is a product of distinct edges (O(n³) by one matrix product)
    return jnp.sum((A @ A) * A, axis=(-2, -1)) / 6


def _isolates(A, decay):
    # Π_j (1 − A_ij) is a product of distinct edges (the diagonal contributes 1)
    return jnp.sum(jnp.prod(1 - A, -1), -1)


def _gwesp(A, decay):
    # e^α Σ_{i<j} y_ij (1 − (1 − e^{−α})^{sp_ij}), sp_ij = shared partners (statnet's
    # gwesp(decay, fixed=TRUE)); not multilinear
    r = -jnp.expm1(-decay)
    return jnp.exp(decay) * jnp.sum(A * (1 - r ** (A @ A)), axis=(-2, -1)) / 2


def _gwdegree(A, decay):
    # e^α Σ_i (1 − (1 − e^{−α})^{d_i}) (statnet's gwdegree(decay, fixed=TRUE));
    # not multilinear
    r = -jnp.expm1(-decay)
    return jnp.exp(decay) * jnp.sum(1 - r ** jnp.sum(A, -1), -1)


# --- change statistics Δ_e s(y) = s(y, e on) − s(y, e off) ----------------------------


class _Dyads:
    """What the change statistics of some dyads (i, j) need, at the current graph:
    ``value`` y_ij, ``degree_i`` / ``degree_j`` the degrees of i and j without the pair,
    ``shared`` the number of shared partners of i and j, and, for gwesp,
    :meth:`partner_terms`. Built by :func:`_all_dyads` (every pair, from matrix products)
    or :func:`_block_dyads` (a block, from the adjacency rows of its nodes)."""

    def __init__(self, value, degree_i, degree_j, shared, partner_terms):
        self.value, self.degree_i, self.degree_j = value, degree_i, degree_j
        self.shared, self._partner_terms = shared, partner_terms

    def partner_terms(self, r):
        """Σ_k A_ik A_jk (r^{sp_ik} + r^{sp_jk}), the shared partners' counts sp of the
        pairs (i, k) and (j, k) taken with the pair (i, j) off."""
        return self._partner_terms(r)


def _all_dyads(y, n):
    """:class:`_Dyads` of every pair of the graph ``y`` (E,): O(n²) memory, O(n³) work
    (A @ A, and one more product for gwesp)."""
    _, i, j = pair_tables(n)
    A = adjacency(y, n)
    d = jnp.sum(A, -1)
    sp = A @ A

    def partner_terms(r):
        # B = A ∘ r^{sp}; (B A)_ij + (B A)_ji sums r^{sp_ik} (resp. r^{sp_jk}) over the
        # common neighbours k; with y_ij on, each sp counts the pair once too many
        BA = ((A * r ** sp) @ A)
        return (BA[i, j] + BA[j, i]) * r ** (-y)

    return _Dyads(y, d[i] - y, d[j] - y, sp[i, j], partner_terms)


#: common neighbours whose adjacency rows gwesp's change statistic gathers at a time
PARTNER_CHUNK = 8


def _block_dyads(y, n, idx):
    """:class:`_Dyads` of the pairs ``idx`` (b,) of the graph ``y`` (E,), from the
    adjacency rows of their nodes: O(b·n). gwesp's partner terms also gather the rows
    of the pair's common neighbours, :data:`PARTNER_CHUNK` at a time: O(b·n·(c + 1))
    for c common neighbours (under ``vmap`` the largest c of the batch), instead of
    O(n²) for the whole adjacency."""
    pair, nodes_i, nodes_j = pair_tables(n)
    pair = jnp.asarray(pair)
    padded = with_zero_pair(y)
    i, j = jnp.asarray(nodes_i)[idx], jnp.asarray(nodes_j)[idx]
    row_i, row_j = padded[pair[i]], padded[pair[j]]  # (b, n)
    value = padded[idx]

    def partner_terms(r):
        chunk = PARTNER_CHUNK
        width = -(-n // chunk) * chunk

        def one(row_i, row_j, v):
            common = row_i * row_j
            count = jnp.sum(common > 0)
            order = jnp.nonzero(common > 0, size=width, fill_value=0)[0]

            def body(carry):
                start, total = carry
                ks = jax.lax.dynamic_slice(order, (start,), (chunk,))
                weight = jnp.where(start + jnp.arange(chunk) < count, common[ks], 0)
                rows = padded[pair[ks]]  # (chunk, n): the common neighbours' rows
                sp_i, sp_j = rows @ row_i - v, rows @ row_j - v  # pair (i, j) off
                return start + chunk, total + jnp.sum(weight * (r ** sp_i + r ** sp_j))

            zero = jnp.zeros((), row_i.dtype)
            return jax.lax.while_loop(lambda c: c[0] < count, body, (0, zero))[1]

        return jax.vmap(one)(row_i, row_j, value)

    return _Dyads(value, jnp.sum(row_i, -1) - value, jnp.sum(row_j, -1) - value,
                  jnp.sum(row_i * row_j, -1), partner_terms)


def _change_edges(g, decay):
    return jnp.ones_like(g.value)


def _change_twostars(g, decay):
    return g.degree_i + g.degree_j


def _change_threestars(g, decay):
    return (g.degree_i * (g.degree_i - 1) + g.degree_j * (g.degree_j - 1)) / 2


def _change_triangles(g, decay):
    return g.shared


def _change_isolates(g, decay):
    return -((g.degree_i == 0).astype(g.value.dtype) + (g.degree_j == 0))


def _change_gwesp(g, decay):
    # the pair's own term e^α (1 − r^{sp_ij}), and each common neighbour k gives the
    # pairs (i, k), (j, k) one more shared partner: e^α (r^s − r^{s+1}) = r^s each
    r = -jnp.expm1(-decay)
    return jnp.exp(decay) * (1 - r ** g.shared) + g.partner_terms(r)


def _change_gwdegree(g, decay):
    # a node of degree d (without the pair) gains e^α (r^d − r^{d+1}) = r^d
    r = -jnp.expm1(-decay)
    return r ** g.degree_i + r ** g.degree_j


#: name -> (statistic of A, its change statistics, multilinear as written, uses a decay)
_STATISTICS = {
    "edges": (_edges, _change_edges, True, False),
    "twostars": (_twostars, _change_twostars, True, False),
    "threestars": (_threestars, _change_threestars, True, False),
    "triangles": (_triangles, _change_triangles, True, False),
    "isolates": (_isolates, _change_isolates, True, False),
    "gwesp": (_gwesp, _change_gwesp, False, True),
    "gwdegree": (_gwdegree, _change_gwdegree, False, True),
}
_ALIASES = {"edge": "edges", "kstar2": "twostars", "2-stars": "twostars",
            "2stars": "twostars", "kstar3": "threestars", "3-stars": "threestars",
            "triangle": "triangles", "isolate": "isolates"}

#: Names of the statistics :func:`~numpyro_ugm.models.ergm` knows (aliases:
#: ``triangle``, ``kstar2``, ``kstar3``, ``edge``, ``isolate``). ``gwesp`` and
#: ``gwdegree`` take a decay α > 0, either ``decay=`` or as a pair ``("gwesp", α)``.
STATISTICS = tuple(_STATISTICS)


def parse_statistics(statistics: Sequence | str, decay: float) -> tuple:
    """Normalize ``statistics`` (as :func:`~numpyro_ugm.models.ergm` takes them) to a
    tuple of (canonical name, decay or None); errors name the statistic at fault."""
    if isinstance(statistics, str):
        statistics = (statistics,)
    out = []
    for entry in statistics:
        if isinstance(entry, (tuple, list)):
            if len(entry) != 2:
                raise ValueError(f"ergm: a statistic given as a pair must be (name, decay), "
                                 f"got {entry!r}")
            name, value = entry
        else:
            name, value = entry, None
        if not isinstance(name, str):
            raise TypeError(f"ergm: statistic names are strings, got {name!r}")
        key = _ALIASES.get(name.lower(), name.lower())
        if key not in _STATISTICS:
            raise ValueError(f"ergm: unknown statistic {name!r}; known: {list(STATISTICS)}")
        uses_decay = _STATISTICS[key][3]
        if value is not None and not uses_decay:
            raise ValueError(f"ergm: statistic {name!r} takes no decay, got {value!r}")
        if uses_decay:
            value = float(decay if value is None else value)
            if not value > 0:
                raise ValueError(f"ergm: the decay of {name!r} must be > 0, got {value}")
        out.append((key, value))
    if not out:
        raise ValueError("ergm: give at least one statistic")
    if len(set(out)) < len(out):
        raise ValueError(f"ergm: a statistic is repeated in {statistics!r}")
    return tuple(out)


def is_multilinear(parsed: tuple) -> bool:
    """Whether the statistics ``parsed`` (of :func:`parse_statistics`) are all
    multilinear as written (then a gradient gives their change statistics)."""
    return all(_STATISTICS[name][2] for name, _ in parsed)


def statistics_of(y: jax.Array, n: int, parsed: tuple) -> jax.Array:
    """s(y) (..., num_statistics) from edge variables (..., E)."""
    A = adjacency(y, n)
    return jnp.stack([_STATISTICS[name][0](A, value) for name, value in parsed], axis=-1)


def change_statistics_of(y: jax.Array, n: int, parsed: tuple,
                         idx: jax.Array | None = None) -> jax.Array:
    """Δ s (b, num_statistics) of the pairs ``idx`` (all pairs if None) of one graph
    ``y`` (E,)."""
    g = _all_dyads(y, n) if idx is None else _block_dyads(y, n, idx)
    return jnp.stack([_STATISTICS[name][1](g, value) for name, value in parsed], axis=-1)


def ergm_statistics(edges: ArrayLike, statistics: Sequence = ("edges", "triangles"), *,
                    decay: float = DEFAULT_DECAY) -> jax.Array:
    """Graph statistics s(y) of edge data.

    Parameters
    ----------
    edges : array (..., n(n−1)/2)
        Edge indicators (0/1), as :func:`~numpyro_ugm.models.graph_to_edges` gives them;
        any leading axes.
    statistics : sequence of str or (str, float)
        As in :func:`~numpyro_ugm.models.ergm`.
    decay : float
        Decay α of ``gwesp`` / ``gwdegree``.

    Returns
    -------
    jax.Array (..., num_statistics)
        In the order of ``statistics`` (floating point).
    """
    parsed = parse_statistics(statistics, decay)
    y = jnp.asarray(edges)
    y = y.astype(jnp.result_type(float)) if not jnp.issubdtype(y.dtype, jnp.floating) else y
    n = num_nodes_of(y.shape[-1])
    return statistics_of(y, n, parsed)


def change_statistics(edges: ArrayLike, statistics: Sequence = ("edges", "triangles"), *,
                      decay: float = DEFAULT_DECAY) -> jax.Array:
    """Change statistics Δ_e s(y) = s(y with e on) − s(y with e off), for every pair e.

    The conditional log-odds of edge e given the rest is θ·Δ_e s(y), so the MPLE is the
    logistic regression of the observed y_e on these rows
    (:func:`~numpyro_ugm.models.mple`). Computed as the samplers compute them (O(n³) work
    and O(n²) memory per graph, from matrix products of the adjacency).

    Parameters
    ----------
    edges : array (..., n(n−1)/2)
        Edge indicators (0/1).
    statistics, decay
        As in :func:`ergm_statistics`.

    Returns
    -------
    jax.Array (..., n(n−1)/2, num_statistics)
    """
    parsed = parse_statistics(statistics, decay)
    y = jnp.asarray(edges, jnp.result_type(float))
    n = num_nodes_of(y.shape[-1])
    flat = y.reshape((-1, y.shape[-1]))
    out = jax.vmap(lambda g: change_statistics_of(g, n, parsed))(flat)
    return out.reshape(y.shape + (len(parsed),))
