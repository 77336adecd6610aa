"""SMC (estimators/smc.py): each update anneals fresh uniform particles to p(x; θ_t) and
estimates log Z(θ_t) afresh. (Against exact enumeration over many seeds:
test_estimators_base.py; the adaptive tempering itself: test_estimators_tempering.py.)"""

import jax
import jax.numpy as jnp
import numpy as np

import numpyro_ugm as ugm


def test_an_update_of_independent_spins_gives_their_closed_form():
    """Spins with fields b and no couplings: log Z = Σ log 2cosh(b_i) and E[x_i] =
    tanh(b_i) in closed form. One update's log Z estimate is within 0.05 of it (the
    uniform start's n log 2 is 2.7 below), and the weighted mean of the particles within
    four standard errors of tanh(b) (uniform particles, of mean 0, would be 0.46 or more
    away); SMC keeps nothing between updates, so a second update from the same state,
    with another key, estimates it again as well."""
    m = ugm.UGM(ugm.models.vbm, 4)
    target = m.target()
    b = jnp.array([1.5, -1.0, 2.0, 0.5])
    params = {"W": jnp.zeros((4, 4)), "b": b}
    log_z = float(np.sum(np.log(2 * np.cosh(np.asarray(b, np.float64)))))
    smc = ugm.SMC(1000)
    state = smc.init(jax.random.PRNGKey(0), target, params, None)
    update = jax.jit(lambda key: smc.update(key, state, target, params, None))
    for seed in (1, 2):
        _, particles, info = update(jax.random.PRNGKey(seed))
        assert abs(float(info.log_z) - log_z) < 0.05, (float(info.log_z), log_z)
        assert abs(4 * np.log(2) - log_z) > 2.0  # not blind
        w = np.exp(np.asarray(particles.log_weights, np.float64))
        np.testing.assert_allclose(w.sum(), 1.0, rtol=1e-5)
        mean = w @ np.asarray(particles.position["x"], np.float64)
        assert np.all(np.abs(mean - np.tanh(np.asarray(b))) < 4 / np.sqrt(1000)), mean
