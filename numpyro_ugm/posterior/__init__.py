"""Bayesian learning of a UGM's parameters: the posterior p(θ | data), not only its mode.

The likelihood of an undirected model has a normalizer Z(θ) that depends on θ, so the
posterior is doubly intractable: a plain numpyro kernel on θ (NUTS in ``HMCGibbs``) would
sample prior(θ)·exp f(x; θ) without 1/Z(θ). These samplers deal with Z:

* :class:`Exchange` — the exchange algorithm (Murray, Ghahramani & MacKay 2006) as a
  ``numpyro.infer`` kernel; exact auxiliary draws for small models, a run of any kernel
  for large ones (the approximate exchange algorithm of Caimo & Friel 2011);
* :class:`SGMCMC` — stochastic-gradient Langevin dynamics (plain or RMSprop-preconditioned)
  whose gradient uses any negative-phase estimator, with minibatches, driven like
  :class:`~numpyro_ugm.MLE`;
* :func:`exact_posterior` — the exact posterior of a small model (log Z enumerated) as a
  numpyro model for NUTS: the reference.
"""

from .exchange import FISHER_DRAWS, MAX_EXACT_CONFIGURATIONS, Exchange, ExchangeState
from .reference import exact_posterior
from .sgmcmc import PosteriorCore, SGMCMC, SGMCMCResult, sgld
from .density import Posterior

__all__ = ["Exchange", "ExchangeState", "FISHER_DRAWS", "MAX_EXACT_CONFIGURATIONS", "Posterior",
           "PosteriorCore", "SGMCMC", "SGMCMCResult", "exact_posterior", "sgld"]
