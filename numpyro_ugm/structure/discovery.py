"""Finding the structure of a log-potential from the potential itself: its interaction
graph and whether it is multilinear (:func:`analyze`).

For a log-potential f that is multilinear in each variable, the conditional log-odds of
every variable follow from one gradient (:func:`conditional_logits`), and two variables
interact exactly when the mixed second derivative of f is non-zero somewhere. The graph
is read off the sparsity of the Hessian at random parameters and random states (one
Hessian-vector product per coordinate, in chunks). Multilinearity is verified at setup by
comparing the gradient's conditionals with conditionals computed by evaluating f at each
value; a model that fails falls back to those exact conditionals, and its graph comes
from flipping variables one at a time (or, when that is too costly, to one variable per
block) — never to a silently wrong sampler.

The random states are points of the domain **and interior points** (each variable a
random convex combination of its values). At domain points a mixed derivative can vanish
by accident — ∂²(x₀x₁x₂)/∂x₁∂x₂ = x₀ is 0 whenever the binary x₀ is 0 — and an edge
missed that way would put interacting variables in one block; at interior points a
non-zero multilinear polynomial is non-zero with probability one. The union of the edges
found at all points is kept (an extra edge costs speed, a missing one correctness).
:mod:`~numpyro_ugm.structure.covering` probes a CRF's examples at the same points
(:func:`probe_points`).
"""

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from tqdm.auto import tqdm

from ..conditionals import conditional_logits, exact_conditional_logits, scatter, site_variables
from .graph import Structure, colored, greedy_coloring, unique_pairs, with_blocks

__all__ = ["analyze", "check_multilinear", "probe_points"]

#: models with more state values than this show a progress bar while their Hessian's
#: sparsity is read (a dense RBM 2000 x 2000 takes about a minute on a CPU)
LARGE_MODEL = 2048


def probe_points(domains, random_params, rng_key, num_points, interior=False,
                 moved=False):
    """Random (parameters, state) pairs: states uniform on the domain, or (``interior``)
    each variable a uniformly random convex combination of its values. With ``moved``,
    triples (parameters, state, other): in ``other`` every variable has another value
    (another domain value, or another random convex combination).

    The draws use numpy (seeded from ``rng_key``): eager JAX draws would compile one small
    program per shape, which dominated the setup time of small models.
    """
    dtype = np.dtype(jnp.result_type(float))
    rng = np.random.default_rng(np.asarray(jax.random.key_data(rng_key)).ravel())

    def mixture(d, values):
        w = rng.exponential(size=d.batch_shape + (d.num_values,))
        w = w / w.sum(-1, keepdims=True)  # Dirichlet(1, ..., 1)
        return np.tensordot(w, values, axes=1).astype(dtype)

    def normal(d):  # a real site: its base Normal, widened
        return (d.loc + 2.0 * d.scale * rng.standard_normal(d.batch_shape)).astype(dtype)

    points = []
    for key in jax.random.split(rng_key, num_points):
        params = random_params(key, rng)
        state, other = {}, {}
        for s, d in domains.items():
            if not d.finite:
                state[s], other[s] = normal(d), normal(d)
                continue
            values = np.asarray(d.model_values(), dtype)  # (K, *event)
            if interior:
                state[s] = mixture(d, values)
                if moved:
                    other[s] = mixture(d, values)
            else:
                labels = rng.integers(0, d.num_values, d.batch_shape)
                state[s] = values[labels]
                if moved:
                    shift = rng.integers(1, d.num_values, d.batch_shape)
                    other[s] = values[(labels + shift) % d.num_values]
        points.append((params, state, other) if moved else (params, state))
    return points


def check_multilinear(log_potential, domains, points, interior_points=(), max_variables=256):
    """Whether gradient conditionals equal exact conditionals of ``log_potential(params,
    state)`` at the probe points (on up to ``max_variables`` random variables per site).

    A non-finite log-potential is an error at ``points`` (domain states); the
    ``interior_points`` where it is not finite are skipped.
    """
    if not domains:
        return True
    rng = np.random.default_rng(0)
    block = {}
    for s, d in domains.items():
        n = d.num_variables
        block[s] = np.sort(rng.choice(n, size=min(n, max_variables), replace=False))

    @jax.jit
    def both(params, state):
        f = functools.partial(log_potential, params)
        return (conditional_logits(f, state, domains, block),
                exact_conditional_logits(f, state, domains, block))

    labelled = [(p, False) for p in points] + [(p, True) for p in interior_points]
    for (params, state), interior in labelled:
        fast, slow = both(params, state)
        a = {s: np.asarray(fast[s] - fast[s][..., :1]) for s in block}
        b = {s: np.asarray(slow[s] - slow[s][..., :1]) for s in block}
        finite = [s for s in block if np.all(np.isfinite(b[s]))]
        if len(finite) < len(block):
            if interior:
                continue
            bad = next(s for s in block if s not in finite)
            raise FloatingPointError(f"the log-potential is not finite at random "
                                     f"states (site {bad!r})")
        for s in block:
            scale = 1.0 + np.max(np.abs(b[s]))
            if not np.allclose(a[s], b[s], rtol=1e-3, atol=1e-3 * scale):
                return False
    return True


