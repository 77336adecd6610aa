"""The ``numpyro.infer.mcmc.MCMCKernel`` over the state sites of a UGM-style numpyro
model: :class:`UGMSampler` (see :mod:`numpyro_ugm.infer`)."""

import copy
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from numpyro.infer.mcmc import MCMCKernel
from numpyro.util import is_prng_key

from ..kernels import gibbs
from ..kernels.base import as_spec, refresh_chains, refresh_state
from .conditioning import Conditioning
from .values import as_model_values

__all__ = ["UGMSampler", "UGMSamplerState"]


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
    i : jax.Array
        Steps taken (a kernel that adapts its step size adapts during the first
        ``num_warmup`` only).
    """

    kernel_state: Any
    acceptance_rate: jax.Array
    rng_key: jax.Array
    i: jax.Array

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
        undirected model, found by :func:`~numpyro_ugm.infer.coupled_factors`): that
        block targets prior(θ)·exp f(x; θ) without 1/Z(θ), a wrong posterior for θ.
        Learn such parameters by MAP with :class:`~numpyro_ugm.MLE` instead.

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
        self._conditioning = Conditioning("UGMSampler", model, as_spec(kernel, gibbs()),
                                          params, likelihood_factors)
        self._reset()

    def _reset(self):
        self._bound = None      # the Conditioned model, kernel and parameters of init
        self._batched = False
        self._sample_fn = None
        self._num_warmup = 0

    # --- properties ----------------------------------------------------------------------
    @property
    def model(self):
        """The numpyro model (wrapped, in a composite)."""
        return self._model

    @property
    def ugm(self):
        """The :class:`~numpyro_ugm.model.UGM` traced at ``init`` (``None`` before)."""
        return None if self._bound is None else self._bound.ugm

    @property
    def params(self):
        """The fixed parameter values in use (set at ``init``)."""
        return None if self._bound is None else self._bound.params

    # --- MCMCKernel ----------------------------------------------------------------------
    def init(self, rng_key, num_warmup, init_params, model_args, model_kwargs):
        """Trace the model, find its blocks (once per model arguments) and start the
        chain(s) at ``init_params`` or uniformly at random.

        Parameters
        ----------
        rng_key : jax PRNGKey
            One key, or a batch of keys (``chain_method="vectorized"``).
        num_warmup : int
            Steps during which a kernel that adapts its step size (a gradient kernel on
            real sites) adapts it; it is frozen after them, as numpyro's own kernels
            freeze theirs. Kernels of finite sites have nothing to adapt.
        init_params : dict or None
            Starting values of state sites, data or model representation.
        model_args, model_kwargs
            Arguments of the model.

        Returns
        -------
        UGMSamplerState
        """
        self._bound = bound = self._conditioning.bind(model_args, model_kwargs)
        batched = not is_prng_key(rng_key)
        start = as_model_values(bound.target.state_sites, init_params or {},
                                1 if batched else 0)
        logdensity = bound.logdensity_fn(model_args, model_kwargs)
        target, kernel = bound.target, bound.kernel

        def one(key, values):
            key, init_key = jax.random.split(key)
            position = {**target.random_state(init_key), **values}
            return UGMSamplerState(kernel.init(position, logdensity),
                                   jnp.ones((), jnp.float32), key, jnp.zeros((), jnp.int32))

        self._batched, self._num_warmup = batched, int(num_warmup)
        if batched:
            self._sample_fn = jax.vmap(self._sample_one, in_axes=(0, None, None))
            return jax.vmap(one)(rng_key, start)
        self._sample_fn = self._sample_one
        return one(rng_key, start)

    def _sample_one(self, state, model_args, model_kwargs):
        logdensity = self._bound.logdensity_fn(model_args, model_kwargs)
        key, step_key = jax.random.split(state.rng_key)
        kernel_state = state.kernel_state
        if hasattr(kernel_state, "adapting"):  # adapt during the warm-up only
            kernel_state = kernel_state._replace(adapting=jnp.where(
                state.i < self._num_warmup, kernel_state.adapting, 0))
        kernel_state, info = self._bound.kernel.step(step_key, kernel_state, logdensity)
        rate = getattr(info, "acceptance_rate", 1.0)
        return UGMSamplerState(kernel_state, jnp.mean(jnp.asarray(rate, jnp.float32)), key,
                               state.i + 1)

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
        if self._bound is None or self._bound.kernel is None:
            raise RuntimeError("UGMSampler: `init` must be called before `refresh`")
        logdensity = self._bound.logdensity_fn(model_args, model_kwargs)
        carry = refresh_chains if self._batched else refresh_state
        return state._replace(kernel_state=carry(self._bound.kernel, state.kernel_state,
                                                 logdensity))

    def wrap_model(self, wrapper):
        """A copy bound to ``wrapper(self.model)`` (numpyro's composite ``Gibbs`` wraps
        the model to condition it on the other blocks' sites)."""
        kernel = copy.copy(self)
        kernel._model = wrapper(self._model)
        kernel._conditioning = self._conditioning.wrapped(kernel._model)
        kernel._reset()
        return kernel

    def postprocess_fn(self, model_args, model_kwargs):
        """Samples -> data representation (±1 / 0, 1 as ``int8``, integer labels)."""
        if self._bound is None:
            return lambda z: z  # noqa: E731
        domains = self._bound.target.state_sites
        return lambda z: {k: domains[k].from_model(v) if k in domains else v  # noqa: E731
                          for k, v in z.items()}

    def get_constrain_fn(self, model_args, model_kwargs):
        """Identity: sibling blocks are conditioned on the model representation (what the
        model function receives)."""
        return lambda z: z  # noqa: E731

    def get_diagnostics_str(self, state):
        return f"acc. prob={float(jnp.mean(state.acceptance_rate)):.2f}"

    def __getstate__(self):
        """Pickle the configuration, not what ``init`` built (closures): an unpickled
        sampler is set up again by its next ``init``."""
        state = self.__dict__.copy()
        state["_bound"], state["_sample_fn"] = None, None
        return state
