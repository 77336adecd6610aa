"""``Target``: what the algorithms see of a model — the narrow, immutable object between
the traced model (:class:`~numpyro_ugm.model.UGM`) and the kernels, estimators, learner,
evaluation and samplers.

A target is built once from a model (``m.target()``) and holds the state sites' domains,
the structure (blocks, colouring, multilinearity), which sites are latent, and the map
from parameters to the log-density of the state. Nothing in it traces the numpyro model
except through the functions it was handed. Only kernels and exact enumeration assume
finite domains; everything else reads the domains through their interface.
"""

import dataclasses
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Optional

import jax
import jax.numpy as jnp

from ..conditionals import (LogDensity, block_gradients, linear_combination, mean_and_entropy,
                           scaled, site_variables, zero_logits)
from ..domains import Domain
from ..runtime.compile_cache import cached
from ..structure import Structure

__all__ = ["Target", "free_energy", "free_energies"]


@dataclasses.dataclass(frozen=True, eq=False)
class Target:
    """A model's state space and log-density as a function of the parameters.

    Attributes
    ----------
    state_sites : dict of str -> Domain
        Every state site (observed and latent) and its domain.
    latent_sites : tuple of str
        State sites the data does not supply (summed out in the free energy).
    structure : Structure
        Interaction graph, blocks of conditionally independent variables, colouring and
        multilinearity.
    log_potential : callable
        ``(params, state) -> f(state; params)``: one configuration, model representation,
        constrained parameters.
    conditionals : callable or None
        ``(params, state, domains, block) -> logits`` when factors declare their own
        conditionals (:func:`numpyro_ugm.factor`); see :meth:`logdensity_fn`.
    terms : callable or None
        ``(params, state) -> [(name, is_factor, value), ...]``: the potential's terms by
        site, for error messages that name the factor at fault.
    binder : callable or None
        ``inputs -> Target``: the target of one example of a conditional model (CRF)
        under its model keyword arguments (which may be traced).
    cache_key : hashable
        Identifies the model and its arguments in :mod:`numpyro_ugm.runtime.compile_cache`.
    graph_fn : callable or None
        ``() -> Structure``: a fresh analysis of the potential, for its interaction
        graph where factors declare a colouring (see :meth:`interaction_graph`).
    """

    state_sites: Mapping[str, Domain]
    latent_sites: tuple
    structure: Structure
    log_potential: Callable[[dict, dict], jax.Array]
    conditionals: Optional[Callable] = None
    terms: Optional[Callable] = None
    binder: Optional[Callable[[dict], "Target"]] = None
    cache_key: Hashable = None
    graph_fn: Optional[Callable[[], Structure]] = None

    @property
    def observed_sites(self) -> tuple:
        """State sites that the data supplies."""
        return tuple(n for n in self.state_sites if n not in self.latent_sites)

    @property
    def real_sites(self) -> tuple:
        """State sites with real values (``ugm.Real``)."""
        return tuple(n for n, d in self.state_sites.items() if not d.finite)

    @property
    def blocks(self) -> list:
        """Blocks of conditionally independent variables (``structure.blocks``)."""
        return self.structure.blocks

    def interaction_graph(self) -> Structure:
        """A structure that holds the interaction graph: ``structure``, or where factors
        declare a colouring (``structure.edges`` is None) a fresh analysis of the
        potential (``graph_fn``), kept per model."""
        if self.structure.edges is not None or self.graph_fn is None:
            return self.structure
        return cached(self.cache_key, ("elimination.graph",), self.graph_fn)

    @property
    def log_num_states(self) -> float:
        """log of the mass of the base measure: the number of configurations of the
        finite sites (a real site's base Normal has mass 1)."""
        return sum(d.log_num_states for d in self.state_sites.values())

    def logdensity_fn(self, params: dict) -> Callable[[dict], jax.Array]:
        """The log-potential at fixed parameters, as blackjax kernels take it: ``state ->
        f(state; params)``; a :class:`~numpyro_ugm.conditionals.LogDensity` that also
        gives the declared conditionals when factors declare them."""
        fn = lambda state: self.log_potential(params, state)  # noqa: E731
        if self.conditionals is None:
            return fn
        return LogDensity(fn, lambda state, domains, block:
                          self.conditionals(params, state, domains, block))

    def base_logdensity_fn(self) -> LogDensity:
        """log density of the base distribution (up to the constant of the finite
        sites' uniform base): Σ over real sites of their base Normal's log density, with
        its conditionals (zero logits for finite sites, the Normal's natural parameters
        for real ones)."""
        domains = self.state_sites

        def value(state):
            return sum((domains[s].base_log_prob(state[s]) for s in self.real_sites),
                       jnp.zeros((), jax.tree.leaves(state)[0].dtype))

        def conditionals(state, unused_domains, block):
            out = zero_logits(domains, {s: i for s, i in block.items() if domains[s].finite},
                              jax.tree.leaves(state)[0].dtype)
            for s, idx in block.items():
                d = domains[s]
                if d.finite:
                    continue
                natural = d.base_natural(state[s].dtype)
                out[s] = natural if idx is None else natural[idx]
            return {s: out[s] for s in block}

        return LogDensity(value, conditionals)

    def tempered_fn(self, params: dict, beta: Any) -> Callable[[dict], jax.Array]:
        """The log-density at inverse temperature β on the path from the base
        distribution to the model at ``params``: :meth:`tempered` of its log-density."""
        return self.tempered(self.logdensity_fn(params), beta)

    def tempered(self, logdensity_fn: Callable[[dict], jax.Array], beta: Any
                 ) -> Callable[[dict], jax.Array]:
        """``logdensity_fn`` at inverse temperature β on the path from the base: β f when
        every site is finite (uniform base), (1 − β) log base + β f with real sites (a
        proper density at every β); keeps the log-densities' own conditionals."""
        if not self.real_sites:
            return scaled(logdensity_fn, beta)
        return linear_combination((1.0 - beta, self.base_logdensity_fn()),
                                  (beta, logdensity_fn))

    def excess(self, logdensity_fn: Callable[[dict], jax.Array]
               ) -> Callable[[dict], jax.Array]:
        """What β multiplies on the path of :meth:`tempered`: f − log base (f itself
        when every site is finite)."""
        if not self.real_sites:
            return logdensity_fn
        return linear_combination((1.0, logdensity_fn), (-1.0, self.base_logdensity_fn()))

    def random_state(self, rng_key: jax.Array, sample_shape: tuple = ()) -> dict:
        """Draws from the base distribution of every state site (uniform on a finite
        domain, the base Normal of a real one), model representation."""
        keys = jax.random.split(rng_key, len(self.state_sites))
        return {n: d.sample(k, sample_shape)
                for k, (n, d) in zip(keys, self.state_sites.items())}

    def reference_state(self) -> dict:
        """A fixed configuration (each variable at its first value), model representation."""
        return {n: d.reference(d.batch_shape) for n, d in self.state_sites.items()}

    def bind(self, **inputs: Any) -> "Target":
        """The target of one example of a conditional model under ``inputs``."""
        if self.binder is None:
            raise TypeError(f"inputs {sorted(inputs)} given to a target built without "
                            "model keyword arguments to bind")
        return self.binder(inputs)

    def free_energy(self, params: dict, state: dict) -> jax.Array:
        """F(state; θ): :func:`free_energy` of this target."""
        return free_energy(self, params, state)

    def free_energies(self, params: dict, positions: dict,
                      inputs: Optional[dict] = None) -> jax.Array:
        """:func:`free_energies` of this target."""
        return free_energies(self, params, positions, inputs)


