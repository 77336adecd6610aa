"""The statnet-style ERGM terms (models/graph_terms.py, graph_views.py,
graph_statistics.py, graph_covariates.py) against brute force written from their
definitions here (loops over nodes, dyads and triples in numpy, independent of the
package's formulas): directed structural terms, covariate terms on undirected and
directed networks, coefficient names, formula parsing and the errors for bad input;
Gibbs sampling of the model ``ergm`` against exact enumeration, its declared colors, a
user factor composed with it; and the MPLE of flomarriage against R's published fit.
(The undirected structural terms: test_models_graph_statistics.py.)"""

import itertools
import math
from collections import defaultdict
from pathlib import Path

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import numpyro
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.models import (change_statistics, ergm, ergm_statistics, graph_to_edges,
                                mple)
from numpyro_ugm.models.exponential_random_graph import dyad_colors
from numpyro_ugm.models.graph_statistics import (change_statistics_of, resolve_terms,
                                                 term_names)
from numpyro_ugm.models.graph_terms import Network, TermSpec, parse_terms, term

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "networks"


# --- brute force from the definitions ---------------------------------------------------


def dyad_list(n, directed):
    """The dyads (i, j) in the package's documented order: i < j row by row, or every
    ordered pair i != j row by row."""
    return [(i, j) for i in range(n) for j in range(n) if (i != j if directed else i < j)]


def to_adjacency(y, n, directed):
    A = np.zeros((n, n), np.int64)
    for e, (i, j) in enumerate(dyad_list(n, directed)):
        A[i, j] = y[e]
        if not directed:
            A[j, i] = y[e]
    return A


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


def brute_vector(brute, y, n, directed, names):
    values = brute(to_adjacency(y, n, directed))
    return np.array([values[k] for k in names], np.float64)


def brute_change(brute, y, e, n, directed, names):
    """s(y with dyad e on) − s(y with it off), from the brute-force statistics."""
    on, off = np.array(y), np.array(y)
    on[e], off[e] = 1, 0
    return (brute_vector(brute, on, n, directed, names)
            - brute_vector(brute, off, n, directed, names))


def random_graphs(rng, count, num_dyads, density=(0.3, 0.5, 0.7)):
    return np.stack([rng.random(num_dyads) < density[g % len(density)]
                     for g in range(count)]).astype(np.int8)


# --- the package's values, in one compiled call per case ---------------------------------


def check_against_brute_force(brute, n, directed, terms, names, graphs, rng, network=None,
                              block_size=5):
    """s(y) (:func:`ergm_statistics`), Δs of every dyad (:func:`change_statistics`, the
    all-dyads view) with the dyad itself on and off, and Δs of blocks of dyads
    (:func:`change_statistics_of` with ``idx``, the block view) covering every dyad, at
    each graph and at the graph with the block's dyads all on and all off, against the
    brute-force statistics and toggling."""
    net = network if network is not None else Network(n, directed)
    G, E = graphs.shape
    eye = np.eye(E, dtype=np.int8)
    toggled = np.stack([np.maximum(graphs[:, None], eye), graphs[:, None] * (1 - eye)])
    blocks = rng.permutation(E).reshape(-1, block_size)
    bases, idx = [], []
    for y in graphs:
        for block in blocks:
            on, off = y.copy(), y.copy()
            on[block], off[block] = 1, 0
            bases += [y, on, off]
            idx += [block] * 3
    resolved = resolve_terms(terms, net)

    @jax.jit
    def package(graphs, toggled, bases, idx):
        kind = {"network": net} if network is not None else {"directed": directed}
        return (ergm_statistics(graphs, terms, **kind),
                change_statistics(toggled, terms, **kind),
                jax.vmap(lambda y, i: change_statistics_of(y, net, resolved, i))(bases, idx))

    stats, every, block = (np.asarray(v) for v in package(
        jnp.asarray(graphs, jnp.float32), jnp.asarray(toggled, jnp.float32),
        jnp.asarray(np.stack(bases), jnp.float32), jnp.asarray(np.stack(idx))))
    assert term_names(resolved) == names
    want = np.stack([brute_vector(brute, y, n, directed, names) for y in graphs])
    np.testing.assert_allclose(stats, want, rtol=1e-5, atol=1e-4)
    cache = {}

    def delta(y, e):
        key = (y.tobytes(), int(e))
        if key not in cache:
            cache[key] = brute_change(brute, y, e, n, directed, names)
        return cache[key]

    assert every.shape == (2, G, E, E, len(names))
    for g, y in enumerate(graphs):
        want = np.stack([delta(y, e) for e in range(E)])
        for side in range(2):  # the dyad itself on, then off
            np.testing.assert_allclose(every[side, g, np.arange(E), np.arange(E)], want,
                                       rtol=1e-5, atol=1e-4, err_msg=f"graph {g} side {side}")
    want = np.stack([np.stack([delta(y, e) for e in i]) for y, i in zip(bases, idx)])
    np.testing.assert_allclose(block, want, rtol=1e-5, atol=1e-4)
    return stats


