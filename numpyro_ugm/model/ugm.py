"""``UGM``: a numpyro model traced into the parts an undirected model is made of.

A model function declares

* **parameters** as ``numpyro.param`` sites (maximum likelihood) or continuous
  ``numpyro.sample`` sites with a prior (MAP);
* **state** as ``numpyro.sample`` sites whose distribution is a domain
  (:class:`~numpyro_ugm.domains.Spin`, :class:`~numpyro_ugm.domains.Binary`,
  :class:`~numpyro_ugm.domains.Categorical`); a plate of such sites (or
  ``.expand()``) is one site with the plate's shape;
* the **log-potential** f(x; θ) as the sum of its ``numpyro.factor`` terms (and of any
  other observed sites).

State sites present in the data are observed; the others are latent.

The model class only traces: it finds the sites, evaluates the potential and the prior
by tracing the model function, and produces the :class:`~numpyro_ugm.model.target.Target` the
algorithms take (:meth:`UGM.target`; what the algorithms read is the target's alone) and
its copies (:meth:`UGM.observe`, :meth:`UGM.for_inputs`, :meth:`UGM.for_example`,
:meth:`UGM.with_fitted_base`, :meth:`UGM.replace`). Parameter transforms and
checks live in :mod:`numpyro_ugm.model.params`, data validation in
:mod:`numpyro_ugm.model.validation`, finiteness diagnosis in :mod:`numpyro_ugm.model.diagnose`, the
structure analysis in :mod:`numpyro_ugm.structure` and compiled programs in
:mod:`numpyro_ugm.runtime.compile_cache`.
"""

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.initialization import init_to_median

from ..runtime.checks import as_key
from ..conditionals import block_logits, zero_logits
from .analysis import (ModelView, check_declared_conditionals, covering_structure,
                       find_structure)
from ..runtime.compile_cache import cached
from .factors import own_conditionals
from .inputs import check_input_names, concrete_arrays
from .validation import observed_sites
from .params import ParamSpace
from .sites import find_sites, log_terms, trace_model
from ..structure import Structure
from .target import Target

__all__ = ["UGM", "as_ugm"]


