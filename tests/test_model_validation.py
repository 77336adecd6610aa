"""Data against the model's domains (validation.py): the errors name the site, the
problem and, for a value outside the domain, the value and where it is; valid data comes
back in the model representation, and ``to_data`` takes it back."""

import numpy as np
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.model.validation import observed_sites, to_data, validate_data

SITES = {"s": ugm.Spin(3), "b": ugm.Binary(2), "c": ugm.Categorical(2, num_categories=3)}


def test_valid_data_comes_back_in_the_model_representation_and_goes_back():
    data = {"s": np.array([[1, -1, 1], [-1, -1, 1]], np.int8),
            "b": np.array([[0, 1], [1, 1]], np.int8),
            "c": np.array([[2, 0], [1, 1]])}
    model = validate_data(SITES, data)
    np.testing.assert_array_equal(model["s"], data["s"].astype(np.float32))
    np.testing.assert_array_equal(model["b"], data["b"].astype(np.float32))
    np.testing.assert_array_equal(model["c"], np.eye(3)[data["c"]])  # one-hot
    back = to_data(SITES, model)
    for name in data:
        np.testing.assert_array_equal(back[name], data[name])
    # a latent site may be missing unless all are asked for
    assert set(validate_data(SITES, {"s": data["s"]})) == {"s"}
    with pytest.raises(KeyError, match=r"data is missing state site\(s\) \['b', 'c'\]"):
        validate_data(SITES, {"s": data["s"]}, allow_missing=False)


def test_errors_name_the_site_the_value_and_where_it_is():
    good = {"s": np.ones((4, 3), np.int8)}
    bad = good["s"].copy()
    bad[2, 1] = 0
    with pytest.raises(ValueError, match=r"^site 's': value 0 at example 2, index \(1,\) is "
                       r"outside the domain Spin \{-1, 1\}"):
        validate_data(SITES, {"s": bad})
    with pytest.raises(ValueError, match=r"^site 'c': value 3 at example 0, index \(1,\) is "
                       r"outside the domain Categorical \{0, 1, 2\}"):
        validate_data(SITES, {"c": np.array([[0, 3]])})
    with pytest.raises(ValueError, match=r"^site 's': data has shape \(4, 2\); expected "
                       r"\(num_examples, 3\)"):
        validate_data(SITES, {"s": np.ones((4, 2), np.int8)})
    with pytest.raises(ValueError, match=r"^site 'b' has 3 examples but other sites have 4"):
        validate_data(SITES, {**good, "b": np.zeros((3, 2), np.int8)})
    with pytest.raises(ValueError, match=r"^site 's': data has no examples"):
        validate_data(SITES, {"s": np.ones((0, 3), np.int8)})
    with pytest.raises(TypeError, match=r"^site 's': data has dtype <U1, expected numbers"):
        validate_data(SITES, {"s": np.full((1, 3), "a")})
    with pytest.raises(KeyError, match=r"data has site\(s\) \['z'\] that are not state sites"):
        validate_data(SITES, {"z": np.ones((1, 3))})
    with pytest.raises(TypeError, match="^data must be a dict"):
        validate_data(SITES, [np.ones((1, 3))])
    with pytest.raises(ValueError, match="^data has none of the model's state sites"):
        observed_sites(SITES, [])
    assert observed_sites(SITES, ["c", "s"]) == ("c", "s")


def test_complex_data_and_data_whose_square_overflows_are_refused():
    """Issue 46 item 26: complex data was accepted (its imaginary part silently
    dropped), and finite data whose square overflows float32 (1e20² > 3.4e38, numpy's
    own finfo) surfaced later as a divergence blamed on the learning rate. Both are now
    errors naming the site and the fix; 1e10 (square 1e20) still passes."""
    from numpyro_ugm.model.validation import validate_data

    sites = {"x": ugm.Real(2)}
    with pytest.raises(TypeError, match="site 'x': data is complex"):
        validate_data(sites, {"x": np.array([[1 + 2j, 0.0]])})
    assert 1e20 ** 2 > float(np.finfo(np.float32).max) > 1e10 ** 2
    with pytest.raises(ValueError, match=r"value 1e\+20 at example 1, index \(0,\) is finite "
                                         r"but its square overflows float32"):
        validate_data(sites, {"x": np.array([[0.0, 1.0], [1e20, 0.0]])})
    np.testing.assert_array_equal(validate_data(sites, {"x": np.array([[1e10, 0.0]])})["x"],
                                  np.array([[1e10, 0.0]], np.float32))


