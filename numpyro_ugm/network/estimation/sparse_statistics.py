"""ERGM statistics of one large sparse network without its dense dyads: what
:func:`~numpyro_ugm.network.fit_ergm` needs besides the sampler when the network has
too many dyads for the (n, n) matrices of :mod:`~numpyro_ugm.network.terms.structural`.

* :func:`sparse_statistics`: s(y_obs) from the edge list, by adding the ties one at a
  time to an empty sparse state (:mod:`~numpyro_ugm.network.sampling.chains`) and summing
  their change statistics (Δs from the sampler's views,
  :mod:`~numpyro_ugm.network.sampling.views`): s(y) = s(empty) + Σ_t Δ_t s, a
  telescoping sum in any order. O(m) change statistics, each O(D) to O(D³) (D the
  largest degree).
* :func:`dyad_change_statistics`: Δs of given dyads of one network, every dyad's view
  read from the same sparse state (``vmap`` in chunks).
* :func:`dyadic_sums` (:func:`dyadic_log_normalizer`): Σ_d log(1 + exp(θ·x_d)) over
  every dyad d of the dyad-independent terms' covariates x_d (the log Z of a
  dyad-independent ERGM), and its first two derivatives, exactly, in blocks of node
  rows: O(N) work, O(block) memory.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ..terms.views import DyadView
from ..sampling.chains import apply_writes, init_network_chains, largest_degree, toggle_writes
from ..sampling.views import gather_rows, view_of
from ..sampling.simulation import change_function

__all__ = ["sparse_statistics", "dyad_change_statistics", "dyadic_sums",
           "dyadic_log_normalizer", "one_chain"]

#: dyads whose views are built at a time (each may hold an (n + 1,) mark array)
CHUNK = 1024
#: rows of n − 1 dyads per block of the exact pass over every dyad
ROWS = 64


def one_chain(net, ties, statistics0, max_degree=None):
    """The sparse state (no chain axis) of the network ``ties`` on ``net``'s nodes, its
    running statistics starting at ``statistics0``; the degree capacity is the largest
    degree of ``ties`` (at least 1) unless ``max_degree``."""
    ties = np.asarray(ties, np.int64).reshape(-1, 2)
    if max_degree is None:
        max_degree = max(1, largest_degree(ties, net.num_nodes, net.directed))
    state = init_network_chains(ties, net.num_nodes, 1, directed=net.directed,
                                statistics0=statistics0, max_degree=max_degree)
    return jax.tree.map(lambda x: x[0], state)


@functools.partial(jax.jit, static_argnames=("change_fn",))
def _add_ties(state, ties, change_fn):
    """Δs of each tie of ``ties`` (m, 2), each added to ``state`` after the previous."""
    def add(state, tie):
        i, j = tie[0], tie[1]
        rows = gather_rows(state, i, j, i, j)
        delta = change_fn(view_of(state, rows, i, j))
        writes, num_edges = toggle_writes(state, rows, i, j, i, j, jnp.bool_(True),
                                           jnp.bool_(False))
        return apply_writes(state, writes, num_edges), delta

    return jax.lax.scan(add, state, ties)[1]


def sparse_statistics(net, terms, ties) -> np.ndarray:
    """s(y) (k,) float64 of the network with ties ``ties`` (m, 2) for ``terms``
    (resolved :class:`~numpyro_ugm.network.terms.term.Term` s on ``net``): the empty
    graph's statistics plus the change statistics of the ties added one at a time (the
    sampler's change functions on neighbour lists, no (n, n) array)."""
    empty = np.concatenate([t.empty_value() for t in terms])
    ties = np.asarray(ties, np.int64).reshape(-1, 2)
    if len(ties) == 0:
        return empty
    start = one_chain(net, np.zeros((0, 2), np.int64), empty,
                      max(1, largest_degree(ties, net.num_nodes, net.directed)))
    deltas = _add_ties(start, jnp.asarray(ties, jnp.int32), change_function(terms))
    return empty + np.asarray(deltas, np.float64).sum(0)


@functools.partial(jax.jit, static_argnames=("change_fn",))
def _change_of_dyads(state, i, j, change_fn):
    def one(dyad):
        a, b = dyad[0], dyad[1]
        return change_fn(view_of(state, gather_rows(state, a, b, a, b), a, b))

    return jax.lax.map(one, jnp.stack([i, j], 1), batch_size=CHUNK)