class UGM:
    """An undirected graphical model declared as a numpyro model.

    The model traces; the algorithms read its :meth:`target` (state sites, latent sites,
    structure, log-potential, per-example binding, compile-cache key), which no member
    of the model repeats.

    Parameters
    ----------
    model : callable
        numpyro model function (see the module docstring).
    *args, **kwargs
        Arguments of ``model``; fixed for the lifetime of this object.
    init_strategy : callable, optional
        numpyro init strategy for parameters with a prior (default ``init_to_median``).

    Attributes
    ----------
    param_sites : dict of str -> ParamSite
        The parameter sites (the state sites and their domains: ``target().state_sites``).
    """

    def __init__(self, model, *args, init_strategy=init_to_median, **kwargs):
        self.model, self.args, self.kwargs = model, args, kwargs
        self.init_strategy = init_strategy
        self._sites = find_sites(trace_model(model, args, kwargs, jax.random.PRNGKey(0),
                                             substitute_fn=init_strategy))
        self.param_sites, self._domains = self._sites.params, self._sites.state
        self._latent = ()
        self._cache_token = object()  # see target().cache_key
        self._base_key = None  # the fitted base, see with_fitted_base
        self._target = None  # see target()
        self._structure = _StructureCell()  # shared with every copy (see replace())

    # --- tracing ----------------------------------------------------------------------
    def _trace(self, rng_key, values=None):
        return trace_model(self.model, self.args, self.kwargs, rng_key, values)

    def replace(self, *, args: tuple | None = None, kwargs: dict | None = None,
                latent_sites: Iterable[str] | None = None,
                structure: Structure | None = None) -> "UGM":
        """A copy with some attributes changed, without tracing again (the one way this
        package copies a ``UGM``).

        ``args`` / ``kwargs`` replace the model function's arguments (values may be
        traced, e.g. under ``jax.vmap``; they may change the potential's values, not its
        sites or interaction graph): the copy shares the structure, found now from the
        concrete arguments if it was not yet, and gets its own compile-cache key.
        ``latent_sites`` sets the state sites the data does not supply (structure and
        cache key shared). ``structure`` replaces the structure (own cache key).
        """
        other = object.__new__(UGM)
        other.__dict__.update(self.__dict__)
        other._target = None
        if args is not None or kwargs is not None:
            if structure is None:
                structure = self._found()  # from the concrete arguments, before rebinding
            other.args = self.args if args is None else tuple(args)
            other.kwargs = self.kwargs if kwargs is None else dict(kwargs)
        if latent_sites is not None:
            latent_sites = tuple(latent_sites)
            unknown = [n for n in latent_sites if n not in self._domains]
            if unknown:
                raise KeyError(f"latent sites {unknown} are not state sites of the model; "
                               f"its state sites are {list(self._domains)}")
            other._latent = latent_sites
        if structure is not None:
            other._cache_token = object()
            other._structure = (self._structure if structure is self._structure.value
                                else _StructureCell(structure))
        return other

    def observe(self, observed: Iterable[str]) -> "UGM":
        """A copy whose latent sites are the state sites not in ``observed`` (names of
        the sites the data supplies), or ``self`` if they already are; it shares the
        structure and compile-cache key."""
        observed = observed_sites(self._domains, observed)
        latent = tuple(n for n in self._domains if n not in observed)
        return self if latent == self._latent else self.replace(latent_sites=latent)

    def with_fitted_base(self, data: dict) -> "UGM":
        """A copy whose real sites declared without ``loc``/``scale`` have their base
        Normal fitted to ``data`` (model representation, leading example axis; see
        :meth:`~numpyro_ugm.domains.Real.fitted`), or ``self`` if there are none (a
        latent real site keeps the standard Normal). The copy shares the structure; its
        target's ``cache_key`` names the fitted base (compiled programs close over it),
        so the same data gives the same key."""
        fit = {n: d.fitted(data[n]) for n, d in self._domains.items()
               if not d.finite and d.unfitted and n in data}
        if not fit:
            return self
        other = self.replace()
        other._domains = {**self._domains, **fit}
        digest = hashlib.blake2b(digest_size=16)
        for n, d in fit.items():
            digest.update(n.encode() + np.asarray(d.loc).tobytes()
                          + np.asarray(d.scale).tobytes())
        other._base_key = digest.hexdigest()
        return other

    def for_example(self, **inputs: Any) -> "UGM":
        """A copy whose model keyword arguments are updated with ``inputs`` (one
        example's inputs of a CRF; values may be traced arrays, e.g. under ``vmap``): the
        model of one example, for the entry points that take a model (its target is
        that of :meth:`~numpyro_ugm.model.target.Target.bind`).

        The copy shares this model's structure when its blocks are valid for the new
        inputs (the inputs change the potential's values, not its interaction graph),
        and gets the structure joined with the new example's interactions otherwise
        (:meth:`for_inputs`; an adjacency matrix as input). Traced inputs cannot be
        checked: before binding the examples of a batch under ``vmap``, call
        :meth:`for_inputs` on all of them (:func:`~numpyro_ugm.model.problem.build_problem`
        does). The copy does not share compiled functions (see :meth:`replace`).
        """
        check_input_names(inputs, self.kwargs)
        covered = (self.for_inputs(jax.tree.map(lambda v: np.asarray(v)[None], inputs))
                   if concrete_arrays(inputs) else self)
        return covered.replace(kwargs={**self.kwargs, **inputs})

    def for_inputs(self, inputs: dict) -> "UGM":
        """This model, or a copy whose structure holds for every example of ``inputs``
        (model keyword arguments with a leading example axis): a CRF's interaction graph
        may depend on its inputs (:func:`~numpyro_ugm.model.analysis.covering_structure`)."""
        check_input_names(inputs, self.kwargs)
        structure = self._found()
        covering = covering_structure(self._view(), structure, inputs,
                                      cached(self._cache_token, ("for_inputs",), dict))
        return self if covering is structure else self.replace(structure=covering)

    def _found(self) -> Structure:
        """Interaction graph, colouring and multilinearity (found by :meth:`analyze` on
        first use, even inside a trace, and shared with every copy of this model)."""
        cell = self._structure
        if cell.value is None:
            with jax.ensure_compile_time_eval():  # concrete even if first used in a trace
                structure = self.analyze()
                if self._sites.hooked:
                    check_declared_conditionals(self._view())
                cell.value = structure
        return cell.value

    def analyze(self, rng_key: jax.Array | None = None, declared: bool = True,
                **options: Any) -> Structure:
        """A fresh structure analysis (:func:`~numpyro_ugm.model.analysis.find_structure`; not
        cached: ``target().structure`` is); ``declared=False`` analyses the potential even
        where factors declare a colouring (for its interaction graph). ``options``:
        ``num_points``, ``num_interior``, ``max_flip_variables`` of
        :func:`~numpyro_ugm.structure.analyze`."""
        return find_structure(self._view(), rng_key, declared, **options)

    def _view(self) -> ModelView:
        """What the structure analysis reads of this model."""
        return ModelView(self._domains, self._log_potential,
                         lambda example: self.replace(
                             kwargs={**self.kwargs, **example})._log_potential,
                         self.init_params, self.param_space, self._sites.declared,
                         self._sites.hooked, self._terms, self._trace)

    # --- parameters -------------------------------------------------------------------
    @property
    def param_space(self) -> ParamSpace:
        """The parameter sites and their transforms and checks."""
        return ParamSpace(self.param_sites)

    def init_params(self, rng_key: jax.Array) -> dict:
        """Initial parameters (constrained space): ``numpyro.param`` init values, and the
        ``init_strategy`` (default: median of prior draws) for sites with a prior."""
        trace = trace_model(self.model, self.args, self.kwargs,
                            as_key(rng_key, "init_params"), substitute_fn=self.init_strategy)
        return {name: trace[name]["value"] for name in self.param_sites}

    def log_prior(self, params: dict) -> jax.Array:
        """Sum of the log prior densities of the parameters with a prior (0 if none)."""
        if not any(s.prior is not None for s in self.param_sites.values()):
            return jnp.zeros(())
        state = {n: d.reference(d.batch_shape) for n, d in self._domains.items()}
        trace = self._trace(jax.random.PRNGKey(0), {**params, **state})
        return sum(jnp.sum(trace[n]["fn"].log_prob(trace[n]["value"]))
                   for n, s in self.param_sites.items() if s.prior is not None)

    # --- potentials -------------------------------------------------------------------
    def _log_potential(self, params: dict, state: dict) -> jax.Array:
        """Unnormalized log-probability f(x; θ), the sum of the model's factors, at
        constrained ``params`` and one configuration ``state`` (model representation,
        every state site, no batch axis): the target's ``log_potential``."""
        total = 0.0
        for _, _, term in self._terms(params, state):
            total = total + term
        return total

    def factor_terms(self, params: dict, state: dict) -> dict:
        """The ``numpyro.factor`` terms of the log-potential by site name, each summed
        over its plates; observed sites with a distribution (``obs=``, likelihoods of
        observed data) are not among them. Arguments as the target's
        :attr:`~numpyro_ugm.model.target.Target.log_potential`."""
        return {name: term for name, is_factor, term in self._terms(params, state)
                if is_factor}

    def _terms(self, params, state):
        """(name, whether a ``numpyro.factor``, summed log-factor) of each observed site,
        in the order the model declares them."""
        return log_terms(self._trace(jax.random.PRNGKey(0), {**params, **state}), state)

    def target(self) -> Target:
        """The :class:`~numpyro_ugm.model.target.Target` the algorithms take: this model's
        state sites, latent sites, structure and log-density as a function of the
        parameters (built once per model copy; the structure is found on first use).
        When factors give their own conditionals (:func:`numpyro_ugm.factor`), its
        ``logdensity_fn`` is a :class:`~numpyro_ugm.conditionals.LogDensity` whose
        ``conditional_logits`` sums them with the conditionals of the other factors."""
        if self._target is None:
            self._target = Target(
                dict(self._domains), tuple(self._latent), self._found(),
                self._log_potential,
                conditionals=self._hooked_conditionals if self._sites.hooked else None,
                terms=lambda params, state: list(self._terms(params, state)),
                binder=lambda inputs: self.for_example(**inputs).target(),
                cache_key=(self._cache_token, tuple(self._latent), self._base_key),
                graph_fn=lambda: self.analyze(declared=False))
        return self._target

    def _hooked_conditionals(self, params, state, domains, block):
        """Conditional log-probabilities of a block: the hooked factors' own, plus those
        of the other factors' sum (gradient or evaluation)."""
        hooked = self._sites.hooked
        trace = self._trace(jax.random.PRNGKey(0), {**params, **state})
        out = own_conditionals(trace, hooked, block)
        if any(s["type"] == "sample" and s["is_observed"] and n not in hooked
               for n, s in trace.items()):
            def rest(x):
                return sum((t for n, _, t in self._terms(params, x) if n not in hooked), 0.0)

            for s, logits in block_logits(rest, state, domains, block,
                                          self._found().multilinear).items():
                out[s] = logits if s not in out else out[s] + logits
        missing = {s: idx for s, idx in block.items() if s not in out}
        return {**out, **zero_logits(domains, missing, jnp.result_type(float))}

    def __repr__(self):
        name = getattr(self.model, "__name__", "model")
        return (f"UGM({name}: params={list(self.param_sites)}, "
                f"state={ {n: d for n, d in self._domains.items()} }, "
                f"latent={list(self._latent)})")


