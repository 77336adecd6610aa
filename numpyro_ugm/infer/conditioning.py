"""What a :class:`~numpyro_ugm.infer.UGMSampler` samples under the arguments numpyro
passes: the model traced with them (in a composite ``Gibbs``, conditioned on the other
blocks' values), the structure of the model whose continuous sites are free, the fixed
parameter values, and the kernel bound to its target."""

from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..runtime.checks import same_arguments
from ..kernels.base import Kernel, KernelSpec, bound_kernel
from ..model.ugm import UGM
from ..model.target import Target
from .coupling import warn_if_coupled

try:  # the keyword through which numpyro's composite Gibbs passes conditioning values
    from numpyro.infer.gibbs import GIBBS_SITES_KWARG
except ImportError:  # pragma: no cover - numpyro without the composite Gibbs
    GIBBS_SITES_KWARG = "_gibbs_sites"

__all__ = ["Conditioned", "Conditioning", "GIBBS_SITES_KWARG"]


class Conditioned(NamedTuple):
    """The model of a sampler block as set up at ``init`` (:meth:`Conditioning.bind`).

    Attributes
    ----------
    ugm : UGM
        The model traced with the arguments of ``init`` (and the free model's structure).
    target : Target
        Its target; the kernel is bound to it.
    kernel : Kernel
    params : dict
        The fixed parameter values (constrained space).
    """

    ugm: UGM
    target: Target
    kernel: Kernel
    params: dict

    def logdensity_fn(self, model_args, model_kwargs) -> Callable:
        """The log-density of the state under the model's arguments, which may be traced
        (and, in a composite, hold the other blocks' current values); the structure is the
        one found at ``init``."""
        m = self.ugm.replace(args=model_args, kwargs=model_kwargs or {})
        return m.target().logdensity_fn(self.params)


class Conditioning:
    """Sets up a sampler block's model from the arguments numpyro passes to ``init``.

    The structure is found once per model arguments, on the model with the conditioning
    values removed, so that the continuous sites of other blocks are free parameters
    (random in the structure analysis, never concrete values); the other blocks' sites are
    checked once for coupling with the state (:func:`~numpyro_ugm.infer.coupled_factors`).

    Parameters
    ----------
    owner : str
        Name used in errors and warnings.
    model : callable
        The numpyro model (wrapped, in a composite).
    spec : KernelSpec
    params : dict or None
        Fixed parameter values given by the user.
    likelihood_factors : sequence of str
    checked : bool
        Whether the coupling check already ran.
    """

    def __init__(self, owner: str, model: Callable, spec: KernelSpec, params: dict | None,
                 likelihood_factors: Sequence[str], checked: bool = False):
        self.owner, self.model, self.spec = owner, model, spec
        self.params = None if params is None else dict(params)
        self.likelihood_factors = tuple(likelihood_factors)
        self.checked = checked
        self._free = None  # (arguments, UGM with the continuous sites free)

    def wrapped(self, model: Callable) -> "Conditioning":
        """The same setup for another (wrapped) model, without the cached structure."""
        return Conditioning(self.owner, model, self.spec, self.params,
                            self.likelihood_factors, self.checked)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_free"] = None  # a traced model (closures), found again when needed
        return state

    def _free_ugm(self, model_args, kwargs, conditioning):
        """The UGM whose structure the kernel uses: the model with the conditioning values
        removed; cached per arguments. ``None`` when a sibling samples a discrete site
        that is not a domain (then the conditioned model is analyzed)."""
        free_kwargs = ({k: v for k, v in kwargs.items() if k != GIBBS_SITES_KWARG}
                       if GIBBS_SITES_KWARG in kwargs else kwargs)
        key = (tuple(model_args), free_kwargs)
        if self._free is not None and same_arguments(self._free[0], key):
            return self._free[1]
        traced = ({**kwargs, GIBBS_SITES_KWARG: {}} if GIBBS_SITES_KWARG in kwargs
                  else kwargs)
        try:
            free = UGM(self.model, *model_args, **traced)
        except TypeError:
            if not conditioning:
                raise
            return None
        free.target()  # analyze now, with concrete arguments
        self._free = (key, free)
        return free

    def bind(self, model_args, model_kwargs) -> Conditioned:
        """Trace the model with ``model_args`` / ``model_kwargs`` (concrete), check the
        blocks' ownership of the sites and the parameters, and bind the kernel."""
        kwargs = dict(model_kwargs or {})
        conditioning = dict(kwargs.get(GIBBS_SITES_KWARG, {}))
        free = self._free_ugm(model_args, kwargs, conditioning)
        if free is not None:
            domains = free.target().state_sites
            owned_elsewhere = [s for s in conditioning if s in domains]
            if owned_elsewhere:
                raise ValueError(
                    f"{self.owner} samples every state site of the model "
                    f"({list(domains)}); site(s) {owned_elsewhere} are owned by "
                    "another block: give all of them to the UGMSampler block")
            if not self.checked:
                warn_if_coupled(self.owner, free, [s for s in conditioning
                                                   if s in free.param_sites],
                                self.likelihood_factors, stacklevel=4)
                self.checked = True
        if conditioning or free is None:
            m = UGM(self.model, *model_args, **kwargs)
            if free is not None:
                m = m.replace(structure=free.target().structure)
        else:
            m = free
        given = self.params or {}
        unknown = [n for n in given if n not in m.param_sites and n not in conditioning]
        if unknown:
            raise KeyError(f"{self.owner}: params has site(s) {unknown} that are not "
                           f"parameter sites of the model ({list(m.param_sites)})")
        fixed = {n: jnp.asarray(v) for n, v in given.items() if n in m.param_sites}
        if any(n not in fixed for n in m.param_sites):
            fixed = {**m.init_params(jax.random.PRNGKey(0)), **fixed}
        m.param_space.check(fixed)
        target = m.target()
        return Conditioned(m, target, bound_kernel(self.spec, target), fixed)
