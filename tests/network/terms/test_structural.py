"""The structural ERGM terms and the table of terms
(numpyro_ugm/network/terms/structural.py) against brute force written from their
definitions (loops over nodes, dyads and triples in numpy, independent of the package's
formulas; ``helpers.network.brute_statistics`` and ``brute_force`` of tests/network/conftest.py):
every undirected statistic and its change statistics, decays and aliases, the directed
terms, degree counts; and the table: one row per name, each row's examples resolving to
the compiled forms it names. (Covariate terms: test_covariates.py; the compiled change
statistics of every row: test_terms_compiled.py.)"""

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from helpers.network import brute_statistics

from numpyro_ugm.network import (STATISTICS, TERMS, change_statistics, edges_to_adjacency,
                                 ergm_statistics, graph_to_edges)
from numpyro_ugm.network.terms.structural import TABLE, resolve_terms, term_names
from numpyro_ugm.network.terms.term import CompiledOp, Network, TermRow


# --- 1. undirected structural terms ----------------------------------------------------


def test_statistics_and_change_statistics_match_definitions():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, (6, 21)).astype(np.int8)  # 7 nodes
    A = edges_to_adjacency(y)
    expected = np.array([[brute_statistics(a)[s] for s in STATISTICS] for a in A])
    got = np.asarray(ergm_statistics(y, STATISTICS))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)
    # change statistics: toggle each pair on / off
    change = np.asarray(change_statistics(y, STATISTICS))
    for g in range(2):
        for e in range(21):
            on, off = y[g].copy(), y[g].copy()
            on[e], off[e] = 1, 0
            delta = [brute_statistics(edges_to_adjacency(on))[s]
                     - brute_statistics(edges_to_adjacency(off))[s] for s in STATISTICS]
            np.testing.assert_allclose(change[g, e], delta, rtol=1e-5, atol=1e-4)
    # gwesp with its own decay, aliases
    a = np.asarray(ergm_statistics(y, ["triangle", ("gwesp", 0.25), "kstar2"]))
    np.testing.assert_allclose(a[:, 1], [brute_statistics(x, 0.25)["gwesp"] for x in A],
                               rtol=1e-5)
    with pytest.raises(ValueError, match="unknown term 'cycles'"):
        ergm_statistics(y, ["edges", "cycles"])
    with pytest.raises(TypeError, match=r"edges\(0.3\) takes at most 0 positional"):
        ergm_statistics(y, [("edges", 0.3)])


# --- 2. directed structural terms --------------------------------------------------------

def directed_brute(A, decays=(0.5, 1.3)):
    """Directed structural statistics by their definitions, keyed by statnet's names (the
    geometrically weighted ones at each of ``decays``)."""
    n = len(A)
    nodes = range(n)
    out = [sum(A[i, j] for j in nodes) for i in nodes]
    inn = [sum(A[j, i] for j in nodes) for i in nodes]
    triples = [(i, j, k) for i in nodes for j in nodes for k in nodes if len({i, j, k}) == 3]
    two_paths = {(i, j): sum(A[i, k] * A[k, j] for k in nodes if k not in (i, j))
                 for i in nodes for j in nodes if i != j}
    values = {
        "edges": sum(A[i, j] for i in nodes for j in nodes),
        "mutual": sum(A[i, j] * A[j, i] for i, j in itertools.combinations(nodes, 2)),
        "istar2": sum(math.comb(d, 2) for d in inn),
        "ostar2": sum(math.comb(d, 2) for d in out),
        "ttriple": sum(A[i, j] * A[j, k] * A[i, k] for i, j, k in triples),
        "ctriple": sum(A[i, j] * A[j, k] * A[k, i] for i, j, k in triples) / 3,
        "isolates": sum(out[i] + inn[i] == 0 for i in nodes),
        "idegree0": sum(d == 0 for d in inn), "idegree1": sum(d == 1 for d in inn),
        "odegree1": sum(d == 1 for d in out), "odegree2": sum(d == 2 for d in out),
    }
    for alpha in decays:
        r = 1 - math.exp(-alpha)
        values[f"gwesp.OTP.fixed.{alpha:g}"] = math.exp(alpha) * sum(
            A[i, j] * (1 - r ** tp) for (i, j), tp in two_paths.items())
        values[f"gwideg.fixed.{alpha:g}"] = math.exp(alpha) * sum(1 - r ** d for d in inn)
        values[f"gwodeg.fixed.{alpha:g}"] = math.exp(alpha) * sum(1 - r ** d for d in out)
    return values


DIRECTED_FORMULA = ("edges + mutual + istar(2) + ostar(2) + ttriple + ctriple + isolates"
                    " + idegree(c(0,1)) + odegree(c(1,2)) + gwesp(0.5, fixed=TRUE)"
                    " + gwidegree(0.5, fixed=TRUE) + gwodegree(1.3, fixed=TRUE)"
                    " + gwesp(1.3, fixed=TRUE)")