# --- 1. directed structural terms --------------------------------------------------------

DIRECTED_FORMULA = ("edges + mutual + istar(2) + ostar(2) + ttriple + ctriple + isolates"
                    " + idegree(c(0,1)) + odegree(c(1,2)) + gwesp(0.5, fixed=TRUE)"
                    " + gwidegree(0.5, fixed=TRUE) + gwodegree(1.3, fixed=TRUE)"
                    " + gwesp(1.3)")
DIRECTED_NAMES = ["edges", "mutual", "istar2", "ostar2", "ttriple", "ctriple", "isolates",
                  "idegree0", "idegree1", "odegree1", "odegree2", "gwesp.OTP.fixed.0.5",
                  "gwideg.fixed.0.5", "gwodeg.fixed.1.3", "gwesp.OTP.fixed.1.3"]


def test_directed_structural_terms_match_definitions():
    n, E = 5, 20
    rng = np.random.default_rng(0)
    graphs = random_graphs(rng, 4, E, density=(0.25, 0.5, 0.75, 0.1))
    check_against_brute_force(directed_brute, n, True, DIRECTED_FORMULA, DIRECTED_NAMES,
                              graphs, rng)
    # the package's dyad order is the documented one (row-major ordered pairs)
    A = to_adjacency(graphs[1], n, True)
    np.testing.assert_array_equal(graph_to_edges(A, directed=True), graphs[1])


# --- 2. covariate terms ------------------------------------------------------------------

ATTRIBUTES = {
    "x": np.array([0.5, -1.25, 2.0, 0.0, 3.5, -0.75]),
    "Sex": np.array(["F", "M", "M", "F", "M", "F"]),
    "Grade": np.array([9, 7, 8, 7, 9, 9]),
    "Race": np.array(["White", "Black", "Hisp", "White", "Hisp", "Black"]),
}
FRIENDS = np.arange(36, dtype=float).reshape(6, 6) % 7 - 2.5  # asymmetric on purpose
CLOSENESS = np.cos(np.arange(36)).reshape(6, 6)
RACES = ("Black", "Hisp", "White")


def covariate_brute(A, directed):
    """Every covariate statistic the tests use, by looping over the ties (statnet's
    definitions), keyed by statnet's coefficient names; absent keys are 0."""
    n = len(A)
    x, sex, grade, race = (ATTRIBUTES[k] for k in ("x", "Sex", "Grade", "Race"))
    s = defaultdict(float)
    for i, j in dyad_list(n, directed):
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


def covariate_case(directed):
    net = Network(6, directed, ATTRIBUTES, dyad_covariates={"friends": FRIENDS})
    terms = [COVARIATE_FORMULA, term("edgecov", CLOSENESS), term("edgecov", "friends")]
    names = COVARIATE_NAMES + (MIX_DIRECTED if directed else MIX_UNDIRECTED)
    names = names + ["edgecov", "edgecov.friends"]
    if directed:
        terms.append(DIRECTED_ONLY)
        names = names + DIRECTED_ONLY_NAMES
    return net, terms, names


