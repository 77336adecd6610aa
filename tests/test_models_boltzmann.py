"""The Boltzmann machines (models/boltzmann.py): their potentials against the documented
formulas evaluated here in numpy, the parameters each declares, and their blocks (the
RBM's two layers, the VBM's units one by one). (The declared blocks against the analysis
of the same potentials: test_models.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.models import rbm, vbm


def test_rbm_potential_is_v_w_h_plus_the_biases():
    m = ugm.UGM(rbm, 3, 2)
    assert set(m.param_sites) == {"W", "b", "c"} and set(m.target().state_sites) == {"v", "h"}
    assert m.target().blocks == [{"v": None}, {"h": None}]
    rng = np.random.default_rng(0)
    W, b, c = rng.normal(size=(3, 2)), rng.normal(size=3), rng.normal(size=2)
    params = {k: jnp.asarray(a, jnp.float32) for k, a in (("W", W), ("b", b), ("c", c))}
    v, h = np.array([1.0, 0.0, 1.0]), np.array([0.0, 1.0])
    got = float(m.target().log_potential(params, {"v": jnp.asarray(v), "h": jnp.asarray(h)}))
    np.testing.assert_allclose(got, v @ W @ h + b @ v + c @ h, rtol=1e-5)
    # W starts as small Normal draws (not zeros: a zero W has a symmetric saddle)
    start = m.init_params(jax.random.PRNGKey(0))
    assert 0 < float(jnp.max(jnp.abs(start["W"]))) < 0.1
    # with prior_scale, W is a sampled site with a prior and the biases stay params
    bayes = ugm.UGM(rbm, 3, 2, prior_scale=1.0)
    assert bayes.param_sites["W"].prior is not None
    assert bayes.param_sites["b"].prior is None


@pytest.mark.parametrize("domain, values", [("spin", [1.0, -1.0, -1.0, 1.0]),
                                             ("binary", [1.0, 0.0, 1.0, 1.0])])
def test_vbm_potential_uses_the_strict_upper_triangle(domain, values):
    """f(x) = Σ_{i<j} W_ij x_i x_j + Σ_i b_i x_i: the diagonal and the lower triangle of
    W do not enter (changing them leaves f as it was)."""
    m = ugm.UGM(vbm, 4, domain=domain)
    assert len(m.target().blocks) == 4
    rng = np.random.default_rng(1)
    W, b = rng.normal(size=(4, 4)), rng.normal(size=4)
    x = np.array(values)
    expected = sum(W[i, j] * x[i] * x[j] for i in range(4) for j in range(i + 1, 4)) + b @ x
    f = lambda W: float(m.target().log_potential(  # noqa: E731
        {"W": jnp.asarray(W, jnp.float32), "b": jnp.asarray(b, jnp.float32)},
        {"x": jnp.asarray(x, jnp.float32)}))
    np.testing.assert_allclose(f(W), expected, rtol=1e-5)
    np.testing.assert_allclose(f(np.triu(W, 1) + 5.0 * np.tril(W)), expected, rtol=1e-5)
    no_fields = ugm.UGM(vbm, 4, domain=domain, fields=False)
    assert set(no_fields.param_sites) == {"W"}
    with pytest.raises(ValueError, match="^vbm: domain must be 'spin' or 'binary'"):
        ugm.UGM(vbm, 4, domain="potts")


def test_gaussian_rbm_starts_asymmetric_and_its_hidden_columns_separate():
    """Issue 46 item 2: gaussian_rbm started at W = 0, and since the hidden units are
    summed out exactly, identical columns get identical gradients: after PCD updates
    on standardized 8×8 digits every column of W was still equal. W now starts as
    Normal(0, 0.01) draws from init_params' key (the documented ``init_scale``), and
    after 30 PCD updates on 300 standardized digits (scikit-learn's load_digits) the
    16 columns are distinct (checked against each other directly); ``init_scale=0``
    gives the old start back, whose columns stay equal."""
    import optax
    from sklearn.datasets import load_digits

    m = ugm.UGM(ugm.models.gaussian_rbm, 64, 16)
    W0 = np.asarray(m.init_params(jax.random.PRNGKey(0))["W"])
    assert W0.shape == (64, 16) and 0.008 < W0.std() < 0.012
    assert not np.allclose(W0, np.asarray(m.init_params(jax.random.PRNGKey(1))["W"]))
    x = load_digits().data[:300]
    x = ((x - x.mean(0)) / (x.std(0) + 1e-8)).astype(np.float32)

    def min_column_gap(model):
        learner = ugm.MLE(model, ugm.PCD(50), optax.adam(1e-2))
        W = np.asarray(learner.run(jax.random.PRNGKey(0), 30, {"v": x},
                                   progress_bar=False).params["W"])
        gaps = np.abs(W[:, :, None] - W[:, None, :]).max(0)
        return gaps[np.triu_indices(16, 1)].min()

    assert min_column_gap(m) > 0.01
    assert min_column_gap(ugm.UGM(ugm.models.gaussian_rbm, 64, 16, init_scale=0.0)) == 0.0
