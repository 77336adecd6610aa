"""The covariate ERGM terms (numpyro_ugm/network/terms/covariates.py) against brute
force written from statnet's definitions (loops over the ties in numpy), on undirected
and directed networks, with their coefficient names; and the MPLE of flomarriage
(edges + nodecov) against R's published fit."""

from collections import defaultdict

import networkx as nx
import numpy as np
import pytest

from numpyro_ugm.network import mple
from numpyro_ugm.network.terms.term import Network, term


# --- covariate terms ------------------------------------------------------------------

FRIENDS = np.arange(36, dtype=float).reshape(6, 6) % 7 - 2.5  # asymmetric on purpose
CLOSENESS = np.cos(np.arange(36)).reshape(6, 6)
RACES = ("Black", "Hisp", "White")


def covariate_brute(A, directed, attributes, dyads):
    """Every covariate statistic the tests use, by looping over the ties ``dyads``
    (statnet's definitions), keyed by statnet's coefficient names; absent keys are 0."""
    x, sex, grade, race = (attributes[k] for k in ("x", "Sex", "Grade", "Race"))
    s = defaultdict(float)
    for i, j in dyads:
        if not A[i, j]:
            continue
        s["edges"] += 1
        s["nodecov.x"] += x[i] + x[j]
        s["nodeocov.x"] += x[i]
        s["nodeicov.x"] += x[j]
        for level in ("F", "M"):
            s[f"nodefactor.Sex.{level}"] += (sex[i] == level) + (sex[j] == level)
            s[f"nodeifactor.Sex.{level}"] += sex[j] == level
        for level in RACES:
            s[f"nodefactor.Race.{level}"] += (race[i] == level) + (race[j] == level)
            s[f"nodeofactor.Race.{level}"] += race[i] == level
            s[f"nodematch.Race.{level}"] += race[i] == race[j] == level
        s["nodematch.Grade"] += grade[i] == grade[j]
        for level in (7, 9):
            s[f"nodematch.Grade.{level}"] += grade[i] == grade[j] == level
        s["nodematch.Sex"] += sex[i] == sex[j] == "M"  # levels=c('M')
        s["absdiff.x"] += abs(x[i] - x[j])
        s["absdiff2.x"] += abs(x[i] - x[j]) ** 2
        a, b = race[i], race[j]
        if not directed and RACES.index(a) > RACES.index(b):
            a, b = b, a
        s[f"mix.Race.{a}.{b}"] += 1
        s["edgecov"] += CLOSENESS[i, j]
        s["edgecov.friends"] += FRIENDS[i, j]
    return s


COVARIATE_FORMULA = ("edges + nodecov('x') + nodefactor('Sex') + nodefactor('Race', base=0)"
                     " + nodematch('Grade') + nodematch('Race', diff=TRUE)"
                     " + nodematch('Grade', diff=TRUE, levels=c(7, 9))"
                     " + nodematch('Sex', levels=c('M')) + absdiff('x')"
                     " + absdiff('x', pow=2) + nodemix('Race')")
COVARIATE_NAMES = ["edges", "nodecov.x", "nodefactor.Sex.M", "nodefactor.Race.Black",
                   "nodefactor.Race.Hisp", "nodefactor.Race.White", "nodematch.Grade",
                   "nodematch.Race.Black", "nodematch.Race.Hisp", "nodematch.Race.White",
                   "nodematch.Grade.7", "nodematch.Grade.9", "nodematch.Sex", "absdiff.x",
                   "absdiff2.x"]
# statnet's cell order: the first level varies fastest; undirected keeps a <= b; the
# first cell is the base, left out
MIX_UNDIRECTED = ["mix.Race.Black.Hisp", "mix.Race.Hisp.Hisp", "mix.Race.Black.White",
                  "mix.Race.Hisp.White", "mix.Race.White.White"]
MIX_DIRECTED = ["mix.Race.Hisp.Black", "mix.Race.White.Black", "mix.Race.Black.Hisp",
                "mix.Race.Hisp.Hisp", "mix.Race.White.Hisp", "mix.Race.Black.White",
                "mix.Race.Hisp.White", "mix.Race.White.White"]
DIRECTED_ONLY = ("nodeocov('x') + nodeicov('x') + nodeofactor('Race')"
                 " + nodeifactor('Sex', base=0)")
DIRECTED_ONLY_NAMES = ["nodeocov.x", "nodeicov.x", "nodeofactor.Race.Hisp",
                       "nodeofactor.Race.White", "nodeifactor.Sex.F", "nodeifactor.Sex.M"]


def covariate_case(directed, attributes):
    net = Network(6, directed, attributes, dyad_covariates={"friends": FRIENDS})
    terms = [COVARIATE_FORMULA, term("edgecov", CLOSENESS), term("edgecov", "friends")]
    names = COVARIATE_NAMES + (MIX_DIRECTED if directed else MIX_UNDIRECTED)
    names = names + ["edgecov", "edgecov.friends"]
    if directed:
        terms.append(DIRECTED_ONLY)
        names = names + DIRECTED_ONLY_NAMES
    return net, terms, names


@pytest.mark.parametrize("directed", [False, True])
def test_covariate_terms_and_their_names_match_definitions(directed, attributes,
                                                           brute_force):
    n = 6
    E = n * (n - 1) // (1 if directed else 2)
    net, terms, names = covariate_case(directed, attributes)
    dyads = brute_force.dyad_list(n, directed)

    def brute(A):
        return covariate_brute(A, directed, attributes, dyads)

    rng = np.random.default_rng(3 + directed)
    graphs = brute_force.random_graphs(rng, 2, E)
    brute_force.check_against_brute_force(brute, n, directed, terms, names, graphs, rng,
                                          network=net)


# --- the MPLE of a covariate model --------------------------------------------------------------------------------


def test_mple_reproduces_the_published_flomarriage_fit(network_data):
    path = network_data / "flomarriage.npz"
    data = np.load(path, allow_pickle=False)
    graph = nx.Graph()
    graph.add_nodes_from((k, {"wealth": float(w)}) for k, w in enumerate(data["attr_wealth"]))
    graph.add_edges_from(map(tuple, data["edges"].tolist()))
    assert graph.number_of_nodes() == 16 and graph.number_of_edges() == 20
    fit = mple(graph, "edges + nodecov('wealth')")
    assert fit.converged
    # R: summary(ergm(flomarriage ~ edges + nodecov("wealth"))), dyad independent (MLE)
    np.testing.assert_allclose(np.asarray(fit.params["theta"]), [-2.594929, 0.010546],
                               atol=1e-4)
