"""Finding a traced model's structure: the colouring a factor declares, else the
analysis of :func:`numpyro_ugm.structure.analyze`; the blocks valid for every example of a
CRF (:func:`numpyro_ugm.structure.cover`); and the check of the conditionals factors
declare. The functions take a :class:`~numpyro_ugm.model.UGM` (they are its structure
methods, kept apart so that the model class only traces)."""

import jax
import numpy as np

from .compile_cache import cached
from .factors import check_conditionals
from .sites import log_terms
from .structure import Structure, analyze, cover, from_colors

__all__ = ["find_structure", "covering_structure", "check_declared_conditionals",
           "probe_params"]


def find_structure(m, rng_key=None, **options) -> Structure:
    """The colouring a factor declares (:func:`numpyro_ugm.factor`), when exactly one
    does, it covers every state site and every other factor is constant in the state;
    otherwise :func:`~numpyro_ugm.structure.analyze` of the log-potential."""
    declared = _declared_structure(m)
    if declared is not None:
        return declared
    return analyze(m.log_potential, m.state_sites, lambda key, rng: probe_params(m, key, rng),
                   rng_key=rng_key, **options)


def _declared_structure(m):
    """The structure a factor declares, or None (see :func:`find_structure`)."""
    declared = m._sites.declared
    if len(declared) != 1:
        return None
    (name, (colors, multilinear)), = declared.items()
    if set(colors) != set(m.state_sites):
        return None
    params = m.init_params(jax.random.PRNGKey(0))
    rest = [{n: term for n, _, term in m._terms(params, state) if n != name}
            for state in _probe_states(m.state_sites)]
    for other in rest[1:]:  # the other factors must not depend on the state
        if any(not np.allclose(np.asarray(other[n]), np.asarray(v), rtol=1e-6, atol=1e-6)
               for n, v in rest[0].items()):
            return None
    return from_colors(m.state_sites, colors, multilinear)


def _probe_states(domains):
    """Three fixed configurations: every variable at its first value, and two random."""
    states = [{n: d.reference(d.batch_shape) for n, d in domains.items()}]
    return states + [{n: d.sample(jax.random.fold_in(jax.random.PRNGKey(k), i))
                      for i, (n, d) in enumerate(domains.items())} for k in (1, 2)]


def probe_params(m, rng_key, rng) -> dict:
    """Random parameters for the structure analysis: the initial parameters moved by
    N(0, 1) (drawn from the numpy generator ``rng``) in the unconstrained space."""
    space = m.param_space
    u = space.to_unconstrained(m.init_params(rng_key))
    u = jax.tree.map(lambda v: np.asarray(v) + rng.standard_normal(np.shape(v)).astype(
        np.asarray(v).dtype), u)
    return space.to_constrained(u)


def covering_structure(m, inputs: dict) -> Structure:
    """``m.structure``, or the structure joined with the interactions found on the
    examples of ``inputs`` (model keyword arguments with a leading example axis) where
    its blocks do not hold for all of them (:func:`~numpyro_ugm.structure.cover`)."""
    def log_potential(params, state, example):
        return m.replace(kwargs={**m.kwargs, **example}).log_potential(params, state)

    with jax.ensure_compile_time_eval():
        return cover(m.structure, log_potential, m.state_sites,
                     lambda key, rng: probe_params(m, key, rng), inputs,
                     cache=cached(m.cache_key, ("for_inputs",), dict))


def check_declared_conditionals(m) -> None:
    """Check the conditionals that factors of ``m`` declare against the factors' own
    values (:func:`~numpyro_ugm.factors.check_conditionals`) at two random states and
    parameter values; raises ``ValueError`` naming the factor, site and variable."""
    rng = np.random.default_rng(0)
    points = [(probe_params(m, jax.random.PRNGKey(k), rng), state)
              for k, state in enumerate(_probe_states(m.state_sites)[1:])]

    def term_at(name, values):
        trace = m._trace(jax.random.PRNGKey(0), values)
        return {n: t for n, _, t in log_terms(trace, values)}[name]

    check_conditionals(lambda values: m._trace(jax.random.PRNGKey(0), values), term_at,
                       m.state_sites, m._sites.hooked, points, rng)
