"""Continuous sites that another kernel must not sample: the parameters θ of the
undirected model (sites a ``numpyro.factor`` couples with the state). numpyro's joint
density lacks the 1/Z(θ) of p(x | θ), so NUTS (or a sibling block of a composite
``Gibbs``) on such a site samples a wrong posterior; :func:`coupled_factors` finds them
and the adapters warn (see :mod:`numpyro_ugm.infer`)."""

import warnings
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..model.ugm import UGM

__all__ = ["coupled_factors", "warn_if_coupled"]


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
    target, space = m.target(), m.param_space
    with jax.ensure_compile_time_eval():
        key_x, key_move = jax.random.split(jax.random.PRNGKey(0))
        base = m.init_params(jax.random.PRNGKey(0))
        names = set(m.factor_terms(base, target.reference_state()))
        unknown = [n for n in likelihood_factors if n not in names]
        if unknown:
            raise ValueError(f"likelihood_factors {unknown} are not numpyro.factor sites of "
                             f"the model; its factors are {sorted(names)}")
        states = target.random_state(key_x, (2 * num_pairs,))

        def contrasts(params):
            terms = jax.vmap(lambda x: m.factor_terms(params, x))(states)
            return {n: np.asarray(t[:num_pairs] - t[num_pairs:]) for n, t in terms.items()
                    if n not in likelihood_factors}

        reference = contrasts(base)
        unconstrained = space.to_unconstrained(base)
        out = {}
        for i, s in enumerate(sites):
            step = jax.random.normal(jax.random.fold_in(key_move, i), jnp.shape(base[s]))
            moved = space.to_constrained({s: unconstrained[s] + step})
            moved = contrasts({**base, **moved})
            coupling = [n for n in reference if not np.allclose(
                moved[n], reference[n], rtol=1e-4, atol=1e-4 * (1 + np.abs(reference[n]).max()))]
            if coupling:
                out[s] = coupling
    return out


def warn_if_coupled(owner: str, m: UGM, sites: Sequence[str],
                    likelihood_factors: Sequence[str], stacklevel: int) -> None:
    """Warn when another kernel samples continuous sites that factors couple with the
    state: it then targets prior(θ)·exp f(x; θ) without the 1/Z(θ) of the model."""
    coupled = coupled_factors(m, sites, likelihood_factors) if sites else {}
    if not coupled:
        return
    theta = ", ".join(f"{s!r} (coupled by factor(s) {names})" for s, names in coupled.items())
    warnings.warn(
        f"{owner}: another kernel (NUTS in HMCGibbs, or a Gibbs block) samples {theta}, "
        f"a parameter θ of the undirected model over the state sites "
        f"{list(m.target().state_sites)}. "
        f"It targets prior(θ)·exp f(x; θ) without the 1/Z(θ) of p(x | θ), so the posterior "
        f"of θ is wrong: a different distribution, not Monte Carlo noise. Sample p(θ | x) "
        f"with ugm.posterior.Exchange (the exchange algorithm, a numpyro MCMC kernel) or "
        f"ugm.posterior.SGMCMC (stochastic-gradient Langevin), check them on a small model "
        f"with ugm.posterior.exact_posterior under NUTS, learn θ by MAP (ugm.MLE with a "
        f"prior on the site), or hold it fixed (a numpyro.param site, or a model "
        f"argument). If a listed factor is a likelihood of "
        f"observed data (normalized over the data, e.g. a mixture over the labels), name it "
        f"in likelihood_factors=[...].", UserWarning, stacklevel=stacklevel + 1)
