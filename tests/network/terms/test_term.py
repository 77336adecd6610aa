"""What a term is and how users write them (numpyro_ugm/network/terms/term.py): statnet
formulas, names, (name, argument) pairs and ``term(...)`` mixed freely, statnet's
coefficient names, and clear errors for bad terms, arguments and attributes."""

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import pytest

from numpyro_ugm.network import ergm_statistics
from numpyro_ugm.network.terms.structural import resolve_terms, term_names
from numpyro_ugm.network.terms.term import Network, TermSpec, parse_terms, term


def test_coefficient_names_follow_statnet(attributes):
    net = Network(6, False, attributes)
    names = term_names(resolve_terms(
        "nodefactor('Sex') + nodematch('Grade') + nodemix('Sex', base=0)"
        " + gwesp(0.5, fixed=TRUE) + gwdegree(0.5, fixed=TRUE) + degree(c(0, 3))"
        " + kstar(2) + triangle", net))
    assert names == ["nodefactor.Sex.M", "nodematch.Grade", "mix.Sex.F.F", "mix.Sex.F.M",
                     "mix.Sex.M.M", "gwesp.fixed.0.5", "gwdeg.fixed.0.5", "degree0",
                     "degree3", "kstar2", "triangle"]
    directed = Network(6, True, attributes)
    names = term_names(resolve_terms(
        "gwesp(0.5, fixed=TRUE) + nodemix('Sex') + gwesp(0.25, fixed=TRUE)", directed))
    assert names == ["gwesp.OTP.fixed.0.5", "mix.Sex.M.F", "mix.Sex.F.M", "mix.Sex.M.M",
                     "gwesp.OTP.fixed.0.25"]


# --- formulas and bad input -----------------------------------------------------------


def test_formula_parsing(attributes, brute_force):
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
    net = Network(6, False, attributes)
    assert term_names(resolve_terms(mixed, net)) == [
        "edges", "gwesp.fixed.0.25", "nodematch.Grade.7", "nodematch.Grade.8",
        "nodematch.Grade.9", "triangle", "kstar2"]
    # a formula and the same terms written otherwise give the same statistics
    y = brute_force.random_graphs(np.random.default_rng(6), 2, 15)
    a, b = jax.jit(lambda y: (
        ergm_statistics(y, "y ~ edges + nodematch('Grade', diff=TRUE) + gwesp(0.25, fixed=TRUE)",
                        network=net),
        ergm_statistics(y, ["edges", term("nodematch", "Grade", diff=True), ("gwesp", 0.25)],
                        network=net)))(jnp.asarray(y, jnp.float32))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_bad_terms_and_attributes_are_refused_with_clear_messages(attributes):
    undirected = Network(6, False, attributes)
    directed = Network(6, True, attributes)
    with pytest.raises(ValueError, match="unknown term 'cycles'"):
        resolve_terms("edges + cycles", undirected)
    with pytest.raises(ValueError, match="'mutual' is for directed networks"):
        resolve_terms("edges + mutual", undirected)
    with pytest.raises(ValueError, match="'triangle' is for undirected networks"):
        resolve_terms("edges + triangle", directed)
    with pytest.raises(ValueError, match="'nodeocov' is for directed networks"):
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
