"""Tempered kernels that wrap any base kernel: Neal's tempered transitions (as used by
Salakhutdinov 2009, Algorithm 2) and parallel tempering (replica exchange).

Both see the target only through ``logdensity_fn`` and build the tempered levels
p_β ∝ exp(β · logdensity_fn), so they nest inside ``blackjax.smc`` and the estimators
like any other kernel.
"""

import dataclasses
from typing import NamedTuple, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.mcmc.proposal import static_binomial_sampling

from ..runtime.checks import check_count
from .base import Kernel, KernelSpec, as_spec
from .block_gibbs import gibbs


def _check_betas(owner, betas, default_low, default_num):
    """Ascending inverse temperatures in [0, 1] ending at 1, as a tuple of floats."""
    if betas is None:
        betas = default_num
    if isinstance(betas, (int, np.integer)):
        betas = np.linspace(default_low, 1.0, check_count(owner, "betas (a number)", betas, 2))
    betas = np.asarray(betas, dtype=float)
    if (betas.ndim != 1 or betas.size < 2 or not np.all(np.isfinite(betas))
            or np.any(np.diff(betas) <= 0) or betas[0] < 0 or betas[-1] != 1.0):
        raise ValueError(f"{owner}: betas must be strictly increasing in [0, 1] and end "
                         f"at 1, got {betas.tolist()}")
    return tuple(float(b) for b in betas)


class TemperedTransitionsState(NamedTuple):
    """Position of one chain and the number of steps taken (for ``every``)."""

    position: dict
    count: jax.Array


class TemperedTransitionsInfo(NamedTuple):
    """``acceptance_rate``: min(1, A) of the run (1 on plain base steps);
    ``is_accepted``; ``ran``: whether this step was a tempered-transitions run."""

    acceptance_rate: jax.Array
    is_accepted: jax.Array
    ran: jax.Array


@dataclasses.dataclass(frozen=True)
class tempered_transitions(KernelSpec):
    """Tempered transitions (Neal 1996; Salakhutdinov 2009, Alg. 2).

    With β_0 < ... < β_S = 1: a forward pass T_{S−1}, ..., T_0 (base steps at p_{β_s})
    takes the state down to the flattest level, a backward pass T̃_0, ..., T̃_{S−1}
    (the reverse operators: sub-transitions in reverse order) brings it back up, and the
    end point is accepted with probability
    min(1, Π_{s=1..S} exp((β_{s−1} − β_s) f(x_s) + (β_s − β_{s−1}) f(x̃_s))).

    All arguments are keyword only.

    Parameters
    ----------
    kernel : KernelSpec, optional
        Base kernel (default: systematic-scan block Gibbs); its ``reverse()`` gives T̃.
    betas : int or sequence of float, optional
        Increasing inverse temperatures ending at 1, or their number spaced uniformly in
        [0.9, 1] (default 50, as in the paper's MNIST experiment).
    every : int
        Run tempered transitions on every ``every``-th step and a plain base step
        otherwise (Trans-SAP alternates Gibbs updates with one run; e.g. ``every=200``).
    """

    _: dataclasses.KW_ONLY
    kernel: Optional[KernelSpec] = None
    betas: Union[int, Sequence[float], None] = None
    every: int = 1

    def __post_init__(self):
        object.__setattr__(self, "betas", _check_betas("tempered_transitions",
                                                       self.betas, 0.9, 50))
        object.__setattr__(self, "every",
                           check_count("tempered_transitions", "every", self.every))
        as_spec(self.kernel, gibbs())

    def build(self, target) -> Kernel:
        spec = as_spec(self.kernel, gibbs())
        forward, backward = spec.build(target), spec.reverse().build(target)
        betas = jnp.asarray(self.betas)
        down = betas[:-1][::-1]          # β_{S−1}, ..., β_0
        up_from, up_to = betas[:-1], betas[1:]
        every = int(self.every)

        def base_step(kernel, rng_key, position, logdensity_fn):
            state = kernel.init(position, logdensity_fn)
            return kernel.step(rng_key, state, logdensity_fn)[0].position

        def run(rng_key, position, logdensity_fn):
            down_key, up_key, accept_key = jax.random.split(rng_key, 3)
            higher = betas[1:][::-1]      # β_S, ..., β_1: the level each state leaves

            energy = target.excess(logdensity_fn)

            def go_down(x, xs):
                key, beta, beta_above = xs
                term = (beta - beta_above) * energy(x)
                return base_step(forward, key, x, target.tempered(logdensity_fn, beta)), term

            bottom, down_terms = jax.lax.scan(
                go_down, position, (jax.random.split(down_key, down.shape[0]), down, higher))

            def go_up(x, xs):
                key, beta, beta_above = xs
                x = base_step(backward, key, x, target.tempered(logdensity_fn, beta))
                return x, (beta_above - beta) * energy(x)

            proposal, up_terms = jax.lax.scan(
                go_up, bottom, (jax.random.split(up_key, up_from.shape[0]), up_from, up_to))
            log_ratio = jnp.sum(down_terms) + jnp.sum(up_terms)
            new, (accept, rate, _) = static_binomial_sampling(accept_key, log_ratio,
                                                              position, proposal)
            return new, rate, accept

        def init(position, logdensity_fn=None):
            return TemperedTransitionsState(dict(position), jnp.zeros((), jnp.int32))

        def tempered_step(rng_key, state, logdensity_fn):
            position, rate, accept = run(rng_key, state.position, logdensity_fn)
            return (TemperedTransitionsState(position, state.count + 1),
                    TemperedTransitionsInfo(rate.astype(jnp.float32), accept,
                                            jnp.ones((), bool)))

        def plain_step(rng_key, state, logdensity_fn):
            position = base_step(forward, rng_key, state.position, logdensity_fn)
            return (TemperedTransitionsState(position, state.count + 1),
                    TemperedTransitionsInfo(jnp.ones((), jnp.float32), jnp.ones((), bool),
                                            jnp.zeros((), bool)))

        def due(count):
            return count % every == every - 1

        def step(rng_key, state, logdensity_fn, **unused):
            if every == 1:
                return tempered_step(rng_key, state, logdensity_fn)
            return jax.lax.cond(due(state.count),
                                lambda: tempered_step(rng_key, state, logdensity_fn),
                                lambda: plain_step(rng_key, state, logdensity_fn))

        def batch_step(rng_key, states, logdensity_fn):
            """All chains step together, so they share the count: the run-or-not
            decision is taken once (a real branch, not a select under ``vmap``)."""
            keys = jax.random.split(rng_key, states.count.shape[0])

            def over_chains(one_step):
                return lambda: jax.vmap(lambda k, s: one_step(k, s, logdensity_fn))(
                    keys, states)

            if every == 1:
                return over_chains(tempered_step)()
            return jax.lax.cond(due(states.count[0]), over_chains(tempered_step),
                                over_chains(plain_step))

        return Kernel(init, step, refresh=lambda state, logdensity_fn: state,
                      batch_step=batch_step)