@pytest.mark.parametrize("directed", [False, True])
def test_covariate_terms_and_their_names_match_definitions(directed):
    n = 6
    E = n * (n - 1) // (1 if directed else 2)
    net, terms, names = covariate_case(directed)

    def brute(A):
        return covariate_brute(A, directed)

    rng = np.random.default_rng(3 + directed)
    graphs = random_graphs(rng, 2, E)
    check_against_brute_force(brute, n, directed, terms, names, graphs, rng, network=net)


def test_coefficient_names_follow_statnet():
    net = Network(6, False, ATTRIBUTES)
    names = term_names(resolve_terms(
        "nodefactor('Sex') + nodematch('Grade') + nodemix('Sex', base=0)"
        " + gwesp(0.5, fixed=TRUE) + gwdegree(0.5, fixed=TRUE) + degree(c(0, 3))"
        " + kstar(2) + triangle", net))
    assert names == ["nodefactor.Sex.M", "nodematch.Grade", "mix.Sex.F.F", "mix.Sex.F.M",
                     "mix.Sex.M.M", "gwesp.fixed.0.5", "gwdeg.fixed.0.5", "degree0",
                     "degree3", "kstar2", "triangle"]
    directed = Network(6, True, ATTRIBUTES)
    names = term_names(resolve_terms("gwesp(0.5, fixed=TRUE) + nodemix('Sex') + gwesp(0.25)",
                                     directed))
    assert names == ["gwesp.OTP.fixed.0.5", "mix.Sex.M.F", "mix.Sex.F.M", "mix.Sex.M.M",
                     "gwesp.OTP.fixed.0.25"]


def test_undirected_degree_counts_match_definitions():
    n, E = 6, 15
    rng = np.random.default_rng(5)
    graphs = random_graphs(rng, 3, E, density=(0.2, 0.5, 0.8))

    def brute(A):
        d = [sum(A[i, j] for j in range(n)) for i in range(n)]
        return {"edges": sum(A[i, j] for i, j in dyad_list(n, False)),
                **{f"degree{k}": sum(x == k for x in d) for k in (0, 1, 2, 4)}}

    check_against_brute_force(brute, n, False, "net ~ edges + degree(c(0, 1, 2, 4))",
                              ["edges", "degree0", "degree1", "degree2", "degree4"],
                              graphs, rng)


# --- 3. formulas and bad input -----------------------------------------------------------


