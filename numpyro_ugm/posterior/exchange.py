"""The exchange algorithm: MCMC on the parameters θ of an undirected model, whose
likelihood has an intractable normalizer Z(θ).

Murray, Ghahramani & MacKay (UAI 2006). From θ, propose θ′ (a Gaussian random walk in
the unconstrained space), draw auxiliary cases y_1..N from p(·; θ′) — as many as there are
observed cases x_1..N — and accept θ′ with probability

    min(1, [p(θ′) Π_n exp F(x_n; θ′) Π_n exp F(y_n; θ)]
           / [p(θ) Π_n exp F(x_n; θ) Π_n exp F(y_n; θ′)]),

in which every Z cancels. With exact auxiliary draws the chain targets p(θ | x) exactly.
They come from enumeration for small models (:func:`numpyro_ugm.exact.sampler`); for large
ones a run of ``num_aux_steps`` steps of any of the package's kernels, started from the
observed cases, stands in for them (Caimo & Friel 2011, the method of R's Bergm): the
target is then approximate, and the bias shrinks as the run grows. For a conditional
model (CRF) with per-example ``inputs``, auxiliary case n is drawn under the inputs of
observed case n.

:class:`Exchange` is a ``numpyro.infer.mcmc.MCMCKernel``: ``numpyro.infer.MCMC`` runs it
(chains sequential or vectorized; "parallel" runs the one-chain step per device), and
its samples work with numpyro's diagnostics (``print_summary``,
``effective_sample_size``, ``split_gelman_rubin``).
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from numpyro.infer.mcmc import MCMCKernel
from numpyro.util import is_prng_key

from ..runtime.checks import check_count, same_arguments
from ..evaluate import exact
from ..kernels import gibbs
from ..kernels.base import as_spec, init_chains, step_chains
from ..model.ugm import UGM
from .density import Posterior

__all__ = ["Exchange", "ExchangeState", "MAX_EXACT_CONFIGURATIONS", "FISHER_DRAWS"]

#: largest number of enumerated configurations for which the default auxiliary draw is
#: exact
MAX_EXACT_CONFIGURATIONS = 2 ** 16
#: fewest auxiliary draws behind an estimate of the Fisher information (the proposal's
#: shape)
FISHER_DRAWS = 256


class ExchangeState(NamedTuple):
    """State of :class:`Exchange` (one chain, or a batch of chains when vectorized).

    Attributes
    ----------
    z : dict
        The sampled parameter sites, unconstrained.
    log_density : scalar
        ``log p(θ) + log |J| + Σ_n F(x_n; θ)`` at ``z``.
    accept_prob : scalar
        Acceptance probability of the last proposal.
    mean_accept_prob : scalar
        Mean acceptance probability over the current phase (warmup, then sampling).
    step_size : scalar
        Scale of the random-walk proposal.
    scale_tril : (d, d) array
        Shape of the proposal, step_size · scale_tril · ε with ε ~ N(0, I): a square
        root of the inverse of the posterior's precision at the Laplace approximation,
        N · I(θ) + the prior's (I: the Fisher information, from auxiliary draws).
    i : int32 scalar
        Steps done.
    rng_key : jax PRNGKey
    """

    z: dict
    log_density: jax.Array
    accept_prob: jax.Array
    mean_accept_prob: jax.Array
    step_size: jax.Array
    scale_tril: jax.Array
    i: jax.Array
    rng_key: jax.Array


class Exchange(MCMCKernel):
    """``numpyro.infer.MCMC`` kernel for the posterior of a UGM's parameters.

    The model declares its parameters θ with priors (``numpyro.sample(name, prior)``),
    its discrete state with the package's domains and its log-potential with
    ``numpyro.factor``; ``data`` holds observed cases of the state. The sampled sites
    are the parameter sites with a prior (``numpyro.param`` sites and sites given in
    ``params`` are held fixed).

    Parameters
    ----------
    model : callable or UGM
        numpyro model function; its arguments are those given to ``MCMC.run``.
    data : dict of str -> array
        Observed state sites with a leading example axis (data representation). Latent
        state sites (absent from ``data``) must be summable in closed form (an RBM's
        hidden layer).
    num_aux_steps : int, optional
        ``None`` (default): exact auxiliary draws by enumeration, which needs a model
        with at most :data:`MAX_EXACT_CONFIGURATIONS` enumerated configurations. An
        integer: the auxiliary cases are the observed cases moved by this many steps of
        ``kernel`` at θ′ (the approximate exchange algorithm); the longer, the closer
        to the exact posterior.
    kernel : KernelSpec, optional
        The kernel of the auxiliary run (default ``ugm.kernels.gibbs()``: one sweep per
        step).
    params : dict, optional
        Fixed values (constrained) of parameter sites that are not sampled.
    step_size : float, optional
        Initial scale of the random walk relative to the proposal's shape (default
        2.38 / sqrt(d)).
    adapt : bool
        During warmup, tune the step size towards ``target_accept_prob`` (Robbins-Monro
        on its log) and re-shape the proposal at the current θ after W/8, W/4 and W/2
        warmup steps. The shape is always set at the start: the inverse of
        N · I(θ) + the prior's precision, I(θ) = Cov_θ[∇F] the Fisher information
        estimated from at least :data:`FISHER_DRAWS` auxiliary draws.
    target_accept_prob : float
        Acceptance rate the step size is tuned to (default 0.25).
    inputs : dict of str -> array, optional
        A CRF's per-example inputs: model keyword arguments with a leading example axis,
        one row per case of ``data`` (give ``MCMC.run`` one example's row, with which
        the model is traced). Case n's potential and auxiliary draw use row n. A model
        argument with one row per case that the potential sums is refused (give it
        here).

    Notes
    -----
    ``init_params`` of ``MCMC.run`` are starting values of the sampled sites in the
    unconstrained space (numpyro's convention), each of the site's unconstrained shape
    (with a leading chain axis for vectorized chains); by default every chain starts at
    the prior medians. Samples (``get_samples()``) are constrained values of the sampled
    sites; ``extra_fields=("accept_prob", "step_size")`` collects those fields.

    Examples
    --------
    >>> mcmc = MCMC(ugm.posterior.Exchange(model, {"x": x}), num_warmup=1000,
    ...             num_samples=2000, num_chains=4, chain_method="vectorized")
    >>> mcmc.run(jax.random.PRNGKey(0))                       # doctest: +SKIP
    >>> mcmc.print_summary()                                    # doctest: +SKIP
    """

    sample_field = "z"

    def __init__(self, model: Callable | UGM, data: dict, *, num_aux_steps: int | None = None,
                 kernel: Any = None, params: dict | None = None,
                 step_size: float | None = None, adapt: bool = True,
                 target_accept_prob: float = 0.25, inputs: dict | None = None):
        self._model, self._data, self._params, self._inputs = model, data, params, inputs
        self.num_aux_steps = (None if num_aux_steps is None
                              else check_count("Exchange", "num_aux_steps", num_aux_steps))
        self._kernel_spec = as_spec(kernel, gibbs())
        if step_size is not None and not (np.isfinite(step_size) and step_size > 0):
            raise ValueError(f"Exchange: step_size must be a positive number, got {step_size}")
        if not 0.0 < target_accept_prob < 1.0:
            raise ValueError(f"Exchange: target_accept_prob must be in (0, 1), got "
                             f"{target_accept_prob}")
        self._step_size, self.adapt = step_size, bool(adapt)
        self.target_accept_prob = float(target_accept_prob)
        self.posterior = None
        self._param_space = None  # kept by pickling, for postprocess_fn
        self._sample_fn = None
        self._built = None

    @property
    def model(self):
        return self._model

    # --- setup ------------------------------------------------------------------------
    def _auxiliary(self, post: Posterior) -> Callable:
        """``draw(params, key) -> states``: N auxiliary cases from p(·; θ) (model
        representation, every state site)."""
        m, n = post.model, post.num_examples
        if post.inputs is not None:
            return _per_example_draw(post, self.num_aux_steps, self._kernel_spec)
        if self.num_aux_steps is None and post.target.structure.moved:
            raise ValueError(
                f"Exchange: exact auxiliary draws need a potential quadratic in the real "
                f"sites given the finite ones, and it is not quadratic in the real "
                f"site(s) {list(post.target.structure.moved)}; give num_aux_steps for the "
                "approximate exchange algorithm (a run of the kernel from the observed "
                "cases)")
        if self.num_aux_steps is None:
            size = exact.num_enumerated(m)[0]
            if size > MAX_EXACT_CONFIGURATIONS:
                raise ValueError(
                    f"Exchange: exact auxiliary draws would enumerate {size:.3g} "
                    f"configurations (more than {MAX_EXACT_CONFIGURATIONS}); give "
                    "num_aux_steps for the approximate exchange algorithm (a run of the "
                    "kernel from the observed cases)")
            return exact.sampler(m, n)
        target, num_steps, data = post.target, self.num_aux_steps, post.data
        kernel = self._kernel_spec.build(target)

        def draw(params, key):
            f = target.logdensity_fn(params)
            init_key, run_key = jax.random.split(key)
            start = {**target.random_state(init_key, (n,)), **data}
            states = init_chains(kernel, start, f)

            def sweep(i, s):
                return step_chains(kernel, jax.random.fold_in(run_key, i), s, f)[0]

            return jax.lax.fori_loop(0, num_steps, sweep, states).position

        return draw

    def init(self, rng_key, num_warmup, init_params, model_args, model_kwargs):
        """Trace the model, check the data and start the chain(s).

        Parameters
        ----------
        rng_key : jax PRNGKey
            One key, or a batch of keys (``chain_method="vectorized"``).
        num_warmup : int
            Warmup steps (adaptation, when ``adapt``).
        init_params : dict or None
            Starting values of the sampled sites, unconstrained.
        model_args, model_kwargs
            Arguments of the model.

        Returns
        -------
        ExchangeState
        """
        batched = not is_prng_key(rng_key)
        key = ((model_args, model_kwargs), int(num_warmup), batched)
        if self._built is None or not (same_arguments(self._built[0][0], key[0])
                                       and self._built[0][1:] == key[1:]):
            self._built = key, self._build(num_warmup, model_args, model_kwargs, batched)
        self.posterior, start_fn, self._sample_fn = self._built[1]
        self._param_space = self.posterior.param_space
        num_chains = rng_key.shape[0] if batched else None
        state = start_fn(rng_key, _start_values(self.posterior, init_params, num_chains))
        if not bool(jnp.all(jnp.isfinite(state.log_density))):
            raise FloatingPointError(
                f"Exchange: the log posterior (but for log Z) is not finite at the starting "
                f"values of {list(self.posterior.sites)}; give finite init_params inside "
                f"the prior's support")
        return state

    def _build(self, num_warmup, model_args, model_kwargs, batched):
        """Trace the model and build the jitted start ``(keys, values) -> state`` and
        the step ``state -> state``: once per model arguments, warmup length and chain
        layout, so that a second ``MCMC.run`` reuses the compiled programs."""
        post = Posterior("Exchange", self._model, self._data, model_args, model_kwargs,
                         self._params, self._inputs)
        draw = self._auxiliary(post)
        start = post.init_position()
        flat, unravel = ravel_pytree(start)
        dim = flat.size
        step0 = 2.38 / np.sqrt(dim) if self._step_size is None else self._step_size
        num_warmup = int(num_warmup)
        reshape = _reshape_fn(post, draw, unravel)
        step = _step_fn(post, draw, unravel, num_warmup, self.adapt,
                        self.target_accept_prob)
        milestones = jnp.asarray([num_warmup // 8, num_warmup // 4, num_warmup // 2]
                                 if self.adapt and num_warmup >= 8 else [-1])

        def one(key, values):
            z = {**start, **{n: jnp.asarray(v, flat.dtype).reshape(jnp.shape(start[n]))
                             for n, v in values.items()}}
            zero = jnp.zeros((), flat.dtype)
            state = ExchangeState(z, post.log_unnormalized(z), zero, zero,
                                  jnp.asarray(step0, flat.dtype),
                                  jnp.eye(dim, dtype=flat.dtype),
                                  jnp.zeros((), jnp.int32), key)
            return reshape(state)

        start_fn = jax.jit(jax.vmap(one) if batched else one)
        reshape_all, step_all = (jax.vmap(reshape), jax.vmap(step)) if batched else (
            reshape, step)

        def sample(state):  # the step count is the same in every chain
            i = state.i[0] if batched else state.i
            state = jax.lax.cond(jnp.any(i == milestones), reshape_all, lambda s: s, state)
            return step_all(state)

        return post, start_fn, sample

    # --- MCMCKernel -------------------------------------------------------------------
    def sample(self, state, model_args, model_kwargs):
        """One exchange step: propose, draw auxiliary cases at the proposal, accept or
        reject (and adapt, during warmup).

        Returns
        -------
        ExchangeState
        """
        if self._sample_fn is None:
            raise RuntimeError("Exchange: `init` must be called before `sample`")
        return self._sample_fn(state)

    def postprocess_fn(self, model_args, model_kwargs):
        """Unconstrained samples -> constrained values of the sampled sites."""
        if self._param_space is None:
            return lambda z: z  # noqa: E731
        return self._param_space.to_constrained

    def get_diagnostics_str(self, state):
        return (f"acc. prob={float(jnp.mean(state.mean_accept_prob)):.2f}, "
                f"step size={float(jnp.mean(state.step_size)):.3g}")

    def __getstate__(self):
        """Everything but what ``init`` rebuilds (the traced posterior, the compiled
        programs); ``MCMC`` calls ``init`` again when it continues a run."""
        state = self.__dict__.copy()
        state.update(_sample_fn=None, _built=None, posterior=None)
        if isinstance(self._model, UGM):  # a copy without its target's closures
            state["_model"] = self._model.replace()
        return state


def _start_values(post: Posterior, init_params: dict | None, num_chains: int | None) -> dict:
    """``init_params`` (unconstrained starting values of sampled sites) checked against
    the sites and their unconstrained shapes (with a leading axis of ``num_chains`` for
    vectorized chains)."""
    init_params = dict(init_params or {})
    unknown = [n for n in init_params if n not in post.sites]
    if unknown:
        raise KeyError(f"Exchange: init_params has site(s) {unknown} that are not "
                       f"sampled sites ({list(post.sites)})")
    start = post.init_position()
    values = {}
    for name, value in init_params.items():
        value = jnp.asarray(value)
        shape = tuple(jnp.shape(start[name]))
        expected = shape if num_chains is None else (num_chains,) + shape
        if tuple(value.shape) != expected:
            chains = ("" if num_chains is None else
                      f", with a leading axis for the {num_chains} vectorized chains")
            raise ValueError(f"Exchange: init_params[{name!r}] has shape {value.shape}; "
                             f"the sampled site {name!r} has shape {shape} in the "
                             f"unconstrained space: expected {expected}{chains}")
        values[name] = value
    return values


def _per_example_draw(post: Posterior, num_aux_steps: int | None, kernel_spec: Any
                      ) -> Callable:
    """The auxiliary draw of a CRF: case n from p(·; θ, inputs_n), exactly (enumeration,
    one example at a time) or by ``num_aux_steps`` steps of the kernel from the observed
    case n under its inputs."""
    m, target, inputs, n = post.model, post.target, post.inputs, post.num_examples
    if num_aux_steps is None:
        size = exact.num_enumerated(m)[0]
        if size > MAX_EXACT_CONFIGURATIONS:
            raise ValueError(
                f"Exchange: exact auxiliary draws would enumerate {size:.3g} configurations "
                f"per example (more than {MAX_EXACT_CONFIGURATIONS}); give num_aux_steps "
                "for the approximate exchange algorithm")

        def draw(params, key):
            def one(example, k):
                return jax.tree.map(lambda a: a[0],
                                    exact.sampler(target.bind(**example), 1)(params, k))

            return jax.vmap(one)(inputs, jax.random.split(key, n))

        return draw
    kernel = kernel_spec.build(target)

    def draw(params, key):
        init_key, run_key = jax.random.split(key)
        start = {**target.random_state(init_key, (n,)), **post.data}

        def one(example, state, k):
            f = target.bind(**example).logdensity_fn(params)

            def sweep(i, s):
                return kernel.step(jax.random.fold_in(k, i), s, f)[0]

            return jax.lax.fori_loop(0, num_aux_steps, sweep, kernel.init(state, f)).position

        return jax.vmap(one)(inputs, start, jax.random.split(run_key, n))

    return draw


def _reshape_fn(post: Posterior, draw: Callable, unravel: Callable) -> Callable:
    """``state -> state`` with the proposal's shape set at the current θ: a square root
    of (N · I(θ) + P)⁻¹, I(θ) = Cov_θ[∇_u F(y; θ)] over at least :data:`FISHER_DRAWS`
    auxiliary draws y and P = −∇² log p(u) the prior's precision (the shape is kept when
    that matrix is not positive definite)."""
    n = post.num_examples
    repeats = -(-FISHER_DRAWS // n)
    observed = tuple(post.data)
    inputs = (None if post.inputs is None else  # the inputs of each draw's case
              jax.tree.map(lambda a: jnp.tile(a, (repeats,) + (1,) * (a.ndim - 1)),
                           post.inputs))

    def energy(u_flat, y, example):
        return post.free_energy(post.params(unravel(u_flat)), y, example)

    def log_prior(u_flat):
        return post.log_prior(unravel(u_flat))

    def reshape(state: ExchangeState) -> ExchangeState:
        key, draw_key = jax.random.split(state.rng_key)
        u = ravel_pytree(state.z)[0]
        params = post.params(state.z)
        ys = jax.vmap(draw, (None, 0))(params, jax.random.split(draw_key, repeats))
        ys = {s: ys[s].reshape((repeats * n,) + ys[s].shape[2:]) for s in observed}
        scores = jax.vmap(jax.grad(energy), (None, 0, 0))(u, ys, inputs)
        fisher = jnp.cov(scores, rowvar=False).reshape(u.size, u.size)
        precision = n * fisher - jax.hessian(log_prior)(u)
        precision = 0.5 * (precision + precision.T)
        jitter = 1e-6 * jnp.maximum(jnp.trace(precision) / u.size, 1.0)
        root = jnp.linalg.cholesky(precision + jitter * jnp.eye(u.size, dtype=u.dtype))
        shape = jax.scipy.linalg.solve_triangular(root, jnp.eye(u.size, dtype=u.dtype),
                                                  lower=True).T
        ok = jnp.all(jnp.isfinite(shape))
        return state._replace(scale_tril=jnp.where(ok, shape, state.scale_tril),
                              rng_key=key)

    return reshape


def _step_fn(post: Posterior, draw: Callable, unravel: Callable, num_warmup: int,
             adapt: bool, target: float) -> Callable:
    """One exchange step (pure, jit-able), the step size tuned during warmup."""

    def step(state: ExchangeState) -> ExchangeState:
        key, proposal_key, aux_key, accept_key = jax.random.split(state.rng_key, 4)
        flat, _ = ravel_pytree(state.z)
        noise = jax.random.normal(proposal_key, flat.shape, flat.dtype)
        proposal = unravel(flat + state.step_size * (state.scale_tril @ noise))
        log_density = post.log_unnormalized(proposal)
        params, new_params = post.params(state.z), post.params(proposal)
        y = draw(new_params, aux_key)
        log_ratio = (log_density - state.log_density
                     + post.free_energy_sum(params, y) - post.free_energy_sum(new_params, y))
        accept_prob = jnp.where(jnp.isnan(log_ratio), 0.0,
                                jnp.exp(jnp.minimum(log_ratio, 0.0))).astype(flat.dtype)
        accept = jax.random.uniform(accept_key, dtype=flat.dtype) < accept_prob
        z = jax.tree.map(lambda new, old: jnp.where(accept, new, old), proposal, state.z)
        log_density = jnp.where(accept, log_density, state.log_density)

        i = state.i
        warmup = i < num_warmup
        count = (i - jnp.where(warmup, 0, num_warmup) + 1).astype(flat.dtype)
        mean_accept = state.mean_accept_prob + (accept_prob - state.mean_accept_prob) / count
        step_size = state.step_size
        if adapt and num_warmup > 0:  # Robbins-Monro on the log step size
            gain = 1.0 / (i.astype(flat.dtype) + 1.0) ** 0.6
            step_size = jnp.where(warmup, step_size * jnp.exp(gain * (accept_prob - target)),
                                  step_size)
        return ExchangeState(z, log_density, accept_prob, mean_accept, step_size,
                             state.scale_tril, i + 1, key)

    return step
