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
   :class:`~numpyro_ugm.MLE` (a prior on the site) and hold them fixed here. Continuous sites of the likelihood of
   observed data (a noise scale σ in ``numpyro.sample("y", Normal(mu * x, sigma),
   obs=y)``) are fine. Both adapters check this when they are set up
   (:func:`coupled_factors`) and warn; a factor that is a likelihood of observed data
   (normalized over the data, e.g. a mixture over the labels) is named in
   ``likelihood_factors=[...]`` to tell them so.

In both, the state sites are updated from their conditional given the current values of
the continuous sites: those values are substituted into the model, so the log-density the
kernel sees is the log-potential of the state (factors plus every observed site, e.g. a
likelihood whose scale NUTS samples) at the sampled continuous values.

The blocks of conditionally independent variables (``UGM.blocks``) are found once, from
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
"""

import copy
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.mcmc import MCMCKernel
from numpyro.util import is_prng_key

from ._checks import check_count, same_arguments
from .kernels import gibbs
from .kernels.base import as_spec
from .model import UGM, as_ugm

try:  # the keyword through which numpyro's composite Gibbs passes conditioning values
    from numpyro.infer.gibbs import GIBBS_SITES_KWARG
except ImportError:  # pragma: no cover - numpyro without the composite Gibbs
    GIBBS_SITES_KWARG = "_gibbs_sites"

__all__ = ["UGMSampler", "UGMSamplerState", "UGMGibbsFn", "coupled_factors", "gibbs_fn",
           "to_data"]


# --- helpers ----------------------------------------------------------------------------


def _param_defaults(m):
    """Initial values of the model's ``numpyro.param`` sites (no prior)."""
    names = [n for n, s in m.param_sites.items() if s.prior is None]
    if not names:
        return {}
    init = m.init_params(jax.random.PRNGKey(0))
    return {n: init[n] for n in names}


def _as_model_values(m, values, batch_ndim):
    """Initial state values (data or model representation) -> model representation,
    checked against the domains. ``batch_ndim`` leading axes (chains) are allowed."""
    out = {}
    unknown = [s for s in values if s not in m.state_sites]
    if unknown:
        raise KeyError(f"init_params has site(s) {unknown} that are not state sites of the "
                       f"model; its state sites are {list(m.state_sites)}")
    for s, d in m.state_sites.items():
        if s not in values:
            continue
        v = jnp.asarray(values[s])
        data_shape = tuple(d.shape_)
        model_shape = tuple(d.batch_shape) + tuple(d.event_shape)
        shape = tuple(v.shape[batch_ndim:])
        if shape == model_shape and (d.event_shape or v.dtype.kind == "f"):
            concrete = not isinstance(v, jax.core.Tracer)
            if concrete and not bool(np.all(np.asarray(d.support(v)))):
                raise ValueError(f"init_params: site {s!r} has values outside the domain "
                                 f"{d!r} (model representation)")
            out[s] = v.astype(jnp.result_type(float))
        elif shape == data_shape:
            if not isinstance(v, jax.core.Tracer) and not bool(np.all(np.asarray(
                    d.in_domain(v)))):
                raise ValueError(f"init_params: site {s!r} has values outside the domain "
                                 f"{type(d).__name__} {{{', '.join(f'{x:g}' for x in d.values)}}}")
            out[s] = d.to_model(v)
        else:
            raise ValueError(f"init_params: site {s!r} has shape {tuple(v.shape)}; expected "
                             f"{data_shape} (data) or {model_shape} (model representation)"
                             + (" after the leading chain axis" if batch_ndim else ""))
    return out


