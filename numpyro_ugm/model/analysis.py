"""Finding a traced model's structure: the colouring a factor declares, else the
analysis of :func:`numpyro_ugm.structure.analyze`; the blocks valid for every example of a
CRF (:func:`numpyro_ugm.structure.cover`); and the check of the conditionals factors
declare. They are the model's structure methods, kept apart so that the model class only
traces: the model hands them what they read of it, a :class:`ModelView`."""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .factors import check_conditionals
from .params import ParamSpace
from .sites import log_terms
from ..structure import Structure, analyze, cover, from_colors, greedy_coloring

__all__ = ["ModelView", "find_structure", "covering_structure",
           "check_declared_conditionals", "probe_params"]


class ModelView(NamedTuple):
    """What the structure analysis reads of a traced model (handed to it by the model).

    Attributes
    ----------
    state_sites : dict of str -> Domain
    log_potential : callable
        ``(params, state) -> f(state; params)``.
    with_inputs : callable
        ``example -> log_potential`` under the model keyword arguments updated with one
        example's inputs.
    init_params : callable
        ``rng_key -> params`` (constrained).
    param_space : ParamSpace
    declared : dict
        Factor name -> (colours, multilinear), as factors declare them.
    hooked : tuple of str
        The factors that declare their own conditionals.
    terms : callable
        ``(params, state) -> [(name, is_factor, value), ...]``: the potential's terms.
    trace : callable
        ``(rng_key, values) -> numpyro trace`` of the model with ``values`` substituted.
    """

    state_sites: dict
    log_potential: Callable
    with_inputs: Callable
    init_params: Callable
    param_space: ParamSpace
    declared: dict
    hooked: tuple
    terms: Callable
    trace: Callable


def find_structure(m: ModelView, rng_key=None, declared: bool = True,
                   **options) -> Structure:
    """The colouring factors declare (:func:`numpyro_ugm.factor`), when together they
    cover every state site and every other factor is linear in the state (adds no
    interaction); otherwise (or with ``declared=False``: the interaction graph itself,
    which a colouring does not give) :func:`~numpyro_ugm.structure.analyze` of the
    log-potential."""
    declared = _declared_structure(m) if declared else None
    if declared is not None:
        return declared
    return analyze(m.log_potential, m.state_sites, lambda key, rng: probe_params(m, key, rng),
                   rng_key=rng_key, **options)


def _declared_structure(m):
    """The structure the factors declare, or None (see :func:`find_structure`). Several
    declaring factors give the product colouring (two variables share a colour only when
    they share one under every factor); a factor that declares nothing must be linear in
    the state: :func:`_is_linear` at the probe states."""
    declared, terms = m.declared, m.terms
    if not declared:
        return None
    covered = [set(colors) | set(edges or {}) for colors, _, edges in declared.values()]
    if set().union(*covered) != set(m.state_sites):
        return None
    probe = m.init_params(jax.random.PRNGKey(0))
    state0 = _probe_states(m.state_sites)[0]
    others = [n for n, _, _ in terms(probe, state0) if n not in declared]
    if others:  # every other factor must be linear in the state, at random parameters
        rng = np.random.default_rng(0)

        @jax.jit
        def rest(params, state):
            return sum((term for n, _, term in terms(params, state) if n not in declared),
                       jnp.zeros(()))

        for k, state in enumerate(_probe_states(m.state_sites)):
            params = probe_params(m, jax.random.PRNGKey(k), rng)
            if not _is_linear(lambda x: rest(params, x), state, m.state_sites, rng):
                return None
    colors = {}
    for s, d in m.state_sites.items():
        rows = [np.asarray(c[s], np.int64).reshape(-1) for c, _, _ in declared.values()
                if s in c]
        rows += [greedy_coloring(d.num_variables, e[s]) for _, _, e in declared.values()
                 if e is not None and s in e]
        colors[s] = (rows[0] if len(rows) == 1
                     else np.unique(np.stack(rows, 1), axis=0, return_inverse=True)[1].reshape(-1))
    multilinear = all(flag for _, flag, _ in declared.values())
    edges = None
    if all(e is not None for _, _, e in declared.values()):  # every factor gave its graph
        edges = {s: np.concatenate([e[s] for _, _, e in declared.values() if s in e])
                 for s in m.state_sites if any(s in e for _, _, e in declared.values())}
    return from_colors(m.state_sites, colors, multilinear, edges)