@pytest.mark.parametrize("field", ["step_size", "target_acceptance", "adaptation_rate"])
def test_a_gradient_kernel_setting_that_is_not_a_number_is_a_clear_type_error(field):
    """Issue 46 item 26: ``mala(step_size='0.1')`` failed inside numpy ('ufunc isfinite
    not supported'); the kernel now names the setting and the value."""
    with pytest.raises(TypeError, match=f"mala: {field} must be a real number, got '0.1'"):
        ugm.kernels.mala(**{field: "0.1"})


def test_an_unnormalizable_model_is_refused_by_every_sampler_ais_and_quadrature():
    """Issue 46 items 13, 15 and 26: a 3-variable GMRF with precision I − 0.6(J − I)
    (smallest eigenvalue −0.2, numpy's eigvalsh below) gave finite Gibbs draws (max |x|
    103 with no warm-up), MALA draws, and an AIS log Z of 44.8 ± 0.9 where the truth is
    +∞; f = +0.1 x⁴ gave MALA and random-walk draws; the quadrature of f = 0 returned
    2.77 ± 2.0. Each is now the FloatingPointError exact evaluation gives; the same GMRF
    at a positive definite precision samples as before."""
    import jax
    import jax.numpy as jnp
    import numpyro

    from numpyro_ugm.evaluate import ais, exact, quadrature

    Q = np.eye(3) - 0.6 * (np.ones((3, 3)) - np.eye(3))
    assert np.linalg.eigvalsh(Q).min() == pytest.approx(-0.2)

    def gmrf():
        x = numpyro.sample("x", ugm.Real(3))
        P = numpyro.param("P", jnp.eye(3))
        numpyro.factor("q", -0.5 * x @ P @ x)

    def power(c, k):
        def model():
            x = numpyro.sample("x", ugm.Real(1))
            numpyro.factor("f", c * jnp.sum(x ** k))
        return model

    m, key = ugm.UGM(gmrf), jax.random.PRNGKey(0)
    bad = {"P": jnp.asarray(Q, jnp.float32)}
    with pytest.raises(FloatingPointError, match="not normalizable"):
        exact.log_partition(m, bad)
    match = r"real site\(s\) 'x' would have diverged: the potential is not normalizable"
    for kernel in (None, ugm.kernels.mala()):
        with pytest.raises(FloatingPointError, match="^sample: chains of the " + match):
            ugm.sample(m, bad, key, 10, num_chains=4, kernel=kernel)
    with pytest.raises(FloatingPointError, match="^ais.log_partition: .*eigenvalue -0.2"):
        ais.log_partition(m, bad, key, 10, 10)
    with pytest.raises(FloatingPointError, match="^ais.log_likelihood: "):
        ais.log_likelihood(m, bad, {"x": np.zeros((2, 3))}, key, 10, 10)
    quartic = ugm.UGM(power(0.1, 4))
    for kernel in (ugm.kernels.mala(), ugm.kernels.rwm()):
        with pytest.raises(FloatingPointError, match=match):
            ugm.sample(quartic, {}, key, 10, num_chains=4, kernel=kernel)
    with pytest.raises(FloatingPointError, match="^quadrature.log_partition: "):
        quadrature.log_partition(power(0.0, 1), {})
    draws = ugm.sample(m, {"P": jnp.eye(3)}, key, 100, num_chains=4)
    assert np.all(np.isfinite(np.asarray(draws["x"])))
