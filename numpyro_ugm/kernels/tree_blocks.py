"""Tree-block Gibbs: whole forests and strips of the interaction graph drawn exactly
given the rest (Hamze & de Freitas, "From fields to trees", UAI 2004).

The blocks come from the graph the structure analysis found
(:func:`~numpyro_ugm.structure.forests.forest_covers`): a forest is drawn whole; other
graphs are covered by the paths of each edge stride (a grid's even rows, odd rows, even
columns, odd columns), so that every edge lies inside some block. A block's components
are conditionally independent trees given the rest: each is drawn by forward filtering
and backward sampling on its conditional — the unary tables of its variables plus the
pairwise tables of the edges leaving the block at the other ends' current values, and
the pairwise tables of its own edges — with components of one shape (the rows of a
grid) drawn together. Paths go through :func:`scan_paths` (or :func:`sample_paths`:
prefix products, log L dependent steps for a path of L variables), other trees through
their elimination plan (:func:`~numpyro_ugm.structure.contraction.sample_labels`,
vmapped). For a multilinear potential the fields given the rest come from one gradient
at the state with the block at the origin (as Gibbs's conditionals do), otherwise from
the tables of the block's boundary edges.

The unary and pairwise log tables are read off the log-density itself
(:func:`~numpyro_ugm.structure.tables.tabulate`, from derivatives at the origin for
multilinear potentials): they depend on the parameters, not the state, so by default
they are computed when a chain state is made (``init``: a new log-density, a new β, new
parameters — every caller initializes or refreshes its states on a new log-density) and
kept in the state; ``cache_tables=False`` recomputes them at every step instead (once for
all chains: they do not depend on the chain).
"""

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..runtime.checks import check_count
from ..conditionals import conditional_logits
from ..structure import contraction
from ..structure.elimination import MAX_TABLE_SIZE, plan_elimination
from ..structure.forests import block_groups, forest_covers, has_triangle
from ..structure.graph import unique_pairs
from ..structure.tables import (decomposition_error, labels_to_state, num_values_of,
                                state_to_labels, tabulate)
from .base import Kernel, KernelInfo, KernelSpec

__all__ = ["tree_gibbs", "TreeGibbsState", "sample_paths", "scan_paths"]

#: relative error above which a potential is not a sum of its tables (see ``check``)
DECOMPOSITION_TOLERANCE = 1e-4


class TreeGibbsState(NamedTuple):
    """One chain: its position and (``cache_tables``) the log tables of the log-density
    it was made with, per block update: its variables' unary tables, their boundary
    edges' and its own edges' pairwise tables."""

    position: dict
    tables: tuple | None = None


class _Layout(NamedTuple):
    """What a tree-block kernel precomputes on the host: the model's domains, edges,
    number of values and multilinearity, and per cover, per block, the ``(plan,
    group)`` pairs of its component shapes."""

    domains: dict
    edges: np.ndarray
    num_values: int
    multilinear: bool
    covers: list
    probes: np.ndarray | None


def _layout(target, max_table_size) -> _Layout:
    """The blocks of ``target``; errors naming the sites for a model they do not fit."""
    structure, domains = target.interaction_graph(), target.state_sites
    if target.real_sites or structure.moved:
        raise ValueError(f"tree_gibbs: the sites {list(target.real_sites)} are real; "
                         "tree blocks are for finite sites (use gibbs())")
    if structure.edges is None:
        raise ValueError(f"tree_gibbs: the interaction graph of sites {list(domains)} is "
                         "unknown (a declared colouring, on a target without its model); "
                         "tree blocks need the graph the structure analysis finds (use "
                         "gibbs())")
    if tuple(structure.sites) != tuple(domains):
        raise ValueError(f"tree_gibbs: the structure's sites {list(structure.sites)} are "
                         f"not the state sites {list(domains)}")
    n = structure.num_variables
    edges = unique_pairs(structure.edges) if len(structure.edges) else np.zeros((0, 2), int)
    k = int(num_values_of(domains).max())
    plans, covers = {}, []
    for cover in forest_covers(n, edges):
        blocks = []
        for components in cover:
            pairs = []
            for group in block_groups(n, edges, components):
                shape = (group.variables.shape[1], group.edges.tobytes())
                if shape not in plans:
                    plans[shape] = plan_elimination(group.variables.shape[1], k, group.edges,
                                                    max_table_size=max_table_size,
                                                    owner="tree_gibbs")
                pairs.append((plans[shape], group))
            blocks.append(pairs)
        covers.append(blocks)
    sizes = num_values_of(domains)
    probes = ((np.random.default_rng(0).random((4, n)) * sizes).astype(np.int32)
              if has_triangle(n, edges) else None)
    return _Layout(dict(domains), edges, k, bool(structure.multilinear), covers, probes)