def _is_linear(f, state, domains, rng, num_pairs: int = 16, tol: float = 1e-5) -> bool:
    """Whether ``f(state)`` adds no interaction between state variables, probed at
    ``state``: the second differences of ``num_pairs`` random pairs of variables are
    zero, and so is a Hessian-vector product in a random direction (every pair at
    once, for a potential written differentiably)."""
    from ..conditionals import scatter

    if not any(jnp.issubdtype(jnp.asarray(v).dtype, jnp.floating) for v in state.values()):
        return False
    flat = [(s, v) for s, d in domains.items() for v in range(d.num_variables)]
    base = float(f(state))
    for _ in range(num_pairs):
        a, b = rng.choice(len(flat), size=2, replace=False) if len(flat) > 1 else (0, 0)
        (sa, va), (sb, vb) = flat[a], flat[b]

        def moved(x, site, v):
            d = domains[site]
            if not getattr(d, "finite", True):  # a real variable moves by one
                return {**x, site: x[site].reshape(-1).at[v].add(1.0).reshape(x[site].shape)}
            label = d.labels(x[site]).reshape(-1)[v:v + 1]
            other = d.label_to_model((label + 1) % d.num_values, x[site].dtype)
            return {**x, site: scatter(x[site], d, jnp.asarray([v]), other)}

        x_a, x_b = moved(state, sa, va), moved(state, sb, vb)
        x_ab = moved(x_a, sb, vb)
        second = float(f(x_ab)) - float(f(x_a)) - float(f(x_b)) + base
        if abs(second) > tol * (1 + abs(base)):
            return False
    direction = {s: jnp.asarray(rng.standard_normal(np.shape(v)), jnp.asarray(v).dtype)
                 for s, v in state.items()}
    hvp = jax.jvp(jax.grad(f), (state,), (direction,))[1]
    return all(float(jnp.max(jnp.abs(h))) <= tol * (1 + abs(base)) if h.size else True
               for h in jax.tree.leaves(hvp))


def _probe_states(domains):
    """Three fixed configurations: every variable at its first value, and two random."""
    states = [{n: d.reference(d.batch_shape) for n, d in domains.items()}]
    return states + [{n: d.sample(jax.random.fold_in(jax.random.PRNGKey(k), i))
                      for i, (n, d) in enumerate(domains.items())} for k in (1, 2)]


def probe_params(m: ModelView, rng_key, rng) -> dict:
    """Random parameters for the structure analysis: the initial parameters moved by
    N(0, 1) (drawn from the numpy generator ``rng``) in the unconstrained space."""
    space = m.param_space
    u = space.to_unconstrained(m.init_params(rng_key))
    u = jax.tree.map(lambda v: np.asarray(v) + rng.standard_normal(np.shape(v)).astype(
        np.asarray(v).dtype), u)
    return space.to_constrained(u)


def covering_structure(m: ModelView, structure: Structure, inputs: dict,
                       cache: dict) -> Structure:
    """``structure``, or the structure joined with the interactions found on the
    examples of ``inputs`` (model keyword arguments with a leading example axis) where
    its blocks do not hold for all of them (:func:`~numpyro_ugm.structure.cover`; its
    findings kept in ``cache``)."""
    def log_potential(params, state, example):
        return m.with_inputs(example)(params, state)

    with jax.ensure_compile_time_eval():
        return cover(structure, log_potential, m.state_sites,
                     lambda key, rng: probe_params(m, key, rng), inputs, cache=cache)


def check_declared_conditionals(m: ModelView) -> None:
    """Check the conditionals that factors of ``m`` declare against the factors' own
    values (:func:`~numpyro_ugm.model.factors.check_conditionals`) at two random states and
    parameter values; raises ``ValueError`` naming the factor, site and variable."""
    trace = m.trace
    rng = np.random.default_rng(0)
    points = [(probe_params(m, jax.random.PRNGKey(k), rng), state)
              for k, state in enumerate(_probe_states(m.state_sites)[1:])]

    def term_at(name, values):
        return {n: t for n, _, t in log_terms(trace(jax.random.PRNGKey(0), values),
                                              values)}[name]

    check_conditionals(lambda values: trace(jax.random.PRNGKey(0), values), term_at,
                       m.state_sites, m.hooked, points, rng)
