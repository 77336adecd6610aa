"""Gradient kernels for real-valued sites, from blackjax: MALA, HMC, random-walk
Metropolis and the unadjusted Langevin algorithm.

A gradient kernel moves the real sites of a model jointly (by default those whose
potential is not quadratic, ``target.structure.moved``; the quadratic ones have exact
Gaussian conditionals that the block kernels draw) with one of blackjax's kernels, the
other sites held fixed. In a model that also has blocks (finite sites, Gaussian real
sites), each step first sweeps them with a block kernel (``blocks=``, Gibbs by default)
and then makes the gradient move: a Metropolis-within-Gibbs sweep, each part leaving the
conditional it moves invariant.

Step sizes are adapted for a population of chains: after each step of a batch of chains
(``Kernel.batch_step``, as PCD, PF and :func:`~numpyro_ugm.sampling.sample` step them),
log ε moves by ``adaptation_rate`` × (mean acceptance − target acceptance), the same ε
for every chain; a chain stepped alone (under ``vmap``) adapts its own ε the same way
from its own acceptance. SMC and PSMC move their particles at a shared ε that they tune
themselves after every sweep (``Kernel.tuning``, with ``smc_adaptation_rate``: a jump
to the ε that the acceptance model says hits the target, see
:class:`~numpyro_ugm.kernels.base.Tuning`). :func:`~numpyro_ugm.kernels.base.end_adaptation`
freezes ε (``sample`` does after its warm-up); while it adapts the kernel is not exactly
invariant, as with any adaptive MCMC, which persistent chains of a moving target accept.
"""

import dataclasses
from typing import Any, ClassVar, NamedTuple, Optional

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from blackjax.mcmc import random_walk

from ..runtime.checks import check_count
from ..structure import Structure
from .base import Kernel, KernelSpec, Tuning

__all__ = ["GradientState", "GradientInfo", "GradientKernelSpec", "mala", "hmc", "rwm",
           "langevin", "moved_sites"]


class GradientState(NamedTuple):
    """One chain: ``position`` (every site), ``inner`` (blackjax's state of the moved
    real sites, with its cached log-density and gradient), ``step_size`` and whether it
    is still adapted (``adapting``, 1 or 0)."""

    position: dict
    inner: Any
    step_size: jax.Array
    adapting: jax.Array


class GradientInfo(NamedTuple):
    """``acceptance_rate`` of the gradient move and the ``step_size`` it used."""

    acceptance_rate: jax.Array
    step_size: jax.Array


def moved_sites(target, sites: Optional[tuple] = None) -> tuple:
    """The real sites a gradient kernel moves: ``sites`` if given (each must be a real
    site), else the non-quadratic ones (``structure.moved``), else every real site."""
    domains = target.state_sites
    if sites is not None:
        bad = [s for s in sites if s not in domains or domains[s].finite]
        if bad:
            raise ValueError(f"gradient kernel: sites {bad} are not real state sites of "
                             f"the model (its real sites: "
                             f"{[s for s, d in domains.items() if not d.finite]})")
        return tuple(sites)
    if target.structure.moved:
        return tuple(target.structure.moved)
    real = tuple(s for s, d in domains.items() if not d.finite)
    if not real:
        raise ValueError("a gradient kernel needs real state sites (ugm.Real); this model "
                         "has only finite ones: use ugm.kernels.gibbs() or metropolis()")
    return real


def _without_sites(structure: Structure, sites: tuple) -> Structure:
    """``structure`` with the variables of ``sites`` taken out of every block."""
    blocks = [{s: i for s, i in b.items() if s not in sites} for b in structure.blocks]
    return structure._replace(blocks=[b for b in blocks if b],
                              moved=tuple(dict.fromkeys(structure.moved + sites)))


