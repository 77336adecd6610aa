"""The compiled sparse sampler (numpyro_ugm/network/sampling/compiled.py).

* Its stationary distribution against exact enumeration (a 5-node undirected and a
  4-node directed model with covariates, triangles / triples and gwesp), TNT alone and
  with half the proposals triadic; far off at a wrong θ and without the proposal ratio.
* The running statistics equal the statistics of the final networks on real networks
  (faux.mesa.high, faux.dixon.high), and the lists, edge positions and degrees stay
  consistent.
* Reproducible for a key, the same draws for chains split into groups; bad input is
  refused before the kernel reads it.

Its change statistics: terms/test_terms_compiled.py; its place in the simulator:
test_simulation.py; its toggle against the JAX one: test_chains.py; its proposal
probabilities and ratio against the JAX ones: test_proposals.py.
"""

import itertools

import numpy as np
import pytest

from numpyro_ugm.network.estimation.sparse_statistics import sparse_statistics
from numpyro_ugm.network.fit import observed_network
from numpyro_ugm.network.graphs import pair_tables
from numpyro_ugm.network.sampling import chains as nc
from numpyro_ugm.network.sampling import compiled as nn
from numpyro_ugm.network.terms import compiled as nt
from numpyro_ugm.network.terms.structural import resolve_terms, statistics_of

def exact_expectation(net, terms):
    """E_θ[s] over every graph on the network's nodes."""
    _, i, _ = pair_tables(net.num_nodes, net.directed)
    ys = np.array(list(itertools.product([0.0, 1.0], repeat=len(i))), np.float32)
    table = np.asarray(statistics_of(ys, net, terms), float)

    def expectation(theta):
        logw = table @ np.asarray(theta, float)
        w = np.exp(logw - logw.max())
        return w @ table / w.sum()

    return expectation


def z_scores(draws, expected, burn_in=50):
    """(average of chain means − expected) / its standard error from the spread of the
    independent chains' means."""
    means = draws[:, burn_in:].mean(1)
    se = means.std(0, ddof=1) / np.sqrt(len(means))
    return (means.mean(0) - expected) / se


CASES = {  # directed, n, formula, θ, wrong θ
    "undirected": (False, 5, "edges + nodematch('g') + triangle + gwesp(0.7, fixed=TRUE)",
                   [-0.6, 0.4, 0.35, 0.25], [-0.4, 0.4, 0.35, 0.25]),
    "directed": (True, 4, "edges + mutual + ttriple + gwesp(0.7, fixed=TRUE) "
                 "+ nodeofactor('g')", [-0.5, 0.6, 0.15, 0.2, 0.3],
                 [-0.3, 0.6, 0.15, 0.2, 0.3]),
}


@pytest.mark.parametrize("case", ["undirected", "directed"])
@pytest.mark.parametrize("triadic", [0.0, 0.5])
def test_distribution_matches_exact_enumeration(compiled_cases, case, triadic):
    directed, n, formula, theta, wrong = CASES[case]
    net = compiled_cases.network(n, directed, seed=3)
    terms = resolve_terms(formula, net)
    program = nt.native_program(terms, n)
    state = compiled_cases.native_state(np.zeros((0, 2), int), net, terms, 64, max_degree=n - 1)
    expectation = exact_expectation(net, terms)

    def draws(ratio_weight=1.0, key=(0, 1)):
        return nn.native_run(state, program, theta, key, 0, 0, 400, 8, triadic,
                             ratio_weight)[1]

    sample = draws()
    assert np.max(np.abs(z_scores(sample, expectation(theta)))) < 4.5
    assert np.max(np.abs(z_scores(sample, expectation(wrong)))) > 8
    # without the proposal ratio q(y' -> y) / q(y -> y') the chains settle elsewhere
    assert np.max(np.abs(z_scores(draws(0.0), expectation(theta)))) > 8


def check_consistent(state, directed):
    """Lists, edge positions, degrees and the edge list agree, for every chain."""
    for c in range(state.lists.shape[0]):
        m = state.num_edges[c]
        edges = state.edges[c, :m]
        assert len({tuple(e) for e in edges.tolist()}) == m
        sides = [(state.lists, state.degree, 0, 1)]
        sides.append((state.in_lists, state.in_degree, 1, 0) if directed
                     else (state.lists, state.degree, 1, 0))
        for lists, degree, head, tail in sides:
            counts = np.bincount(edges[:, head], minlength=lists.shape[1])
            if not directed:
                counts = np.bincount(edges.ravel(), minlength=lists.shape[1])
            np.testing.assert_array_equal(degree[c], counts)
            for p, e in enumerate(edges):
                row = lists[c, e[head], :degree[c, e[head]]]
                assert row[row[:, 0] == e[tail], 1].tolist() == [p]
        assert np.all(state.lists[c, :, :, 0][
            np.arange(state.lists.shape[2]) >= state.degree[c][:, None]] == -1)


