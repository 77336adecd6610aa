"""Pseudo-likelihood (Besag 1975): Σ_i log p(x_i | x_−i; θ), averaged over examples."""

import jax
import jax.numpy as jnp

from ..structure import conditional_logits, exact_conditional_logits, free_energy

__all__ = ["pseudo_log_likelihood"]


def pseudo_log_likelihood(m, params, data):
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
    """
    m = m.observe(tuple(data))
    x = m.validate_data(data)
    m.check_params(params)
    domains = {s: m.state_sites[s] for s in x}
    block = {s: None for s in x}
    if m.latent_sites:
        def f(y):
            return free_energy(m, params, y)
        logits_fn = exact_conditional_logits
    else:
        def f(y):
            return m.log_potential(params, y)
        logits_fn = (conditional_logits if m.structure.multilinear
                     else exact_conditional_logits)

    def one(example):
        logits = logits_fn(f, example, domains, block)
        total = 0.0
        for s, d in domains.items():
            labels = d.labels(example[s]).reshape(d.num_variables)
            log_probs = jax.nn.log_softmax(logits[s], axis=-1)
            total = total + jnp.sum(jnp.take_along_axis(log_probs, labels[:, None], -1))
        return total

    return jnp.mean(jax.jit(jax.vmap(one))(x))