def dyad_change_statistics(state, terms, i, j) -> np.ndarray:
    """Δs (b, k) of the dyads (``i``, ``j``) (arrays (b,); i -> j when directed) of the
    network held in ``state`` (:func:`one_chain`), each from its view with the dyad off,
    as the sparse sampler computes them."""
    b = len(i)
    padded = -(-b // CHUNK) * CHUNK  # one compiled program per multiple of CHUNK
    i = np.concatenate([np.asarray(i, np.int32), np.zeros(padded - b, np.int32)])
    j = np.concatenate([np.asarray(j, np.int32), np.ones(padded - b, np.int32)])
    x = _change_of_dyads(state, jnp.asarray(i), jnp.asarray(j), change_function(terms))
    return np.asarray(x, np.float64)[:b]


def _dyadic_view(i, j):
    """A view of dyads (``i``, ``j``) for dyad-independent terms, whose change statistics
    read only the nodes (the degree counts, unread by them, are 0)."""
    zero = jnp.zeros(i.shape, jnp.result_type(float))
    return DyadView(i=i, j=j, value=zero, degree_i=zero, degree_j=zero, out_i=zero,
                    in_i=zero, out_j=zero, in_j=zero)


def _row_dyads(i, n, directed):
    """The n − 1 dyads (I, J) of "row" i: directed, the ties i -> j, j ≠ i; undirected,
    the pairs of node i with j > i followed by those of node n − 1 − i (n − 1 in all;
    i < n/2, the middle node's second half ``keep`` False for odd n)."""
    c = jnp.arange(n - 1, dtype=jnp.int32)
    if directed:
        return jnp.broadcast_to(i, c.shape), c + (c >= i), jnp.ones(c.shape, bool)
    first = c < n - 1 - i
    mirror = n - 1 - i
    return (jnp.where(first, i, mirror), jnp.where(first, i + 1 + c, c + 1),
            first | (mirror != i))


@functools.partial(jax.jit, static_argnames=("change_fn", "n", "directed", "full"))
def _block_sums(theta, change_fn, n, directed, full):
    """Per block of :data:`ROWS` rows of :func:`_row_dyads`: Σ log(1 + exp(θ·x_d)) over
    its dyads, and with ``full`` Σ p_d x_d, Σ p_d (1 − p_d) x_d x_dᵀ and Σ abs(x_d)."""
    num_rows = n if directed else -(-n // 2)
    starts = jnp.arange(0, num_rows, ROWS, dtype=jnp.int32)

    def block(start):
        i = jnp.minimum(start + jnp.arange(ROWS, dtype=jnp.int32), num_rows - 1)
        I, J, keep = jax.vmap(lambda r: _row_dyads(r, n, directed))(i)
        keep = (keep & (start + jnp.arange(ROWS) < num_rows)[:, None]).ravel().astype(
            theta.dtype)
        x = change_fn(_dyadic_view(I.ravel(), J.ravel())).astype(theta.dtype)
        eta = x @ theta
        total = keep @ jnp.logaddexp(0.0, eta)
        if not full:
            return total
        p = keep * jax.nn.sigmoid(eta)
        return (total, p @ x, (x * (p * (1 - p))[:, None]).T @ x, keep @ jnp.abs(x))

    return jax.tree.map(lambda a: jnp.sum(a, 0), jax.lax.map(block, starts))


def dyadic_sums(net, terms, theta, full: bool = False) -> tuple:
    """Sums over every dyad d of ``net`` for the dyad-independent ``terms``
    (``dependence == "dyadic"``), exactly, in float64: (Σ log(1 + exp(θ·x_d)), and with
    ``full`` Σ p_d x_d, Σ p_d (1 − p_d) x_d x_dᵀ, Σ abs(x_d), p_d the logistic function
    of θ·x_d), x_d read from the node ids (no dyad table), :data:`ROWS` node rows at a
    time: O(N) work, O(ROWS · n) memory. What
    :func:`~numpyro_ugm.network.estimation.dyad_independent.newton_mle` needs for the exact
    MLE of a dyad-independent model of a large network."""
    if any(t.dependence != "dyadic" for t in terms):
        raise ValueError("dyadic_sums: every term must be dyad independent, got "
                         f"{[t.names[0] for t in terms if t.dependence != 'dyadic']}")
    with jax.enable_x64(True):
        out = _block_sums(jnp.asarray(theta, jnp.float64), change_function(terms),
                          net.num_nodes, net.directed, bool(full))
        return tuple(np.asarray(a, np.float64) for a in jax.tree.leaves(out)) if full else (
            float(out),)


def dyadic_log_normalizer(net, terms, theta) -> float:
    """log Z(θ) = Σ_d log(1 + exp(θ·x_d)) of the dyad-independent ``terms`` over every
    dyad of ``net``, exactly (:func:`dyadic_sums`)."""
    return float(dyadic_sums(net, terms, theta)[0])
