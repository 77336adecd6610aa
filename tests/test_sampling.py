"""``ugm.sample`` (sampling.py): its counts are checked before any work, and new counts
reuse the compiled chains without changing a number. (Its draws are checked against exact
enumeration with the kernels: test_kernels_*.py, network/test_ergm_model.py.)"""

import warnings

import jax
import jax.numpy as jnp
import numpyro
import numpy as np
import pytest

import numpyro_ugm as ugm


@pytest.mark.parametrize("settings, match", [
    (dict(num_samples=10.5), "^sample: num_samples must be an integer >= 1, got 10.5"),
    (dict(num_chains=0), "^sample: num_chains must be an integer >= 1, got 0"),
    (dict(thinning=2.0), "^sample: thinning must be an integer >= 1, got 2.0"),
    (dict(num_warmup=-1), "^sample: num_warmup must be an integer >= 0, got -1"),
])
def test_counts_are_checked_not_rounded(settings, match):
    settings = {"num_samples": 10, **settings}
    with pytest.raises(ValueError, match=match):
        ugm.sample(None, {}, jax.random.PRNGKey(0), settings.pop("num_samples"), **settings)


def test_a_second_call_reuses_the_compiled_chains(count_traces):
    """Other keys, parameters, warm-up and thinning run the program
    compiled by the first call (one per model, kernel and num_samples)."""
    from helpers.models import chain3, spins3

    _, params, _, _ = spins3()
    model = count_traces(chain3)
    m = ugm.UGM(model)
    before = model.calls
    first = ugm.sample(m, params, jax.random.PRNGKey(0), 20, num_chains=2)
    assert model.calls > before  # the first call traced the chains
    with model.unchanged("a second ugm.sample"):
        again = ugm.sample(m, jax.tree.map(lambda a: 0.5 * a, params), jax.random.PRNGKey(1),
                           20, num_chains=2, num_warmup=5, thinning=3)
    assert (first["x"] != again["x"]).any()


def counted_vbm(n, traces):
    """``ugm.models.vbm(n)``, counting in ``traces`` how often it is traced."""
    traces.append(1)
    ugm.models.vbm(n)


def test_other_counts_reuse_the_compiled_chains():
    """Calls with other keys, parameters, warm-up, thinning, and numbers of draws up to
    the same power of two and of chains on the same grid (powers of two up to 8, then
    multiples of 8) run the program compiled by the first call: the model is not traced
    again (it used to be, for every new num_samples or num_chains)."""
    traces = []
    m = ugm.UGM(counted_vbm, 4, traces)
    params = {"W": 0.3 * jnp.ones((4, 4)), "b": 0.2 * jnp.ones(4)}
    first = ugm.sample(m, params, jax.random.PRNGKey(0), 5, num_chains=3)
    before = len(traces)
    for num_samples, num_chains in [(6, 3), (7, 4), (8, 3), (5, 4)]:
        ugm.sample(m, params, jax.random.PRNGKey(0), num_samples, num_chains=num_chains)
    again = ugm.sample(m, jax.tree.map(lambda a: -a, params), jax.random.PRNGKey(1), 8,
                       num_chains=4, num_warmup=5, thinning=3)
    assert len(traces) == before
    assert (np.asarray(first["x"]) != np.asarray(again["x"])[:15]).any()
    ugm.sample(m, params, jax.random.PRNGKey(0), 9, num_chains=3)  # 16 draws: compiles
    assert len(traces) > before, "test is blind"


def test_chain_counts_past_eight_round_to_a_multiple_of_eight():
    """Issue 48: 20 chains ran as 32 (37 % of the work padding); they run as 24. The grid:
    powers of two up to 8, then multiples of 8; and 17 to 24 chains share one program."""
    from numpyro_ugm.runtime.runloop import chain_capacity

    assert [chain_capacity(n) for n in (1, 3, 5, 8, 9, 20, 24, 25, 100)] == [
        1, 4, 8, 8, 16, 24, 24, 32, 104]
    traces = []
    m = ugm.UGM(counted_vbm, 3, traces)
    params = {"W": 0.3 * jnp.ones((3, 3)), "b": 0.2 * jnp.ones(3)}
    ugm.sample(m, params, jax.random.PRNGKey(0), 4, num_chains=20)
    before = len(traces)
    ugm.sample(m, params, jax.random.PRNGKey(0), 4, num_chains=17)
    assert len(traces) == before


def test_padded_draws_and_chains_are_dropped():
    """The draws are those of the first chains and draws of a longer run with the same
    key: padding to powers of two changes no number."""
    m = ugm.UGM(ugm.models.vbm, 5)
    params = {"W": 0.4 * jnp.ones((5, 5)), "b": -0.1 * jnp.ones(5)}
    key = jax.random.PRNGKey(3)
    short = ugm.sample(m, params, key, 3, num_chains=3, num_warmup=2)["x"]
    long = ugm.sample(m, params, key, 10, num_chains=5, num_warmup=2)["x"]
    assert short.shape == (9, 5) and short.dtype == np.int8
    np.testing.assert_array_equal(np.reshape(short, (3, 3, 5)),
                                  np.reshape(long, (5, 10, 5))[:3, :3])


def test_init_state_is_checked():
    m = ugm.UGM(ugm.models.vbm, 3)
    params = m.init_params(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="init_state site 'x' has shape \\(2, 3\\); "
                                         "expected a leading axis of num_chains = 3"):
        ugm.sample(m, params, jax.random.PRNGKey(0), 2, num_chains=3,
                   init_state={"x": jnp.ones((2, 3))})
    with pytest.raises(KeyError, match="missing \\['x'\\], unknown \\['y'\\]"):
        ugm.sample(m, params, jax.random.PRNGKey(0), 2, init_state={"y": jnp.ones((1, 3))})


