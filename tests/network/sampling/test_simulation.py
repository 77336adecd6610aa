"""The simulator behind every fit (numpyro_ugm/network/sampling/simulation.py): it picks
the compiled sampler for built-in terms and the JAX one for a term without a native
form (or when asked), and grows the neighbour lists when a chain outgrows them. (Its
use by the fit, adaptive sampling and rewinding: tests/network/test_fit.py.)"""

import numpy as np
import pytest

from numpyro_ugm.network.estimation.sparse_statistics import sparse_statistics
from numpyro_ugm.network.sampling import chains as nc
from numpyro_ugm.network.sampling import simulation as sim
from numpyro_ugm.network.terms.structural import resolve_terms
from numpyro_ugm.network.terms.term import Term


def simulator(net, terms, edges, **options):
    """A sparse simulator of 4 chains on 2 threads started at ``edges``."""
    observed = sparse_statistics(net, terms, edges)
    return sim.sparse_simulator(net, terms, edges, observed, 4, burnin=200, threads=2,
                                **options)


def test_the_simulator_runs_built_in_terms_compiled_and_others_in_jax(compiled_cases):
    net = compiled_cases.network(30, False)
    edges, _ = compiled_cases.random_edges(np.random.default_rng(2), 30, 0.1, False)
    terms = resolve_terms("edges + triangle", net)
    s = simulator(net, terms, edges)
    assert sim.native_sampler(terms, 30) is not None
    assert isinstance(s._chains["now"][0].lists, np.ndarray)  # the compiled state
    draws = s.simulate(np.array([-2.0, 0.1]), np.array([0, 3], np.uint32), 5, 100)
    assert draws.shape == (4, 5, 2)
    # a term without a native form (as users build them) runs in JAX
    user = Term(("mine",), "dyadic", terms[0].statistic, terms[0].change)
    s = simulator(net, (terms[1], user), edges)
    assert not isinstance(s._chains["now"][0].lists, np.ndarray)
    with pytest.raises(ValueError, match=r"native=True .* \['mine'\]"):
        simulator(net, (terms[1], user), edges, native=True)
    with pytest.raises(TypeError, match="native must be None, True or False"):
        simulator(net, terms, edges, native="yes")
    # native=False: the JAX sampler for built-in terms too
    s = simulator(net, terms, edges, native=False)
    assert not isinstance(s._chains["now"][0].lists, np.ndarray)


def test_the_simulator_grows_the_lists_when_a_chain_outgrows_them(compiled_cases):
    net = compiled_cases.network(40, False)
    edges = np.array([[0, 1], [1, 2]])
    terms = resolve_terms("edges", net)
    s = simulator(net, terms, edges)
    assert s._chains["now"][0].max_degree == 16
    draws = s.simulate(np.array([1.5]), np.array([0, 4], np.uint32), 4, 2000)
    assert s._chains["now"][0].max_degree > 16  # dense: degrees near 0.8 (n − 1)
    assert np.all(draws[:, -1, 0] > 500)
    with pytest.raises(nc.DegreeOverflowError, match="max_degree=16"):
        simulator(net, terms, edges, max_degree=16).simulate(
            np.array([1.5]), np.array([0, 4], np.uint32), 4, 2000)
