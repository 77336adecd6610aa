"""Pseudo-likelihood (evaluate/pseudo.py) against brute force: every conditional by
evaluating the potential at each value."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers.models import small_rbm

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact


def brute_pll(log_f, rows, values):
    """Mean over ``rows`` of Σ_i log p(x_i | x_−i), every conditional by evaluating
    ``log_f`` (a batch of configurations -> their log-probabilities up to a constant) at
    each value of each variable."""
    num, size = rows.shape
    variants = np.repeat(rows[:, None, None, :], len(values), 2).repeat(size, 1)
    for i in range(size):
        variants[:, i, :, i] = values
    scores = np.asarray(log_f(variants.reshape(-1, size))).reshape(num, size, len(values))
    chosen = np.array([[values.index(x) for x in row] for row in rows])
    mine = np.take_along_axis(scores, chosen[..., None], 2)[..., 0]
    return np.mean(np.sum(mine - np.logaddexp.reduce(scores, axis=2), axis=1))


def test_pseudo_log_likelihood_of_spin_vbm_matches_brute_force(count_traces):
    model = count_traces(ugm.models.vbm)
    m = ugm.UGM(model, 6)
    rng = np.random.default_rng(5)
    params = {"W": jnp.asarray(rng.standard_normal((6, 6)), jnp.float32),
              "b": jnp.asarray(rng.standard_normal(6), jnp.float32)}
    data = rng.choice([-1, 1], size=(20, 6)).astype(np.int8)
    before = model.calls
    got = float(ugm.pseudo_log_likelihood(m, params, {"x": data}))
    assert model.calls > before  # the first call traced the pseudo-likelihood
    f = jax.vmap(lambda y: m.target().log_potential(params, {"x": jnp.asarray(y, jnp.float32)}))
    want = brute_pll(f, data.astype(float), [-1.0, 1.0])
    assert abs(got - want) < 1e-4 * max(1.0, abs(want))
    # a second call, with other parameters and data of the same layout, does not retrace
    with model.unchanged("a second pseudo_log_likelihood"):
        other = ugm.pseudo_log_likelihood(m, {k: 0.5 * v for k, v in params.items()},
                                          {"x": -data})
    assert float(other) != got


def test_pseudo_log_likelihood_of_rbm_sums_out_hidden_units():
    m, params, data = small_rbm()
    rows = np.asarray(data["v"][:10])
    got = float(ugm.pseudo_log_likelihood(m, params, {"v": rows}))
    want = brute_pll(lambda y: exact.log_prob(m, params, {"v": y.astype(np.int8)}),
                     rows.astype(float), [0.0, 1.0])
    assert abs(got - want) < 1e-3 * max(1.0, abs(want)), (got, want)


def test_pseudo_log_likelihood_compiles_once_per_power_of_two_of_examples():
    """Data of 5 to 8 examples share one compiled program (the example axis is padded to
    a power of two, the padding masked out of the mean), and the values are those of the
    examples given."""
    calls = []

    def counted_vbm(n):
        calls.append(1)  # runs only when the model is traced
        return ugm.models.vbm(n)

    m = ugm.UGM(counted_vbm, 5)
    rng = np.random.default_rng(6)
    params = {"W": jnp.asarray(rng.standard_normal((5, 5)), jnp.float32),
              "b": jnp.asarray(rng.standard_normal(5), jnp.float32)}
    data = rng.choice([-1, 1], size=(8, 5)).astype(np.int8)
    f = jax.vmap(lambda y: m.target().log_potential(params, {"x": jnp.asarray(y, jnp.float32)}))
    want = {n: brute_pll(f, data[:n].astype(float), [-1.0, 1.0]) for n in (5, 6, 7, 8)}
    ugm.pseudo_log_likelihood(m, params, {"x": data[:5]})
    traced = len(calls)
    got = {n: float(ugm.pseudo_log_likelihood(m, params, {"x": data[:n]})) for n in want}
    assert len(calls) == traced
    for n in want:
        assert abs(got[n] - want[n]) < 1e-4 * max(1.0, abs(want[n])), (n, got, want)


def test_pseudo_likelihood_on_a_real_site_is_a_clear_error():
    """Issue 46 item 26: pseudo-likelihood on a Real site failed with an unclear error
    from inside the label lookup; it now names the site and the alternatives."""
    import numpyro

    def gmrf():
        x = numpyro.sample("x", ugm.Real(2))
        numpyro.factor("q", -0.5 * jnp.sum(x ** 2))

    with pytest.raises(ValueError, match=r"pseudo-likelihood: the observed site\(s\) \['x'\] "
                                         "are real-valued"):
        ugm.pseudo_log_likelihood(ugm.UGM(gmrf), {}, {"x": np.zeros((3, 2))})
