"""Estimators and kernel specs as configuration objects (issue 12): frozen, hashable,
equal by value, validated at construction, generated ``repr``; one name for the kernel
steps per move (``num_mcmc_steps``; a kernel's sweeps per step are its ``num_sweeps``),
every setting after ``num_particles`` by keyword, separate names for the three ESS
settings; each update reports a typed info ``NamedTuple`` with only the fields that
apply."""

import dataclasses
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.model.validation import validate_data
from numpyro_ugm.estimators import (CDInfo, MCMCMLEInfo, PCDInfo, PFInfo, PSMCInfo,
                                    SMCInfo)

GIBBS = ugm.kernels.gibbs()

# --- construction -----------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: ugm.CD(3), lambda: ugm.PCD(100, 5), lambda: ugm.MCMCMLE(10, 2),
    lambda: ugm.PF(10, 0.5), lambda: ugm.SMC(10, 0.8), lambda: ugm.PSMC(10, 0.8)])
def test_settings_after_num_particles_are_keyword_only(make):
    with pytest.raises(TypeError, match="positional"):
        make()
    assert ugm.PCD(100, num_mcmc_steps=5) == ugm.PCD(num_particles=100, num_mcmc_steps=5)


def test_one_name_for_sweeps_per_kernel_step_another_for_kernel_steps_per_move():
    """Kernels count sweeps per step (``num_sweeps``), estimators kernel steps per move
    (``num_mcmc_steps``), and only ``num_particles`` is positional (issue 45)."""
    for name in ("gibbs", "metropolis", "mala", "hmc", "rwm", "langevin"):
        fields = {f.name for f in dataclasses.fields(getattr(ugm.kernels, name))}
        assert "num_sweeps" in fields and "num_mcmc_steps" not in fields, name
    for cls in (ugm.CD, ugm.PCD, ugm.MCMCMLE, ugm.PF, ugm.SMC, ugm.PSMC):
        fields = {f.name for f in dataclasses.fields(cls)}
        assert "num_mcmc_steps" in fields and "num_sweeps" not in fields, cls
        positional = [n for n, p in inspect.signature(cls).parameters.items()
                      if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        assert positional == ([] if cls is ugm.CD else ["num_particles"]), cls


ESTIMATORS = [ugm.CD(), ugm.PCD(10), ugm.MCMCMLE(10), ugm.PF(10), ugm.SMC(10),
              ugm.PSMC(10),
              ugm.PCD(10, num_mcmc_steps=2,
                      kernel=ugm.kernels.tempered_transitions(kernel=GIBBS, betas=3)),
              ugm.PSMC(10, kernel=ugm.kernels.parallel_tempering(betas=(0.5, 1.0)))]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=repr)
def test_estimators_are_frozen_hashable_and_equal_by_value(estimator):
    field = dataclasses.fields(estimator)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(estimator, field, 3)
    twin = dataclasses.replace(estimator)
    assert twin == estimator and twin is not estimator
    assert len({estimator, twin}) == 1
    assert eval(repr(estimator), {"PCD": ugm.PCD, "CD": ugm.CD, "MCMCMLE": ugm.MCMCMLE,
                                  "PF": ugm.PF, "SMC": ugm.SMC, "PSMC": ugm.PSMC,
                                  "gibbs": ugm.kernels.gibbs,
                                  "tempered_transitions": ugm.kernels.tempered_transitions,
                                  "parallel_tempering": ugm.kernels.parallel_tempering}
                ) == estimator  # the repr is the constructor call
    assert "num_mcmc_steps" in repr(estimator)


def test_settings_are_normalized_once():
    a = ugm.PF(np.int64(10), resample_threshold=np.float32(0.5), num_mcmc_steps=np.int8(2))
    assert type(a.num_particles) is int and type(a.num_mcmc_steps) is int
    assert type(a.resample_threshold) is float
    assert a == ugm.PF(10, resample_threshold=0.5, num_mcmc_steps=2)
    assert ugm.PCD(10) != ugm.PCD(10, num_mcmc_steps=2) and ugm.PCD(10) != ugm.PCD(11)