@dataclasses.dataclass(frozen=True)
class GradientKernelSpec(KernelSpec):
    """Base of the gradient kernels (subclasses give blackjax's move).

    Parameters
    ----------
    step_size : float, optional
        Initial step size ε (default 0.1); adapted unless ``adapt=False``.
    adapt : bool
        Adapt ε towards ``target_acceptance`` (see the module docstring).
    target_acceptance : float, optional
        Default per kernel: MALA 0.574, HMC 0.65, random walk 0.234.
    adaptation_rate : float
        Gain of the adaptation of log ε per step (chains stepped as a batch or alone).
    smc_adaptation_rate : float
        SMC's and PSMC's tuning of ε (:attr:`~numpyro_ugm.kernels.base.Kernel.tuning`):
        after each sweep of the particles, log ε takes this fraction of the move to the
        ε that the kernel's acceptance model says hits the target
        (:meth:`~numpyro_ugm.kernels.base.Tuning.rescaled`; 1, the default: all of it;
        0: ε stays at ``step_size``). Their target changes at every β and they make
        few sweeps at each, so ε jumps rather than drifts at ``adaptation_rate``; the
        mean acceptance of the whole population is a steady signal for it.
    sites : tuple of str, optional
        The real sites to move (default: :func:`moved_sites`); the model's other sites
        are swept by ``blocks``.
    blocks : KernelSpec, optional
        Block kernel for the other sites (default ``gibbs()``).
    num_sweeps : int
        Sweeps (a block sweep, then the gradient move) per ``step``.
    blocks_first : bool
        Order of the two parts in a step (:meth:`reverse` swaps it).
    """

    step_size: Optional[float] = None
    adapt: bool = True
    target_acceptance: Optional[float] = None
    adaptation_rate: float = 0.05
    sites: Optional[tuple] = None
    blocks: Optional[KernelSpec] = None
    num_sweeps: int = 1
    blocks_first: bool = True
    smc_adaptation_rate: float = 1.0

    #: acceptance the adaptation aims at when ``target_acceptance`` is not given
    default_acceptance: ClassVar[float] = 0.574
    #: power of ε in the acceptance, α(ε) ≈ 2Φ(−c ε^p) (MALA: the error of its
    #: proposal's density ratio grows as ε^(3/2)); see :class:`~.base.Tuning`
    acceptance_exponent: ClassVar[float] = 1.5

    def __post_init__(self):
        name = type(self).__name__
        for field in ("step_size", "target_acceptance", "adaptation_rate",
                      "smc_adaptation_rate"):
            value = getattr(self, field)
            if value is not None and (isinstance(value, (bool, str, bytes))
                                      or not np.isscalar(value)
                                      or not np.isreal(value)):
                raise TypeError(f"{name}: {field} must be a real number, got "
                                f"{value!r} ({type(value).__name__})")
        object.__setattr__(self, "num_sweeps",
                           check_count(name, "num_sweeps", self.num_sweeps))
        if self.step_size is not None and not (np.isfinite(self.step_size)
                                               and self.step_size > 0):
            raise ValueError(f"{name}: step_size must be positive, got {self.step_size}")
        for field in ("adaptation_rate", "smc_adaptation_rate"):
            value = getattr(self, field)
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{name}: {field} must be a finite number >= 0, got "
                                 f"{value}")
        if self.target_acceptance is not None and not 0 < self.target_acceptance < 1:
            raise ValueError(f"{name}: target_acceptance must be in (0, 1), got "
                             f"{self.target_acceptance}")
        if self.sites is not None:
            object.__setattr__(self, "sites", tuple(self.sites))

    # --- the blackjax move (subclasses) --------------------------------------------------
    def init_inner(self, position: dict, logdensity_fn):
        """blackjax's state of the moved sites (``position``: those sites only)."""
        raise NotImplementedError

    def move(self, rng_key, inner, logdensity_fn, step_size, dim):
        """One blackjax step: ``(inner, acceptance_rate)``."""
        raise NotImplementedError

    # --- KernelSpec ----------------------------------------------------------------------
    def reverse(self) -> "GradientKernelSpec":
        blocks = None if self.blocks is None else self.blocks.reverse()
        return dataclasses.replace(self, blocks=blocks, blocks_first=not self.blocks_first)

    def build(self, target) -> Kernel:
        from .blocks import BlockKernelSpec
        from .block_gibbs import gibbs

        sites = moved_sites(target, self.sites)
        rest = _without_sites(target.structure, sites)
        spec = self.blocks if self.blocks is not None else gibbs()
        if not isinstance(spec, BlockKernelSpec):
            raise TypeError(f"{type(self).__name__}: blocks must be a block kernel "
                            f"(ugm.kernels.gibbs() or metropolis()), got {spec!r}")
        sweep = (spec.build_blocks(dataclasses.replace(target, structure=rest))
                 if rest.blocks else None)
        dim = sum(target.state_sites[s].num_variables for s in sites)
        initial = 0.1 if self.step_size is None else float(self.step_size)
        goal = float(self.default_acceptance if self.target_acceptance is None
                     else self.target_acceptance)
        init, refresh, run = self._moves(sites, sweep, dim, initial)
        step, batch_step = _adaptive_steps(run, Tuning(initial, goal, self.adaptation_rate))
        return Kernel(init, step, refresh=refresh, batch_step=batch_step,
                      tuning=(Tuning(initial, goal, self.smc_adaptation_rate,
                                     self.acceptance_exponent) if self.adapt else None))

    def _moves(self, sites, sweep, dim, initial):
        """``init``, ``refresh`` and ``run(rng_key, state, logdensity_fn, step_size) ->
        (state, mean acceptance)``: ``num_sweeps`` gradient moves of ``sites``, each
        with a block sweep of the other sites (``sweep``; None: there are none)."""
        adapt, steps = self.adapt, self.num_sweeps

        def conditional(logdensity_fn, position):
            return lambda sub: logdensity_fn({**position, **sub})

        def inner_at(position, logdensity_fn):
            return self.init_inner({s: position[s] for s in sites},
                                   conditional(logdensity_fn, position))

        def init(position, logdensity_fn):
            position = dict(position)
            dtype = jax.tree.leaves(position)[0].dtype
            return GradientState(position, inner_at(position, logdensity_fn),
                                 jnp.asarray(initial, dtype), jnp.asarray(float(adapt), dtype))

        def refresh(state, logdensity_fn):
            if sweep is not None and self.blocks_first:
                return state  # the block sweep that starts every step recomputes inner
            return state._replace(inner=inner_at(state.position, logdensity_fn))

        def gradient_move(rng_key, state, logdensity_fn, step_size):
            inner, accepted = self.move(rng_key, state.inner,
                                        conditional(logdensity_fn, state.position),
                                        step_size, dim)
            return state._replace(position={**state.position, **inner.position},
                                  inner=inner), accepted

        def block_move(rng_key, state, logdensity_fn):
            new, _ = sweep.step(rng_key, sweep.init(state.position, logdensity_fn),
                                logdensity_fn)
            position = {**state.position, **new.position}
            return state._replace(position=position,
                                  inner=inner_at(position, logdensity_fn))

        def one(rng_key, state, logdensity_fn, step_size):
            if sweep is None:
                return gradient_move(rng_key, state, logdensity_fn, step_size)
            key_blocks, key_move = jax.random.split(rng_key)
            if self.blocks_first:
                state = block_move(key_blocks, state, logdensity_fn)
            state, accepted = gradient_move(key_move, state, logdensity_fn, step_size)
            if not self.blocks_first:
                state = block_move(key_blocks, state, logdensity_fn)
            return state, accepted

        def run(rng_key, state, logdensity_fn, step_size):
            if steps == 1:
                return one(rng_key, state, logdensity_fn, step_size)

            def body(i, carry):
                state, total = carry
                state, accepted = one(jax.random.fold_in(rng_key, i), state, logdensity_fn,
                                      step_size)
                return state, total + accepted

            state, total = jax.lax.fori_loop(0, steps, body,
                                             (state, jnp.zeros((), state.step_size.dtype)))
            return state, total / steps

        return init, refresh, run