def test_formula_parsing():
    assert parse_terms("edges + nodematch('Grade') + gwesp(0.5, fixed=TRUE)") == (
        TermSpec("edges"), TermSpec("nodematch", ("Grade",)),
        TermSpec("gwesp", (0.5,), (("fixed", True),)))
    assert parse_terms("net ~ edges + degree(c(1,2))") == (
        TermSpec("edges"), TermSpec("degree", ((1, 2),)))
    assert parse_terms("nodematch('Race', diff=T, levels=c('A', 'B'))") == (
        TermSpec("nodematch", ("Race",), (("diff", True), ("levels", ("A", "B")))),)
    # mixed lists: names, (name, argument) pairs, term(...) and formulas, in order
    mixed = ["edges", ("gwesp", 0.25), term("nodematch", "Grade", diff=True),
             "triangle + kstar(2)"]
    assert parse_terms(mixed) == (
        TermSpec("edges"), TermSpec("gwesp", (0.25,)),
        TermSpec("nodematch", ("Grade",), (("diff", True),)), TermSpec("triangle"),
        TermSpec("kstar", (2,)))
    net = Network(6, False, ATTRIBUTES)
    assert term_names(resolve_terms(mixed, net)) == [
        "edges", "gwesp.fixed.0.25", "nodematch.Grade.7", "nodematch.Grade.8",
        "nodematch.Grade.9", "triangle", "kstar2"]
    # a formula and the same terms written otherwise give the same statistics
    y = random_graphs(np.random.default_rng(6), 2, 15)
    a, b = jax.jit(lambda y: (
        ergm_statistics(y, "y ~ edges + nodematch('Grade', diff=TRUE) + gwesp(0.25)",
                        network=net),
        ergm_statistics(y, ["edges", term("nodematch", "Grade", diff=True), ("gwesp", 0.25)],
                        network=net)))(jnp.asarray(y, jnp.float32))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_bad_terms_and_attributes_are_refused_with_clear_messages():
    undirected = Network(6, False, ATTRIBUTES)
    directed = Network(6, True, ATTRIBUTES)
    with pytest.raises(ValueError, match="unknown term 'cycles'"):
        resolve_terms("edges + cycles", undirected)
    with pytest.raises(ValueError, match="'mutual' is for directed networks"):
        resolve_terms("edges + mutual", undirected)
    with pytest.raises(ValueError, match="'triangle' is for undirected networks"):
        resolve_terms("edges + triangle", directed)
    with pytest.raises(ValueError, match="nodeocov is for directed networks"):
        resolve_terms("nodeocov('x')", undirected)
    with pytest.raises(ValueError, match="fixed=TRUE"):
        resolve_terms("gwesp(0.5, fixed=FALSE)", undirected)
    with pytest.raises(KeyError, match="'Height'"):
        resolve_terms("nodecov('Height')", undirected)
    with pytest.raises(KeyError, match="'nope'"):
        resolve_terms(term("edgecov", "nope"), undirected)
    with pytest.raises(TypeError, match="numeric"):
        resolve_terms("nodecov('Sex')", undirected)
    with pytest.raises(ValueError, match=r"\['edges'\] appear twice"):
        resolve_terms("edges + nodematch('Sex') + edges", undirected)
    with pytest.raises(ValueError, match="levels .*'Z'.* do not occur"):
        resolve_terms("nodematch('Sex', levels=c('Z'))", undirected)
    with pytest.raises(ValueError, match="not a literal"):
        parse_terms("edges + nodematch(Grade)")
    with pytest.raises(TypeError, match="no argument 'bogus'"):
        resolve_terms("nodematch('Sex', bogus=1)", undirected)
    # missing values name the node
    with_nan = Network(6, False, {"x": [0.0, 1.0, np.nan, 2.0, 3.0, 4.0]})
    with pytest.raises(ValueError, match="node 2"):
        resolve_terms("nodecov('x')", with_nan)
    with_none = Network(6, False, {"Sex": np.array(["F", "M", "F", "M", None, "F"],
                                                   dtype=object)})
    with pytest.raises(ValueError, match="node 4"):
        resolve_terms("nodematch('Sex')", with_none)
    with pytest.raises(ValueError, match="expected \\(6,\\)"):
        Network(6, False, {"x": [1.0, 2.0]})
    # a networkx node without a numeric attribute
    g = nx.Graph()
    g.add_nodes_from((k, {"x": float(k)}) for k in range(4))
    del g.nodes[3]["x"]
    with pytest.raises(ValueError, match="node 3"):
        resolve_terms("nodecov('x')", g)


def test_missing_categorical_attribute_of_a_networkx_node_is_refused():
    g = nx.Graph()
    g.add_nodes_from((k, {"Sex": "FM"[k % 2]}) for k in range(4))
    del g.nodes[2]["Sex"]
    with pytest.raises(ValueError, match="node 2"):
        resolve_terms("nodematch('Sex')", g)


def test_bad_graphs_are_refused_by_graph_to_edges():
    loop = nx.Graph([(0, 1), (1, 1)])
    with pytest.raises(ValueError, match="self-loop"):
        graph_to_edges(loop)
    multi = nx.MultiGraph([(0, 1), (0, 1), (1, 2)])
    with pytest.raises(ValueError, match="multigraph"):
        graph_to_edges(multi)
    asymmetric = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])
    with pytest.raises(ValueError, match="directed=True"):
        graph_to_edges(asymmetric)
    np.testing.assert_array_equal(graph_to_edges(asymmetric, directed=True),
                                  [1, 0, 0, 1, 0, 0])
    with pytest.raises(ValueError, match="directed=False but the graph"):
        graph_to_edges(nx.DiGraph([(0, 1)]), directed=False)
    # a DiGraph in node order gives the row-major ordered pairs
    dg = nx.DiGraph()
    dg.add_nodes_from(range(3))
    dg.add_edges_from([(2, 0), (0, 1), (1, 0)])
    np.testing.assert_array_equal(graph_to_edges(dg), [1, 0, 1, 0, 1, 0])


