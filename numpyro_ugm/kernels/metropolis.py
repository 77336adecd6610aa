"""Single-site Metropolis: propose a new value for one random variable, accept with
probability min(1, p(x') / p(x))."""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.mcmc.proposal import static_binomial_sampling

from .._checks import check_count
from .._deprecation import renamed_arguments
from ..conditionals import scatter
from .base import Kernel, KernelInfo, KernelSpec


class MetropolisState(NamedTuple):
    """Position of one chain and its log-density."""

    position: dict
    logdensity: jax.Array


@renamed_arguments({"sweeps": "num_mcmc_steps"})
@dataclasses.dataclass(frozen=True)
class metropolis(KernelSpec):
    """Single-site Metropolis over all state variables (accept/reject by blackjax's
    ``static_binomial_sampling``).

    One ``step`` makes ``num_mcmc_steps × num_variables`` proposals; each picks a
    variable uniformly and proposes a different value uniformly (a flip for spins and
    binaries).

    Parameters
    ----------
    num_mcmc_steps : int
        Proposals per step, in units of the number of variables (sweeps; formerly
        ``sweeps``).
    """

    num_mcmc_steps: int = 1

    def __post_init__(self):
        object.__setattr__(self, "num_mcmc_steps",
                           check_count("metropolis", "num_mcmc_steps", self.num_mcmc_steps))

    def build(self, m) -> Kernel:
        domains = m.state_sites
        sites = tuple(domains)
        sizes = np.array([d.num_variables for d in domains.values()])
        offsets = jnp.asarray(np.concatenate([[0], np.cumsum(sizes)[:-1]]))
        total = int(sizes.sum())
        num_proposals = int(self.num_mcmc_steps) * total

        def propose_in(s):
            d = domains[s]

            def propose(rng_key, position, local):
                current = d.labels(position[s].reshape((d.num_variables,) + d.event_shape)
                                   [local])
                shift = jax.random.randint(rng_key, (), 1, d.num_values)
                label = (current + shift) % d.num_values
                value = d.label_to_model(label[None], position[s].dtype)
                return {**position, s: scatter(position[s], d, local[None], value)}

            return propose

        branches = [propose_in(s) for s in sites]

        def proposal(rng_key, state, logdensity_fn):
            pick, value_key, accept_key = jax.random.split(rng_key, 3)
            j = jax.random.randint(pick, (), 0, total)
            k = jnp.searchsorted(offsets, j, side="right") - 1
            position = jax.lax.switch(k, branches, value_key, state.position, j - offsets[k])
            logdensity = logdensity_fn(position)
            new, (accept, _, _) = static_binomial_sampling(
                accept_key, logdensity - state.logdensity, state,
                MetropolisState(position, logdensity))
            return new, accept

        def init(position, logdensity_fn):
            return MetropolisState(dict(position), logdensity_fn(position))

        def step(rng_key, state, logdensity_fn, **unused):
            def body(state, key):
                return proposal(key, state, logdensity_fn)

            state, accepted = jax.lax.scan(body, state, jax.random.split(rng_key, num_proposals))
            return state, KernelInfo(jnp.mean(accepted.astype(jnp.float32)))

        return Kernel(init, step)
