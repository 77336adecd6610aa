"""The fit's control objects (``network/control.py``, statnet's ``control.ergm()``): their
defaults are fit_ergm's, they are frozen, and every setting is checked when the object is
made, the error naming the setting."""

import dataclasses
import math

import jax
import numpy as np
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.network import ErgmControl, MCMLEControl, SamplingControl
from numpyro_ugm.network.estimation.mcmle import mcmle


def test_the_defaults_are_statnets():
    sampling = SamplingControl()
    assert (sampling.sampler, sampling.num_chains, sampling.samplesize) == ("auto", 4, 1024)
    assert sampling.draws_per_chain == 256  # ergm's MCMC.samplesize over 4 chains
    assert sampling.interval is None and sampling.burnin is None
    assert sampling.effective_size == 64
    # ergm's MCMLE.density.guard and MCMLE.density.guard.min
    assert sampling.density_guard == pytest.approx(math.exp(3))
    assert sampling.density_guard_min == 10000
    assert (sampling.dense_limit, sampling.sparse_limit, sampling.dyad_draws_limit) == (
        500, 2 ** 17, 2 ** 21)
    mcmle_control = MCMLEControl()
    assert (mcmle_control.max_iterations, mcmle_control.termination,
            mcmle_control.confidence, mcmle_control.precision) == (60, "confidence", 0.99, 0.1)
    assert (mcmle_control.steplength_margin, mcmle_control.max_step,
            mcmle_control.metric, mcmle_control.max_loss) == (0.05, 1.0, "lognormal", 1.0)
    assert (mcmle_control.last_boost, mcmle_control.num_bridges,
            mcmle_control.bridge_draws) == (4, 16, 512)
    assert mcmle_control.hotelling_threshold == pytest.approx(1 - math.sqrt(0.5))
    control = ErgmControl()
    assert control.sampling == sampling and control.mcmle == mcmle_control
    assert control.init is None and control.mple_samplesize == "auto"
    assert control.estimator is None and control.num_steps == 2000


def test_the_controls_are_frozen_and_replace_checks_again():
    control = ErgmControl(init=np.array([-1.0, 0.5]))
    assert control.init == (-1.0, 0.5)  # a tuple: nothing inside can change
    with pytest.raises(dataclasses.FrozenInstanceError):
        control.init = None
    with pytest.raises(dataclasses.FrozenInstanceError):
        control.sampling.burnin = 10
    longer = dataclasses.replace(control.sampling, interval=2048)
    assert longer.interval == 2048 and control.sampling.interval is None
    with pytest.raises(ValueError, match="interval"):
        dataclasses.replace(control.sampling, interval=0)


@pytest.mark.parametrize("setting, value, error", [
    ("sampler", "metropolis", ValueError), ("num_chains", 0, ValueError),
    ("num_chains", 2.5, ValueError), ("samplesize", 1022, ValueError),  # not 4 x draws
    ("interval", 0, ValueError), ("burnin", -1, ValueError), ("effective_size", 0, ValueError),
    ("effective_size", "many", TypeError), ("max_interval", 0, ValueError),
    ("max_degree", 0, ValueError), ("triadic", 1.0, ValueError), ("threads", 0, ValueError),
    ("native", "yes", TypeError), ("dense_limit", 0, ValueError),
    ("sparse_limit", True, ValueError), ("dyad_draws_limit", -5, ValueError),
    ("density_guard", 1.0, ValueError), ("density_guard", "e3", TypeError),
    ("density_guard_min", -1, ValueError),
])
def test_every_sampling_setting_is_checked(setting, value, error):
    with pytest.raises(error, match=setting if setting != "samplesize" else "multiple"):
        SamplingControl(**{setting: value})


@pytest.mark.parametrize("setting, value, error", [
    ("max_iterations", 0, ValueError), ("termination", "Hummel", ValueError),
    ("confidence", 1.0, ValueError), ("precision", 0.0, ValueError),
    ("steplength_margin", -0.1, ValueError), ("max_step", 1.5, ValueError),
    ("min_step_length", 1.0, ValueError), ("stall_iterations", 0, ValueError),
    ("max_repeats", 0, ValueError), ("hotelling_min_p_value", 0.0, ValueError),
    ("metric", "Hummel", ValueError), ("max_loss", -1.0, ValueError),
    ("max_loss", math.inf, ValueError), ("max_rejections", 0, ValueError),
    ("last_boost", 0, ValueError), ("final_repeats", 0, ValueError),
    ("num_bridges", 0, ValueError), ("bridge_draws", 1.5, ValueError),
])
def test_every_mcmle_setting_is_checked(setting, value, error):
    with pytest.raises(error, match=setting):
        MCMLEControl(**{setting: value})


def test_the_fit_control_checks_its_parts():
    with pytest.raises(TypeError, match="sampling must be a SamplingControl"):
        ErgmControl(sampling={"num_chains": 2})
    with pytest.raises(TypeError, match="mcmle must be an MCMLEControl"):
        ErgmControl(mcmle=SamplingControl())
    with pytest.raises(ValueError, match="init must be a vector of finite values"):
        ErgmControl(init=[[1.0]])
    with pytest.raises(ValueError, match="mple_samplesize"):
        ErgmControl(mple_samplesize=0)
    with pytest.raises(ValueError, match="num_steps"):
        ErgmControl(num_steps=0)
    with pytest.raises(TypeError, match="optimizer must be an optax"):
        ErgmControl(optimizer="adam")
    with pytest.raises(TypeError, match="estimator must be one of the package's estimators"):
        ErgmControl(estimator="PCD")
    assert isinstance(ErgmControl(estimator=ugm.PCD(16)).estimator, ugm.PCD)
    assert ErgmControl(mple_samplesize=None).mple_samplesize is None
    # a sample that cannot reach its effective size is refused before any fit runs
    with pytest.raises(ValueError, match="cannot reach effective_size=64"):
        SamplingControl(num_chains=8, samplesize=64)
    assert SamplingControl(num_chains=8, samplesize=64, effective_size=None).draws_per_chain == 8


def test_mcmle_takes_only_its_control():
    def simulate(theta, rng_key):
        return np.zeros((1, 4, 2))

    with pytest.raises(TypeError, match="control must be an MCMLEControl"):
        mcmle(simulate, [1.0, 1.0], [0.0, 0.0], jax.random.PRNGKey(0),
              control=SamplingControl())