# --- 4. Gibbs sampling against exact enumeration; the declared colors ----------------------


def all_graphs(num_dyads):
    return np.array(list(itertools.product([0, 1], repeat=num_dyads)), np.int8)


def adjacency_batch(y, n, directed):
    A = np.zeros((len(y), n, n), np.int64)
    for e, (i, j) in enumerate(dyad_list(n, directed)):
        A[:, i, j] = y[:, e]
        if not directed:
            A[:, j, i] = y[:, e]
    return A


SMALL = {"Sex": np.array(["F", "M", "M", "F", "M"]), "x": np.array([0.0, 1.5, -1.0, 2.0, 0.5])}


def undirected_small_statistics(y):
    """edges, nodematch('Sex'), triangle, absdiff('x') of graphs (N, 10) on 5 nodes."""
    pairs = dyad_list(5, False)
    match = np.array([SMALL["Sex"][i] == SMALL["Sex"][j] for i, j in pairs], float)
    gap = np.array([abs(SMALL["x"][i] - SMALL["x"][j]) for i, j in pairs])
    A = adjacency_batch(y, 5, False)
    triangles = np.einsum("gij,gjk,gki->g", A, A, A) / 6
    return np.stack([y.sum(1), y @ match, triangles, y @ gap], 1).astype(np.float64)


def directed_small_statistics(y):
    """edges, mutual, ttriple, nodeicov('x') of directed graphs (N, 12) on 4 nodes."""
    A = adjacency_batch(y, 4, True)
    receiver_x = np.array([SMALL["x"][j] for _, j in dyad_list(4, True)])
    return np.stack([y.sum(1), np.einsum("gij,gji->g", A, A) / 2,
                     np.einsum("gij,gjk,gik->g", A, A, A), y @ receiver_x], 1).astype(float)


def exact_moments(S, theta):
    """E[s] and Cov[s] under p(y) ∝ exp(θ·s(y)) over the enumerated graphs."""
    logits = S @ np.asarray(theta, np.float64)
    p = np.exp(logits - np.logaddexp.reduce(logits))
    mean = p @ S
    return mean, (S - mean).T @ ((S - mean) * p[:, None])


def within(sampled, mean, cov):
    """Whether the sampled mean of every statistic is within 4 standard errors of the
    exact one (x2 for the autocorrelation within chains, as the other Gibbs tests)."""
    se = np.sqrt(np.diag(cov) / len(sampled)) * 2
    return bool(np.all(np.abs(sampled.mean(0) - mean) < 4 * se))


def gibbs_statistics(m, params, statistics_fn, seed=0):
    samples = ugm.sample(m, jax.tree.map(jnp.asarray, params), jax.random.PRNGKey(seed), 100,
                         num_chains=100, num_warmup=10, thinning=2)
    return statistics_fn(np.asarray(samples["y"]))


def assert_node_disjoint_colors(colors, n, directed):
    pairs = dyad_list(n, directed)
    for c in np.unique(colors):
        nodes = [v for e in np.flatnonzero(colors == c) for v in pairs[e]]
        assert len(nodes) == len(set(nodes)), (c, nodes)


UNDIRECTED_TERMS = "edges + nodematch('Sex') + triangle + absdiff('x')"


