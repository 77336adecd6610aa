"""The compiled change statistics (numpyro_ugm/network/terms/compiled.py) against the
dense ones, which are checked against definitions in test_structural.py and
test_covariates.py: every dyad of random networks, both orders of a pair, and the
statistics of a network from its ties added one at a time.

The every-dyad test runs every example of every row of the table of terms
(``TABLE``) on every kind of network the row accepts, so a term added to the table is
checked here with no further code; the two formulas of all the terms together check
their columns side by side.
"""

import numpy as np
import pytest

from numpyro_ugm.network.graphs import pair_tables
from numpyro_ugm.network.sampling.chains import init_network_chains
from numpyro_ugm.network.terms import compiled as nt
from numpyro_ugm.network.terms.structural import (TABLE, change_statistics_of, resolve_terms,
                                                  statistics_of)
from numpyro_ugm.network.terms.term import CompiledOp

UNDIRECTED = ("edges + kstar(2) + kstar(3) + triangle + isolates + degree(c(0, 1, 3)) "
              "+ gwesp(0.7, fixed=TRUE) + gwdegree(0.4, fixed=TRUE) + nodecov('x') "
              "+ nodefactor('g') + nodematch('g') + nodematch('g', diff=TRUE) "
              "+ absdiff('x', pow=2) + nodemix('g') + edgecov('w')")
DIRECTED = ("edges + mutual + istar(2) + ostar(2) + ttriple + ctriple + isolates "
            "+ idegree(c(0, 2)) + odegree(1) + gwidegree(0.3, fixed=TRUE) "
            "+ gwodegree(0.6, fixed=TRUE) + gwesp(0.7, fixed=TRUE) + nodecov('x') "
            "+ nodeocov('x') + nodeicov('x') + nodeofactor('g') + nodeifactor('g') "
            "+ nodematch('g') + nodemix('g') + absdiff('x') + edgecov('w')")

#: (row, example, directed) of every example of every row of the table
EXAMPLES = [pytest.param(row, example, directed, id=f"{example}-{kind}")
            for row in TABLE for example in row.examples
            for directed, kind in ((False, "undirected"), (True, "directed"))
            if row.accepts(directed)]


def check_every_dyad(cases, formula, directed, n=9, observed=True):
    """native_design of every dyad (and every pair read the other way round) against
    change_statistics_of, and native_statistics against statistics_of, at three
    densities; ``observed`` False starts the chains' running statistics at 0 (the design
    does not read them) instead of computing them."""
    net = cases.network(n, directed)
    terms = resolve_terms(formula, net)
    program = nt.native_program(terms, n)
    assert program is not None
    _, i, j = pair_tables(n, directed)
    for density in (0.2, 0.5, 0.8):
        edges, y = cases.random_edges(np.random.default_rng(int(density * 10)), n, density,
                                      directed)
        if observed:
            state = cases.native_state(edges, net, terms, 1, max_degree=n - 1)
        else:
            state = nt.native_chains(init_network_chains(
                edges, n, 1, directed=directed, statistics0=np.zeros(program.k),
                max_degree=n - 1))
        dense = np.asarray(change_statistics_of(y, net, terms))
        np.testing.assert_allclose(nt.native_design(state, program, i, j), dense,
                                   rtol=1e-5, atol=1e-5, err_msg=f"density {density}")
        if not directed:  # each pair read the other way round
            np.testing.assert_allclose(nt.native_design(state, program, j, i), dense,
                                       rtol=1e-5, atol=1e-5)
        # the statistics of the network, its ties added one at a time
        empty = np.concatenate([t.empty_value() for t in terms])
        np.testing.assert_allclose(
            nt.native_statistics(program, empty, edges, n, directed),
            np.asarray(statistics_of(y, net, terms), float), rtol=1e-5, atol=1e-4)
    return terms


@pytest.mark.parametrize("row, example, directed", EXAMPLES)
def test_every_row_of_the_table_matches_the_dense_change_statistics(compiled_cases, row,
                                                                    example, directed):
    terms = check_every_dyad(compiled_cases, example, directed, observed=False)
    # the row names the compiled operations its terms use
    for t in terms:
        form = t.native.op if isinstance(t.native, CompiledOp) else t.native[0]
        assert form in row.compiled, (row.name, form)


@pytest.mark.parametrize("directed", [False, True])
def test_change_statistics_of_every_term_match_the_dense_ones(compiled_cases, directed):
    check_every_dyad(compiled_cases, DIRECTED if directed else UNDIRECTED, directed)


def test_bad_input_is_refused_before_the_kernel_reads_it(compiled_cases):
    """The kernel reads node and column indices unchecked: the design and the statistics
    check their input (the sampler's entry point: sampling/test_sampling_compiled.py)."""
    net = compiled_cases.network(6, False)
    terms = resolve_terms("edges + triangle", net)
    program = nt.native_program(terms, 6)
    state = compiled_cases.native_state(np.array([[0, 1], [1, 2]]), net, terms, 2)
    with pytest.raises(ValueError, match=r"dyad 1 \(2, 2\) is not a pair"):
        nt.native_design(state, program, [0, 2], [1, 2])
    with pytest.raises(ValueError, match=r"dyad 0 \(0, 6\)"):
        nt.native_design(state, program, [0], [6])
    with pytest.raises(ValueError, match="repeat"):
        nt.native_statistics(program, np.zeros(2), [[0, 1], [1, 0]], 6, False)
    with pytest.raises(ValueError, match=r"empty must have shape \(2,\)"):
        nt.native_statistics(program, np.zeros(3), [[0, 1]], 6, False)
    with pytest.raises(ValueError, match="the program is for 6 nodes"):
        nt.native_statistics(program, np.zeros(2), [[0, 1]], 7, False)