def nonquadratic_sites(log_potential, domains, points, max_variables=64) -> tuple:
    """The real sites of ``domains`` in whose variables ``log_potential`` is not
    quadratic (one by one, the others fixed) at the probe points, tested on up to
    ``max_variables`` random variables per site by the second difference of the gradient:
    ∂f/∂x_i at x_i + 1, x_i, x_i − 1. Quadratic sites get exact Gaussian draws; the others
    are moved by gradient kernels."""
    rng = np.random.default_rng(2)
    real = [s for s, d in domains.items() if not d.finite]
    chosen = {s: np.sort(rng.choice(domains[s].num_variables, replace=False, size=min(
        domains[s].num_variables, max_variables))) for s in real}

    @functools.partial(jax.jit, static_argnums=0)
    def second_difference(s, params, state, idx):
        grad = jax.grad(lambda x: log_potential(params, {**state, s: x}))

        def at(i):
            def g(shift):
                flat = state[s].reshape(-1)
                return grad(flat.at[i].add(shift).reshape(state[s].shape)).reshape(-1)[i]
            return g(1.0) - 2.0 * g(0.0) + g(-1.0), g(0.0)

        return jax.vmap(at)(idx)

    out = []
    for s in real:
        for params, state in points:
            diff, g = (np.asarray(v) for v in second_difference(s, params, state,
                                                                jnp.asarray(chosen[s])))
            if not np.allclose(diff, 0.0, atol=1e-3 * (1.0 + np.max(np.abs(g)))):
                out.append(s)
                break
    return tuple(out)