@pytest.mark.slow  # the default suite samples this ERGM with a user factor (below)
def test_gibbs_matches_exact_moments_undirected_with_covariates():
    net = Network(5, False, SMALL)
    terms = UNDIRECTED_TERMS
    m = ugm.UGM(ergm, net, terms)
    colors = m.target().structure.colors
    assert len(np.unique(colors)) == 5  # n odd: n matchings
    assert_node_disjoint_colors(colors, 5, False)
    theta = np.array([-0.5, 0.8, 0.4, -0.3])
    S = undirected_small_statistics(all_graphs(10))
    sampled = gibbs_statistics(m, {"theta": theta}, undirected_small_statistics)
    assert within(sampled, *exact_moments(S, theta)), (sampled.mean(0),
                                                       exact_moments(S, theta)[0])
    # the check can fail: the exact moments of a wrong θ are far from these samples
    wrong = theta * np.array([1, -1, 1, 1])
    assert not within(sampled, *exact_moments(S, wrong))
    # the package's statistics of the samples are the ones enumerated here
    y = all_graphs(10)[::37]
    np.testing.assert_allclose(np.asarray(ergm_statistics(y, terms, network=net)),
                               undirected_small_statistics(y), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_gibbs_matches_exact_moments_directed():
    net = Network(4, True, SMALL_DIRECTED)
    terms = "edges + mutual + ttriple + nodeicov('x')"
    m = ugm.UGM(ergm, net, terms)
    colors = m.target().structure.colors
    assert len(np.unique(colors)) == 2 * 3  # each of the n - 1 matchings, both directions
    assert_node_disjoint_colors(colors, 4, True)
    theta = np.array([-0.6, 1.0, 0.2, 0.5])
    S = directed_small_statistics(all_graphs(12))
    sampled = gibbs_statistics(m, {"theta": theta}, directed_small_statistics)
    assert within(sampled, *exact_moments(S, theta)), (sampled.mean(0),
                                                       exact_moments(S, theta)[0])
    assert not within(sampled, *exact_moments(S, theta * np.array([1, -1, 1, 1])))
    y = all_graphs(12)[::97]
    np.testing.assert_allclose(np.asarray(ergm_statistics(y, terms, network=net)),
                               directed_small_statistics(y), rtol=1e-5, atol=1e-5)


SMALL_DIRECTED = {"x": SMALL["x"][:4]}


def test_declared_colors_by_dependence():
    """The coloring the model's factor declares (dyad_colors), by the terms' dependence."""
    def colors(n, directed, formula):
        net = Network(n, directed, {"x": np.arange(n) * 0.5, "Sex": np.array(["F", "M"] * n)[:n]})
        return dyad_colors(net, resolve_terms(formula, net))

    # covariate terms only: one block of every dyad
    for directed in (False, True):
        c = colors(5, directed, "edges + nodematch('Sex') + absdiff('x') + nodecov('x')")
        assert c.shape == (20 if directed else 10,) and np.all(c == 0)
    # gwesp couples any two dyads: one color per dyad
    assert sorted(colors(5, False, "edges + nodematch('Sex') + gwesp(0.5, fixed=TRUE)")) == \
        list(range(10))
    assert sorted(colors(4, True, "edges + gwesp(0.5, fixed=TRUE)")) == list(range(12))
    # node terms: matchings, n - 1 colors for even n, n for odd n, twice as many directed
    for n, directed, count in ((6, False, 5), (5, False, 5), (6, True, 10), (5, True, 10),
                               (4, True, 6)):
        c = colors(n, directed, "edges + mutual" if directed else "edges + kstar(2)")
        assert len(np.unique(c)) == count
        assert_node_disjoint_colors(c, n, directed)


# --- 5. a user factor composed with the ERGM ---------------------------------------------

COMPOSED_TERMS = UNDIRECTED_TERMS
WEIGHTS = np.array([1.0, -0.5, 0.0, 2.0, 0.5, -1.0, 1.5, 0.0, -2.0, 1.0])


def ergm_and_mine(network, terms, pair=None, init=0.0):
    """An ERGM with a factor of its own: θ₂·(y @ w), or θ₂·y_a·y_b for ``pair`` (a, b);
    θ₂ a ``numpyro.param`` starting at ``init``."""
    y = ergm(network, terms)
    theta2 = numpyro.param("theta2", jnp.asarray(init, jnp.float32))
    if pair is None:
        numpyro.factor("mine", theta2 * (y @ jnp.asarray(WEIGHTS, y.dtype)))
    else:
        numpyro.factor("mine", theta2 * y[pair[0]] * y[pair[1]])
    return y


def composed_statistics(y, pair=None):
    extra = y @ WEIGHTS if pair is None else y[:, pair[0]] * y[:, pair[1]]
    return np.concatenate([undirected_small_statistics(y), extra[:, None]], 1)


def same_matching_pair(net):
    """Two dyads of one matching (no shared node): a product of them couples them."""
    matchings = dyad_colors(net, resolve_terms(COMPOSED_TERMS, net))
    same = np.flatnonzero(matchings == matchings[0])
    return matchings, (int(same[0]), int(same[1]))


def check_gibbs_against_exact(m, theta, pair, flip):
    """Gibbs means of s(y) and the user statistic against exact enumeration at θ, and
    (that the check can fail) against the exact means with the coefficient ``flip``
    negated."""
    S = composed_statistics(all_graphs(10), pair)
    sampled = gibbs_statistics(m, {"theta": theta[:-1], "theta2": theta[-1]},
                               lambda y: composed_statistics(y, pair), seed=1)
    assert within(sampled, *exact_moments(S, theta)), (sampled.mean(0),
                                                       exact_moments(S, theta)[0])
    wrong = theta.copy()
    wrong[flip] = -wrong[flip]
    assert not within(sampled, *exact_moments(S, wrong))


@pytest.mark.slow
def test_a_linear_user_factor_keeps_the_declared_matchings_and_gibbs_is_exact():
    """The default suite's Gibbs check: the ERGM with covariate terms (θ₂ = 0: the ERGM
    alone) and with a user factor θ₂·(y @ w), against exact enumeration of the 1,024
    graphs on 5 nodes."""
    net = Network(5, False, SMALL)
    matchings, _ = same_matching_pair(net)
    m = ugm.UGM(ergm_and_mine, net, COMPOSED_TERMS, None, 0.5)
    colors = m.target().structure.colors
    np.testing.assert_array_equal(colors, matchings)  # linear in y: the matchings stand
    assert len(np.unique(colors)) == 5  # n odd: n matchings
    assert_node_disjoint_colors(colors, 5, False)
    # the ERGM alone (a nodematch coefficient of the wrong sign is caught), then with θ₂
    check_gibbs_against_exact(m, np.array([-0.5, 0.8, 0.4, -0.3, 0.0]), None, flip=1)
    check_gibbs_against_exact(m, np.array([-0.4, 0.5, 0.7, -0.2, 0.6]), None, flip=4)


@pytest.mark.slow
def test_a_nonlinear_user_factor_falls_back_to_the_analysis_and_gibbs_is_exact():
    net = Network(5, False, SMALL)
    matchings, pair = same_matching_pair(net)
    m = ugm.UGM(ergm_and_mine, net, COMPOSED_TERMS, pair, 0.5)
    colors = m.target().structure.colors
    assert colors[pair[0]] != colors[pair[1]]  # the analysis splits the coupled pair
    assert not np.array_equal(colors, matchings)
    check_gibbs_against_exact(m, np.array([0.0, 0.0, 0.0, 0.0, -4.0]), pair, flip=4)


@pytest.mark.slow
def test_a_nonlinear_user_factor_whose_parameter_starts_at_zero_is_found():
    net = Network(5, False, SMALL)
    _, pair = same_matching_pair(net)
    m = ugm.UGM(ergm_and_mine, net, COMPOSED_TERMS, pair, 0.0)
    colors = m.analyze().colors  # m.target().structure, without its check of the hooks
    assert colors[pair[0]] != colors[pair[1]]


# --- 6. MPLE --------------------------------------------------------------------------------


def test_mple_reproduces_the_published_flomarriage_fit():
    path = DATA / "flomarriage.npz"
    if not path.exists():
        pytest.skip(f"{path} is missing")
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
