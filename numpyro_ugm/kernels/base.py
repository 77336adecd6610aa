"""The kernel contract shared by every sampler of the discrete state.

Kernels follow blackjax: a :class:`Kernel` has ``init(position, logdensity_fn)`` and
``step(rng_key, state, logdensity_fn, **unused) -> (state, info)``, with NamedTuple states
whose ``position`` is a dict of site -> model-representation values of **one** chain
(``jax.vmap`` over chains). Both are pure and ``jax.jit``-able, so a kernel is a valid
inner kernel of ``blackjax.smc`` and of the tempered kernels.

What users pass to estimators and to :func:`~numpyro_ugm.sampling.sample` is a
:class:`KernelSpec`: a description (``gibbs(scan="random")``) that is bound to a model's
:class:`~numpyro_ugm.model.target.Target` (its domains and blocks) by ``spec.build(target)``,
once per target (:func:`bound_kernel`).

Vocabulary: a kernel's ``step`` makes ``num_sweeps`` sweeps (a sweep visits every block,
and a gradient kernel's sweep ends with its gradient move); an estimator, or the numpyro
``gibbs_fn``, runs ``num_mcmc_steps`` kernel steps per move (blackjax's name). The two
multiply: ``PCD(100, num_mcmc_steps=5, kernel=gibbs(num_sweeps=2))`` makes 10 sweeps per
update.
"""

import weakref
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

from ..conditionals import block_logits, scatter


class Kernel(NamedTuple):
    """A kernel bound to a model: blackjax's ``init`` / ``step`` pair, and ``refresh``.

    ``refresh(state, logdensity_fn) -> state`` carries a state kept between parameter
    updates over to a new target (persistent chains): ``None`` means the state holds
    nothing but the position and values of the old target, so it is rebuilt with
    ``init``; kernels with more state (parallel tempering's replicas) keep it.

    ``batch_step(rng_key, states, logdensity_fn) -> (states, info)`` steps a batch of
    chains (leading axis) at once; ``None`` means ``step`` vmapped. ``tuning`` (a
    :class:`Tuning`) says that ``step`` takes a ``step_size`` a population may tune. Kernels whose step
    takes a decision shared by all chains (tempered transitions every m-th step) give
    one, so the decision is taken once, outside ``vmap``, where ``lax.cond`` skips the
    branch not taken (under ``vmap`` it would compute both).
    """

    init: Callable
    step: Callable
    refresh: Callable = None
    batch_step: Callable = None
    tuning: "Tuning" = None


class Tuning(NamedTuple):
    """How a population of chains may tune a kernel's ``step_size`` (a keyword of its
    ``step`` that overrides the one in its state), from ``step_size`` towards
    ``target_acceptance`` after each step: by :meth:`adapted` (persistent chains, a
    small ``rate``) or by :meth:`rescaled` (SMC's moves,
    :func:`~numpyro_ugm.estimators.tempering.temper`, as blackjax's
    ``inner_kernel_tuning`` updates the parameters of an SMC sampler's inner kernel from
    the previous step's information). ``exponent``: the power of ε in the kernel's
    acceptance, α(ε) ≈ 2Φ(−c ε^exponent) (MALA 3/2, HMC 2, a random walk 1)."""

    step_size: float
    target_acceptance: float
    rate: float
    exponent: float = 1.0

    def adapted(self, step_size, acceptance):
        """The next step size after a step of mean acceptance ``acceptance``: log ε
        moves by ``rate`` × (acceptance − target)."""
        return jnp.exp(jnp.log(step_size)
                       + self.rate * (jnp.nan_to_num(acceptance) - self.target_acceptance))

    def rescaled(self, step_size, acceptance):
        """The next step size after a step of mean acceptance ``acceptance``: the one
        that would give the target if α(ε) = 2Φ(−c ε^exponent) held with the c that
        gives ``acceptance`` at ``step_size`` (``rate`` = 1; a smaller ``rate`` takes
        that fraction of the move in log ε). The acceptance is clipped to [0.01, 0.99]:
        one step moves ε by at most a bounded factor."""
        dtype = jnp.result_type(step_size)
        clipped = jnp.clip(jnp.nan_to_num(acceptance), 0.01, 0.99).astype(dtype)
        spread = lambda a: jnp.log(-jax.scipy.special.ndtri(a / 2))  # noqa: E731
        move = (spread(jnp.asarray(self.target_acceptance, dtype)) - spread(clipped)) \
            / self.exponent
        return jnp.exp(jnp.log(step_size) + self.rate * move)


