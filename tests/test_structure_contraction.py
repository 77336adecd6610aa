"""The chain's scaled forward algorithm (structure/contraction.py): log Z in probability
space, each step scaled to a largest entry of 1, against a float64 log-space forward
recursion written here and against the log-space elimination, with its gradient (the
marginals); impossible values (−inf unary entries, a padded position pinned at −1e4);
and the switch to log space when a pairwise table is not finite or spans too much."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp

from numpyro_ugm.structure import contraction
from numpyro_ugm.structure.elimination import plan_elimination


def chain(n, K, seed, unary_scale, pairwise_scale):
    """A chain's plan and random tables: a tenth of the unary entries −inf (never a whole
    row) and one position pinned to label 0 by −1e4 on the others."""
    rng = np.random.default_rng(seed)
    plan = plan_elimination(n, K, np.stack([np.arange(n - 1), np.arange(1, n)], 1))
    unary = rng.normal(size=(n, K)) * unary_scale
    unary[rng.random((n, K)) < 0.1] = -np.inf
    unary[:, 0] = np.where(np.isinf(unary).all(1), 0.0, unary[:, 0])
    unary[n // 2, 1:] = -1e4
    pairwise = rng.normal(size=(n - 1, K, K)) * pairwise_scale
    return plan, unary, pairwise


def forward(unary, pairwise):
    """log Z by the log-space forward recursion, float64."""
    alpha = unary[0]
    for t in range(1, len(unary)):
        alpha = logsumexp(alpha[:, None] + pairwise[t - 1], axis=0) + unary[t]
    return logsumexp(alpha)


@pytest.mark.parametrize("pairwise_scale, scaled", [(1.0, True), (4.0, True), (30.0, False)])
def test_chain_log_z_and_marginals_match_the_log_space_recursion(pairwise_scale, scaled):
    plan, unary, pairwise = chain(400, 5, 0, 10.0, pairwise_scale)
    u, w = jnp.asarray(unary, jnp.float32), jnp.asarray(pairwise, jnp.float32)
    assert bool(contraction.runs_scaled(plan, w)) is scaled
    log_z = jax.jit(lambda u, w: contraction.log_partition(plan, u, w))
    want = forward(unary, pairwise)
    np.testing.assert_allclose(float(log_z(u, w)), want, rtol=2e-6)
    got = jax.grad(lambda u, w: contraction.log_partition(plan, u, w), (0, 1))(u, w)
    ref = jax.grad(lambda u, w: contraction.eliminate(plan, u, w, "sum")[0], (0, 1))(u, w)
    for a, b in zip(got, ref):
        assert np.all(np.isfinite(a))
        np.testing.assert_allclose(a, b, atol=2e-5)
    np.testing.assert_allclose(np.sum(got[0], 1), 1.0, rtol=1e-5)  # marginals sum to 1


def test_a_pairwise_table_with_minus_inf_runs_in_log_space():
    plan, unary, pairwise = chain(50, 3, 1, 1.0, 1.0)
    pairwise[7, 0, 1] = -np.inf
    w = jnp.asarray(pairwise, jnp.float32)
    assert not bool(contraction.runs_scaled(plan, w))
    np.testing.assert_allclose(
        float(contraction.log_partition(plan, jnp.asarray(unary, jnp.float32), w)),
        forward(unary, pairwise), rtol=2e-6)