@pytest.mark.parametrize("make, match", [
    (lambda: ugm.CD(num_mcmc_steps=0), "^CD: num_mcmc_steps"),
    (lambda: ugm.PCD(10, num_mcmc_steps=1.5), "^PCD: num_mcmc_steps"),
    (lambda: ugm.MCMCMLE(10, num_mcmc_steps=0), "^MCMCMLE: num_mcmc_steps"),
    (lambda: ugm.MCMCMLE(10, restart_threshold=1.0), "^MCMCMLE: restart_threshold"),
    (lambda: ugm.MCMCMLE(10, resample_threshold=1.5), "^MCMCMLE: resample_threshold"),
    (lambda: ugm.MCMCMLE(10, resample_threshold=float("nan")),
     "^MCMCMLE: resample_threshold"),
    (lambda: ugm.PF(10, num_mcmc_steps=0), "^PF: num_mcmc_steps"),
    (lambda: ugm.PF(10, resample_threshold=0.0), "^PF: resample_threshold"),
    (lambda: ugm.PF(10, rejuvenate_every=0), "^PF: rejuvenate_every"),
    (lambda: ugm.SMC(10, target_ess=1.0), "^SMC: target_ess"),
    (lambda: ugm.SMC(10, num_mcmc_steps=0), "^SMC: num_mcmc_steps"),
    (lambda: ugm.PSMC(10, target_ess=0.0), "^PSMC: target_ess"),
    (lambda: ugm.PSMC(10, max_betas=0), "^PSMC: max_betas"),
    (lambda: ugm.kernels.gibbs(num_sweeps=0), "^gibbs: num_sweeps"),
    (lambda: ugm.kernels.metropolis(num_sweeps=0), "^metropolis: num_sweeps"),
    # counts are never rounded (issue 13): non-integers, integral floats and bools too
    (lambda: ugm.PCD(2.5), r"^PCD: num_particles must be an integer >= 1, got 2.5 of type "
                           r"float \(counts are never rounded\)"),
    (lambda: ugm.PCD(2.0), "^PCD: num_particles must be an integer >= 1, got 2.0"),
    (lambda: ugm.PCD(True), "^PCD: num_particles must be an integer >= 1, got True"),
    (lambda: ugm.PCD("3"), "^PCD: num_particles must be an integer >= 1, got '3'"),
    (lambda: ugm.CD(num_mcmc_steps=1.7), "^CD: num_mcmc_steps must be an integer >= 1, got 1.7"),
    (lambda: ugm.MCMCMLE(10, reset_every=2.5), "^MCMCMLE: reset_every"),
    (lambda: ugm.PF(10, rejuvenate_every=1.5), "^PF: rejuvenate_every"),
    (lambda: ugm.SMC(10.0), "^SMC: num_particles"),
    (lambda: ugm.PSMC(10, max_betas=1e3), "^PSMC: max_betas"),
    (lambda: ugm.PSMC(10, keep_fraction=1.5), r"^PSMC: keep_fraction must be in \(0, 1\]"),
    (lambda: ugm.PSMC(4, keep_fraction=0.1),
     r"^PSMC: keep_fraction=0.1 of num_particles=4 keeps round\(0.4\) = 0 particles"),
    (lambda: ugm.kernels.gibbs(num_sweeps=1.5), "^gibbs: num_sweeps"),
    (lambda: ugm.kernels.tempered_transitions(every=0.5), "^tempered_transitions: every"),
    (lambda: ugm.kernels.parallel_tempering(betas=1), r"^parallel_tempering: betas \(a number\)"
                                                      " must be an integer >= 2, got 1"),
])
def test_invalid_settings_raise_at_construction(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("cls", [ugm.CD, ugm.PCD, ugm.MCMCMLE, ugm.PF, ugm.SMC, ugm.PSMC])
def test_kernel_is_keyword_only_and_checked_at_construction(cls):
    args = () if cls is ugm.CD else (10,)
    with pytest.raises(TypeError, match=f"^{cls.__name__}: kernel must be a ugm.kernels"):
        cls(*args, kernel="gibbs")
    assert cls(*args, kernel=GIBBS).kernel == GIBBS


# --- info NamedTuples ---------------------------------------------------------------------

INFO_FIELDS = {
    "CD": (lambda: ugm.CD(), CDInfo, ("ess", "acceptance")),
    "PCD": (lambda: ugm.PCD(16), PCDInfo, ("ess", "acceptance")),
    "MCMCMLE": (lambda: ugm.MCMCMLE(16, num_mcmc_steps=2, reset_every=2), MCMCMLEInfo,
                ("ess", "rejuvenated", "log_z", "log_z_se", "reannealed")),
    "PF": (lambda: ugm.PF(16), PFInfo,
           ("ess", "resampled", "rejuvenated", "acceptance", "log_z", "log_z_se",
            "equilibrium_z", "interval", "reannealed")),
    "SMC": (lambda: ugm.SMC(16), SMCInfo,
            ("ess", "num_betas", "acceptance", "log_z", "log_z_se", "final_acceptance")),
    "PSMC": (lambda: ugm.PSMC(16), PSMCInfo,
             ("ess", "num_betas", "acceptance", "log_z", "log_z_se", "fresh_num_betas",
              "fresh_share", "final_acceptance")),
}


def small_model():
    m = ugm.UGM(ugm.models.vbm, 4).observe(["x"])
    params = jax.tree.map(lambda a: 0.3 * jnp.ones_like(a), m.init_params(jax.random.PRNGKey(0)))
    batch = validate_data(m.target().state_sites,
                          {"x": np.array([[1, -1, 1, 1], [-1, -1, 1, -1]], np.float32)})
    return m, params, batch


@pytest.mark.parametrize("name", [  # slow: the two most costly to compile
    pytest.param(n, marks=pytest.mark.slow) if n in ("MCMCMLE", "PSMC") else n
    for n in INFO_FIELDS])
def test_update_returns_its_typed_info_with_only_the_fields_that_apply(name):
    make, info_type, fields = INFO_FIELDS[name]
    m, params, batch = small_model()
    estimator = make()
    # jitted: one compilation each instead of one per operation
    state = jax.jit(lambda key: estimator.init(key, m.target(), params, batch))(
        jax.random.PRNGKey(1))
    state, particles, info = jax.jit(lambda key, state: estimator.update(
        key, state, m.target(), params, batch))(jax.random.PRNGKey(2), state)
    assert type(info) is info_type and info._fields == fields
    for field, value in zip(info._fields, info):
        assert jnp.shape(value) == () and not np.isnan(float(value)) or (
            name == "PF" and field in ("acceptance", "equilibrium_z"))
    assert 0 < float(info.ess) <= 16 + 1e-3
    assert info[0] is info.ess  # integer indexing is the tuple's


@pytest.mark.slow
def test_learner_diagnostics_are_the_info_fields_and_log_likelihood_with_log_z():
    m, params, batch = small_model()
    data = {"x": np.array([[1, -1, 1, 1], [-1, -1, 1, -1]], np.float32)}
    pcd = ugm.MLE(ugm.models.vbm, ugm.PCD(8), optax.sgd(0.01)).run(
        jax.random.PRNGKey(0), 3, data, 4, progress_bar=False)
    assert set(pcd.diagnostics) == {"ess", "acceptance", "grad_norm", "positive"}
    pf = ugm.MLE(ugm.models.vbm, ugm.PF(8), optax.sgd(0.01)).run(
        jax.random.PRNGKey(0), 3, data, 4, progress_bar=False)
    assert set(pf.diagnostics) == set(PFInfo._fields) | {"grad_norm", "positive",
                                                         "log_likelihood"}
    np.testing.assert_allclose(pf.diagnostics["log_likelihood"],
                               pf.diagnostics["positive"] - pf.diagnostics["log_z"])