def coupled_factors(m: UGM, sites: Sequence[str], likelihood_factors: Sequence[str] = (),
                    num_pairs: int = 8) -> dict:
    """The ``numpyro.factor`` terms that couple each of the continuous ``sites`` with the
    state sites of ``m``: those in which moving the site changes how the term weighs
    one state against another, so that the normalizer Z of the state depends on it.

    Found numerically: each term's difference between ``num_pairs`` pairs of random
    states, at the initial parameters and with the site alone moved by a standard
    normal step in the unconstrained space (fixed keys).

    Parameters
    ----------
    m : UGM
        The model with ``sites`` among its parameter sites.
    sites : sequence of str
        The continuous sites another kernel samples.
    likelihood_factors : sequence of str
        Factor sites that are likelihoods of observed data (normalized over the data),
        left out.

    Returns
    -------
    dict of str -> list of str
        For each coupled site, the factor sites that couple it (sites not coupled are
        absent).
    """
    with jax.ensure_compile_time_eval():
        key_x, key_move = jax.random.split(jax.random.PRNGKey(0))
        base = m.init_params(jax.random.PRNGKey(0))
        names = set(m.factor_terms(base, m.target().reference_state()))
        unknown = [n for n in likelihood_factors if n not in names]
        if unknown:
            raise ValueError(f"likelihood_factors {unknown} are not numpyro.factor sites of "
                             f"the model; its factors are {sorted(names)}")
        states = m.target().random_state(key_x, (2 * num_pairs,))

        def contrasts(params):
            terms = jax.vmap(lambda x: m.factor_terms(params, x))(states)
            return {n: np.asarray(t[:num_pairs] - t[num_pairs:]) for n, t in terms.items()
                    if n not in likelihood_factors}

        reference = contrasts(base)
        unconstrained = m.param_space.to_unconstrained(base)
        out = {}
        for i, s in enumerate(sites):
            step = jax.random.normal(jax.random.fold_in(key_move, i), jnp.shape(base[s]))
            moved = m.param_space.to_constrained({s: unconstrained[s] + step})
            moved = contrasts({**base, **moved})
            coupling = [n for n in reference if not np.allclose(
                moved[n], reference[n], rtol=1e-4, atol=1e-4 * (1 + np.abs(reference[n]).max()))]
            if coupling:
                out[s] = coupling
    return out


def _warn_if_coupled(owner: str, m: UGM, sites: Sequence[str],
                     likelihood_factors: Sequence[str], stacklevel: int) -> None:
    """Warn when another kernel samples continuous sites that factors couple with the
    state: it then targets prior(θ)·exp f(x; θ) without the 1/Z(θ) of the model."""
    coupled = coupled_factors(m, sites, likelihood_factors) if sites else {}
    if not coupled:
        return
    theta = ", ".join(f"{s!r} (coupled by factor(s) {names})" for s, names in coupled.items())
    warnings.warn(
        f"{owner}: another kernel (NUTS in HMCGibbs, or a Gibbs block) samples {theta}, "
        f"a parameter θ of the undirected model over the state sites {list(m.state_sites)}. "
        f"It targets prior(θ)·exp f(x; θ) without the 1/Z(θ) of p(x | θ), so the posterior "
        f"of θ is wrong: a different distribution, not Monte Carlo noise. Sample p(θ | x) "
        f"with ugm.posterior.Exchange (the exchange algorithm, a numpyro MCMC kernel) or "
        f"ugm.posterior.SGMCMC (stochastic-gradient Langevin), check them on a small model "
        f"with ugm.posterior.exact_posterior under NUTS, learn θ by MAP (ugm.MLE with a "
        f"prior on the site), or hold it fixed (a numpyro.param site, or a model "
        f"argument). If a listed factor is a likelihood of "
        f"observed data (normalized over the data, e.g. a mixture over the labels), name it "
        f"in likelihood_factors=[...].", UserWarning, stacklevel=stacklevel + 1)


def to_data(model: Callable | UGM, samples: dict, *model_args: Any,
            **model_kwargs: Any) -> dict:
    """Convert state-site samples from the model to the data representation.

    Sites of ``samples`` that are not state sites of ``model`` (continuous sites,
    deterministic sites) are returned unchanged.

    Parameters
    ----------
    model : callable or UGM
        The numpyro model (traced with ``model_args`` / ``model_kwargs`` to find its
        domains) or a :class:`~numpyro_ugm.model.UGM`.
    samples : dict of str -> array
        E.g. ``MCMC(HMCGibbs(...)).get_samples()``; any leading batch axes.

    Returns
    -------
    dict of str -> array
    """
    domains = as_ugm(model, *model_args, **model_kwargs).state_sites
    return {k: domains[k].from_model(v) if k in domains else v for k, v in samples.items()}


# --- MCMC kernel ------------------------------------------------------------------------


class UGMSamplerState(NamedTuple):
    """State of :class:`UGMSampler` (one chain, or a batch of chains when vectorized).

    Attributes
    ----------
    kernel_state : NamedTuple
        State of the underlying :mod:`~numpyro_ugm.kernels` kernel; its ``position`` is
        the current state (model representation), exposed as :attr:`z`.
    acceptance_rate : jax.Array
        Acceptance rate of the last step (1 for Gibbs), for ``extra_fields``.
    rng_key : jax PRNGKey
        Key of the next step.
    """

    kernel_state: Any
    acceptance_rate: jax.Array
    rng_key: jax.Array

    @property
    def z(self):
        """Current values of the state sites (model representation)."""
        return self.kernel_state.position


