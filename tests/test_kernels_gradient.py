"""Samplers of real-valued sites (kernels/gradient.py, and the exact Gaussian draws of
the block kernels): distribution tests against the exact moments of a Gaussian MRF.

The model is a chain GMRF, f(x) = −½ xᵀ P x with P = I − a (shift + shiftᵀ): its
covariance is P⁻¹. Many independent chains run from the base Normal and only their final
states are kept (i.i.d. draws of the kernel after its steps); every mean and covariance
entry is compared with the exact one in standard errors (SE of a covariance estimate from
N draws: √((Σ_ii Σ_jj + Σ_ij²) / N)). Each test also shows it can fail: the same draws
against the moments of a wrong coupling are far out.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest

import numpyro_ugm as ugm

N = 6
COUPLING = 0.35


def chain_gmrf():
    x = numpyro.sample("x", ugm.Real(N))
    a = numpyro.param("a", COUPLING)
    numpyro.factor("q", -0.5 * jnp.sum(x ** 2) + a * jnp.sum(x[1:] * x[:-1]))


@functools.lru_cache(maxsize=None)
def model():
    return ugm.UGM(chain_gmrf)


def covariance(a):
    precision = np.eye(N) - a * (np.eye(N, k=1) + np.eye(N, k=-1))
    return np.linalg.inv(precision)


def max_z(draws, a):
    """The largest |estimate − exact| / SE over the means and covariance entries."""
    cov, n = covariance(a), draws.shape[0]
    mean_z = np.abs(draws.mean(0)) / np.sqrt(np.diag(cov) / n)
    centered = draws - draws.mean(0)
    estimate = centered.T @ centered / (n - 1)
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n)
    return max(mean_z.max(), (np.abs(estimate - cov) / se).max())


def final_states(kernel, num_chains, num_warmup, seed=0):
    draws = ugm.sample(model(), {"a": COUPLING}, jax.random.PRNGKey(seed), 1,
                       num_chains=num_chains, num_warmup=num_warmup, kernel=kernel)
    return np.asarray(draws["x"], np.float64)


@pytest.mark.slow
def test_structure_puts_a_quartic_site_in_no_block():
    def quartic():
        x = numpyro.sample("x", ugm.Real(3))
        numpyro.factor("q", -jnp.sum(x ** 4) + x[0] * x[1])

    s = ugm.UGM(quartic).target().structure
    assert s.moved == ("x",) and s.blocks == []


def test_gibbs_draws_gaussian_conditionals_exactly():
    # a quadratic site is in the blocks (a chain: two colours), drawn exactly
    assert model().target().structure.moved == ()
    assert [sorted(b["x"].tolist()) for b in model().target().blocks] == [[0, 2, 4], [1, 3, 5]]
    draws = final_states(ugm.kernels.gibbs(), 4096, 40)
    assert max_z(draws, COUPLING) < 5.0
    assert max_z(draws, 0.25) > 10.0  # the test fails at a wrong coupling


@pytest.mark.slow
@pytest.mark.parametrize("kernel", [ugm.kernels.mala(sites=("x",)),
                                    ugm.kernels.hmc(sites=("x",), num_integration_steps=5),
                                    ugm.kernels.rwm(sites=("x",))],
                         ids=["mala", "hmc", "rwm"])
def test_gradient_kernels_sample_the_gaussian(kernel):
    draws = final_states(kernel, 4096, 400)
    assert max_z(draws, COUPLING) < 5.0
    assert max_z(draws, 0.25) > 10.0


@pytest.mark.slow
def test_population_adaptation_reaches_the_target_acceptance():
    kernel = ugm.kernels.mala(sites=("x",), step_size=1e-3)
    target = model().target()
    built = kernel.build(target)
    f = target.logdensity_fn({"a": COUPLING})
    states = jax.vmap(lambda x: built.init(x, f))(
        target.random_state(jax.random.PRNGKey(0), (256,)))

    @jax.jit
    def run(states, key):
        def body(states, k):
            states, info = built.batch_step(k, states, f)
            return states, jnp.mean(info.acceptance_rate)
        return jax.lax.scan(body, states, jax.random.split(key, 600))

    states, acceptance = run(states, jax.random.PRNGKey(1))
    assert abs(float(np.mean(acceptance[-200:])) - 0.574) < 0.05
    assert float(states.step_size[0]) > 10 * 1e-3  # moved far from the start


@pytest.mark.slow
def test_unadjusted_langevin_is_biased_at_a_large_step():
    draws = final_states(ugm.kernels.langevin(sites=("x",), step_size=0.6), 4096, 400)
    assert max_z(draws, COUPLING) > 10.0  # O(step) bias: variances inflated
    small = final_states(ugm.kernels.langevin(sites=("x",), step_size=0.01), 4096, 1500)
    assert max_z(small, COUPLING) < 6.0


def test_diverging_chains_are_an_error_naming_the_site():
    with pytest.raises(FloatingPointError, match=r"real site\(s\) 'x'.*diverged"):
        ugm.sample(model(), {"a": 0.9}, jax.random.PRNGKey(0), 20, num_chains=4)