class KernelInfo(NamedTuple):
    """Per-step information every kernel reports."""

    acceptance_rate: jax.Array


class KernelSpec:
    """Base class of kernel descriptions; subclasses implement :meth:`build`."""

    def build(self, target) -> Kernel:
        """Bind to ``target`` (a :class:`~numpyro_ugm.model.target.Target`) -> :class:`Kernel`."""
        raise NotImplementedError

    def reverse(self) -> "KernelSpec":
        """The reverse operator T̃ of this kernel's step T, with p(x) T(x'←x) =
        T̃(x←x') p(x') (needed by tempered transitions). The default, ``self``, is right
        for reversible kernels; kernels made of sub-transitions in a fixed order return
        the spec that applies them in the reverse order."""
        return self

    def __call__(self, target) -> Kernel:
        return self.build(target)


#: kernels already built, per target (weakly: a target that is gone takes its kernels)
_BUILT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def bound_kernel(spec: "KernelSpec", target) -> Kernel:
    """``spec.build(target)``, built once per target and (hashable) spec: estimators and
    samplers ask for their kernel at every update, and get the one built at the first.
    The build runs eagerly even inside a traced function (the first update is often
    traced), so that the arrays it makes (e.g. a schedule of βs) are constants, not
    tracers that would leak into the next trace."""
    try:
        built = _BUILT.setdefault(target, {})
        return built[spec]
    except KeyError:
        with jax.ensure_compile_time_eval():
            kernel = built[spec] = spec.build(target)
        return kernel
    except TypeError:  # unhashable spec or a target that takes no weak reference
        return spec.build(target)


def init_chains(kernel: Kernel, position: dict, logdensity_fn: Callable):
    """Kernel states of a batch of chains: ``kernel.init`` vmapped over the leading axis
    of ``position`` (a dict of site -> ``(num_chains, ...)`` values, model
    representation)."""
    return jax.vmap(lambda x: kernel.init(x, logdensity_fn))(position)


def refresh_state(kernel: Kernel, state, logdensity_fn: Callable):
    """One chain's kernel state carried over to a new log-density (persistent chains,
    a new conditioning, the next temperature): ``kernel.refresh`` if the kernel has one,
    else a fresh state at the same position (``kernel.init``)."""
    if kernel.refresh is not None:
        return kernel.refresh(state, logdensity_fn)
    return kernel.init(state.position, logdensity_fn)


def refresh_chains(kernel: Kernel, states, logdensity_fn: Callable):
    """:func:`refresh_state` of every chain of a batch of kernel states (leading axis =
    chains)."""
    return jax.vmap(lambda s: refresh_state(kernel, s, logdensity_fn))(states)


def step_chains(kernel, rng_key, states, logdensity_fn):
    """One step of every chain of a batch of kernel states (leading axis = chains):
    ``kernel.batch_step`` if the kernel has one, else ``kernel.step`` vmapped with a key
    per chain."""
    if kernel.batch_step is not None:
        return kernel.batch_step(rng_key, states, logdensity_fn)
    keys = jax.random.split(rng_key, jax.tree.leaves(states.position)[0].shape[0])
    return jax.vmap(lambda k, s: kernel.step(k, s, logdensity_fn))(keys, states)


def end_adaptation(states):
    """Kernel states whose adaptation (a gradient kernel's step size) stops here, e.g.
    after a warm-up; states of kernels that adapt nothing are returned as they are."""
    if hasattr(states, "adapting"):
        return states._replace(adapting=jnp.zeros_like(states.adapting))
    return states


def sample_labels(rng_key, logits):
    """Draw labels from per-variable logits (..., K).

    One uniform per variable: a comparison with the sigmoid of the log-odds if K = 2,
    otherwise inversion of the cumulative distribution (K exponentials, no Gumbel noise).
    """
    return labels_from_uniforms(jax.random.uniform(rng_key, logits.shape[:-1], logits.dtype),
                                logits)