class UGMSampler(MCMCKernel):
    """``numpyro.infer.MCMC`` kernel over the state sites of a UGM-style numpyro model.

    The model declares discrete state with :class:`~numpyro_ugm.domains.Spin`,
    :class:`~numpyro_ugm.domains.Binary` or :class:`~numpyro_ugm.domains.Categorical`
    sample sites and its log-potential with ``numpyro.factor`` (and observed sites), as
    for :class:`~numpyro_ugm.model.UGM`. Every step of the chain is one ``step`` of the
    kernel (for the default Gibbs kernel, one sweep over all blocks).

    Works with ``chain_method`` ``"sequential"``, ``"parallel"`` and ``"vectorized"``
    (the kernel vmaps itself over chains), and, through :meth:`refresh` and
    :meth:`wrap_model`, as a block of numpyro's composite ``Gibbs``: there it samples the
    state sites conditioned on the current values of the other blocks' sites (which are
    substituted into the model), and must own every state site of the model.

    Parameters
    ----------
    model : callable
        numpyro model function; its arguments are those given to ``MCMC.run``.
    kernel : KernelSpec, optional
        A :mod:`numpyro_ugm.kernels` spec (default: ``ugm.kernels.gibbs()``, systematic
        scan).
    params : dict, optional
        Values (constrained space) of the model's parameter sites (``numpyro.param``
        sites and, standalone, continuous sample sites with a prior), held fixed. Sites
        not given take :meth:`UGM.init_params <numpyro_ugm.model.UGM.init_params>` values
        (``numpyro.param`` init values; the prior median, from a fixed key, for sites with
        a prior). In a composite ``Gibbs``, sites sampled by other blocks take the
        sampled values instead.
    likelihood_factors : sequence of str, optional
        ``numpyro.factor`` sites that are likelihoods of observed data (normalized over
        the data, e.g. a mixture over the labels written as a factor): other blocks may
        sample the continuous sites they depend on without a warning (see the warning
        below).

    Warns
    -----
    UserWarning
        At ``init`` in a composite ``Gibbs``, once, when another block samples a
        continuous site that a factor couples with the state (a parameter θ of the
        undirected model, found by :func:`coupled_factors`): that block targets
        prior(θ)·exp f(x; θ) without 1/Z(θ), a wrong posterior for θ. Learn such
        parameters by MAP with :class:`~numpyro_ugm.MLE` instead.

    Notes
    -----
    ``init_params`` of ``MCMC.run`` are starting states, in the data or the model
    representation (with a leading ``num_chains`` axis when ``num_chains > 1``); sites not
    given start uniformly at random. Samples (``MCMC.get_samples()``) are in the data
    representation: ±1 / 0, 1 as ``int8``, integer labels for ``Categorical``. The same
    ``rng_key`` gives the same samples; ``"sequential"`` and ``"vectorized"`` chains
    agree draw for draw (up to floating-point reassociation under ``vmap``).

    Examples
    --------
    >>> mcmc = MCMC(UGMSampler(ugm.models.vbm, params=params), num_warmup=100,
    ...             num_samples=1000, num_chains=8, chain_method="vectorized")
    >>> mcmc.run(jax.random.PRNGKey(0), 8)                      # doctest: +SKIP
    >>> mcmc.get_samples()["x"].shape                            # doctest: +SKIP
    (8000, 8)
    """

    sample_field = "z"

    def __init__(self, model: Callable, *, kernel: Any = None,
                 params: dict | None = None, likelihood_factors: Sequence[str] = ()):
        if not callable(model):
            raise TypeError(f"UGMSampler: model must be a numpyro model function, got "
                            f"{model!r}")
        self._model = model
        self._spec = as_spec(kernel, gibbs())
        self._params = None if params is None else dict(params)
        self._likelihood_factors = tuple(likelihood_factors)
        self._free = None  # (arguments, UGM with the continuous sites free): structure cache
        self._checked = False  # the other blocks' sites checked for coupling (once)
        self._reset()

    def _reset(self):
        self._m = None          # UGM of the (possibly conditioned) model, traced at init
        self._kernel = None     # the kernel bound to it
        self._fixed = None      # parameter values used by the log-density
        self._batched = False
        self._sample_fn = None

    # --- properties ----------------------------------------------------------------------
    @property
    def model(self):
        """The numpyro model (wrapped, in a composite)."""
        return self._model

    @property
    def ugm(self):
        """The :class:`~numpyro_ugm.model.UGM` traced at ``init`` (``None`` before)."""
        return self._m

    @property
    def params(self):
        """The fixed parameter values in use (set at ``init``)."""
        return self._fixed

    # --- setup ---------------------------------------------------------------------------
    def _free_ugm(self, model_args, kwargs, conditioning):
        """The UGM whose structure the kernel uses: the model with the conditioning values
        removed, so that the continuous sites of other blocks are free parameters (random
        in the structure analysis, never concrete values); cached per arguments."""
        free_kwargs = ({k: v for k, v in kwargs.items() if k != GIBBS_SITES_KWARG}
                       if GIBBS_SITES_KWARG in kwargs else kwargs)
        key = (tuple(model_args), free_kwargs)
        if self._free is not None and same_arguments(self._free[0], key):
            return self._free[1]
        traced = ({**kwargs, GIBBS_SITES_KWARG: {}} if GIBBS_SITES_KWARG in kwargs
                  else kwargs)
        try:
            free = UGM(self._model, *model_args, **traced)
        except TypeError:
            if not conditioning:
                raise
            return None  # a discrete non-domain sibling: analyze the conditioned model
        free.structure  # noqa: B018 - analyze now, with concrete arguments
        self._free = (key, free)
        return free

    def _setup(self, model_args, model_kwargs):
        kwargs = dict(model_kwargs or {})
        conditioning = dict(kwargs.get(GIBBS_SITES_KWARG, {}))
        free = self._free_ugm(model_args, kwargs, conditioning)
        if free is not None:
            owned_elsewhere = [s for s in conditioning if s in free.state_sites]
            if owned_elsewhere:
                raise ValueError(
                    f"UGMSampler samples every state site of the model "
                    f"({list(free.state_sites)}); site(s) {owned_elsewhere} are owned by "
                    "another block: give all of them to the UGMSampler block")
            if not self._checked:
                _warn_if_coupled("UGMSampler", free, [s for s in conditioning
                                                      if s in free.param_sites],
                                 self._likelihood_factors, stacklevel=4)
                self._checked = True
        if conditioning or free is None:
            m = UGM(self._model, *model_args, **kwargs)
            if free is not None:
                m = m.replace(structure=free.structure)
        else:
            m = free
        given = self._params or {}
        unknown = [n for n in given if n not in m.param_sites and n not in conditioning]
        if unknown:
            raise KeyError(f"UGMSampler: params has site(s) {unknown} that are not "
                           f"parameter sites of the model ({list(m.param_sites)})")
        fixed = {n: jnp.asarray(v) for n, v in given.items() if n in m.param_sites}
        if any(n not in fixed for n in m.param_sites):
            fixed = {**m.init_params(jax.random.PRNGKey(0)), **fixed}
        m.param_space.check(fixed)
        self._m, self._fixed = m, fixed
        self._kernel = self._spec.build(m.target())

    def _logdensity(self, model_args, model_kwargs):
        # the arguments may be traced; the structure is the one found at init
        m = self._m.replace(args=model_args, kwargs=model_kwargs or {})
        params = self._fixed
        return m.logdensity_fn(params)

    # --- MCMCKernel ----------------------------------------------------------------------
    def init(self, rng_key, num_warmup, init_params, model_args, model_kwargs):
        """Trace the model, find its blocks (once per model arguments) and start the
        chain(s) at ``init_params`` or uniformly at random.

        Parameters
        ----------
        rng_key : jax PRNGKey
            One key, or a batch of keys (``chain_method="vectorized"``).
        num_warmup : int
            Unused (the kernels have nothing to adapt).
        init_params : dict or None
            Starting values of state sites, data or model representation.
        model_args, model_kwargs
            Arguments of the model.

        Returns
        -------
        UGMSamplerState
        """
        self._setup(model_args, model_kwargs)
        batched = not is_prng_key(rng_key)
        start = _as_model_values(self._m, init_params or {}, 1 if batched else 0)
        logdensity = self._logdensity(model_args, model_kwargs)
        m, kernel = self._m, self._kernel

        def one(key, values):
            key, init_key = jax.random.split(key)
            position = {**m.target().random_state(init_key), **values}
            return UGMSamplerState(kernel.init(position, logdensity),
                                   jnp.ones((), jnp.float32), key)

        self._batched = batched
        if batched:
            self._sample_fn = jax.vmap(self._sample_one, in_axes=(0, None, None))
            return jax.vmap(one)(rng_key, start)
        self._sample_fn = self._sample_one
        return one(rng_key, start)

    def _sample_one(self, state, model_args, model_kwargs):
        logdensity = self._logdensity(model_args, model_kwargs)
        key, step_key = jax.random.split(state.rng_key)
        kernel_state, info = self._kernel.step(step_key, state.kernel_state, logdensity)
        rate = getattr(info, "acceptance_rate", 1.0)
        return UGMSamplerState(kernel_state, jnp.mean(jnp.asarray(rate, jnp.float32)), key)

    def sample(self, state, model_args, model_kwargs):
        """One kernel step (for Gibbs: one sweep over all blocks).

        Parameters
        ----------
        state : UGMSamplerState
        model_args, model_kwargs
            Arguments of the model (in a composite, with the conditioning values).

        Returns
        -------
        UGMSamplerState
        """
        if self._sample_fn is None:
            raise RuntimeError("UGMSampler: `init` must be called before `sample`")
        return self._sample_fn(state, model_args, model_kwargs)

    def refresh(self, state, model_args, model_kwargs):
        """Carry the kernel state over to a new conditioning (composite ``Gibbs``):
        a kernel state that holds values of the old target is rebuilt (``init``) or
        refreshed (``Kernel.refresh``) at the current position; the position is
        unchanged."""
        if self._kernel is None:
            raise RuntimeError("UGMSampler: `init` must be called before `refresh`")
        logdensity = self._logdensity(model_args, model_kwargs)
        kernel = self._kernel

        def one(s):
            if kernel.refresh is not None:
                ks = kernel.refresh(s.kernel_state, logdensity)
            else:
                ks = kernel.init(s.kernel_state.position, logdensity)
            return s._replace(kernel_state=ks)

        return jax.vmap(one)(state) if self._batched else one(state)

    def wrap_model(self, wrapper):
        """A copy bound to ``wrapper(self.model)`` (numpyro's composite ``Gibbs`` wraps
        the model to condition it on the other blocks' sites)."""
        kernel = copy.copy(self)
        kernel._model = wrapper(self._model)
        kernel._free = None
        kernel._reset()
        return kernel

    def postprocess_fn(self, model_args, model_kwargs):
        """Samples -> data representation (±1 / 0, 1 as ``int8``, integer labels)."""
        if self._m is None:
            return lambda z: z  # noqa: E731
        domains = self._m.state_sites
        return lambda z: {k: domains[k].from_model(v) if k in domains else v  # noqa: E731
                          for k, v in z.items()}

    def get_constrain_fn(self, model_args, model_kwargs):
        """Identity: sibling blocks are conditioned on the model representation (what the
        model function receives)."""
        return lambda z: z  # noqa: E731

    def get_diagnostics_str(self, state):
        return f"acc. prob={float(jnp.mean(state.acceptance_rate)):.2f}"

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_sample_fn"] = None
        state["_kernel"] = None
        return state


