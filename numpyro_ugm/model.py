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
by tracing the model function, and produces the :class:`~numpyro_ugm.target.Target` the
algorithms take (:meth:`UGM.target`) and its copies (:meth:`UGM.observe`,
:meth:`UGM.bind`, :meth:`UGM.for_inputs`, :meth:`UGM.replace`). Parameter transforms and
checks live in :mod:`numpyro_ugm.params`, data validation in
:mod:`numpyro_ugm.validation`, finiteness diagnosis in :mod:`numpyro_ugm.diagnose`, the
structure analysis in :mod:`numpyro_ugm.structure` and compiled programs in
:mod:`numpyro_ugm.compile_cache`.
"""

from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers
from numpyro.distributions import ExpandedDistribution, Independent, Unit, constraints
from numpyro.infer.initialization import init_to_median

from ._checks import as_key
from .conditionals import block_logits, zero_logits
from .domains import Domain
from .factors import COLORS, CONDITIONALS, MULTILINEAR
from .compile_cache import cached
from .inputs import check_input_names, concrete_arrays
from .params import ParamSite, ParamSpace
from .structure import Structure
from .structure import analyze as _analyze
from .structure import cover as _cover
from .structure import from_colors as _from_colors
from .target import Target

__all__ = ["UGM", "as_ugm"]


def _innermost(fn):
    """The distribution inside ``.expand()`` / ``.to_event()`` / ``.mask()`` wrappers."""
    while hasattr(fn, "base_dist"):
        fn = fn.base_dist
    return fn


def _domain_of(site):
    """The domain of a state site over the site's whole shape, or None for other sites.

    A domain inside plates (or ``.expand()``, ``.to_event()``) is the same domain with
    the site's shape: ``with numpyro.plate("i", n): numpyro.sample("x", Spin())`` is
    ``numpyro.sample("x", Spin(n))``.
    """
    if site["type"] != "sample":
        return None
    fn = site["fn"]
    if isinstance(fn, Domain):
        return fn
    base = fn
    while isinstance(base, (ExpandedDistribution, Independent)):
        base = base.base_dist
    if not isinstance(base, Domain):
        return None
    shape = tuple(fn.batch_shape) + tuple(fn.event_shape)
    return base.with_shape(shape[:len(shape) - len(base.event_shape)])


def _is_prior(site):
    return (site["type"] == "sample" and not site["is_observed"]
            and _domain_of(site) is None)


class UGM:
    """An undirected graphical model declared as a numpyro model.

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
    state_sites : dict of str -> Domain
    latent_sites : tuple of str
        State sites that the data does not supply (set by :meth:`observe`).
    blocks : list of dict of str -> ndarray
        Blocks of conditionally independent variables (flat indices per site), found from
        the model (see :mod:`numpyro_ugm.structure`).
    """

    def __init__(self, model, *args, init_strategy=init_to_median, **kwargs):
        self.model, self.args, self.kwargs = model, args, kwargs
        self.init_strategy = init_strategy
        trace = self._trace(jax.random.PRNGKey(0))
        self.param_sites, self.state_sites = {}, {}
        for name, site in trace.items():
            if site["type"] == "param":
                constraint = site["kwargs"].get("constraint", constraints.real)
                self.param_sites[name] = ParamSite(name, jnp.shape(site["value"]),
                                                   constraint, None)
            elif _domain_of(site) is not None:
                if site["is_observed"]:
                    raise ValueError(f"state site {name!r} has obs=...: pass its values as "
                                     "data to the learner instead")
                if site.get("scale") is not None:
                    raise ValueError(
                        f"state site {name!r} is in a subsampled plate (or under a scale "
                        "handler): the state is never subsampled; use a plate without "
                        "subsample_size, or give the shape to the domain")
                self.state_sites[name] = _domain_of(site)
            elif _is_prior(site):
                if site["fn"].is_discrete:
                    base = _innermost(site["fn"])
                    if isinstance(base, Domain):
                        raise TypeError(
                            f"site {name!r}: a {type(base).__name__} domain inside "
                            f"{type(site['fn']).__name__} (a mask handler or .mask()) is "
                            "not supported; declare the state site with its shape on the "
                            f"domain, e.g. numpyro.sample({name!r}, ugm.Spin(shape))")
                    raise TypeError(
                        f"site {name!r} has the discrete distribution "
                        f"{type(base).__name__}: declare discrete state with "
                        "ugm.Spin, ugm.Binary or ugm.Categorical")
                self.param_sites[name] = ParamSite(name, jnp.shape(site["value"]),
                                                   site["fn"].support, site["fn"])
        if not self.state_sites:
            raise ValueError("the model has no state site: declare discrete variables with "
                             "numpyro.sample(name, domain), the domain ugm.Spin(shape), "
                             "ugm.Binary(shape) or ugm.Categorical(shape, num_categories=K)")
        self._hooked = tuple(name for name, site in trace.items()
                             if site["type"] == "sample" and site["is_observed"]
                             and CONDITIONALS in (site.get("infer") or {}))
        self._declared = {name: (site["infer"][COLORS], site["infer"][MULTILINEAR])
                          for name, site in trace.items()
                          if site["type"] == "sample" and site["is_observed"]
                          and COLORS in (site.get("infer") or {})}
        self.latent_sites = ()
        self._cache_token = object()  # see cache_key
        self._target = None  # see target()
        self._structure = _StructureCell()  # shared with every copy (see replace())

    # --- tracing ----------------------------------------------------------------------
    def _trace(self, rng_key, values=None):
        model = handlers.seed(self.model, rng_key)
        if values is not None:
            model = handlers.substitute(model, data=values)
        try:
            return handlers.trace(model).get_trace(*self.args, **self.kwargs)
        except (TypeError, ValueError, IndexError) as error:
            text = str(error)
            if "integer" in text and ("ndex" in text or "indices" in text):
                raise TypeError(
                    f"the model failed with {type(error).__name__}: {text}. Inside the "
                    "model, state sites are floating-point arrays, not integer labels: "
                    "Spin ±1, Binary 0/1, and Categorical one-hot vectors of length K (a "
                    "site of shape s is an array of shape (*s, K)). Select a table's rows "
                    "with x @ table (or jnp.einsum), not table[x]; jnp.argmax(x, -1) gives "
                    "the labels, at the price of a potential that is no longer "
                    "multilinear (slower sampling)") from error
            raise

    def replace(self, *, args: tuple | None = None, kwargs: dict | None = None,
                latent_sites: Iterable[str] | None = None,
                structure: Structure | None = None) -> "UGM":
        """A copy of this model with some of its attributes changed, without tracing the
        model again (the one way this package copies a ``UGM``).

        Parameters
        ----------
        args, kwargs : optional
            New positional / keyword arguments of the model function (each replaces the
            old ones entirely); values may be traced arrays (e.g. under ``jax.vmap``).
            They may change the potential's values, not its sites or interaction graph:
            the copy shares this model's structure (found now, from this model's concrete
            arguments, if it was not yet) and starts an empty compile cache (compiled
            functions close over the arguments).
        latent_sites : iterable of str, optional
            New latent sites (state sites the data does not supply). A copy that changes
            only them shares the structure and the compile cache (:meth:`cached` keys
            that depend on the latent sites must say so).
        structure : Structure, optional
            Use this structure instead of analyzing the copy's model (for a model traced
            differently whose interaction graph is known to be the same); the copy gets
            its own compile cache.

        Returns
        -------
        UGM
        """
        other = object.__new__(UGM)
        other.__dict__.update(self.__dict__)
        other._target = None
        if args is not None or kwargs is not None:
            if structure is None:
                structure = self.structure  # from the concrete arguments, before rebinding
            other.args = self.args if args is None else tuple(args)
            other.kwargs = self.kwargs if kwargs is None else dict(kwargs)
        if latent_sites is not None:
            latent_sites = tuple(latent_sites)
            unknown = [n for n in latent_sites if n not in self.state_sites]
            if unknown:
                raise KeyError(f"latent sites {unknown} are not state sites of the model; "
                               f"its state sites are {list(self.state_sites)}")
            other.latent_sites = latent_sites
        if structure is not None:
            other._cache_token = object()
            other._structure = (self._structure if structure is self._structure.value
                                else _StructureCell(structure))
        return other

    def observe(self, observed: Iterable[str]) -> "UGM":
        """A copy whose latent sites are the state sites not in ``observed`` (``self`` if
        they already are); it shares structure and compile cache with ``self``.

        Parameters
        ----------
        observed : iterable of str
            Names of the state sites the data supplies (e.g. ``data.keys()``).
        """
        observed = tuple(observed)
        unknown = [n for n in observed if n not in self.state_sites]
        if unknown:
            raise KeyError(f"data has site(s) {unknown} that are not state sites of the "
                           f"model; its state sites are {list(self.state_sites)}")
        if not observed:
            raise ValueError(f"data has none of the model's state sites "
                             f"{list(self.state_sites)}")
        latent = tuple(n for n in self.state_sites if n not in observed)
        if latent == self.latent_sites:
            return self
        return self.replace(latent_sites=latent)

    def bind(self, **inputs: Any) -> "UGM":
        """A copy whose model keyword arguments are updated with ``inputs`` (one
        example's inputs of a CRF; values may be traced arrays, e.g. under ``vmap``).

        The copy shares this model's structure when its blocks are valid for the new
        inputs (the inputs change the potential's values, not its interaction graph),
        and gets the structure joined with the new example's interactions otherwise
        (:meth:`for_inputs`; an adjacency matrix as input). Traced inputs cannot be
        checked: before binding the examples of a batch under ``vmap``, call
        :meth:`for_inputs` on all of them (the learner and :func:`~numpyro_ugm.predict`
        do). The copy does not share compiled functions (see :meth:`replace`).
        """
        check_input_names(inputs, self.kwargs)
        covered = (self.for_inputs(jax.tree.map(lambda v: np.asarray(v)[None], inputs))
                   if concrete_arrays(inputs) else self)
        return covered.replace(kwargs={**self.kwargs, **inputs})

    def for_inputs(self, inputs: dict) -> "UGM":
        """This model, or a copy whose structure holds for every example of ``inputs``.

        The structure is found for the arguments the model was traced with; a CRF whose
        interaction graph depends on its inputs needs blocks valid for all its examples.
        :func:`numpyro_ugm.structure.cover` checks the blocks on every example and joins
        the interactions it finds to the graph.

        Parameters
        ----------
        inputs : dict of str -> array
            Model keyword arguments with a leading example axis.

        Returns
        -------
        UGM
            ``self`` when its structure holds for every example, else a copy with the
            joined structure (and its own compile cache).
        """
        check_input_names(inputs, self.kwargs)
        structure = self.structure

        def log_potential(params, state, example):
            return self.replace(kwargs={**self.kwargs, **example}).log_potential(params,
                                                                                  state)

        with jax.ensure_compile_time_eval():
            covering = _cover(structure, log_potential, self.state_sites,
                              self._probe_params, inputs,
                              cache=cached(self.cache_key, ("for_inputs",), dict))
        return self if covering is structure else self.replace(structure=covering)

    @property
    def cache_key(self) -> object:
        """This model's key in :mod:`numpyro_ugm.compile_cache`: shared with the copies
        :meth:`observe` makes (same arguments), new for copies whose arguments or
        structure differ (:meth:`bind`, :meth:`replace`), since compiled programs close
        over them."""
        return self._cache_token

    @property
    def param_space(self) -> ParamSpace:
        """The parameter sites and their transforms and checks."""
        return ParamSpace(self.param_sites)

    @property
    def observed_sites(self) -> tuple:
        """State sites that the data supplies."""
        return tuple(n for n in self.state_sites if n not in self.latent_sites)

    @property
    def structure(self) -> Structure:
        """Interaction graph, coloring and multilinearity (found by :meth:`analyze` on
        first use, even inside a trace, and shared with every copy of this model)."""
        cell = self._structure
        if cell.value is None:
            with jax.ensure_compile_time_eval():  # concrete even if first used in a trace
                cell.value = self.analyze()
        return cell.value

    def analyze(self, rng_key: jax.Array | None = None, **options: Any) -> Structure:
        """Run the structure analysis of :func:`numpyro_ugm.structure.analyze` on this
        model (a fresh result, not cached: :attr:`structure` is the cached one).

        Parameters
        ----------
        rng_key : jax PRNGKey, optional
            Key for the random probe states and parameters (fixed default).
        **options
            ``num_points``, ``num_interior``, ``max_flip_variables`` of
            :func:`~numpyro_ugm.structure.analyze`.

        Returns
        -------
        Structure
            The coloring a factor declares (:func:`numpyro_ugm.factor`), when one does,
            it covers every state site and every other factor is constant in the state;
            otherwise the one found from the log-potential.
        """
        declared = self._declared_structure()
        if declared is not None:
            return declared
        return _analyze(self.log_potential, self.state_sites, self._probe_params,
                        rng_key=rng_key, **options)

    def _declared_structure(self):
        """The structure a factor declares, or None (see :meth:`analyze`)."""
        if len(self._declared) != 1:
            return None
        (name, (colors, multilinear)), = self._declared.items()
        if set(colors) != set(self.state_sites):
            return None
        params = self.init_params(jax.random.PRNGKey(0))
        domains = self.state_sites
        states = [{n: d.reference(d.batch_shape) for n, d in domains.items()}]
        states += [{n: d.sample(jax.random.fold_in(jax.random.PRNGKey(k), i))
                    for i, (n, d) in enumerate(domains.items())} for k in (1, 2)]
        rest = [{n: term for n, _, term in self._terms(params, state) if n != name}
                for state in states]
        for other in rest[1:]:  # the other factors must not depend on the state
            if any(not np.allclose(np.asarray(other[n]), np.asarray(v), rtol=1e-6,
                                   atol=1e-6) for n, v in rest[0].items()):
                return None
        return _from_colors(self.state_sites, colors, multilinear)

    @property
    def blocks(self) -> list:
        """Blocks of conditionally independent variables (``structure.blocks``)."""
        return self.structure.blocks

    # --- parameters -------------------------------------------------------------------
    def init_params(self, rng_key: jax.Array) -> dict:
        """Initial parameters (constrained space): ``numpyro.param`` init values, and the
        ``init_strategy`` (default: median of prior draws) for sites with a prior."""
        model = handlers.substitute(handlers.seed(self.model, as_key(rng_key, "init_params")),
                                    substitute_fn=self.init_strategy)
        trace = handlers.trace(model).get_trace(*self.args, **self.kwargs)
        return {name: trace[name]["value"] for name in self.param_sites}

    def _probe_params(self, rng_key, rng):
        """Random parameters for the structure analysis: the initial parameters moved by
        N(0, 1) (drawn from the numpy generator ``rng``) in the unconstrained space."""
        space = self.param_space
        u = space.to_unconstrained(self.init_params(rng_key))
        u = {n: np.asarray(v) + rng.standard_normal(np.shape(v)).astype(np.asarray(v).dtype)
             for n, v in u.items()}
        return space.to_constrained(u)

    # --- potentials -------------------------------------------------------------------
    def log_potential(self, params: dict, state: dict) -> jax.Array:
        """Unnormalized log-probability f(x; θ): the sum of the model's factors.

        Parameters
        ----------
        params : dict
            Parameter values (constrained space), one per parameter site.
        state : dict
            State values in the model representation (see :mod:`numpyro_ugm.domains`),
            one per state site, without a leading batch axis (``jax.vmap`` for batches).

        Returns
        -------
        scalar
        """
        total = 0.0
        for _, _, term in self._terms(params, state):
            total = total + term
        return total

    def factor_terms(self, params: dict, state: dict) -> dict:
        """The ``numpyro.factor`` terms of the log-potential by site name, each summed
        over its plates; observed sites with a distribution (``obs=``, likelihoods of
        observed data) are not among them. Arguments as :meth:`log_potential`."""
        return {name: term for name, is_factor, term in self._terms(params, state)
                if is_factor}

    def _terms(self, params, state):
        """(name, whether a ``numpyro.factor``, summed log-factor) of each observed site,
        in the order the model declares them."""
        trace = self._trace(jax.random.PRNGKey(0), {**params, **state})
        for name, site in trace.items():
            if site["type"] != "sample":
                continue
            if not site["is_observed"]:
                if _domain_of(site) is not None and name not in state:
                    raise KeyError(f"state site {name!r} is missing from the state")
                continue
            log_factor = site["fn"].log_prob(site["value"])
            if site.get("scale") is not None:
                log_factor = log_factor * site["scale"]
            yield name, isinstance(_innermost(site["fn"]), Unit), jnp.sum(log_factor)

    def target(self) -> Target:
        """The :class:`~numpyro_ugm.target.Target` the algorithms take: this model's
        state sites, latent sites, structure and log-density as a function of the
        parameters (built once per model copy; the structure is found on first use)."""
        if self._target is None:
            self._target = Target(
                dict(self.state_sites), tuple(self.latent_sites), self.structure,
                self.log_potential,
                conditionals=self._hooked_conditionals if self._hooked else None,
                terms=lambda params, state: list(self._terms(params, state)),
                binder=lambda inputs: self.bind(**inputs).target(),
                cache_key=(self.cache_key, tuple(self.latent_sites)))
        return self._target

    def logdensity_fn(self, params: dict) -> Callable[[dict], jax.Array]:
        """The log-potential at fixed parameters, as blackjax kernels take it
        (:meth:`~numpyro_ugm.target.Target.logdensity_fn` of :meth:`target`): ``state ->
        f(state; params)``, one configuration in the model representation; when factors
        give their own conditionals (:func:`numpyro_ugm.factor`), a
        :class:`~numpyro_ugm.conditionals.LogDensity` whose ``conditional_logits`` sums
        them with the conditionals of the other factors."""
        return self.target().logdensity_fn(params)

    def _hooked_conditionals(self, params, state, domains, block):
        """Conditional log-probabilities of a block: the hooked factors' own, plus those
        of the other factors' sum (gradient or evaluation)."""
        trace = self._trace(jax.random.PRNGKey(0), {**params, **state})
        out, others = {}, False
        for name, site in trace.items():
            if site["type"] != "sample" or not site["is_observed"]:
                continue
            if name not in self._hooked:
                others = True
                continue
            own = site["infer"][CONDITIONALS]
            for s, idx in block.items():
                logits = own(s, idx)
                if logits is None:
                    continue
                if site.get("scale") is not None:
                    logits = logits * site["scale"]
                out[s] = logits if s not in out else out[s] + logits
        if others:
            def rest(x):
                total = 0.0
                for name, _, term in self._terms(params, x):
                    if name not in self._hooked:
                        total = total + term
                return total

            rest_logits = block_logits(rest, state, domains, block,
                                       self.structure.multilinear)
            for s, logits in rest_logits.items():
                out[s] = logits if s not in out else out[s] + logits
        missing = {s: idx for s, idx in block.items() if s not in out}
        return {**out, **zero_logits(domains, missing, jnp.result_type(float))}

    def log_prior(self, params: dict) -> jax.Array:
        """Sum of the log prior densities of the parameters with a prior (0 if none)."""
        if not any(s.prior is not None for s in self.param_sites.values()):
            return jnp.zeros(())
        state = {n: d.reference(d.batch_shape) for n, d in self.state_sites.items()}
        trace = self._trace(jax.random.PRNGKey(0), {**params, **state})
        return sum(jnp.sum(trace[n]["fn"].log_prob(trace[n]["value"]))
                   for n, s in self.param_sites.items() if s.prior is not None)

    def __repr__(self):
        name = getattr(self.model, "__name__", "model")
        return (f"UGM({name}: params={list(self.param_sites)}, "
                f"state={ {n: d for n, d in self.state_sites.items()} }, "
                f"latent={list(self.latent_sites)})")


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