class ParallelTemperingState(NamedTuple):
    """``position``: the β = 1 replica (the samples); ``replicas``: every replica,
    leading axis ordered as ``betas``; ``parity``: which neighbour pairs swap next."""

    position: dict
    replicas: dict
    parity: jax.Array


class ParallelTemperingInfo(NamedTuple):
    """``acceptance_rate``: mean base-kernel acceptance over replicas;
    ``swap_attempted`` / ``swap_accepted``: per neighbour pair (β_k, β_{k+1})."""

    acceptance_rate: jax.Array
    swap_attempted: jax.Array
    swap_accepted: jax.Array


@dataclasses.dataclass(frozen=True)
class parallel_tempering(KernelSpec):
    """Parallel tempering: one replica per β, each moved by one base step at p_β, then
    swaps of neighbouring replicas (even pairs and odd pairs on alternate steps), each
    accepted with min(1, exp((β_{k+1} − β_k)(f(x_k) − f(x_{k+1})))). Samples come from
    the β = 1 replica; replicas persist in the state (keep the kernel state between
    updates, as ``PCD`` does).

    All arguments are keyword only.

    Parameters
    ----------
    kernel : KernelSpec, optional
        Base kernel (default: systematic-scan block Gibbs).
    betas : int or sequence of float, optional
        Increasing inverse temperatures ending at 1, or their number spaced uniformly in
        [0, 1] (default 10; the PSMC paper spaces H of them uniformly in [0, 1]).
    """

    _: dataclasses.KW_ONLY
    kernel: Optional[KernelSpec] = None
    betas: Union[int, Sequence[float], None] = None

    def __post_init__(self):
        object.__setattr__(self, "betas", _check_betas("parallel_tempering",
                                                       self.betas, 0.0, 10))
        as_spec(self.kernel, gibbs())

    def build(self, target) -> Kernel:
        kernel = as_spec(self.kernel, gibbs()).build(target)
        betas = jnp.asarray(self.betas)
        num = len(self.betas)
        pair = jnp.arange(num - 1)

        def init(position, logdensity_fn=None):
            replicas = jax.tree.map(lambda a: jnp.broadcast_to(a, (num,) + a.shape),
                                    dict(position))
            return ParallelTemperingState(dict(position), replicas, jnp.zeros((), jnp.int32))

        def move_one(key, x, beta, logdensity_fn):
            density = target.tempered(logdensity_fn, beta)
            state, info = kernel.step(key, kernel.init(x, density), density)
            return state.position, info.acceptance_rate

        def step(rng_key, state, logdensity_fn, **unused):
            move_key, swap_key = jax.random.split(rng_key)
            replicas, acceptance = jax.vmap(move_one, (0, 0, 0, None))(
                jax.random.split(move_key, num), state.replicas, betas, logdensity_fn)
            f = jax.vmap(target.excess(logdensity_fn))(replicas)
            log_ratio = (betas[1:] - betas[:-1]) * (f[:-1] - f[1:])
            attempted = pair % 2 == state.parity
            u = jax.random.uniform(swap_key, (num - 1,))
            accepted = attempted & (jnp.log(u) < log_ratio)
            zero = jnp.zeros((1,), jnp.int32)
            shift = (jnp.concatenate([accepted.astype(jnp.int32), zero])
                     - jnp.concatenate([zero, accepted.astype(jnp.int32)]))
            order = jnp.arange(num) + shift
            replicas = jax.tree.map(lambda a: a[order], replicas)
            top = jax.tree.map(lambda a: a[-1], replicas)
            new = ParallelTemperingState(top, replicas, 1 - state.parity)
            return new, ParallelTemperingInfo(jnp.mean(acceptance), attempted, accepted)

        return Kernel(init, step, refresh=lambda state, logdensity_fn: state)