# --- HMCGibbs ---------------------------------------------------------------------------


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
        self.sites = tuple(m.state_sites)
        given = dict(params or {})
        unknown = [n for n in given if n not in m.param_sites]
        if unknown:
            raise KeyError(f"gibbs_fn: params has site(s) {unknown} that are not "
                           f"parameter sites of the model ({list(m.param_sites)})")
        self._fixed = {**_param_defaults(m), **{n: jnp.asarray(v) for n, v in given.items()}}
        _warn_if_coupled("gibbs_fn", m, [n for n, s in m.param_sites.items()
                                         if s.prior is not None and n not in given],
                         tuple(likelihood_factors), stacklevel=3)
        self._kernel = as_spec(kernel, gibbs()).build(m.target())  # finds the blocks now

    def conditional_logdensity(self, hmc_sites):
        """log-density of the state sites (model representation) given the continuous
        sites ``hmc_sites``: the log-potential with those values substituted."""
        m = self.ugm
        unknown = [k for k in hmc_sites if k not in m.param_sites]
        if unknown:
            owned = [k for k in unknown if k in m.state_sites]
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
        return m.logdensity_fn(params)

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
        undirected model, found by :func:`coupled_factors`): NUTS then targets
        prior(θ)·exp f(x; θ) without 1/Z(θ), a wrong posterior for θ. Learn such
        parameters by MAP with :class:`~numpyro_ugm.MLE` instead.
    """
    return UGMGibbsFn(model, model_args, model_kwargs, kernel, num_mcmc_steps, params,
                      likelihood_factors)
