"""Adapters that run this package's samplers of the discrete state inside ``numpyro.infer``.

* :class:`UGMSampler` is a ``numpyro.infer.mcmc.MCMCKernel``: ``MCMC(UGMSampler(model),
  ...)`` samples the state sites (the :mod:`~numpyro_ugm.domains` sites) of a model with
  any :mod:`~numpyro_ugm.kernels` spec (default: block Gibbs over the model's coloring),
  parameters held fixed. It implements ``refresh`` and ``wrap_model``, so it is also a
  block of numpyro's composite ``Gibbs``, beside NUTS on the continuous sites::

      Gibbs([(UGMSampler(model), ["x"]), (NUTS(model), None)])

* :func:`gibbs_fn` builds the ``gibbs_fn`` of ``numpyro.infer.HMCGibbs``::

      fn = ugm.infer.gibbs_fn(model, y)
      HMCGibbs(NUTS(model), gibbs_fn=fn, gibbs_sites=fn.sites)

.. warning::
   **Do not let NUTS (or any other block) sample a parameter θ of the undirected model**
   (a continuous site that a ``numpyro.factor`` couples with the state, e.g. the coupling
   β of an Ising prior). numpyro's joint density is prior(θ)·exp f(x; θ)·likelihood,
   without the 1/Z(θ) of p(x | θ) = exp f(x; θ) / Z(θ), so that kernel samples a wrong
   posterior for θ (one user got E[β] = 12.0 where the posterior mean is 0.19), and no
   amount of sampling fixes it. Sample their posterior with the samplers of
   :mod:`numpyro_ugm.posterior` — :class:`~numpyro_ugm.posterior.Exchange` (the exchange
   algorithm, a ``numpyro.infer`` kernel), :class:`~numpyro_ugm.posterior.SGMCMC`
   (stochastic-gradient Langevin dynamics) and, for small models, the exact reference
   :func:`~numpyro_ugm.posterior.exact_posterior` under NUTS — or learn them by MAP with
   :class:`~numpyro_ugm.MLE` (a prior on the site) and hold them fixed here. Continuous
   sites of the likelihood of observed data (a noise scale σ in
   ``numpyro.sample("y", Normal(mu * x, sigma), obs=y)``) are fine. Both adapters check this when they are set up
   (:func:`coupled_factors`) and warn; a factor that is a likelihood of observed data
   (normalized over the data, e.g. a mixture over the labels) is named in
   ``likelihood_factors=[...]`` to tell them so.

In both, the state sites are updated from their conditional given the current values of
the continuous sites: those values are substituted into the model, so the log-density the
kernel sees is the log-potential of the state (factors plus every observed site, e.g. a
likelihood whose scale NUTS samples) at the sampled continuous values.

The blocks of conditionally independent variables (``Target.blocks``) are found once, from
the model in which every continuous latent site is a free parameter (see
:mod:`~numpyro_ugm.structure`): the interaction graph does not depend on the values the
continuous sites take later. A Gaussian observation whose mean is linear in a spin,
``Normal(mu * x, sigma)``, is not multilinear in ``x`` (its square appears); the structure
analysis detects this and falls back to exact conditionals (correct, slower; above 512
variables one variable per block). Writing the likelihood as a mixture over the labels,
``(1 + x) / 2 * log N(y | mu_+, sigma) + (1 - x) / 2 * log N(y | mu_-, sigma)``, keeps it
multilinear and gives checkerboard blocks on a grid.

Representations: inside numpyro (the ``z`` of the states, the values handed to sibling
blocks, the values :func:`gibbs_fn` receives and returns) sites hold the **model**
representation (floats ±1 / 0, 1; one-hot vectors for ``Categorical``), because that is what
the model function receives. ``MCMC(UGMSampler(...)).get_samples()`` returns the **data**
representation (±1, 0/1 as ``int8``, integer labels); composite kernels (``Gibbs``,
``HMCGibbs``) return the model representation, which :func:`to_data` converts.

The package's modules: :mod:`~numpyro_ugm.infer.sampler` (the ``MCMCKernel``),
:mod:`~numpyro_ugm.infer.conditioning` (what a block of a composite ``Gibbs`` samples
under the other blocks' values), :mod:`~numpyro_ugm.infer.hmcgibbs` (the ``gibbs_fn``),
:mod:`~numpyro_ugm.infer.coupling` (the check and the warning above) and
:mod:`~numpyro_ugm.infer.values` (starting values and representations).
"""

from .coupling import coupled_factors
from .hmcgibbs import UGMGibbsFn, gibbs_fn
from .sampler import UGMSampler, UGMSamplerState
from .values import to_data

__all__ = ["UGMSampler", "UGMSamplerState", "UGMGibbsFn", "coupled_factors", "gibbs_fn",
           "to_data"]
