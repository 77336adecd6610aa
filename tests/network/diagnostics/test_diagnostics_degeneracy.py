"""ERGM degeneracy (``network/diagnostics/degeneracy.py``): a fit's far terms and collapsed
simulations named, and a learner's particles collapsed to the empty or complete graph."""

import warnings

import numpy as np
import pytest
import jax
import jax.numpy as jnp
import optax

from numpyro_ugm.network import DegeneracyWarning, check_particle_degeneracy
from numpyro_ugm.network.diagnostics.degeneracy import check_fit_degeneracy
from helpers.network import ergm_model as model
import numpyro_ugm as ugm
from numpyro_ugm.model.validation import to_data


def test_degeneracy_warning_names_the_far_term():
    rng = np.random.default_rng(3)
    sampled = np.stack([rng.normal(100, 5, (2, 500)), rng.normal(30, 3, (2, 500))], -1)
    names = ["edges", "triangle"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a healthy fit: no warning
        report = check_fit_degeneracy(sampled, [101.0, 29.0], names,
                                      simulated_densities=rng.uniform(0.09, 0.11, 50),
                                      observed_density=0.1)
    assert not report.degenerate and report.far_terms == ()
    with pytest.warns(DegeneracyWarning, match="triangle") as record:
        report = check_fit_degeneracy(sampled, [101.0, 60.0], names)
    assert "edges" not in str(record[0].message).split("outside")[0]
    assert report.degenerate and report.far_terms == ("triangle",)
    assert report.term("triangle").fraction_below == 1.0
    assert report.term("triangle").far and not report.term("edges").far
    assert np.isnan(report.mean_density)  # no simulated densities given
    # the simulated networks collapsed to (nearly) empty graphs
    with pytest.warns(DegeneracyWarning, match="nearly empty"):
        report = check_fit_degeneracy(sampled, [101.0, 29.0], names,
                                      simulated_densities=np.full(50, 0.002),
                                      observed_density=0.1)
    assert report.fraction_near_empty == 1.0 and report.far_terms == ()
    with pytest.warns(DegeneracyWarning, match="complete"):
        check_fit_degeneracy(sampled, [101.0, 29.0], names,
                             simulated_densities=np.ones(10))
    quiet = check_fit_degeneracy(sampled, [101.0, 60.0], names, warn=False)
    assert quiet.degenerate
    with pytest.raises(ValueError, match="observed has 1"):
        check_fit_degeneracy(sampled, [1.0], names)


def _gibbs_draws(m, num_chains=100, sweeps=30):
    """A jitted θ -> final states of ``num_chains`` Gibbs chains (one compilation for
    every θ, unlike ``ugm.sample``, which closes over its parameters)."""
    kernel = ugm.kernels.gibbs().build(m.target())

    @jax.jit
    def run(theta, key):
        f = lambda x: m.target().log_potential({"theta": theta}, x)  # noqa: E731
        x = m.target().random_state(key, (num_chains,))

        def sweep(i, x):
            keys = jax.random.split(jax.random.fold_in(key, i), num_chains)
            return jax.vmap(lambda k, p: kernel.step(k, kernel.init(p), f)[0].position)(
                keys, x)

        return to_data(m.target().state_sites, jax.lax.fori_loop(0, sweeps, sweep, x))

    return run


@pytest.mark.slow
def test_degeneracy_warning():
    m = model(8, ("edges", "triangles"))
    draws = _gibbs_draws(m)
    key = jax.random.PRNGKey(0)
    full = draws(jnp.array([-1.0, 2.0]), key)
    with pytest.warns(DegeneracyWarning, match="complete graph"):
        summary = check_particle_degeneracy(full)
    assert summary.degenerate and summary.fraction_full > 0.9
    empty = {"y": np.zeros((100, 28), np.int8)}
    with pytest.warns(DegeneracyWarning, match="empty graph"):
        check_particle_degeneracy(empty)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegeneracyWarning)
        tame = draws(jnp.array([-1.0, 0.1]), key)
        summary = check_particle_degeneracy(tame)
        assert not summary.degenerate and 0.1 < summary.mean_density < 0.5
        # the data themselves empty: nothing to warn about
        check_particle_degeneracy(empty, data={"y": np.zeros((3, 28), np.int8)})
        # a learner's state: its estimator's particles (PCD starts uniform)
        learner = ugm.MLE(m, ugm.PCD(50), optax.sgd(0.0))
        state = learner.init(key, {"y": np.asarray(tame["y"][:20])})
        assert 0.3 < check_particle_degeneracy(state).mean_density < 0.7
    # weighted particles are read too
    with pytest.warns(DegeneracyWarning):
        check_particle_degeneracy(ugm.estimators.base.Particles(
            {"y": jnp.ones((10, 28))}, jnp.full(10, -jnp.log(10.0))))