def labels_from_uniforms(uniforms, logits):
    """Labels from per-variable logits (..., K), given one uniform in [0, 1) per variable
    (shape ``logits.shape[:-1]``): the draw of :func:`sample_labels`."""
    if logits.shape[-1] == 2:
        return _second(uniforms, logits[..., 1] - logits[..., 0]).astype(jnp.int32)
    weights = jnp.exp(logits - jnp.max(logits, axis=-1, keepdims=True))
    cumulative = jnp.cumsum(weights, axis=-1)
    u = uniforms * cumulative[..., -1]
    return jnp.sum(cumulative[..., :-1] <= u[..., None], axis=-1, dtype=jnp.int32)


def sample_values(rng_key, logits, domain, dtype):
    """Draw values (model representation) of variables of ``domain`` from their logits.

    Parameters
    ----------
    rng_key : jax PRNGKey
    logits : array (n, K)
        Conditional log-probabilities (up to a constant per variable).
    domain : Domain
    dtype : dtype of the result

    Returns
    -------
    array ``(n, *domain.event_shape)``
    """
    uniforms = jax.random.uniform(rng_key, logits.shape[:-1], logits.dtype)
    return values_from_uniforms(uniforms, logits, domain, dtype)


def draw_block(rng_key, logdensity_fn, state, domains, block, multilinear=True):
    """``state`` with the variables of ``block`` (flat indices per site, ``None``: the
    whole site), independent given the rest, drawn from their exact conditionals."""
    logits = block_logits(logdensity_fn, state, domains, block, multilinear)
    keys = jax.random.split(rng_key, len(block))
    return {**state, **{s: scatter(state[s], domains[s], idx, sample_values(
        k, logits[s], domains[s], state[s].dtype)) for k, (s, idx) in zip(keys, block.items())}}


def values_from_uniforms(uniforms, logits, domain, dtype):
    """The draw of :func:`sample_values` given its uniforms (one per variable, shape
    ``logits.shape[:-1]``), so that a caller can draw the uniforms of many blocks, or of
    many chains, at once."""
    if not domain.finite:
        return gaussian_from_uniforms(uniforms, logits).astype(dtype)
    if domain.two_valued:
        low, high = (jnp.asarray(v, dtype) for v in domain.values)
        return jnp.where(_second(uniforms, logits[..., 1] - logits[..., 0]), high, low)
    return domain.label_to_model(labels_from_uniforms(uniforms, logits), dtype)


def gaussian_from_uniforms(uniforms, natural):
    """Draws of N(η/λ, 1/λ) from uniforms (one per variable) by inversion, given the
    natural parameters ``natural[..., 0] = η``, ``natural[..., 1] = λ`` (a real
    variable's conditional, :func:`~numpyro_ugm.conditionals.gaussian_logits`): the
    draw of :func:`gaussian_from_normals` from :func:`standard_normals`."""
    return gaussian_from_normals(standard_normals(uniforms), natural)


def standard_normals(uniforms):
    """Standard normal draws from uniforms on [0, 1), by inversion of the normal
    distribution function (0 is read as the smallest positive float)."""
    tiny = jnp.finfo(uniforms.dtype).tiny
    return jax.scipy.special.ndtri(jnp.clip(uniforms, tiny, 1.0))


def gaussian_from_normals(normals, natural):
    """Draws of N(η/λ, 1/λ) from standard normals ``normals`` (one per variable), given
    the natural parameters ``natural[..., 0] = η``, ``natural[..., 1] = λ``. A precision
    λ ≤ 0 (a potential that is not normalizable in the variable) gives NaN, which the
    samplers report as a diverging chain."""
    eta, precision = natural[..., 0], natural[..., 1]
    safe = jnp.where(precision > 0, precision, jnp.nan)
    return (eta + jnp.sqrt(safe) * normals) / safe


def _second(uniforms, log_odds):
    """Bernoulli(sigmoid(log_odds)) draws from uniforms."""
    return uniforms < jax.nn.sigmoid(log_odds)


def as_spec(kernel: Optional["KernelSpec"], default: Optional["KernelSpec"]
            ) -> Optional["KernelSpec"]:
    """``None`` -> ``default``; a :class:`KernelSpec` as is; anything else is an error."""
    if kernel is None:
        return default
    if not isinstance(kernel, KernelSpec):
        raise TypeError(f"kernel must be a ugm.kernels spec such as ugm.kernels.gibbs(), "
                        f"got {kernel!r}")
    return kernel