def free_energy(target: Target, params: dict, state: dict) -> jax.Array:
    """log Σ_latent exp f(state; θ): the log-potential with the latent sites summed out
    (just f when nothing is latent).

    f is affine in the latent block, so with q = p(latent | observed) (independent per
    variable) F = f(observed, E_q[latent]) + H(q). Evaluated this way with q held fixed
    (``stop_gradient``), the value is exact and so is ∇θ F = E_q[∇θ f] (envelope
    theorem) at the cost of one evaluation of f and one gradient. Higher derivatives in
    θ are not those of F: use :func:`~numpyro_ugm.conditionals.sum_out` for them.

    ``state`` holds the observed sites (model representation, one configuration); any
    latent values it holds are ignored.

    Raises
    ------
    NotImplementedError
        If the latent sites interact with each other or the potential is not
        multilinear (no closed form).
    """
    latent = target.latent_sites
    if not latent:
        return target.log_potential(params, state)
    real = [s for s in latent if not target.state_sites[s].finite]
    if real:
        raise NotImplementedError(
            f"latent real sites {real}: their free energy has no closed form here; "
            "supply them in the data or make the latent sites finite")
    if not (target.structure.multilinear and target.structure.independent(latent)):
        raise NotImplementedError(
            f"latent sites {list(latent)} interact with each other (or the potential is "
            "not multilinear), so they cannot be summed out in closed form")
    domains = target.state_sites
    full = {**state, **{s: domains[s].reference(domains[s].batch_shape) for s in latent}}
    f = target.logdensity_fn(params)
    grads = jax.lax.stop_gradient(block_gradients(f, full, latent))
    entropy = 0.0
    for s in latent:
        mean, ent = mean_and_entropy(domains[s], site_variables(grads[s], domains[s]))
        full[s] = mean.reshape(full[s].shape)
        entropy = entropy + jnp.sum(ent)
    return f(full) + entropy


def free_energies(target: Target, params: dict, positions: dict,
                  inputs: Optional[dict] = None) -> jax.Array:
    """F(x; θ) for a batch of configurations (leading axis), each under its example's
    ``inputs`` (model keyword arguments with the same leading axis) when given."""
    if inputs is None:
        return jax.vmap(free_energy, (None, None, 0))(target, params, positions)
    return jax.vmap(lambda inp, x: free_energy(target.bind(**inp), params, x))(
        inputs, positions)