def _tables(layout, logdensity_fn, dtype):
    """The :class:`~numpyro_ugm.structure.tables.Tables` of ``logdensity_fn`` and its
    oriented pairwise tables (2E + 1, K, K): each edge's, then transposed, then zeros."""
    t = tabulate(logdensity_fn, layout.domains, layout.edges, layout.multilinear,
                 layout.num_values, dtype)
    k = layout.num_values
    oriented = jnp.concatenate([t.pairwise, jnp.swapaxes(t.pairwise, 1, 2),
                                jnp.zeros((1, k, k), t.pairwise.dtype)])
    return t, oriented


def _raise_if_not_pairwise(error, sites):
    worst = float(np.max(np.asarray(error)))
    if not worst <= DECOMPOSITION_TOLERANCE:
        raise ValueError(
            f"tree_gibbs: the log-potential over sites {sites} is not a sum of one- and "
            f"two-variable terms over its interaction graph (at a random state its "
            f"tables miss it by {worst:.2e} of its size): it has terms over three or "
            "more variables at once, which tree blocks do not handle; use gibbs()")


def _check(layout, logdensity_fn, tables):
    """On a graph with triangles (where a term over three variables could hide), raise
    from the host if ``tables`` do not reproduce ``logdensity_fn`` at the layout's
    probe states (fixed, so the check runs once for all chains)."""
    if layout.probes is None:
        return
    error, scale = decomposition_error(logdensity_fn, tables, layout.domains, layout.edges,
                                       jnp.asarray(layout.probes))
    jax.debug.callback(functools.partial(_raise_if_not_pairwise,
                                         sites=list(layout.domains)),
                       jnp.max(error / (1.0 + scale)))


#: up to this many values, small products and table lookups are written out as
#: broadcast multiply-adds and selects (faster than dot products and gathers on a CPU)
SMALL_K = 4


def _scaled_product(a, b):
    """Matrix products of stacks of non-negative (..., K, K), each divided by its
    largest entry (the prefix products of :func:`sample_paths` are needed up to a
    positive factor; the scaling keeps them in range)."""
    k = a.shape[-1]
    if k <= SMALL_K:
        c = sum(a[..., :, j, None] * b[..., None, j, :] for j in range(k))
    else:
        c = jnp.einsum("...ij,...jk->...ik", a, b)
    top = jnp.max(c, axis=(-2, -1), keepdims=True)
    return c / jnp.where(top > 0, top, 1)


def _weights(log_values, axes):
    """exp(log_values) scaled by its largest entry over ``axes``."""
    top = jnp.max(log_values, axis=axes, keepdims=True)
    return jnp.exp(log_values - jnp.where(jnp.isfinite(top), top, 0))


def _draw(uniforms, weights):
    """Labels by inversion of the non-negative ``weights`` (..., K) at ``uniforms``."""
    if weights.shape[-1] == 2:
        return (uniforms * (weights[..., 0] + weights[..., 1]) >= weights[..., 0]).astype(
            jnp.int32)
    cumulative = jnp.cumsum(weights, axis=-1)
    u = uniforms * cumulative[..., -1]
    return jnp.sum(cumulative[..., :-1] <= u[..., None], axis=-1, dtype=jnp.int32)


def _apply(maps, x):
    """``maps[..., x]``: maps (..., K) of values to values at ``x`` (..., broadcast
    against ``maps.shape[:-1]``); a select for two values."""
    if maps.shape[-1] == 2:
        return jnp.where(x == 0, maps[..., 0], maps[..., 1])
    index = jnp.broadcast_to(x[..., None], maps.shape[:-1] + (1,))
    return jnp.take_along_axis(maps, index, -1)[..., 0]