def _adaptive_steps(run, tuning):
    """``step`` (one chain) and ``batch_step`` (many chains sharing one step size) around
    ``run``, adapting the step size towards ``tuning``'s acceptance while
    ``state.adapting``."""

    def adapted(step_size, adapting, acceptance):
        return jnp.where(adapting > 0, tuning.adapted(step_size, acceptance), step_size)

    def step(rng_key, state, logdensity_fn, step_size=None, **unused):
        eps = state.step_size if step_size is None else step_size
        state, accepted = run(rng_key, state, logdensity_fn, eps)
        state = state._replace(step_size=adapted(state.step_size, state.adapting, accepted))
        return state, GradientInfo(accepted, eps)

    def batch_step(rng_key, states, logdensity_fn):
        keys = jax.random.split(rng_key, states.step_size.shape[0])
        states, accepted = jax.vmap(lambda k, s: run(k, s, logdensity_fn,
                                                     s.step_size))(keys, states)
        eps = states.step_size
        mean = jnp.mean(accepted)
        states = states._replace(step_size=adapted(eps, states.adapting, mean))
        return states, GradientInfo(accepted, eps)

    return step, batch_step


@dataclasses.dataclass(frozen=True)
class mala(GradientKernelSpec):
    """Metropolis-adjusted Langevin (``blackjax.mala``): proposal x + ε ∇f(x) + √(2ε) ξ,
    accepted by Metropolis-Hastings. Parameters as in :class:`GradientKernelSpec`."""

    def init_inner(self, position, logdensity_fn):
        return blackjax.mala.init(position, logdensity_fn)

    def move(self, rng_key, inner, logdensity_fn, step_size, dim):
        inner, info = blackjax.mala.build_kernel()(rng_key, inner, logdensity_fn, step_size)
        return inner, info.acceptance_rate.astype(step_size.dtype)