@pytest.mark.parametrize("name, formula, theta", [
    ("faux.mesa.high", "edges + nodematch('Grade') + nodefactor('Sex') + kstar(2) "
     "+ gwesp(0.5, fixed=TRUE) + gwdegree(0.8, fixed=TRUE)",
     [-5.8, 1.9, 0.1, -0.05, 1.2, -0.3]),
    ("faux.dixon.high", "edges + mutual + nodematch('grade') + ttriple + ctriple "
     "+ gwesp(0.5, fixed=TRUE) + istar(2)", [-5.0, 2.5, 1.6, 0.05, -0.1, 0.4, 0.01]),
])
def test_running_statistics_match_the_final_networks(compiled_cases, statnet, name, formula,
                                                     theta):
    net, edges = observed_network(statnet(name), None)
    terms = resolve_terms(formula, net)
    program = nt.native_program(terms, net.num_nodes)
    state = compiled_cases.native_state(edges, net, terms, 3, max_degree=64)
    state, draws, acceptance, overflow = nn.native_run(state, program, theta, (5, 6), 0,
                                                       20000, 4, 5000, 0.5)
    assert overflow == -1 and np.all(acceptance > 0.05)
    check_consistent(state, net.directed)
    for c, e in enumerate(nc.network_edges(state)):
        exact = np.asarray(sparse_statistics(net, terms, e), float)
        np.testing.assert_allclose(state.statistics[c], exact, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(draws[c, -1], exact, rtol=1e-6, atol=1e-6)
    # the chains moved away from the observed network
    assert not np.allclose(draws[:, -1], sparse_statistics(net, terms, edges))


def test_reproducible_and_independent_of_the_grouping(compiled_cases):
    net = compiled_cases.network(30, False)
    terms = resolve_terms("edges + triangle + nodematch('g')", net)
    program = nt.native_program(terms, 30)
    edges, _ = compiled_cases.random_edges(np.random.default_rng(1), 30, 0.1, False)
    native_state = compiled_cases.native_state
    state = native_state(edges, net, terms, 4)

    def run(state, key, first=0):
        return nn.native_run(state, program, [-2.0, 0.2, 0.5], key, first, 100, 20, 50,
                             0.3)[1]

    whole = run(state, (7, 8))
    np.testing.assert_array_equal(whole, run(state, (7, 8)))  # the input is not changed
    halves = [run(native_state(edges, net, terms, 2), (7, 8), first) for first in (0, 2)]
    np.testing.assert_array_equal(whole, np.concatenate(halves))
    assert not np.array_equal(whole, run(state, (7, 9)))


def test_bad_input_is_refused_before_the_kernel_reads_it(compiled_cases):
    """The kernel reads node and column indices unchecked: every entry point checks
    (the design's and the statistics': terms/test_terms_compiled.py)."""
    net = compiled_cases.network(6, False)
    terms = resolve_terms("edges + triangle", net)
    program = nt.native_program(terms, 6)
    state = compiled_cases.native_state(np.array([[0, 1], [1, 2]]), net, terms, 2)
    with pytest.raises(ValueError, match="theta must be finite"):
        nn.native_run(state, program, [np.nan, 0.1], (0, 1), 0, 0, 1, 10, 0.0)
    with pytest.raises(ValueError, match=r"theta must be finite, of shape \(2,\)"):
        nn.native_run(state, program, [0.1, 0.2, 0.3], (0, 1), 0, 0, 1, 10, 0.0)
    with pytest.raises(ValueError, match="triadic must be a probability"):
        nn.native_run(state, program, [0.1, 0.2], (0, 1), 0, 0, 1, 10, 1.0)
    with pytest.raises(ValueError, match="interval"):
        nn.native_run(state, program, [0.1, 0.2], (0, 1), 0, 0, 1, 0, 0.0)
    with pytest.raises(ValueError, match="key_words must be two integers"):
        nn.native_run(state, program, [0.1, 0.2], (0, 1, 2), 0, 0, 1, 10, 0.0)
    other = nt.native_program(resolve_terms("edges + triangle",
                                            compiled_cases.network(7, False)), 7)
    with pytest.raises(ValueError, match="the program is for 7 nodes"):
        nn.native_run(state, other, [0.1, 0.2], (0, 1), 0, 0, 1, 10, 0.0)
    with pytest.raises(TypeError, match="numpy arrays"):
        nn.native_run(nc.init_network_chains(np.array([[0, 1]]), 6, 1, directed=False,
                                             statistics0=np.zeros(2)),
                      program, [0.1, 0.2], (0, 1), 0, 0, 1, 10, 0.0)
