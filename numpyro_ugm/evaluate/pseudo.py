"""Pseudo-likelihood (Besag 1975): Σ_i log p(x_i | x_−i; θ), averaged over examples
(:func:`pseudo_log_likelihood`), and per example on a target
(:func:`pseudo_log_likelihoods`, the objective of the MPLE learner
:func:`numpyro_ugm.learn.fit_pseudo_likelihood`)."""

import jax
import jax.numpy as jnp

from ..runtime.compile_cache import cached
from ..conditionals import block_logits, exact_conditional_logits
from ..model.ugm import UGM
from ..model.target import Target
from ._padding import mean_of_first, pad_examples, padded_length
from ._prepare import observed_problem

__all__ = ["pseudo_log_likelihood", "pseudo_log_likelihoods"]


def pseudo_log_likelihoods(target: Target, params: dict, x: dict,
                            inputs: dict | None = None) -> jax.Array:
    """Per example Σ_i log p(x_i | x_−i; θ) of the model-representation data ``x``
    (traceable in the parameters and the data; ``target`` observes the sites of ``x``),
    each example with its own ``inputs`` (a CRF's, leading example axis) when given.
    Finite sites only: a real site in ``x`` is a ``ValueError`` naming it."""
    domains = {s: target.state_sites[s] for s in x}
    real = [s for s, d in domains.items() if not d.finite]
    if real:
        raise ValueError(
            f"pseudo-likelihood: the observed site(s) {real} are real-valued (ugm.Real); "
            "it is computed here as a sum of conditional log-probabilities over finite "
            "domains, which a real site does not have (its conditional is a density). For "
            "real sites use the exact log-likelihood (ugm.exact, Gaussian in them), AIS "
            "(ugm.ais), or quadrature in low dimension; learn them with ugm.MLE")
    block = {s: None for s in x}
    multilinear = target.structure.multilinear

    def one(example, example_inputs):
        bound = target.bind(**example_inputs) if example_inputs else target
        if target.latent_sites:
            logits = exact_conditional_logits(
                lambda y: bound.free_energy(params, y), example, domains, block)
        else:
            logits = block_logits(bound.logdensity_fn(params), example, domains, block,
                                  multilinear)
        total = 0.0
        for s, d in domains.items():
            labels = d.labels(example[s]).reshape(d.num_variables)
            log_probs = jax.nn.log_softmax(logits[s], axis=-1)
            total = total + jnp.sum(jnp.take_along_axis(log_probs, labels[:, None], -1))
        return total

    return jax.vmap(one)(x, {} if inputs is None else inputs)


def pseudo_log_likelihood(m: UGM, params: dict, data: dict, *,
                          inputs: dict | None = None) -> jax.Array:
    """Mean over examples of Σ_i log p(x_i | x_−i; θ) over the observed variables.

    Latent sites are summed out first (each conditional is then one of the observed
    marginal, computed by evaluating the free energy at each value of the variable);
    without latent sites, a multilinear potential gives all conditionals from one
    gradient.

    Parameters
    ----------
    m : UGM
    params : dict
        Parameters (constrained space).
    data : dict of str -> array
        Observed sites with a leading example axis (data representation).
    inputs : dict of str -> array, optional
        A CRF's per-example inputs (model keyword arguments with a leading example axis,
        as in learning): each example's conditionals given its own inputs.

    Returns
    -------
    scalar
        Data of any number of examples up to a power of two share one compiled program
        (the example axis is padded, the padding masked out).
    """
    problem = observed_problem("pseudo_log_likelihood", m, params, data, inputs)
    target, x, inputs, num = (problem.target, problem.data,
                              problem.inputs, problem.num_examples)
    length = padded_length(num)
    names = None if inputs is None else tuple(sorted(inputs))
    fn = cached(target.cache_key, ("pseudo_log_likelihood", target.observed_sites, names),
                lambda: jax.jit(lambda p, xs, us, n: mean_of_first(
                    pseudo_log_likelihoods(target, p, xs, us), n)))
    return fn(params, pad_examples(x, length),
              None if inputs is None else pad_examples(inputs, length),
              jnp.asarray(num, jnp.int32))