def _hessian_edges(log_potential, domains, points, offsets, chunk=256):
    """Interacting pairs from the Hessian's sparsity (multilinear models)."""
    state0 = points[0][1]
    z0, unravel = ravel_pytree(state0)
    var_tree = {s: np.broadcast_to(
        (offsets[k] + np.arange(d.num_variables)).reshape(
            d.batch_shape + (1,) * len(d.event_shape)), np.shape(state0[s]))
        for k, (s, d) in enumerate(domains.items())}
    # the variable of each coordinate, in ravel_pytree's (tree-leaves) order
    coord_var = np.concatenate([v.ravel() for v in jax.tree.leaves(var_tree)])
    dim = z0.shape[0]

    @jax.jit
    def columns(params, z, cols):
        grad = jax.grad(lambda v: log_potential(params, unravel(v)))
        basis = jax.nn.one_hot(cols, dim, dtype=z.dtype)
        h = jnp.abs(jax.vmap(lambda e: jax.jvp(grad, (z,), (e,))[1])(basis))
        return h > 1e-6 * (1.0 + jnp.max(h))

    # the edges made unique after every point: memory stays about that of the graph, not
    # of every point's copies
    n = int(coord_var.max()) + 1
    edges = np.zeros((0, 2), np.int64)
    with tqdm(total=len(points) * -(-dim // chunk), disable=dim <= LARGE_MODEL,
              desc=f"structure of {n} variables (declare it: ugm.factor(..., colors=))") as bar:
        for params, state in points:
            z, found = ravel_pytree(state)[0], [edges]
            for start in range(0, dim, chunk):
                cols = np.arange(start, start + chunk)
                cols = np.where(cols < dim, cols, dim - 1)  # one compiled shape for all
                which, rows = np.nonzero(np.asarray(columns(params, z, cols)))
                found.append(np.stack([coord_var[cols[which]], coord_var[rows]], axis=1))
                bar.update()
            edges = unique_pairs(np.concatenate(found))
    return edges


def _flip_edges(log_potential, domains, points, offsets, max_floats=1 << 24):
    """Interacting pairs by flipping each variable and comparing exact conditionals
    (any log-potential; cost quadratic in the number of variables). Flips are vmapped
    in chunks of about ``max_floats`` state values; points where the log-potential is not
    finite are skipped."""
    block = {s: None for s in domains}
    var_of_entry = np.concatenate(
        [np.repeat(offsets[k] + np.arange(d.num_variables), d.num_values)
         for k, d in enumerate(domains.values())])
    state_size = sum(int(np.prod(d.batch_shape + d.event_shape)) for d in domains.values())
    chunk = int(np.clip(max_floats // max(1, state_size * len(var_of_entry)), 1, 256))

    def all_logits(params, x):
        f = functools.partial(log_potential, params)
        return jnp.concatenate([(v - v[:, :1]).ravel() for v in
                                exact_conditional_logits(f, x, domains, block).values()])

    def flipped(s, params, state, idx, labels):
        d = domains[s]

        def one(i, label):
            value = d.label_to_model(label[None], state[s].dtype)
            return all_logits(params, {**state, s: scatter(state[s], d, i[None], value)})

        return jax.vmap(one)(idx, labels)

    base_fn = jax.jit(all_logits)
    flipped_fns = {s: jax.jit(functools.partial(flipped, s)) for s in domains}
    edges = [np.zeros((0, 2), np.int64)]
    rng = np.random.default_rng(1)
    for params, state in points:
        base = np.asarray(base_fn(params, state))
        if not np.all(np.isfinite(base)):
            continue
        for k, (s, d) in enumerate(domains.items()):
            n = d.num_variables
            current = np.asarray(d.labels(site_variables(state[s], d)))
            labels = ((current + rng.integers(1, d.num_values, n)) % d.num_values)
            for start in range(0, n, chunk):
                idx = np.minimum(np.arange(start, start + chunk), n - 1)
                out = np.asarray(flipped_fns[s](params, state, jnp.asarray(idx),
                                                jnp.asarray(labels[idx], jnp.int32)))
                changed = ~(np.abs(out - base) <= 1e-4 * (1 + np.abs(base)))  # NaN: changed
                rows, cols = np.nonzero(changed)
                edges.append(np.stack([var_of_entry[cols], offsets[k] + idx[rows]], 1))
    return unique_pairs(np.concatenate(edges))


def _blocks_without(domains, offsets, edges, multilinear, moved):
    """The coloured structure of ``edges`` with the variables of the ``moved`` sites
    (real sites moved by gradient kernels) in no block: they are coloured -1, the
    others greedily on the graph among themselves."""
    if not moved:
        return colored(domains, offsets, edges, multilinear)
    num_variables = int(offsets[-1])
    excluded = np.zeros(num_variables, bool)
    for k, s in enumerate(domains):
        if s in moved:
            excluded[offsets[k]:offsets[k + 1]] = True
    keep = np.nonzero(~excluded)[0]
    colors = np.full(num_variables, -1, np.int64)
    if keep.size:
        inner = None if edges is None else edges[~excluded[edges].any(axis=1)]
        renumber = np.full(num_variables, -1, np.int64)
        renumber[keep] = np.arange(keep.size)
        colors[keep] = (np.arange(keep.size) if inner is None
                        else greedy_coloring(keep.size, renumber[inner]))
    return with_blocks(domains, offsets, edges, colors, multilinear, tuple(moved))


def analyze(log_potential: Callable[[dict, dict], Any], domains: Mapping,
            random_params: Callable[[jax.Array, np.random.Generator], dict],
            rng_key: jax.Array | None = None, num_points: int = 2,
            max_flip_variables: int = 512, num_interior: int = 2) -> Structure:
    """Find the structure of a log-potential over domain-valued sites (see the module
    docstring). ``UGM.target()`` calls it once (its ``structure``, cached);
    ``UGM.analyze`` runs it afresh.

    Parameters
    ----------
    log_potential : callable
        ``(params, state) -> scalar``: f(x; θ) for one configuration (model
        representation), e.g. ``Target.log_potential``.
    domains : dict of str -> Domain
        The state sites, in the order their variables are numbered.
    random_params : callable
        ``(rng_key, rng) -> params``: random parameters at which to probe the potential,
        from a jax key and a numpy ``Generator`` (both seeded by ``analyze``).
    rng_key : jax PRNGKey, optional
        Key for the random probe states and parameters (fixed default).
    num_points : int
        Number of random (parameters, domain state) probes.
    max_flip_variables : int
        Largest model for which a non-multilinear potential gets its graph by flipping;
        above it every variable is its own block.
    num_interior : int
        Number of random (parameters, interior state) probes (see the module docstring).

    Returns
    -------
    Structure
    """
    rng_key = jax.random.PRNGKey(20100621) if rng_key is None else rng_key
    sizes = [d.num_variables for d in domains.values()]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    num_variables = int(offsets[-1])
    points = probe_points(domains, random_params, rng_key, num_points)
    inner = probe_points(domains, random_params, jax.random.fold_in(rng_key, 1),
                          num_interior, interior=True)
    finite = {s: d for s, d in domains.items() if d.finite}
    moved = nonquadratic_sites(log_potential, domains, points + inner)
    multilinear = check_multilinear(log_potential, finite, points, inner)
    if multilinear:
        edges = _hessian_edges(log_potential, domains, points + inner, offsets)
    elif num_variables <= max_flip_variables:
        edges = _flip_edges(log_potential, finite, points + inner,
                            [offsets[list(domains).index(s)] for s in finite])
        if len(finite) < len(domains):  # pairs with a real variable: from the Hessian
            real = _hessian_edges(log_potential, domains, points + inner, offsets)
            is_real = np.repeat([not d.finite for d in domains.values()], sizes)
            edges = unique_pairs(np.concatenate([edges, real[is_real[real].any(axis=1)]]))
    else:
        warnings.warn(
            f"the log-potential is not multilinear in its variables and the model has "
            f"{num_variables} variables (> {max_flip_variables}): Gibbs falls back to one "
            "variable per block with exact conditionals, which is correct but slow. Write "
            "factors as products of variables (e.g. y_i + y_j - 2*y_i*y_j instead of "
            "|y_i - y_j| for binary y) to get block updates.", stacklevel=4)
        edges = None
    return _blocks_without(domains, offsets, edges, multilinear, moved)

