"""The tables of a pairwise log-potential over finite variables, read off the potential
itself: ``f(x) = constant + Σ_i unary[i, x_i] + Σ_e pairwise[e, x_i, x_j]`` over the
edges e = (i, j) of its interaction graph (:func:`tabulate`), and the check that this
decomposition holds (:func:`decomposition_error`).

**Multilinear potentials** (the structure analysis verified that f is affine in each
variable's model value: ±1, 0/1 or a one-hot vector) are tabulated from derivatives at the
origin of the model representation, where f's multilinear form has its constant, its
linear coefficients (the gradient) and its pairwise coefficients (the Hessian) and no
higher-order term contributes: ``unary[i, a] = ∇_i f(0) · v_a`` and ``pairwise[e, a, b] =
v_aᵀ ∇²_ij f(0) v_b`` for model values v. The Hessian blocks of the edges come from
Hessian-vector products along one direction per colour and per coordinate of a value, in
a colouring where no two neighbours of a variable share a colour (so each product reads
off one block per edge): 2 products for a binary chain, 18 for a 9-label chain, whatever
its length. Parts of f that do not depend on the state (a CRF's feature scores)
are computed once, not per direction.

**Other potentials** are tabulated by differences at a reference state r (each variable
at its first value): ``unary[i, a] = f(r; x_i = a) − f(r)`` and ``pairwise[e, a, b] =
f(r; x_i = a, x_j = b) − f(r; x_i = a) − f(r; x_j = b) + f(r)`` — n K + E K² evaluations.

Both are exact when f decomposes into pairwise terms over the graph; a potential with
terms over three or more variables at once does not, which :func:`decomposition_error`
finds at random states.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .graph import greedy_coloring, unique_pairs

__all__ = ["Tables", "tabulate", "decomposition_error", "labels_to_state",
           "state_to_labels", "num_values_of"]


class Tables(NamedTuple):
    """``f(x) = constant + Σ_i unary[i, x_i] + Σ_e pairwise[e, x_i, x_j]`` (log space;
    ``unary`` is −inf beyond a variable's number of values)."""

    constant: jax.Array
    unary: jax.Array
    pairwise: jax.Array


def num_values_of(domains) -> np.ndarray:
    """Number of values of every variable (n,), sites in order."""
    return np.concatenate([np.full(d.num_variables, d.num_values, np.int64)
                           for d in domains.values()]) if domains else np.zeros(0, np.int64)


def labels_to_state(domains, labels: jax.Array, dtype) -> dict:
    """The model state of flat labels (..., n)."""
    out, start = {}, 0
    for s, d in domains.items():
        part = labels[..., start:start + d.num_variables]
        out[s] = d.label_to_model(part.reshape(part.shape[:-1] + tuple(d.batch_shape)), dtype)
        start += d.num_variables
    return out


def state_to_labels(domains, state: dict) -> jax.Array:
    """Flat labels (..., n) of a model state (sites with a leading batch shape allowed)."""
    parts = []
    for s, d in domains.items():
        x = d.labels(state[s])
        lead = x.shape[:x.ndim - len(d.batch_shape)]
        parts.append(x.reshape(lead + (d.num_variables,)))
    return jnp.concatenate(parts, -1).astype(jnp.int32)


def _value_vectors(domains, num_values, width, dtype):
    """Per variable its model values as vectors, (n, K, width), zero-padded."""
    rows = []
    for d in domains.values():
        with jax.ensure_compile_time_eval():
            v = np.asarray(d.model_values(dtype)).reshape(d.num_values, -1)
        v = np.pad(v, ((0, num_values - d.num_values), (0, width - v.shape[1])))
        rows.append(np.broadcast_to(v, (d.num_variables,) + v.shape))
    return jnp.asarray(np.concatenate(rows), dtype)


def _flat(tree, domains, width):
    """A state-shaped pytree as (n, width): each variable's model coordinates."""
    parts = []
    for s, d in domains.items():
        x = tree[s].reshape((d.num_variables, -1))
        parts.append(jnp.pad(x, ((0, 0), (0, width - x.shape[1]))))
    return jnp.concatenate(parts)


def _neighbour_coloring(num_variables, edges):
    """A colouring in which the neighbours of every variable have distinct colours (two
    variables that share a neighbour differ; neighbours themselves may agree: a
    multilinear f has no second derivative within one variable): a path needs 2."""
    if not len(edges):
        return np.zeros(num_variables, np.int64)
    nbrs = [[] for _ in range(num_variables)]
    for i, j in np.concatenate([edges, edges[:, ::-1]]):
        nbrs[i].append(j)
    pairs = [np.zeros((0, 2), np.int64)]
    for nb in nbrs:
        if len(nb) > 1:
            nb = np.asarray(nb)
            a, b = np.triu_indices(len(nb), 1)
            pairs.append(np.stack([nb[a], nb[b]], 1))
    return greedy_coloring(num_variables, unique_pairs(np.concatenate(pairs)))


def _by_derivatives(fn, domains, edges, num_values, dtype):
    width = max(int(np.prod(d.event_shape, dtype=np.int64)) for d in domains.values())
    n = int(sum(d.num_variables for d in domains.values()))
    values = _value_vectors(domains, num_values, width, dtype)
    zero = {s: jnp.zeros(tuple(d.batch_shape) + tuple(d.event_shape), dtype)
            for s, d in domains.items()}
    constant, grad = jax.value_and_grad(fn)(zero)
    unary = jnp.einsum("nkd,nd->nk", values, _flat(grad, domains, width))
    if not len(edges):
        return constant, unary, jnp.zeros((0, num_values, num_values), dtype)
    colors = _neighbour_coloring(n, edges)
    num_colors = int(colors.max()) + 1
    directions = np.zeros((num_colors * width, n, width), np.dtype(dtype))
    for c in range(num_colors):
        members = np.flatnonzero(colors == c)
        directions[c * width + np.arange(width)[:, None], members[None], np.arange(width)[:, None]] = 1
    tangents, start = {}, 0
    for s, d in domains.items():
        event = int(np.prod(d.event_shape, dtype=np.int64))
        part = directions[:, start:start + d.num_variables, :event]
        tangents[s] = jnp.asarray(part.reshape((len(directions),) + tuple(d.batch_shape)
                                               + tuple(d.event_shape)))
        start += d.num_variables
    hvp = jax.vmap(lambda t: jax.jvp(jax.grad(fn), (zero,), (t,))[1])(tangents)
    columns = jax.vmap(lambda h: _flat(h, domains, width))(hvp)  # (M, n, width)
    rows = colors[edges[:, 1]][:, None] * width + np.arange(width)[None]  # (E, width)
    block = columns[rows, edges[:, 0][:, None], :]  # (E, coordinate of j, coordinate of i)
    pairwise = jnp.einsum("ead,efd,ebf->eab", values[edges[:, 0]], block, values[edges[:, 1]])
    return constant, unary, pairwise


def _by_differences(fn, domains, edges, num_values, dtype, batch_size=1024):
    n = int(sum(d.num_variables for d in domains.values()))
    k = np.arange(num_values)
    valid = np.arange(num_values)[None] < num_values_of(domains)[:, None]  # (n, K)
    singles = np.zeros((n, num_values, n), np.int32)
    singles[np.arange(n)[:, None], k[None], np.arange(n)[:, None]] = np.where(valid, k, 0)
    rows = [np.zeros((1, n), np.int32), singles.reshape(-1, n)]
    if len(edges):
        i, j = edges[:, 0], edges[:, 1]
        pairs = np.zeros((len(edges), num_values, num_values, n), np.int32)
        e = np.arange(len(edges))[:, None, None]
        pairs[e, k[None, :, None], k[None, None, :], i[:, None, None]] = np.where(
            valid[i], k, 0)[:, :, None]
        pairs[e, k[None, :, None], k[None, None, :], j[:, None, None]] = np.where(
            valid[j], k, 0)[:, None, :]
        rows.append(pairs.reshape(-1, n))
    labels = jnp.asarray(np.concatenate(rows))
    f = jax.lax.map(lambda x: fn(labels_to_state(domains, x, dtype)), labels,
                    batch_size=min(batch_size, len(labels)))
    constant = f[0]
    unary = f[1:1 + n * num_values].reshape(n, num_values) - constant
    if not len(edges):
        return constant, unary, jnp.zeros((0, num_values, num_values), dtype)
    both = f[1 + n * num_values:].reshape(len(edges), num_values, num_values)
    pairwise = (both - unary[edges[:, 0]][:, :, None] - unary[edges[:, 1]][:, None, :]
                - constant)
    return constant, unary, pairwise


def tabulate(fn, domains, edges: np.ndarray, multilinear: bool, num_values: int,
             dtype=None) -> Tables:
    """The :class:`Tables` of ``fn`` (``state -> f(state)``, model representation, one
    configuration of the finite ``domains``) over the graph ``edges`` (E, 2), i < j;
    traceable in whatever ``fn`` closes over (parameters, a CRF's inputs)."""
    dtype = dtype or jnp.result_type(float)
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    build = _by_derivatives if multilinear else _by_differences
    constant, unary, pairwise = build(fn, domains, edges, num_values, dtype)
    valid = np.arange(num_values)[None] < num_values_of(domains)[:, None]
    unary = jnp.where(valid, unary, -jnp.inf)
    if len(edges):
        both = valid[edges[:, 0]][:, :, None] & valid[edges[:, 1]][:, None, :]
        pairwise = jnp.where(both, pairwise, 0.0)
    return Tables(constant, unary, pairwise)


def decomposition_error(fn, tables: Tables, domains, edges, labels: jax.Array
                        ) -> tuple[jax.Array, jax.Array]:
    """At each row of ``labels`` (S, n): ``abs(f(x) − (constant + Σ unary + Σ pairwise))``
    and the size of the terms it compares (``abs(f) + Σ abs(terms)``), for a relative
    test."""
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    dtype = tables.unary.dtype

    def one(x):
        f = fn(labels_to_state(domains, x, dtype))
        u = tables.unary[jnp.arange(x.shape[0]), x]
        w = tables.pairwise[jnp.arange(len(edges)), x[edges[:, 0]], x[edges[:, 1]]]
        rebuilt = tables.constant + jnp.sum(u) + jnp.sum(w)
        scale = jnp.abs(f) + jnp.abs(tables.constant) + jnp.sum(jnp.abs(u)) + jnp.sum(jnp.abs(w))
        return jnp.abs(f - rebuilt), scale

    return jax.vmap(one)(labels)