class _StructureCell:
    """The structure of a model, found once and shared by the model and its copies."""

    __slots__ = ("value",)

    def __init__(self, value=None):
        self.value = value


def as_ugm(model: "Callable | UGM", *model_args: Any, **model_kwargs: Any) -> UGM:
    """The one conversion of "a numpyro model function or a traced UGM" into a UGM.

    Parameters
    ----------
    model : callable or UGM
        A numpyro model function, traced here with ``model_args`` and ``model_kwargs``;
        or a :class:`UGM`, returned as it is.
    *model_args, **model_kwargs
        Arguments of the model function (none with a ``UGM``: it was traced with its own).

    Returns
    -------
    UGM

    Raises
    ------
    TypeError
        If ``model`` is a ``UGM`` and model arguments are given, or if it is neither a
        ``UGM`` nor callable.
    """
    if isinstance(model, UGM):
        if model_args or model_kwargs:
            raise TypeError(f"model arguments ({len(model_args)} positional, keywords "
                            f"{sorted(model_kwargs)}) were given but the model is already a "
                            "UGM, traced with its own arguments: pass the model function "
                            "instead, or no model arguments")
        return model
    if not callable(model):
        raise TypeError(f"model must be a UGM or a numpyro model function, got {model!r}")
    return UGM(model, *model_args, **model_kwargs)
