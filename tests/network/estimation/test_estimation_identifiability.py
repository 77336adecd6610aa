"""Identifiability checked before any fit, and MLEs at ±∞ reported as such
(``network/estimation/identifiability.py``; issue 46, items 9, 10 and 26): the numbers
against counts of ties and dyads (a saturated logistic regression in closed form)."""

import itertools
import warnings

import networkx as nx
import numpy as np
import pytest
from scipy import special

from numpyro_ugm.network import fit_ergm
from numpyro_ugm.network.diagnostics.degeneracy import ErgmDegeneracyError


def _quiet_fit(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fit_ergm(*args, **kwargs)


@pytest.mark.parametrize("formula, dependent", [
    ("edges + kstar(1)", "kstar1"),
    ("edges + nodecov('constant')", "nodecov.constant"),
    ("edges + nodefactor('g', base=0)", "nodefactor.g.b")])
def test_a_design_of_deficient_rank_is_an_error_naming_the_terms(formula, dependent):
    """edges + kstar(1) (kstar1 = 2 edges) had s.e. 0.049 and 0.098, p < 1e-4."""
    g = nx.gnp_random_graph(12, 0.3, seed=1)
    for v in g.nodes:
        g.nodes[v]["constant"], g.nodes[v]["g"] = 3.0, "ab"[v % 2]
    with pytest.raises(ValueError, match=f"not identifiable.*{dependent}"):
        fit_ergm(g, formula)


def test_dependent_models_check_their_dyadic_terms_too():
    g = nx.gnp_random_graph(12, 0.3, seed=1)
    with pytest.raises(ValueError, match="not identifiable.*kstar1"):
        fit_ergm(g, "edges + kstar(1) + triangle")


@pytest.mark.parametrize("graph, sign", [
    (nx.empty_graph(10), -1), (nx.complete_graph(8), 1), (nx.path_graph(2), 1)])
def test_an_mle_at_infinity_is_reported_as_infinite(graph, sign):
    """The empty graph gave −23.20 (s.e. 16,287), K8 and one dyad +23.20."""
    with pytest.warns(RuntimeWarning, match="edges"):
        fit = fit_ergm(graph, "edges")
    assert fit.estimates[0] == sign * np.inf
    assert np.isnan(fit.stderr[0])
    assert fit.log_likelihood == 0.0  # every dyad's probability tends to 1
    assert "edges" in fit.message and "∞" in fit.message


def test_levels_without_a_within_level_tie_are_at_minus_infinity_the_rest_fitted(statnet):
    """faux.mesa.high edges + nodematch('Race', diff=TRUE) gave −18.38 (s.e. 28,209) for
    levels with no within-level tie; the others are checked against the closed form of
    the saturated model on the dyads left: logit of ties / dyads per group."""
    g = statnet("faux.mesa.high")
    fit = _quiet_fit(g, "edges + nodematch('Race', diff=TRUE)")
    race = {v: g.nodes[v]["Race"] for v in g.nodes}
    levels = sorted(set(race.values()))
    ties = {lv: 0 for lv in levels + [None]}
    dyads = dict(ties)
    for i, j in itertools.combinations(g.nodes, 2):
        group = race[i] if race[i] == race[j] else None
        dyads[group] += 1
        ties[group] += g.has_edge(i, j)
    base = special.logit(ties[None] / dyads[None])
    assert fit.estimates[0] == pytest.approx(base, abs=1e-8)
    for k, lv in enumerate(levels, start=1):
        assert fit.names[k] == f"nodematch.Race.{lv}"
        if ties[lv] == 0:
            assert fit.estimates[k] == -np.inf and np.isnan(fit.stderr[k])
        else:
            assert fit.estimates[k] == pytest.approx(
                special.logit(ties[lv] / dyads[lv]) - base, abs=1e-8)
            assert np.isfinite(fit.stderr[k])
    assert "-Inf" in fit.summary()


def test_the_monte_carlo_path_refuses_a_dyadic_statistic_at_its_bound():
    with pytest.raises(ErgmDegeneracyError, match="edges.*−∞"):
        fit_ergm(nx.empty_graph(10), "edges + triangle")


@pytest.mark.parametrize("n", [0, 1])
def test_graphs_of_zero_or_one_node_are_a_clear_error(n):
    with pytest.raises(ValueError, match="at least 2"):
        fit_ergm(nx.empty_graph(n), "edges")


def test_a_huge_covariate_is_fitted_in_its_own_units(statnet):
    """nodecov of 1e200 gave [nan, nan]: the same fit as wealth, θ scaled by 1e-198."""
    g = statnet("flomarriage")
    for v in g.nodes:
        g.nodes[v]["big"] = g.nodes[v]["wealth"] * 1e198
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        big = fit_ergm(g, "edges + nodecov('big')")
        small = fit_ergm(g, "edges + nodecov('wealth')")
    np.testing.assert_allclose(big.estimates * [1, 1e198], small.estimates, rtol=1e-9)
    np.testing.assert_allclose(big.stderr * [1, 1e198], small.stderr, rtol=1e-9)
    assert big.log_likelihood == pytest.approx(small.log_likelihood, abs=1e-9)
    with pytest.raises(ValueError, match="rescale"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fit_ergm(g, "edges + nodecov('big') + triangle")


def test_attribute_levels_keep_their_type_and_nodecov_refuses_strings():
    """1 and "1" were merged into one level; numeric strings were accepted by nodecov."""
    g = nx.path_graph(4)
    for v in g.nodes:
        g.nodes[v]["m"], g.nodes[v]["s"] = [1, "1", 2, "2"][v], str(float(v))
    with pytest.raises(TypeError, match="mixes strings and numbers"):
        fit_ergm(g, "edges + nodefactor('m')")
    g = nx.path_graph(4)
    for v in g.nodes:
        g.nodes[v]["s"] = str(float(v))
    with pytest.raises(TypeError, match="numeric"):
        fit_ergm(g, "edges + nodecov('s')")


def test_gibbs_on_a_huge_network_is_refused_before_any_memory_is_spent():
    """sampler='gibbs' on 20,000 nodes passed 10 GB in 30 s."""
    from numpyro_ugm.network import ErgmControl, SamplingControl
    g = nx.empty_graph(20_000)
    g.add_edges_from((i, i + 1) for i in range(0, 19_998, 2))
    with pytest.raises(ValueError, match="sampler='sparse'"):
        fit_ergm(g, "edges + triangle",
                 control=ErgmControl(SamplingControl(sampler="gibbs")))


# --- the large sparse path (no (N, k) design) ----------------------------------------------


@pytest.fixture(scope="module")
def large_sparse_graph():
    """1,000 nodes (499,500 dyads, above SamplingControl.sparse_limit = 2^17: the
    edge-list path), 2,505 ties, a numeric, a constant and a 3-level attribute."""
    g = nx.gnp_random_graph(1000, 0.005, seed=4)
    rng = np.random.default_rng(0)
    for v in g.nodes:
        g.nodes[v]["x"], g.nodes[v]["c"], g.nodes[v]["g"] = float(rng.normal()), 2.0, "abc"[v % 3]
    return g


@pytest.mark.parametrize("formula, dependent", [
    ("edges + kstar(1)", "kstar1"),  # dyad independent: Newton on every dyad's sums
    ("edges + kstar(1) + triangle", "kstar1")])  # the Monte Carlo fit: refused first
def test_the_large_sparse_path_checks_identifiability_too(large_sparse_graph, formula,
                                                          dependent):
    """Before: edges + kstar(1) fitted [-0.8989, -2.1957] (−0.8989 − 2 · 2.1957 = −5.29 is
    logit of the density, any split as good); with triangle the chains ran 9 s before
    an ErgmDegeneracyError blamed the sample."""
    with pytest.raises(ValueError, match=f"not identifiable.*{dependent}"):
        fit_ergm(large_sparse_graph, formula, log_likelihood=False)


def _large_design(graph, formula, size, seed):
    from numpyro_ugm.network.estimation.sampled_mple import sample_dyads
    from numpyro_ugm.network.estimation.sparse_statistics import sparse_statistics
    from numpyro_ugm.network.graphs import graph_edge_list
    from numpyro_ugm.network.terms.structural import DEFAULT_DECAY, resolve_terms, term_names
    from numpyro_ugm.network.terms.term import as_network

    net, ties = as_network(graph), graph_edge_list(graph)
    terms = resolve_terms(formula, net, DEFAULT_DECAY)
    sample = sample_dyads(net, terms, ties, sparse_statistics(net, terms, ties), size,
                          np.random.default_rng(seed))
    return net, terms, term_names(terms), sample


def test_a_valid_formula_passes_from_its_sample_alone(large_sparse_graph, monkeypatch):
    """Full rank on the sample proves full rank: no pass over every dyad."""
    from numpyro_ugm.network.estimation import identifiability

    net, terms, names, sample = _large_design(
        large_sparse_graph, "edges + nodecov('x') + nodematch('g')", 20000, 0)
    def every_dyad(*args, **kwargs):
        raise AssertionError("a sample of full rank needs no pass over every dyad")

    monkeypatch.setattr(identifiability, "dyadic_sums", every_dyad)
    identifiability.check_sampled_identifiable("t", net, terms, sample.change_statistics,
                                               names)


def test_a_sample_that_missed_the_rare_dyads_is_cleared_by_every_dyad():
    """Node 0, alone in level 'b' and without ties: its 999 dyads are the only ones
    where nodefactor.g.b is not 0; 10 sampled non-ties miss them, so the sample's
    column is 0 (deficient), but XᵀX over every dyad has full rank: no error. The Gram
    matrix against X built densely (every dyad's change statistics)."""
    from numpyro_ugm.network import change_statistics
    from numpyro_ugm.network.estimation.identifiability import (
        check_sampled_identifiable, dependent_terms, gram_dependent_terms)
    from numpyro_ugm.network.estimation.sparse_statistics import dyadic_sums
    from numpyro_ugm.network.terms.term import as_network

    g = nx.gnp_random_graph(1000, 0.005, seed=4)
    g.remove_edges_from(list(g.edges(0)))
    for v in g.nodes:
        g.nodes[v]["g"] = "b" if v == 0 else "a"
    formula = "edges + nodefactor('g')"
    net, terms, names, sample = _large_design(g, formula, 10, 1)
    assert np.all(sample.change_statistics[:, 1] == 0)
    assert dependent_terms(sample.change_statistics, names) == ["nodefactor.g.b"]
    check_sampled_identifiable("t", net, terms, sample.change_statistics, names)
    # the Gram matrix of a smaller network against its dense design
    small = g.subgraph(range(60)).copy()
    small_net = as_network(small)
    X = np.asarray(change_statistics(np.zeros(60 * 59 // 2, np.float32), formula,
                                     network=small_net), np.float64)
    gram = 4.0 * dyadic_sums(small_net, [t for t in terms], np.zeros(2), True)[2]
    np.testing.assert_allclose(gram, X.T @ X, rtol=1e-12)
    assert gram_dependent_terms(gram, names) == []
    assert gram_dependent_terms(np.array([[4.0, 8.0], [8.0, 16.0]]), ["edges", "kstar1"]) \
        == ["kstar1"]


def test_a_monte_carlo_fit_refuses_an_mple_at_infinity_naming_the_hull_boundary():
    # issue 46 F5: the MCMLE started at the diverged MPLE and blamed "linearly dependent"
    # terms; the observed kstar2 is at its bound given the edges (15, the fewest two-stars
    # of any 9-edge graph on 7 nodes: test_estimation_mple.py enumerates them)
    graph = nx.Graph()
    graph.add_nodes_from(range(7))
    graph.add_edges_from([(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (4, 5), (5, 6), (3, 5),
                          (1, 6)])
    with pytest.raises(ErgmDegeneracyError, match="boundary of the convex hull") as error:
        fit_ergm(graph, "edges + kstar(2)")
    assert "linearly dependent" not in str(error.value)
    assert error.value.terms == ["edges", "kstar2"]
