"""The ``gibbs_fn`` of ``numpyro.infer.HMCGibbs`` for the state sites of a UGM-style
numpyro model: :func:`gibbs_fn` (see :mod:`numpyro_ugm.infer`)."""

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from ..runtime.checks import check_count
from ..kernels import gibbs
from ..kernels.base import as_spec, bound_kernel
from ..model.ugm import UGM, as_ugm
from .coupling import warn_if_coupled
from .values import param_defaults

__all__ = ["UGMGibbsFn", "gibbs_fn"]


class UGMGibbsFn:
    """The ``gibbs_fn`` of ``numpyro.infer.HMCGibbs`` built by :func:`gibbs_fn`.

    Calling it as ``fn(rng_key, gibbs_sites, hmc_sites)`` (positionally or by keyword)
    runs ``num_mcmc_steps`` kernel steps on the state sites, starting at ``gibbs_sites``, with
    the continuous sites at ``hmc_sites``, and returns the new ``gibbs_sites``.

    Attributes
    ----------
    ugm : UGM
        The model traced with its continuous latent sites as parameters.
    sites : tuple of str
        The state sites it samples: pass as ``HMCGibbs(..., gibbs_sites=fn.sites)``.
    num_mcmc_steps : int
    """

    def __init__(self, model, model_args, model_kwargs, kernel, num_mcmc_steps, params,
                 likelihood_factors=()):
        self.num_mcmc_steps = check_count("gibbs_fn", "num_mcmc_steps", num_mcmc_steps)
        self.ugm = m = as_ugm(model, *model_args, **model_kwargs)
        self.sites = tuple(m.target().state_sites)
        given = dict(params or {})
        unknown = [n for n in given if n not in m.param_sites]
        if unknown:
            raise KeyError(f"gibbs_fn: params has site(s) {unknown} that are not "
                           f"parameter sites of the model ({list(m.param_sites)})")
        self._fixed = {**param_defaults(m), **{n: jnp.asarray(v) for n, v in given.items()}}
        warn_if_coupled("gibbs_fn", m, [n for n, s in m.param_sites.items()
                                        if s.prior is not None and n not in given],
                        tuple(likelihood_factors), stacklevel=3)
        self._target = m.target()
        self._kernel = bound_kernel(as_spec(kernel, gibbs()), self._target)  # blocks now

    def conditional_logdensity(self, hmc_sites):
        """log-density of the state sites (model representation) given the continuous
        sites ``hmc_sites``: the log-potential with those values substituted."""
        m = self.ugm
        unknown = [k for k in hmc_sites if k not in m.param_sites]
        if unknown:
            owned = [k for k in unknown if k in self._target.state_sites]
            if owned:
                raise ValueError(f"gibbs_fn samples every state site of the model "
                                 f"({list(self.sites)}); site(s) {owned} are sampled by "
                                 "another block: give all of them to the Gibbs block")
            raise KeyError(f"gibbs_fn: conditioning site(s) {unknown} are not continuous "
                           f"latent sites of the model ({list(m.param_sites)})")
        params = {**self._fixed, **hmc_sites}
        missing = [n for n in m.param_sites if n not in params]
        if missing:
            raise KeyError(f"gibbs_fn: no value for the site(s) {missing}: they are "
                           "neither sampled by another block nor given in params")
        return self._target.logdensity_fn(params)

    def __call__(self, rng_key, gibbs_sites, hmc_sites):
        if set(gibbs_sites) != set(self.sites):
            raise ValueError(f"gibbs_fn samples the state sites {list(self.sites)}; "
                             f"HMCGibbs gave {sorted(gibbs_sites)} (use gibbs_sites=fn.sites)")
        logdensity = self.conditional_logdensity(hmc_sites)
        kernel = self._kernel
        position = {s: jnp.asarray(gibbs_sites[s]) for s in self.sites}
        state = kernel.init(position, logdensity)
        if self.num_mcmc_steps == 1:
            state = kernel.step(rng_key, state, logdensity)[0]
        else:
            state = jax.lax.fori_loop(
                0, self.num_mcmc_steps,
                lambda i, s: kernel.step(jax.random.fold_in(rng_key, i), s, logdensity)[0],
                state)
        return dict(state.position)

    def __repr__(self):
        return f"UGMGibbsFn(sites={list(self.sites)}, num_mcmc_steps={self.num_mcmc_steps})"


def gibbs_fn(model: Callable | UGM, *model_args: Any, kernel: Any = None,
             num_mcmc_steps: int = 1, params: dict | None = None,
             likelihood_factors: Sequence[str] = (), **model_kwargs: Any) -> "UGMGibbsFn":
    """Build the ``gibbs_fn`` of ``numpyro.infer.HMCGibbs`` for the state sites of a model.

    The returned callable updates every state site (``ugm.Spin`` / ``Binary`` /
    ``Categorical`` site) of ``model`` from its conditional given the continuous sites
    that NUTS samples: their values are substituted into the model, and the kernel runs
    on the resulting log-potential (factors plus observed sites, e.g. a likelihood whose
    noise scale is one of the continuous sites)::

        fn = ugm.infer.gibbs_fn(model, y)
        mcmc = MCMC(HMCGibbs(NUTS(model), gibbs_fn=fn, gibbs_sites=fn.sites), ...)
        mcmc.run(rng_key, y)

    It is also the update of a ``numpyro.infer.CustomGibbs`` block of the composite
    ``Gibbs``.

    Parameters
    ----------
    model : callable or UGM
        numpyro model function, or a :class:`~numpyro_ugm.model.UGM` traced with the
        arguments (then give no model arguments).
    *model_args, **model_kwargs
        The arguments ``MCMC.run`` passes to the model (``HMCGibbs`` does not hand them
        to ``gibbs_fn``, so they are bound here). The names ``kernel``, ``num_mcmc_steps``,
        ``params`` and ``likelihood_factors`` are taken by this function.
    kernel : KernelSpec, optional
        A :mod:`numpyro_ugm.kernels` spec (default: ``ugm.kernels.gibbs()``).
    num_mcmc_steps : int
        Kernel steps per call (per MCMC step).
    params : dict, optional
        Values of ``numpyro.param`` sites (default: their init values) or of continuous
        sites that no other block samples.
    likelihood_factors : sequence of str, optional
        ``numpyro.factor`` sites that are likelihoods of observed data (normalized over
        the data, e.g. a mixture over the labels written as a factor): NUTS may sample
        the continuous sites they depend on without a warning.

    Returns
    -------
    UGMGibbsFn
        Callable ``(rng_key, gibbs_sites, hmc_sites) -> gibbs_sites``, values in the model
        representation; ``.sites`` names the sites it samples.

    Warns
    -----
    UserWarning
        When a continuous site with a prior (which NUTS samples, unless given in
        ``params``) is coupled with the state by a factor (a parameter θ of the
        undirected model, found by :func:`~numpyro_ugm.infer.coupled_factors`): NUTS
        then targets prior(θ)·exp f(x; θ) without 1/Z(θ), a wrong posterior for θ.
        Learn such parameters by MAP with :class:`~numpyro_ugm.MLE` instead.
    """
    return UGMGibbsFn(model, model_args, model_kwargs, kernel, num_mcmc_steps, params,
                      likelihood_factors)