def _compose(inner, outer):
    """outer ∘ inner of stacks of maps (..., K)."""
    if inner.shape[-1] == 2:
        return jnp.where(inner == 0, outer[..., :1], outer[..., 1:])
    return jnp.take_along_axis(outer, inner, -1)


def sample_paths(unary, weights, uniforms):
    """Exact draws of chain models x_0 − x_1 − … − x_{L−1}, in parallel over positions.

    Forward filtering: α_t ∝ α_0 M_1 ⋯ M_t with M_t = weights[t − 1] · exp(unary[t])
    are prefix products (``associative_scan``: depth log L instead of L sequential
    steps, without a logarithm: each product is scaled by its largest entry). Backward
    sampling draws x_t = g_t(x_{t+1}), where g_t maps each value of x_{t+1} to the draw
    from α_t · weights[t][:, x_{t+1}] at the uniform of position t, and the suffix
    compositions g_t ∘ … ∘ g_{L−2} are again an associative scan. The law of the
    sequential forward filtering and backward sampling of
    :func:`~numpyro_ugm.structure.contraction.sample_labels`, up to the weights that
    underflow (terms below e^−87 of the largest in float32).

    Parameters
    ----------
    unary : (..., L, K)
        Log tables.
    weights : (..., L − 1, K, K)
        exp of the pairwise log tables over (x_t, x_{t+1}), each scaled by a positive
        factor (:func:`_weights`).
    uniforms : (..., L)

    Returns
    -------
    labels : (..., L) int32
    """
    fields = _weights(unary, -1)
    steps = weights * fields[..., 1:, None, :]
    steps = jnp.concatenate([fields[..., :1, :, None] * steps[..., :1, :, :],
                             steps[..., 1:, :, :]], axis=-3)
    prefix = jax.lax.associative_scan(_scaled_product, steps, axis=-3)
    alpha = jnp.concatenate([fields[..., :1, :], jnp.sum(prefix, axis=-2)], axis=-2)
    last = _draw(uniforms[..., -1], alpha[..., -1, :])
    maps = _backward_maps(alpha, weights, uniforms)
    composed = jax.lax.associative_scan(_compose, jnp.flip(maps, -2), axis=-2)
    suffix = jnp.flip(composed, -2)  # (..., L − 1, K): x_t as a function of x_{L−1}
    return jnp.concatenate([_apply(suffix, last[..., None]), last[..., None]], -1)


def _lookup(tables, x):
    """``tables[..., :, x]``: tables (..., K, K) at the values ``x`` (...) of their
    second variable, (..., K)."""
    k = tables.shape[-1]
    if k <= SMALL_K:
        return sum(jnp.where((x == c)[..., None], tables[..., c], 0) for c in range(k))
    return jnp.einsum("...vc,...c->...v", tables, jax.nn.one_hot(x, k, dtype=tables.dtype))


def _backward_maps(alpha, weights, uniforms):
    """g_t (..., L − 1, K): the draw of x_t for each value of x_{t+1}, from α_t ·
    weights[t][:, x_{t+1}] at the uniform of position t."""
    given = alpha[..., :-1, :, None] * weights  # (..., t, a, b)
    return _draw(jnp.broadcast_to(uniforms[..., :-1, None], given.shape[:-1]),
                 jnp.swapaxes(given, -1, -2))


def scan_paths(unary, weights, uniforms):
    """The draws of :func:`sample_paths` with the forward filtering and the backward
    composition as sequential scans along the paths (every path of the batch at each
    step): fewer operations, L dependent steps (on 2 CPU cores, a 64 x 64 grid's sweep
    of 16 chains 1.9x faster than the prefix products; unrolling the scans does not
    help)."""
    fields = _weights(unary, -1)
    w = jnp.moveaxis(weights, -3, 0)  # (L − 1, ..., K, K)

    def forward(alpha, xs):
        phi, psi = xs
        nxt = phi * sum(alpha[..., j, None] * psi[..., j, :] for j in range(psi.shape[-1]))
        nxt = nxt / jnp.max(nxt, -1, keepdims=True)
        return nxt, nxt

    first = fields[..., 0, :]
    _, alphas = jax.lax.scan(forward, first, (jnp.moveaxis(fields[..., 1:, :], -2, 0), w))
    alpha = jnp.concatenate([first[..., None, :], jnp.moveaxis(alphas, 0, -2)], -2)
    last = _draw(uniforms[..., -1], alpha[..., -1, :])
    maps = jnp.moveaxis(_backward_maps(alpha, weights, uniforms), -2, 0)

    def backward(x, g):
        new = _apply(g, x)
        return new, new

    _, xs = jax.lax.scan(backward, last, maps, reverse=True)
    return jnp.concatenate([jnp.moveaxis(xs, 0, -1), last[..., None]], -1)


