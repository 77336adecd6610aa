"""The TNT proposal and its Metropolis–Hastings ratio
(numpyro_ugm/network/sampling/proposals.py), written in JAX and for numba: each pair
gives the same values on the same inputs (the proposal probability on a grid and the
acceptance ratio); the triadic rate of every dyad of random networks, with and without
the adjacency bit sets, against its definition; the share of triadic proposals is
checked alike."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numpyro_ugm.network.sampling import chains as nc
from numpyro_ugm.network.sampling import proposals as pr
from numpyro_ugm.network.sampling.views import gather_rows


def test_the_proposal_probabilities_agree():
    grid = itertools.product([0, 1, 7], [0, 1], [10, 45], [0.0, 0.3], [0.0, 0.7, 2.5])
    for m, value, num_dyads, triadic, rate in grid:
        if value and not m:
            continue  # a tie needs a tie
        jax_q = pr.proposal_probability(jnp.int32(m), jnp.float32(value), num_dyads,
                                        triadic, jnp.float32(rate), jnp.float32)
        compiled_q = pr.compiled_proposal_probability(m, value, num_dyads, triadic, rate)
        assert float(jax_q) == pytest.approx(compiled_q, rel=1e-6), (m, value, triadic)


def test_the_acceptance_ratios_agree():
    rng = np.random.default_rng(0)
    for _ in range(40):
        k = 3
        theta, delta = rng.normal(size=k), rng.normal(size=k)
        value = int(rng.integers(2))
        m = int(rng.integers(value, 9))
        triadic, rate = float(rng.choice([0.0, 0.4])), float(rng.uniform(0, 2))
        weight = float(rng.choice([1.0, 0.0, 0.8]))
        sign = 1.0 - 2.0 * value
        log_jax = pr.log_acceptance(jnp.float32(sign), jnp.asarray(theta, jnp.float32),
                                    jnp.asarray(delta, jnp.float32), jnp.int32(m),
                                    jnp.float32(value), 21, triadic, jnp.float32(rate),
                                    weight)
        compiled = pr.compiled_acceptance(sign * float(theta @ delta), m, value, 21, triadic,
                                          rate, weight)
        assert math.exp(float(log_jax)) == pytest.approx(compiled, rel=1e-5)


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("bits", [False, True])
def test_the_triadic_rate_of_every_dyad_is_its_definition(directed, bits, chain_checks):
    """rate(i, j) = Σ_{k ∈ N(i)∩N(j)} 1/d_k (directed: Σ_{k ∈ out(i)∩in(j)}
    (1/outdeg k + 1/indeg k) / 2), from the dense adjacency, with the dyad on or off."""
    n = 11
    rng = np.random.default_rng(2 + directed)
    edges = chain_checks.random_edges(rng, n, 0.35, directed)
    state = nc.init_network_chains(edges, n, 1, directed=directed, statistics0=[0.0],
                                   max_degree=n - 1, adjacency_bits=bits)
    one = jax.tree.map(lambda x: x[0], state)

    @jax.jit
    def rates(i, j):
        def rate(a, b):
            rows = gather_rows(one, a, b, a, b)
            return pr.triadic_rate(one, rows, jnp.float32(0.0))
        return jax.vmap(rate)(i, j)

    i, j = np.nonzero(~np.eye(n, dtype=bool))
    got = np.asarray(rates(jnp.asarray(i, jnp.int32), jnp.asarray(j, jnp.int32)))
    A = chain_checks.adjacency(edges, n, directed)
    out_degree, in_degree = A.sum(1), A.sum(0)
    for d, (a, b) in enumerate(zip(i, j)):
        middle = np.flatnonzero(A[a] * A[:, b])  # a -> k -> b (undirected: a − k − b)
        if directed:
            want = sum(0.5 * (1 / out_degree[k] + 1 / in_degree[k]) for k in middle)
        else:
            want = sum(1 / out_degree[k] for k in middle)
        assert got[d] == pytest.approx(want, rel=1e-6, abs=1e-7), (a, b)
    assert np.any(got > 0)


def test_the_share_of_triadic_proposals_is_checked():
    assert pr.check_triadic("owner", 0.25) == 0.25
    for bad in (1.0, -0.1, "half", None, float("nan")):
        with pytest.raises(ValueError, match=r"owner: triadic must be a probability in \[0, 1\)"):
            pr.check_triadic("owner", bad)
