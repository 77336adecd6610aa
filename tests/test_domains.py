"""The domains (domains.py): counting measure on a finite set, representations (data
labels or values <-> model values), enumeration and uniform draws, each checked against
the values written out here."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numpyro_ugm as ugm

#: (domain, its values in the data representation, one model value per label)
DOMAINS = [
    (ugm.Spin(3), [-1, 1], [[-1.0], [1.0]]),
    (ugm.Binary((2, 2)), [0, 1], [[0.0], [1.0]]),
    (ugm.Categorical(4, num_categories=3), [0, 1, 2], np.eye(3).tolist()),
]
IDS = ["spin", "binary", "categorical"]


@pytest.mark.parametrize("domain,values,model", DOMAINS, ids=IDS)
def test_sizes_and_enumeration(domain, values, model):
    k = len(values)
    assert domain.num_values == k
    assert domain.num_variables == int(np.prod(domain.shape_))
    assert np.isclose(domain.log_num_states, domain.num_variables * np.log(k))
    support = np.asarray(domain.enumerate_support())
    assert support.shape == (k,) + domain.batch_shape + domain.event_shape
    for label in range(k):  # every variable takes the label's model value
        np.testing.assert_array_equal(
            support[label].reshape(domain.num_variables, -1),
            np.broadcast_to(np.asarray(model[label]), (domain.num_variables, len(model[0]))))


@pytest.mark.parametrize("domain,values,model", DOMAINS, ids=IDS)
def test_counting_measure(domain, values, model):
    """log_prob is 0 on the domain (the factors alone define the potential), -inf off it."""
    inside = domain.enumerate_support()
    np.testing.assert_array_equal(np.asarray(domain.log_prob(inside)), 0.0)
    outside = inside[0] + 0.5  # not a value of the domain
    assert np.all(np.isneginf(np.asarray(domain.log_prob(outside))))


@pytest.mark.parametrize("domain,values,model", DOMAINS, ids=IDS)
def test_representations_round_trip(domain, values, model):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, len(values), size=(5,) + domain.shape_)
    data = np.asarray(values)[labels]
    x = domain.to_model(data)
    assert x.dtype == jnp.float32 and x.shape == (5,) + domain.shape_ + domain.event_shape
    np.testing.assert_array_equal(np.asarray(domain.from_model(x)), data)
    np.testing.assert_array_equal(np.asarray(domain.labels(x)), labels)
    np.testing.assert_array_equal(np.asarray(domain.label_to_model(labels)), np.asarray(x))
    assert bool(jnp.all(domain.in_domain(data)))
    assert not bool(jnp.any(domain.in_domain(np.full(3, max(values) + 1))))


@pytest.mark.parametrize("domain,values,model", DOMAINS, ids=IDS)
def test_uniform_draws(domain, values, model):
    """``sample`` draws each value with probability 1/K (5 binomial standard errors)."""
    n = 4000
    x = domain.sample(jax.random.PRNGKey(0), (n,))
    labels = np.asarray(domain.labels(x)).reshape(n, -1)
    freq = np.stack([(labels == k).mean(0) for k in range(len(values))])
    k = len(values)
    assert np.all(np.abs(freq - 1 / k) < 5 * np.sqrt((1 / k) * (1 - 1 / k) / n)), freq


def test_categorical_needs_two_labels():
    with pytest.raises(ValueError, match="num_categories must be an integer >= 2, got 1"):
        ugm.Categorical(3, num_categories=1)


def test_categorical_needs_the_number_of_labels():
    """``Categorical(4)`` once meant 4 variables with K = 2: the number of labels is now
    required, and a non-integer one is not rounded."""
    with pytest.raises(TypeError, match=r"Categorical needs num_categories.*"
                                        r"the first argument is the site's shape"):
        ugm.Categorical(4)
    with pytest.raises(ValueError, match="num_categories must be an integer >= 2, got 2.5"):
        ugm.Categorical(4, num_categories=2.5)
    assert ugm.Categorical(4, 3).num_categories == 3  # second positional: K
    assert ugm.Categorical(num_categories=np.int64(3)).shape_ == ()


@pytest.mark.parametrize("shape", [2.5, (2, 1.0)])
def test_shapes_are_integers(shape):
    with pytest.raises(ValueError, match="Spin: shape must be an integer >= 0, got"):
        ugm.Spin(shape)


def test_real_domain_base_normal_and_fitted_moments():
    d = ugm.Real((2, 3))
    assert not d.finite and d.unfitted and d.log_num_states == 0.0
    x = np.random.default_rng(0).normal(3.0, 2.0, size=(4000, 2, 3))
    fitted = d.fitted(x)
    assert not fitted.unfitted
    np.testing.assert_allclose(fitted.loc, 3.0, atol=0.15)
    np.testing.assert_allclose(fitted.scale, 2.0, atol=0.15)
    # the base log density is the Normal's, summed over the site
    v = jnp.asarray(x[0])
    expected = np.sum(-0.5 * ((x[0] - fitted.loc) / fitted.scale) ** 2
                      - np.log(fitted.scale) - 0.5 * np.log(2 * np.pi))
    np.testing.assert_allclose(float(fitted.base_log_prob(v)), expected, rtol=1e-5)
    with pytest.raises(TypeError, match="no finite set of values"):
        d.num_values
    with pytest.raises(ValueError, match="scale must be positive"):
        ugm.Real(2, loc=0.0, scale=0.0)
    with pytest.raises(ValueError, match="does not broadcast"):
        ugm.Real(2, loc=np.zeros(3), scale=1.0)


def test_real_data_outside_the_domain_names_the_site():
    from numpyro_ugm.model.validation import validate_data
    sites = {"x": ugm.Real(3)}
    bad = np.zeros((4, 3))
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"site 'x': value nan at example 2, index \(1,\) "
                                         r"is outside the domain Real"):
        validate_data(sites, {"x": bad})
    good = validate_data(sites, {"x": np.ones((4, 3))})
    assert good["x"].dtype == jnp.result_type(float)