def _group_tables(group, plan, unary, oriented, gradient):
    """A group's tables: its variables' unary (G, m, K) and their boundary edges' (G, m,
    D, K, K; the variable first), log space (``None`` with ``gradient``: the fields come
    from :func:`_gradient_field`), and its own edges' (G, F, K, K), log space, or for a
    path as weights (:func:`sample_paths`)."""
    inner = oriented[group.inner]
    if plan.chain:
        inner = _weights(inner, (-2, -1))
    if gradient:
        return None, None, inner
    return unary[group.variables], oriented[group.boundary], inner


def _gradient_field(logdensity_fn, sites, labels, keep, variables, num_values, dtype):
    """The block's conditional fields (G, m, K) of a multilinear log-density, from one
    gradient at the state with the block's variables at the origin of their model
    values: there ∂f/∂x_v holds v's own term and its edges to variables outside the
    block at their current values, and none of its edges inside the block."""
    state, start = {}, 0
    for s, d in sites.items():
        x = labels_to_state({s: d}, labels[start:start + d.num_variables], dtype)[s]
        state[s] = x * keep[s]
        start += d.num_variables
    logits = conditional_logits(logdensity_fn, state, sites, {s: None for s in sites})
    flat = jnp.concatenate([jnp.pad(logits[s].reshape(d.num_variables, -1),
                                    ((0, 0), (0, num_values - d.num_values)),
                                    constant_values=-jnp.inf) for s, d in sites.items()])
    return flat[variables]


def _table_field(group, labels, unary, boundary):
    """The block's conditional fields (G, m, K) from its tables: the unary tables plus
    the boundary edges' at the other ends' current values."""
    return unary + jnp.sum(_lookup(boundary, labels[group.others]), axis=-2)


def _outside(sites, group):
    """Per site, 1 for its variables outside ``group`` and 0 inside, shaped to
    multiply the site's model values."""
    keep = np.ones(sum(d.num_variables for d in sites.values()))
    keep[group.variables.reshape(-1)] = 0
    out, start = {}, 0
    for s, d in sites.items():
        part = keep[start:start + d.num_variables]
        out[s] = part.reshape(tuple(d.batch_shape) + (1,) * len(d.event_shape))
        start += d.num_variables
    return out


def _update(plan, group, rng_key, labels, field, inner, paths):
    """The components of ``group`` drawn exactly given the other variables (``field``:
    their conditional fields given the variables outside the block; ``paths``: the
    sampler of path components)."""
    if plan.chain:
        # computed apart: fused into its several consumers, the generator's hashing
        # would run once per use (a 64 x 64 grid's sweep 3.5x slower)
        uniforms = jax.lax.optimization_barrier(
            jax.random.uniform(rng_key, group.variables.shape, field.dtype))
        new = paths(field, inner, uniforms)
    else:
        keys = jax.random.split(rng_key, group.variables.shape[0])
        new = jax.vmap(lambda u, w, k: contraction.sample_labels(plan, u, w, k, 1)[0])(
            field, inner, keys)
    merged = jnp.concatenate([labels, new.reshape(-1).astype(labels.dtype)])
    return merged[group.merge]


def _float_dtype(position):
    for leaf in jax.tree.leaves(position):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            return leaf.dtype
    return jnp.result_type(float)