def _quartic():
    x = numpyro.sample("x", ugm.Real(1))
    numpyro.factor("f", -jnp.sum((x - 5.0) ** 4))


def test_sample_reports_acceptance_and_split_r_hat_and_warns_when_chains_disagree():
    """Issue 46 item 14: f = −(x − 5)⁴ on one Real site, 64 chains, 1,000 warm-up: the
    density is symmetric about 5, so E[x] = 5 exactly, but 16 of the 64 chains (one
    shared MALA step size) never leave the base and the mean came back 3.46 with no
    word. ugm.sample now reports each chain's acceptance and every variable's split
    R-hat and effective size (numpyro.diagnostics) and warns; mala with a step size that
    rejects everything (1e3) or moves nothing (1e-8) warns too."""
    m = ugm.UGM(_quartic)
    with pytest.warns(RuntimeWarning, match=r"split R-hat .* at site 'x'.*16 of 64 chains"):
        draws, diag = ugm.sample(m, {}, jax.random.PRNGKey(0), 200, num_chains=64,
                                 num_warmup=1000, return_diagnostics=True)
    assert abs(float(draws["x"].mean()) - 5.0) > 1.0  # the wrong answer it warns about
    assert diag.acceptance.shape == (64,) and np.sum(diag.acceptance < 0.01) == 16
    assert diag.r_hat["x"].shape == (1,) and diag.worst()[1] > 2
    for step_size, match in ((1e3, "8 of 8 chains accepted less"), (1e-8, "split R-hat")):
        with pytest.warns(RuntimeWarning, match=match):
            ugm.sample(m, {}, jax.random.PRNGKey(0), 50, num_chains=8, num_warmup=10,
                       kernel=ugm.kernels.mala(step_size=step_size, adapt=False))


def test_sample_diagnostics_of_a_mixing_chain_are_quiet_and_right():
    """A 6-spin open Ising chain with coupling 0.3 (exact Gibbs): no warning, acceptance
    1, split R-hat below 1.05, and E[x_i x_(i+1)] = tanh(0.3) (closed form of the open
    chain) within 4 standard errors computed from the reported effective size."""
    def chain():
        x = numpyro.sample("x", ugm.Spin(6))
        numpyro.factor("f", 0.3 * jnp.sum(x[:-1] * x[1:]))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        draws, diag = ugm.sample(ugm.UGM(chain), {}, jax.random.PRNGKey(0), 400,
                                 num_chains=8, num_warmup=10, return_diagnostics=True)
    np.testing.assert_array_equal(diag.acceptance, np.ones(8))
    assert np.nanmax(diag.r_hat["x"]) < 1.05
    x = np.asarray(draws["x"], np.float64)
    products = x[:, :-1] * x[:, 1:]
    ess = np.nanmin(diag.ess["x"])
    se = products.std(0).max() / np.sqrt(ess)
    assert np.all(np.abs(products.mean(0) - np.tanh(0.3)) < 4 * se), (products.mean(0), se)


def _double_well():
    x = numpyro.sample("x", ugm.Real(()))
    numpyro.factor("f", -0.25 * x ** 4 + x ** 2 - 0.5 * x)


def _double_well_mean():
    """E[x] of exp(−x⁴/4 + x² − x/2), by scipy's adaptive quadrature (independent of
    the package's ``quadrature``)."""
    from scipy import integrate

    density = lambda x: np.exp(-0.25 * x ** 4 + x ** 2 - 0.5 * x)  # noqa: E731
    mass = integrate.quad(density, -np.inf, np.inf)[0]
    return integrate.quad(lambda x: x * density(x), -np.inf, np.inf)[0] / mass


def test_a_kernel_that_adapts_its_step_size_is_warmed_up_by_default():
    """Issue 46 sweep: ``sample`` defaulted to ``num_warmup=0`` for every kernel, so a
    gradient kernel never adapted its step size (it adapts during the warm-up only):
    random-walk chains of a double well kept ε = 0.1, accepted 95 % of their moves and
    put the mean of 2,000 draws at −1.52 against −0.760 (8 standard errors), with no
    warning. Now a kernel that adapts gets max(MIN_ADAPTIVE_WARMUP, num_samples ×
    thinning) warm-up steps unless told otherwise; an explicit ``num_warmup=0`` warns."""
    m = ugm.UGM(_double_well)
    kernel = ugm.kernels.rwm()
    draws, diag = ugm.sample(m, {}, jax.random.PRNGKey(0), 2000, kernel=kernel,
                             return_diagnostics=True)
    assert abs(float(diag.acceptance[0]) - 0.234) < 0.1, diag.acceptance  # was 0.93
    x = np.asarray(draws["x"], np.float64)
    batches = x.reshape(20, -1).mean(1)  # batch means: the standard error of a chain
    se = batches.std(ddof=1) / np.sqrt(len(batches))
    assert abs(x.mean() - _double_well_mean()) < 4 * se, (x.mean(), _double_well_mean(), se)
    with pytest.warns(RuntimeWarning, match="adapts its step size during the warm-up only"):
        ugm.sample(m, {}, jax.random.PRNGKey(0), 50, kernel=kernel, num_warmup=0)
    with warnings.catch_warnings():  # exact Gibbs adapts nothing: no warm-up, no warning
        warnings.simplefilter("error")
        ugm.sample(ugm.UGM(ugm.models.vbm, 3), {"W": jnp.zeros((3, 3)), "b": jnp.zeros(3)},
                   jax.random.PRNGKey(0), 30, num_warmup=0)
