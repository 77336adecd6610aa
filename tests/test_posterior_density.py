"""The posterior as its samplers see it (posterior/density.py): per-example inputs handed
as a plain model argument, whose rows the potential would sum into every example's
potential, are refused with a pointer to ``inputs=``; an argument that merely has as many
rows as there are examples is not."""

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.posterior import Posterior


def field_chain(field):
    """A chain of 4 spins with a sampled coupling and an input field, broadcast against
    the spins: a field of shape (N, 4) adds Σ_n field_n · x to the potential. (Its
    colouring is declared: no structure analysis to pay for in each model traced.)"""
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0))
    x = numpyro.sample("x", ugm.Spin(4))
    ugm.factor("potential", beta * jnp.sum(x[1:] * x[:-1]) + jnp.sum(field * x),
               colors={"x": np.array([0, 1, 0, 1])}, multilinear=True)


def test_per_example_rows_given_as_a_model_argument_are_refused():
    rng = np.random.default_rng(0)
    data = {"x": rng.choice(np.array([-1, 1], np.int8), size=(3, 4))}
    fields = rng.normal(size=(3, 4)).astype(np.float32)  # one row per example
    with pytest.raises(ValueError, match=r"^Exchange: the model's positional argument 0 has "
                       r"shape \(3, 4\), one row per example of the data \(3\), and the "
                       r"potential sums its rows.*inputs=\{'name': \.\.\.\}"):
        Posterior("Exchange", field_chain, data, (fields,))
    with pytest.raises(ValueError, match=r"keyword argument 'field' .*inputs=\{'field'"):
        Posterior("SGMCMC", field_chain, data, (), {"field": fields})
    # the per-example inputs where they belong: accepted, one row each
    post = Posterior("Exchange", field_chain, data, (), {"field": fields[0]},
                     inputs={"field": fields})
    assert post.num_examples == 3 and post.sites == ("beta",)
    # as many rows as examples, but one field per spin (a row is a scalar that scales
    # every spin, not that example's term): not per-example inputs
    spin_field = rng.normal(size=4).astype(np.float32)
    post = Posterior("Exchange", field_chain, {"x": np.tile(data["x"][:1], (4, 1))},
                     (spin_field,))
    assert post.num_examples == 4