@dataclasses.dataclass(frozen=True)
class tree_gibbs(KernelSpec):
    """Tree-block Gibbs sampler: forests and strips of the interaction graph drawn
    exactly given the rest (see :mod:`numpyro_ugm.kernels.tree_blocks`), for finite
    models whose potential is a sum of one- and two-variable terms.

    One sweep visits every block of every cover (every variable at least once, every
    edge inside some block). ``info.acceptance_rate`` is 1.

    Parameters
    ----------
    num_sweeps : int
        Sweeps per ``step``.
    cache_tables : bool
        Keep the log-density's tables in the chain state (computed by ``init``) rather
        than recompute them at every step.
    backward : bool
        Visit the blocks in reverse order (the reverse operator, :meth:`reverse`).
    max_table_size : int or None
        Refuse a block whose elimination needs a larger table (a tree's is K²).
    parallel_paths : bool
        Draw path components by prefix products (:func:`sample_paths`, log L dependent
        steps) instead of sequential scans (:func:`scan_paths`, L steps but fewer
        operations: faster on a CPU).
    table_fields : bool
        Take a multilinear model's fields given the rest from the tables of the
        block's boundary edges (kept with the tables) instead of one gradient per
        block: faster where the gradient is costly (a CRF whose bonds gather their
        features; the Ising grid's gradient is a few slices).
    """

    num_sweeps: int = 1
    cache_tables: bool = True
    backward: bool = False
    max_table_size: int | None = MAX_TABLE_SIZE
    parallel_paths: bool = False
    table_fields: bool = False

    def __post_init__(self):
        object.__setattr__(self, "num_sweeps",
                           check_count("tree_gibbs", "num_sweeps", self.num_sweeps))

    def reverse(self) -> "tree_gibbs":
        """The same blocks in reverse order."""
        return dataclasses.replace(self, backward=not self.backward)

    def build(self, target) -> Kernel:
        layout = _layout(target, self.max_table_size)
        updates = [pair for cover in layout.covers for block in cover for pair in block]
        if self.backward:
            updates = updates[::-1]
        sweeps, cache = int(self.num_sweeps), bool(self.cache_tables)
        sites = layout.domains
        keeps = [_outside(sites, group) for _, group in updates]
        paths = sample_paths if self.parallel_paths else scan_paths
        table_fields = bool(self.table_fields)

        def by_gradient(logdensity_fn):
            """Whether the fields come from a gradient (multilinear, and no declared
            conditionals: those hold at domain values only)."""
            return not table_fields and layout.multilinear and getattr(
                logdensity_fn, "conditional_logits", None) is None

        def tables(position, logdensity_fn):
            t, oriented = _tables(layout, logdensity_fn, _float_dtype(position))
            _check(layout, logdensity_fn, t)
            gradient = by_gradient(logdensity_fn)
            return tuple(_group_tables(group, plan, t.unary, oriented, gradient)
                         for plan, group in updates)

        def init(position, logdensity_fn=None):
            position = dict(position)
            if not cache:
                return TreeGibbsState(position)
            if logdensity_fn is None:
                raise ValueError("tree_gibbs: init needs the log-density (its tables are "
                                 "kept in the state)")
            return TreeGibbsState(position, tables(position, logdensity_fn))

        def step(rng_key, state, logdensity_fn, **unused):
            position = state.position
            prepared = state.tables
            if not cache or (prepared[0][0] is None) != by_gradient(logdensity_fn):
                prepared = tables(position, logdensity_fn)
            dtype = _float_dtype(position)

            def sweep(i, labels):
                keys = jax.random.split(jax.random.fold_in(rng_key, i), len(updates))
                for key, (plan, group), (unary, boundary, inner), keep in zip(
                        keys, updates, prepared, keeps):
                    field = (_table_field(group, labels, unary, boundary) if unary is not None
                             else _gradient_field(logdensity_fn, sites, labels, keep,
                                                  group.variables, layout.num_values, dtype))
                    labels = _update(plan, group, key, labels, field, inner, paths)
                return labels

            labels = jax.lax.fori_loop(0, sweeps, sweep, state_to_labels(sites, position))
            new, start = {}, 0
            for s, d in sites.items():
                part = labels[start:start + d.num_variables]
                new[s] = labels_to_state({s: d}, part, position[s].dtype)[s].reshape(
                    position[s].shape)
                start += d.num_variables
            return state._replace(position=new), KernelInfo(jnp.ones((), jnp.float32))

        return Kernel(init, step)