@dataclasses.dataclass(frozen=True)
class hmc(GradientKernelSpec):
    """Hamiltonian Monte Carlo (``blackjax.hmc``) with an identity mass matrix and
    ``num_integration_steps`` leapfrog steps of size ε. Other parameters as in
    :class:`GradientKernelSpec`."""

    num_integration_steps: int = 10
    default_acceptance: ClassVar[float] = 0.65
    acceptance_exponent: ClassVar[float] = 2.0

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "num_integration_steps", check_count(
            "hmc", "num_integration_steps", self.num_integration_steps))

    def init_inner(self, position, logdensity_fn):
        return blackjax.hmc.init(position, logdensity_fn)

    def move(self, rng_key, inner, logdensity_fn, step_size, dim):
        inner, info = blackjax.hmc.build_kernel()(
            rng_key, inner, logdensity_fn, step_size, jnp.ones(dim, step_size.dtype),
            self.num_integration_steps)
        return inner, info.acceptance_rate.astype(step_size.dtype)


@dataclasses.dataclass(frozen=True)
class rwm(GradientKernelSpec):
    """Random-walk Metropolis (``blackjax.additive_step_random_walk`` with Normal steps of
    standard deviation ε); uses no gradient. Parameters as in
    :class:`GradientKernelSpec`."""

    default_acceptance: ClassVar[float] = 0.234
    acceptance_exponent: ClassVar[float] = 1.0

    def init_inner(self, position, logdensity_fn):
        return blackjax.additive_step_random_walk.init(position, logdensity_fn)

    def move(self, rng_key, inner, logdensity_fn, step_size, dim):
        inner, info = blackjax.additive_step_random_walk.build_kernel()(
            rng_key, inner, logdensity_fn, random_walk.normal(step_size))
        return inner, info.acceptance_rate.astype(step_size.dtype)


class _LangevinState(NamedTuple):
    position: dict


@dataclasses.dataclass(frozen=True)
class langevin(GradientKernelSpec):
    """Unadjusted Langevin: x + ε ∇f(x) + √(2ε) ξ, always accepted (blackjax's SGLD
    step with the full gradient). Biased by O(ε) — the usual EBM training recipe, kept
    for comparison with MALA; ε is not adapted (default 0.01). Parameters as in
    :class:`GradientKernelSpec`."""

    adapt: bool = False

    def __post_init__(self):
        super().__post_init__()
        if self.adapt:
            raise ValueError("langevin: no acceptance to adapt the step size to; give "
                             "step_size")
        if self.step_size is None:
            object.__setattr__(self, "step_size", 0.01)

    def init_inner(self, position, logdensity_fn):
        return _LangevinState(position)

    def move(self, rng_key, inner, logdensity_fn, step_size, dim):
        grad = jax.grad(logdensity_fn)
        position = blackjax.sgld.build_kernel()(
            rng_key, inner.position, lambda x, unused: grad(x), None, step_size)
        return _LangevinState(position), jnp.ones((), step_size.dtype)
