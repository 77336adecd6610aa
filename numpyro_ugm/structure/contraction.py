"""Exact inference on the tables of a pairwise model, in log space, along an
:class:`~numpyro_ugm.structure.elimination.EliminationPlan`.

A model is ``log p(x) ∝ Σ_i unary[i, x_i] + Σ_e pairwise[e, x_i, x_j]`` (edge e = (i, j)).
Every result is one dynamic program written once over a semiring (as in Torch-Struct):
:func:`eliminate` runs the plan with log-sum-exp (log Z) or max (the best score) and keeps
each step's clique table; :func:`backtrack` walks the steps backwards, choosing each
variable from its clique table given the variables chosen before it — the argmax (the MAP
state, max-product with back-pointers) or a draw (exact independent samples, forward
filtering and backward sampling). Marginals are the gradient of log Z with respect to the
tables (:func:`marginals`), never a second hand-written pass.

Chains (``plan.chain``) run as ``lax.scan`` over positions — the forward algorithm and
Viterbi, one compiled step whatever the length; other plans unroll one step per variable.
All functions are pure and traceable in the tables (``jit``, ``grad``, ``vmap`` over
examples).
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .elimination import EliminationPlan

__all__ = ["eliminate", "backtrack", "log_partition", "max_score", "marginals",
           "map_labels", "sample_labels", "score"]


def _reduce(kind):
    return {"sum": jax.nn.logsumexp, "max": jnp.max}[kind]


def _chain_forward(unary, pairwise, kind):
    """Forward recursion α_t(b) = unary[t, b] + ⊕_a (α_{t−1}(a) + pairwise[t−1, a, b])."""
    red = _reduce(kind)

    def step(alpha, inputs):
        u, w = inputs
        nxt = u + red(alpha[:, None] + w, axis=0)
        return nxt, nxt

    last, alphas = jax.lax.scan(step, unary[0], (unary[1:], pairwise))
    return red(last), jnp.concatenate([unary[:1], alphas])


def _place(table, axes, rank):
    """``table`` (one axis per entry of ``axes``) broadcast into a clique of ``rank``
    axes: its axes moved to positions ``axes``, size 1 elsewhere."""
    perm = np.argsort(axes)
    shape = [1] * rank
    for a in axes:
        shape[a] = table.shape[0]
    return jnp.transpose(table, perm).reshape(shape)


def eliminate(plan: EliminationPlan, unary: jax.Array, pairwise: jax.Array,
              kind: str = "sum") -> tuple[jax.Array, list]:
    """Run ``plan`` on the tables: ``unary`` (n, K), ``pairwise`` (E, K, K) in the
    plan's edge order, log space (−inf: impossible value). ``kind`` "sum" gives log Z,
    "max" the best score. Returns the value and what :func:`backtrack` needs (each
    step's clique table; for a chain, the forward messages)."""
    if plan.chain:
        return _chain_forward(unary, pairwise, kind)
    red = _reduce(kind)
    factors = list(pairwise)
    tables, total = [], jnp.zeros((), unary.dtype)
    for step in plan.steps:
        rank = 1 + len(step.scope)
        clique = _place(unary[step.variable], (0,), rank)
        for f, axes in step.inputs:
            clique = clique + _place(factors[f], axes, rank)
        tables.append(clique)
        message = red(clique, axis=0)
        factors.append(message)
        if not step.scope:
            total = total + message
    return total, tables


def backtrack(plan: EliminationPlan, pairwise: jax.Array, tables, pick: Callable,
              rng_key: jax.Array | None = None) -> jax.Array:
    """Labels (n,) chosen in reverse elimination order, each by ``pick(key, scores)``
    from its clique table at the labels of its (later-eliminated) neighbours."""
    n = plan.num_variables
    keys = (jax.random.split(rng_key, n) if rng_key is not None
            else jnp.zeros((n, 2), jnp.uint32))
    if plan.chain:
        last = pick(keys[n - 1], tables[n - 1])

        def step(nxt, inputs):
            alpha, w, key = inputs
            x = pick(key, alpha + w[:, nxt])
            return x, x

        _, xs = jax.lax.scan(step, last, (tables[:-1], pairwise, keys[:-1]), reverse=True)
        return jnp.concatenate([xs, last[None]]).astype(jnp.int32)
    labels = [None] * n
    for t in reversed(range(len(plan.steps))):
        step = plan.steps[t]
        scores = tables[t][(slice(None),) + tuple(labels[u] for u in step.scope)]
        labels[step.variable] = pick(keys[t], scores)
    return jnp.stack(labels).astype(jnp.int32)


def log_partition(plan, unary, pairwise):
    """log Σ_x exp(Σ unary + Σ pairwise)."""
    return eliminate(plan, unary, pairwise, "sum")[0]


def max_score(plan, unary, pairwise):
    """max_x (Σ unary + Σ pairwise)."""
    return eliminate(plan, unary, pairwise, "max")[0]


def marginals(plan, unary, pairwise):
    """(log Z, unary marginals (n, K), pairwise marginals (E, K, K)): the gradient of
    log Z with respect to the tables."""
    value, (mu, mu2) = jax.value_and_grad(
        lambda u, w: log_partition(plan, u, w), argnums=(0, 1))(unary, pairwise)
    return value, mu, mu2


def map_labels(plan, unary, pairwise):
    """(best score, the labels attaining it) by max-product and back-pointers (ties go
    to the lowest label)."""
    best, tables = eliminate(plan, unary, pairwise, "max")
    return best, backtrack(plan, pairwise, tables, lambda key, s: jnp.argmax(s))


def sample_labels(plan, unary, pairwise, rng_key, num_samples: int):
    """``num_samples`` exact independent draws (num_samples, n): forward filtering
    (sum-product), backward sampling."""
    _, tables = eliminate(plan, unary, pairwise, "sum")
    pick = lambda key, s: jax.random.categorical(key, s)  # noqa: E731
    return jax.vmap(lambda k: backtrack(plan, pairwise, tables, pick, k))(
        jax.random.split(rng_key, num_samples))


def score(plan, unary, pairwise, labels):
    """Σ unary[i, x_i] + Σ pairwise[e, x_i, x_j] at ``labels`` (n,)."""
    n = plan.num_variables
    e = plan.edges
    total = jnp.sum(unary[jnp.arange(n), labels])
    if len(e):
        total = total + jnp.sum(pairwise[jnp.arange(len(e)), labels[e[:, 0]], labels[e[:, 1]]])
    return total