DIRECTED_NAMES = ["edges", "mutual", "istar2", "ostar2", "ttriple", "ctriple", "isolates",
                  "idegree0", "idegree1", "odegree1", "odegree2", "gwesp.OTP.fixed.0.5",
                  "gwideg.fixed.0.5", "gwodeg.fixed.1.3", "gwesp.OTP.fixed.1.3"]


def test_directed_structural_terms_match_definitions(brute_force):
    n, E = 5, 20
    rng = np.random.default_rng(0)
    graphs = brute_force.random_graphs(rng, 4, E, density=(0.25, 0.5, 0.75, 0.1))
    brute_force.check_against_brute_force(directed_brute, n, True, DIRECTED_FORMULA,
                                          DIRECTED_NAMES, graphs, rng)
    # the package's dyad order is the documented one (row-major ordered pairs)
    A = brute_force.to_adjacency(graphs[1], n, True)
    np.testing.assert_array_equal(graph_to_edges(A, directed=True), graphs[1])


def test_undirected_degree_counts_match_definitions(brute_force):
    n, E = 6, 15
    rng = np.random.default_rng(5)
    graphs = brute_force.random_graphs(rng, 3, E, density=(0.2, 0.5, 0.8))

    def brute(A):
        d = [sum(A[i, j] for j in range(n)) for i in range(n)]
        return {"edges": sum(A[i, j] for i, j in brute_force.dyad_list(n, False)),
                **{f"degree{k}": sum(x == k for x in d) for k in (0, 1, 2, 4)}}

    brute_force.check_against_brute_force(
        brute, n, False, "net ~ edges + degree(c(0, 1, 2, 4))",
        ["edges", "degree0", "degree1", "degree2", "degree4"], graphs, rng)


# --- 3. the table of terms ----------------------------------------------------------------


def test_the_table_declares_every_term_once():
    """Every built-in name is one row (aliases included), every row's examples resolve
    on the networks it accepts to terms whose compiled forms the row names, and the other
    kind of network refuses them."""
    names = [name for row in TABLE for name in (row.name, *row.aliases)]
    assert len(names) == len(set(names))
    assert TERMS == tuple(sorted(row.name for row in TABLE))
    assert {s for s in STATISTICS if s != "triangles"} <= set(TERMS)
    for row in TABLE:
        for directed in (False, True):
            net = Network(6, directed, {"x": np.arange(6.0), "g": np.array(list("aabbcc"))},
                          {"w": np.ones((6, 6))})
            for example in row.examples:
                if not row.accepts(directed):
                    with pytest.raises(ValueError, match=f"'{row.name}' is for"):
                        resolve_terms(example, net)
                    continue
                for t in resolve_terms(example, net):
                    form = t.native.op if isinstance(t.native, CompiledOp) else t.native[0]
                    assert form in row.compiled, (row.name, form)
        for alias in row.aliases:
            assert term_names(resolve_terms(alias, Network(5, row.networks == "directed"))) \
                == term_names(resolve_terms(row.name, Network(5, row.networks == "directed")))


def test_a_row_needs_its_compiled_form_and_an_example():
    build = TABLE[0].build
    with pytest.raises(ValueError, match="at least one example"):
        TermRow("mine", "both", build, ("add",), ())
    with pytest.raises(ValueError, match="neither an Op nor a covariate form"):
        TermRow("mine", "both", build, ("kstar",), ("mine",))
    with pytest.raises(ValueError, match="networks must be"):
        TermRow("mine", "bipartite", build, ("add",), ("mine",))


def test_statistics_of_a_networkx_graph_equal_those_of_its_edge_data():
    # issue 46 F6: a graph (as fit_ergm and mple take) was a ValueError about edge counts
    graph = nx.karate_club_graph()
    y = graph_to_edges(graph)
    formula = ["edges", "kstar2", "triangles"]
    np.testing.assert_array_equal(ergm_statistics(graph, formula),
                                  ergm_statistics(y, formula))
    np.testing.assert_array_equal(ergm_statistics(graph, formula),
                                  [graph.number_of_edges(),
                                   sum(math.comb(d, 2) for _, d in graph.degree()),
                                   sum(nx.triangles(graph).values()) // 3])
    np.testing.assert_array_equal(change_statistics(graph, formula),
                                  change_statistics(y, formula))
    directed = nx.DiGraph([(0, 1), (1, 2), (2, 0), (0, 2)])
    np.testing.assert_array_equal(ergm_statistics(directed, ["edges", "mutual"]), [4, 1])


def test_term_names_resolves_names_and_formulas():
    # issue 46 F6: names (not Term objects) were an AttributeError
    assert term_names(["edges"]) == ["edges"]
    assert term_names("edges + kstar(2) + gwesp(0.5, fixed=TRUE)") == [
        "edges", "kstar2", "gwesp.fixed.0.5"]
    net = Network(4, False, {"g": np.array(["a", "b", "a", "b"])})
    assert term_names(["nodematch('g')"], net) == term_names(resolve_terms(
        ["nodematch('g')"], net))
