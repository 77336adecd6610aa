"""The posterior of a model's parameters given observed state, as the samplers of
:mod:`numpyro_ugm.posterior` see it.

For N cases x_n drawn from p(x; θ) = exp F(x; θ) / Z(θ) (F: the log-potential with latent
sites summed out in closed form) and a prior p(θ),

    log p(θ | x_1..N) = log p(θ) + Σ_n F(x_n; θ) − N log Z(θ) + const.

Every term but N log Z(θ) is computable: :class:`Posterior` holds them, on the
unconstrained space of the parameters that have a prior (the sampled ones), with the
log-Jacobian of the map to θ. The samplers differ in how they deal with Z(θ): the exchange
algorithm cancels it with an auxiliary draw, SG-MCMC estimates its gradient with a
negative-phase estimator, the exact reference enumerates it.
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp


from ..model import UGM, as_ugm
from ..validation import validate_data


class Posterior:
    """The computable part of log p(θ | data) for a model and its observed cases.

    Parameters
    ----------
    owner : str
        Name used in error messages.
    model : callable or UGM
    data : dict of str -> array
        Observed state sites with a leading example axis (data representation); state
        sites it lacks are latent and summed out in closed form.
    model_args, model_kwargs
        Arguments of the model function.
    params : dict, optional
        Fixed values (constrained) of parameter sites that are not sampled:
        ``numpyro.param`` sites (default: their init values) and sites with a prior that
        should be held fixed.

    Attributes
    ----------
    m : UGM
        The traced model with the data's sites observed.
    data : dict of str -> jax.Array
        The cases, model representation.
    num_examples : int
    sites : tuple of str
        The sampled parameter sites (those with a prior not fixed by ``params``).
    fixed : dict
        Values of the other parameter sites.
    """

    def __init__(self, owner: str, model: Callable | UGM, data: dict, model_args: tuple = (),
                 model_kwargs: dict | None = None, params: dict | None = None):
        m = as_ugm(model, *model_args, **(model_kwargs or {}))
        self.data = validate_data(m.state_sites, data)
        self.m = m = m.observe(self.data.keys())
        self.num_examples = int(jax.tree.leaves(self.data)[0].shape[0])
        given = dict(params or {})
        unknown = [n for n in given if n not in m.param_sites]
        if unknown:
            raise KeyError(f"{owner}: params has site(s) {unknown} that are not parameter "
                           f"sites of the model ({list(m.param_sites)})")
        self.sites = tuple(n for n, s in m.param_sites.items()
                           if s.prior is not None and n not in given)
        if not self.sites:
            raise ValueError(
                f"{owner}: no parameter to sample: declare each parameter θ of the "
                f"potential with a prior, numpyro.sample(name, prior) (the model's parameter "
                f"sites are {list(m.param_sites)}, and params fixes {list(given)})")
        init = m.init_params(jax.random.PRNGKey(0))
        self.fixed = {n: jnp.asarray(given.get(n, init[n])) for n in m.param_sites
                      if n not in self.sites}
        m.param_space.check({**init, **self.fixed})
        if m.latent_sites:  # raises if the latent sites cannot be summed out
            self.free_energy_sum(init, jax.tree.map(lambda a: a[:1], self.data))

    def init_position(self) -> dict:
        """The sampled sites at the model's initial values (prior medians), unconstrained."""
        init = self.m.init_params(jax.random.PRNGKey(0))
        return self.m.param_space.to_unconstrained({n: init[n] for n in self.sites})

    def params(self, position: dict) -> dict:
        """Every parameter site, constrained, for the sampled sites at ``position``."""
        return {**self.fixed, **self.m.param_space.to_constrained(position)}

    def log_prior(self, position: dict) -> jax.Array:
        """``log p(θ) + log |det ∂θ/∂u|``: the prior density at ``position`` in the
        unconstrained space."""
        return (self.m.log_prior(self.params(position))
                + self.m.param_space.log_abs_det_jacobian(position))

    def free_energy_sum(self, params: dict, states: dict) -> jax.Array:
        """Σ_n F(x_n; θ) over the rows of ``states`` (model representation; latent sites,
        if present, are ignored and summed out)."""
        observed = {n: states[n] for n in self.data}
        return jnp.sum(self.m.target().free_energies(params, observed))

    def log_unnormalized(self, position: dict) -> jax.Array:
        """``log p(θ) + log |J| + Σ_n F(x_n; θ)``: the log posterior density at ``position``
        (unconstrained) but for −N log Z(θ) and a constant."""
        return self.log_prior(position) + self.free_energy_sum(self.params(position),
                                                               self.data)

    def __repr__(self) -> str:
        return (f"Posterior(sites={list(self.sites)}, fixed={list(self.fixed)}, "
                f"num_examples={self.num_examples})")
