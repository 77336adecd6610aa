"""The public surface of ``UGM`` that the other modules use (issue 12, "Model"):
``as_ugm``, ``replace`` / ``observe`` / ``bind``, the compile cache ``cached``,
``analyze`` and the one-way dependency between ``model`` and ``structure``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers.crf import crf3 as crf
from helpers.models import spin_chain as chain

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import _enumeration, exact
from numpyro_ugm.runtime import compile_cache
from numpyro_ugm.runtime.compile_cache import cached
from numpyro_ugm.model import UGM, as_ugm
from numpyro_ugm.structure import Structure, analyze


# --- as_ugm -----------------------------------------------------------------------------


def test_as_ugm_traces_functions_and_passes_ugms_through():
    m = as_ugm(chain, 5)
    assert isinstance(m, UGM) and m.target().state_sites["x"].num_variables == 5
    assert as_ugm(m) is m
    with pytest.raises(TypeError, match="already a UGM"):
        as_ugm(m, 5)
    with pytest.raises(TypeError, match="already a UGM"):
        as_ugm(m, n=5)
    with pytest.raises(TypeError, match="UGM or a numpyro model function"):
        as_ugm(3)


def test_fit_functions_accept_both_and_reject_arguments_with_a_ugm():
    data = {"x": np.array([[1, 1, -1, -1], [1, -1, -1, 1], [-1, -1, 1, 1]], np.int8)}
    by_function = ugm.fit_exact(chain, data, 4, num_steps=5)
    by_ugm = ugm.fit_exact(UGM(chain, 4), data, num_steps=5)
    np.testing.assert_array_equal(by_function.params["w"], by_ugm.params["w"])
    with pytest.raises(TypeError, match="already a UGM"):
        ugm.fit_exact(UGM(chain, 4), data, 4)
    from numpyro_ugm.learn import fit_pseudo_likelihood
    with pytest.raises(TypeError, match="already a UGM"):
        fit_pseudo_likelihood(UGM(chain, 4), data, 4)


# --- copies -----------------------------------------------------------------------------


def test_observe_shares_structure_and_compile_cache():
    """Copies that observe the same sites share the structure and their target's
    compile-cache key (evaluation observes the data's sites at every call and reuses
    its programs); other latent sites give another key."""
    m = UGM(ugm.models.rbm, 4, 2)
    mo = m.observe(["v"])
    assert mo is not m and mo.target().latent_sites == ("h",) and m.target().latent_sites == ()
    assert m.observe(["v", "h"]) is m
    built = []
    again = m.observe(["v"])
    value = cached(mo.target().cache_key, ("test", 1), lambda: built.append(1) or "compiled")
    assert value == "compiled"
    assert cached(again.target().cache_key, ("test", 1), lambda: "other") == "compiled"
    assert cached(m.target().cache_key, ("test", 1), lambda: "other") == "other"
    assert built == [1]
    assert mo.target().structure is m.target().structure


def test_bind_shares_structure_not_compiled_functions():
    m = UGM(crf, u=jnp.ones(3))
    t = m.target()
    cached(t.cache_key, ("test",), lambda: "of m")
    tb = t.bind(u=jnp.zeros(3))
    params, state = {"w": jnp.asarray(0.7)}, {"x": jnp.array([1.0, -1.0, 1.0])}
    np.testing.assert_allclose(tb.log_potential(params, state),
                               UGM(crf, u=jnp.zeros(3)).target().log_potential(params, state))
    assert tb.structure is t.structure
    assert cached(tb.cache_key, ("test",), lambda: "of mb") == "of mb"
    assert cached(t.cache_key, ("test",), lambda: "again") == "of m"
    with pytest.raises(TypeError, match=r"inputs \['v'\] are not keyword arguments"):
        t.bind(v=1.0)


def test_bind_under_vmap_with_traced_inputs():
    m = UGM(crf, u=jnp.ones(3))
    params = {"w": jnp.asarray(0.7)}
    state = {"x": jnp.array([1.0, -1.0, 1.0])}
    us = jnp.arange(6.0).reshape(2, 3)
    got = jax.vmap(lambda u: m.target().bind(u=u).log_potential(params, state))(us)
    want = [UGM(crf, u=u).target().log_potential(params, state) for u in us]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_replace_changes_arguments_latent_sites_and_structure():
    m = UGM(ugm.models.rbm, 4, 2)
    cached(m.target().cache_key, ("test",), lambda: "of m")
    with pytest.raises(KeyError, match="not state sites"):
        m.replace(latent_sites=["z"])
    latent = m.replace(latent_sites=["h"])
    assert latent.target().latent_sites == ("h",)
    assert latent.target().structure is m.target().structure
    rebound = m.replace(args=(4, 2), kwargs={"init_scale": 0.5})
    assert rebound.kwargs == {"init_scale": 0.5} and m.kwargs == {}
    assert rebound.target().structure is m.target().structure
    assert cached(rebound.target().cache_key, ("test",), lambda: "new") == "new"
    other = m.target().structure._replace(multilinear=False)
    given = m.replace(structure=other)
    assert given.target().structure is other and m.target().structure is not other
    assert cached(given.target().cache_key, ("test",), lambda: "fresh") == "fresh"


# --- the compile cache ----------------------------------------------------------------


def test_evaluators_use_the_compile_cache():
    compile_cache.clear()
    m = UGM(chain, 4)
    params = m.init_params(jax.random.PRNGKey(0))
    exact.log_partition(m, params)
    exact.log_likelihood(m, params, {"x": np.ones((2, 4), np.int8)})
    ugm.ais.log_partition(m, params, jax.random.PRNGKey(1), num_chains=4, betas=5)
    ugm.predict(m, params, num_chains=2, num_samples=2, num_warmup=1, exact=False)
    keys = {key[0] for (owner, key) in compile_cache._entries}
    assert {"enumeration.plan", "enumeration.jit", "ais", "predict"} <= keys


# --- structure on a bare log-potential (the import direction: tests/test_layers.py) -----


def test_analyze_works_on_a_log_potential_without_a_model():
    domains = {"x": ugm.Spin(4)}

    def log_potential(params, state):
        x = state["x"]
        return jnp.sum(params["w"] * x[:-1] * x[1:])

    def random_params(rng_key, rng):
        return {"w": jnp.asarray(rng.standard_normal(3), jnp.float32)}

    st = analyze(log_potential, domains, random_params)
    assert isinstance(st, Structure) and st.multilinear
    assert {tuple(int(v) for v in e) for e in st.edges} == {(0, 1), (1, 2), (2, 3)}
    m = UGM(chain, 4)
    np.testing.assert_array_equal(m.target().structure.colors, st.colors)
    fresh = m.analyze(rng_key=jax.random.PRNGKey(3))
    assert fresh is not m.target().structure
    np.testing.assert_array_equal(fresh.edges, m.target().structure.edges)


# --- evaluate/exact split ---------------------------------------------------------------


def test_exact_reexports_the_enumeration_engine():
    for name in ("log_partition", "log_likelihood", "log_prob", "expectation",
                 "marginals", "num_enumerated", "DEFAULT_CHUNK_SIZE"):
        assert getattr(ugm.exact, name) is getattr(_enumeration, name)
    assert ugm.fit_exact and ugm.exact.sample and ugm.ExactFitResult


# --- rng_key convention -------------------------------------------------------------------


def test_predict_takes_its_key_by_keyword_only():
    m = UGM(chain, 4)
    params = m.init_params(jax.random.PRNGKey(0))
    with pytest.raises(TypeError, match="positional argument"):
        ugm.predict(m, params, None, "marginal", jax.random.PRNGKey(7))
