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
