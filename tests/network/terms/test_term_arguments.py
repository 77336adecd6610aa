"""Term arguments checked by type and range, and the statnet forms this package does not
implement refused rather than read otherwise (issue 46, items 5, 11 and 26)."""

import numpy as np
import pytest

from numpyro_ugm.network.terms.structural import resolve_terms, term_names
from numpyro_ugm.network.terms.term import Network, parse_terms, term


@pytest.mark.parametrize("formula", ["edges + gwesp(0.5)", "gwdegree(0.3)", "gwesp + edges",
                                     "edges + gwdegree"])
def test_curved_forms_without_fixed_are_refused(formula):
    """statnet reads gwesp(α) without fixed= as the curved term: refused, naming
    fixed=TRUE (it was read as the fixed decay, silently)."""
    with pytest.raises(ValueError, match="curved.*fixed=TRUE"):
        resolve_terms(formula, Network(5))
    with pytest.raises(ValueError, match="curved.*fixed=TRUE"):
        resolve_terms(term("gwesp", 0.5), Network(5))


def test_directed_curved_forms_without_fixed_are_refused():
    for formula in ("gwidegree(0.5)", "gwodegree(0.5)", "gwesp(0.5)"):
        with pytest.raises(ValueError, match="fixed=TRUE"):
            resolve_terms(formula, Network(5, True))


def test_fixed_forms_and_the_package_pairs_keep_their_meaning():
    net = Network(5)
    assert term_names(resolve_terms("gwesp(0.5, fixed=TRUE)", net)) == ["gwesp.fixed.0.5"]
    assert term_names(resolve_terms(term("gwesp", 0.5, fixed=True), net)) == [
        "gwesp.fixed.0.5"]
    # the (name, argument) pair is this package's documented fixed decay
    assert term_names(resolve_terms([("gwesp", 0.25), ("gwdegree", 0.4)], net)) == [
        "gwesp.fixed.0.25", "gwdeg.fixed.0.4"]


@pytest.mark.parametrize("formula, name", [
    ("kstar(1.5)", "kstar"), ("degree(2.7)", "degree"), ("degree(-1)", "degree"),
    ("degree(c(1, 2.5))", "degree"), ("kstar(0)", "kstar"), ("kstar(TRUE)", "kstar"),
    ("kstar('2')", "kstar"), ("degree(c())", "degree")])
def test_bad_integer_arguments_name_the_term(formula, name):
    """kstar(1.5) was kstar1, degree(2.7) degree2, degree(-1) accepted."""
    with pytest.raises(ValueError, match=name):
        resolve_terms(formula, Network(5))


@pytest.mark.parametrize("formula", ["istar(1.5)", "ostar(-2)", "idegree(0.5)",
                                     "odegree(-1)"])
def test_bad_directed_integer_arguments_name_the_term(formula):
    with pytest.raises(ValueError, match=formula.split("(")[0]):
        resolve_terms(formula, Network(5, True))


def test_integral_floats_are_integers():
    net = Network(5)
    assert term_names(resolve_terms("kstar(2.0) + degree(c(0, 3.0))", net)) == [
        "kstar2", "degree0", "degree3"]
    assert term_names(resolve_terms([("kstar", np.int64(3))], net)) == ["kstar3"]


@pytest.mark.parametrize("terms", [5, None, 2.5, {"edges": 1}])
def test_terms_that_are_not_a_formula_or_list_are_a_clear_type_error(terms):
    """A number or None gave "'int' object is not iterable"."""
    with pytest.raises(TypeError, match="formula string"):
        parse_terms(terms)


def test_very_many_terms_parse_without_recursion_error():
    """150,000 terms gave RecursionError (the formula's tree walked recursively)."""
    formula = " + ".join(["edges"] * 20_000)  # the walk failed past ~1,000
    assert len(parse_terms(formula)) == 20_000
    with pytest.raises(ValueError, match="appear twice"):
        resolve_terms(formula, Network(3))
    assert parse_terms("nodematch('a+b') + edges")[0].args == ("a+b",)
