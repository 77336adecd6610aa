"""What a block of numpyro's composite ``Gibbs`` samples under the other blocks' values
(infer/conditioning.py): refreshing the sampler's state for new values of the continuous
sites keeps the position and the kernel's own state."""

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.gibbs import GIBBS_SITES_KWARG, conditioned
from helpers.posterior import COUPLING, MU, Y, noisy_ising

import numpyro_ugm as ugm
from numpyro_ugm.infer import UGMSampler


def test_refresh_keeps_the_kernel_state():
    """Carrying a state over to a new conditioning keeps the position; block Metropolis
    holds nothing else (its state is rebuilt), parallel tempering keeps its replicas."""
    args = (Y, COUPLING, MU)
    moved = {GIBBS_SITES_KWARG: {"sigma": jnp.asarray(2.0)}}
    for kernel in (ugm.kernels.metropolis(),
                   ugm.kernels.parallel_tempering(kernel=ugm.kernels.metropolis(), betas=3)):
        sampler = UGMSampler(noisy_ising, kernel=kernel).wrap_model(conditioned)
        state = sampler.init(jax.random.PRNGKey(0), 0, None, args,
                             {GIBBS_SITES_KWARG: {"sigma": jnp.asarray(0.5)}})
        refreshed = sampler.refresh(state, args, moved)
        np.testing.assert_array_equal(refreshed.z["x"], state.z["x"])
        assert type(refreshed.kernel_state) is type(state.kernel_state)
        jax.tree.map(np.testing.assert_array_equal, refreshed.kernel_state,
                     state.kernel_state)
