"""The functional core of learning: one update of θ, shaped like numpyro's ``SVI``.

Each update asks the estimator for weighted particles at the current parameters θ_t and
ascends the stochastic gradient

    mean_batch ∇θ F(x_n; θ)  −  Σ_s w_s ∇θ F(x_s; θ)  +  ∇θ log p(θ) / N,

where F is the log-potential with latent sites summed out in closed form (Rao-Blackwell: the
free energy of an RBM), so both phases use it. The optax optimizer runs in the unconstrained
space of the parameters; log p(θ) is the prior density of the constrained θ, without the
log-Jacobian of that map, so MAP is the mode of the posterior density of θ itself (for
``LogNormal`` on θ > 0, not the mode in log θ). A step that produces non-finite values is
not taken: the state stays at the last good one and records the failing step.

:class:`LearnerCore` holds no data: the batch is passed to every :meth:`~LearnerCore.update`
(a dict of observed sites, or for conditional models a
:class:`~numpyro_ugm.estimators.per_example.ConditionalBatch` and a
:class:`~numpyro_ugm.estimators.per_example.PerExample` estimator).
"""

from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import optax

from ..model.diagnose import DIVERGED, chain_spread
from ..model.validation import check_normalizable
from ..estimators.per_example import ConditionalBatch
from .averaging import AveragedState
from .exact_estimator import exact_negative


class StepInfo(NamedTuple):
    """What one update reports (:meth:`LearnerCore.update`, :meth:`~numpyro_ugm.MLE.update`).

    Attributes
    ----------
    estimator : NamedTuple
        The estimator's own info, typed (e.g. :class:`~numpyro_ugm.estimators.PCDInfo`:
        ``info.estimator.ess``).
    grad_norm : float32 scalar
        Global 2-norm of the log-likelihood gradient (unconstrained space).
    positive : float32 scalar
        Batch mean of the free energy F (the positive phase).
    log_likelihood : float32 scalar or None
        The running log-likelihood per case, ``positive − log_z``, when the estimator
        reports a running ``log_z`` (PF, MCMC-MLE, SMC, PSMC); ``None`` (absent, not NaN)
        when it does not (CD, PCD): a missing estimate is not a number.
    chain_spread : dict of str -> float32 scalar, or None
        Per real site, the largest distance of the particles from the base mean in base
        scales (:func:`~numpyro_ugm.model.diagnose.chain_spread`); in the diagnostics as
        ``chain_spread_<site>``. ``None`` for models without real sites.
    """

    estimator: Any
    grad_norm: jax.Array
    positive: jax.Array
    log_likelihood: Optional[jax.Array] = None
    chain_spread: Optional[dict] = None

    @property
    def names(self) -> tuple:
        """The names of :meth:`diagnostics`, in order."""
        return (tuple(self.estimator._fields) + ("grad_norm", "positive")
                + (() if self.log_likelihood is None else ("log_likelihood",))
                + tuple(f"chain_spread_{s}" for s in self.chain_spread or ()))

    def diagnostics(self) -> dict:
        """This step's entries of :attr:`RunResult.diagnostics
        <numpyro_ugm.learn.mle.RunResult.diagnostics>` (float32 scalars by name, in the
        order of :attr:`names`): the estimator's fields, ``grad_norm``, ``positive`` and,
        when present, ``log_likelihood``."""
        row = {k: jnp.asarray(v, jnp.float32) for k, v in self.estimator._asdict().items()}
        row["grad_norm"], row["positive"] = self.grad_norm, self.positive
        if self.log_likelihood is not None:
            row["log_likelihood"] = self.log_likelihood
        for s, v in (self.chain_spread or {}).items():
            row[f"chain_spread_{s}"] = v
        return row


class LearnState(NamedTuple):
    """Everything a run needs to continue (plain arrays).

    Attributes
    ----------
    params : dict
        Parameters in the unconstrained space.
    opt_state : optax state
    estimator_state : the estimator's state (particles, weights, ...)
    rng_key : raw PRNG key
    data_key : raw PRNG key for the minibatch order
    step : int32 scalar, number of updates done
    failed_at : int32 scalar, the first step that produced non-finite values (-1: none)
    """

    params: dict
    opt_state: Any
    estimator_state: Any
    rng_key: jax.Array
    data_key: jax.Array
    step: jax.Array
    failed_at: jax.Array


def all_finite(tree, allow_minus_inf=False):
    """Whether every floating-point value of ``tree`` is finite (or −inf, if allowed:
    the log of a zero particle weight)."""
    leaves = _float_leaves(tree)
    if not leaves:
        return jnp.array(True)
    if allow_minus_inf:
        return jnp.all(jnp.stack([jnp.all(~jnp.isnan(x) & (x < jnp.inf)) for x in leaves]))
    # a finite sum means finite values; only a sum that is not (a non-finite value, or
    # an overflow) needs the elementwise check, which lax.cond then runs alone
    return _finite_unless(sum(jnp.sum(x) for x in leaves), leaves)


def _float_leaves(tree):
    return [x for x in jax.tree.leaves(tree)
            if jnp.issubdtype(jnp.result_type(x), jnp.inexact)]


def _finite_unless(total, leaves):
    """True when ``total`` (a sum over ``leaves`` that any non-finite value makes
    non-finite) is finite; else whether every value of ``leaves`` is finite."""
    return jax.lax.cond(jnp.isfinite(total), lambda: jnp.array(True),
                        lambda: jnp.all(jnp.stack([jnp.all(jnp.isfinite(x))
                                                   for x in leaves])))


def _fixed_dtype(value):
    """``value`` as a JAX array of a fixed dtype: its own if it has one, else (a Python
    number) JAX's default float dtype, never a weak type."""
    dtype = value.dtype if hasattr(value, "dtype") else jnp.result_type(float)
    return jnp.asarray(value, dtype=dtype)


def check_start(target, params: dict, given: bool) -> None:
    """Raise ``FloatingPointError`` when the model is visibly not normalizable in its real
    sites at the parameters learning starts from
    (:func:`~numpyro_ugm.model.validation.check_normalizable`), naming the parameters
    (``given``: from ``init_params``, else the model's defaults) and what to do. Without
    it the first updates average chains of an improper density (a precision that is not
    positive definite, a term growing like +x⁴) and learning runs on until the chains
    diverge, or drifts off silently."""
    try:
        check_normalizable(target, params, "learning")
    except FloatingPointError as error:
        names = ", ".join(repr(n) for n in sorted(params)) or "none"
        origin = "init_params" if given else "the model's initial values"
        raise FloatingPointError(
            f"{error} Learning would start there: at the parameters {names} from "
            f"{origin}. Pass init_params at which the model is normalizable (e.g. a "
            "positive definite precision, a negative coefficient of x^4), or "
            "parametrize such terms to stay normalizable (a Cholesky factor, a "
            "positive transform).") from None


def _norm_and_finite(tree):
    """The global 2-norm of ``tree`` and whether all its values are finite, from one
    pass over the values in the usual case (see :func:`all_finite`)."""
    leaves = _float_leaves(tree)
    total = sum(jnp.sum(x * x) for x in leaves)
    return jnp.sqrt(total), _finite_unless(total, leaves)


class LearnerCore:
    """One learning update as a pure function of the state and the batch.

    Parameters
    ----------
    target : Target
        What the estimator and the objective read of the model (its data's sites
        observed): handed to the estimator at every update.
    param_model : ParamModel
        The parameters' space (transforms, checks), initial values and log prior
        (:func:`~numpyro_ugm.model.problem.build_problem`).
    estimator : Estimator or PerExample
        Negative-phase estimator (wrapped in ``PerExample`` for conditional models).
    optimizer : optax.GradientTransformation
        Minimizes the negative log-likelihood.
    num_examples : int
        Size N of the training set (the prior's gradient is divided by it).
    """

    def __init__(self, target, param_model, estimator, optimizer, num_examples: int):
        self.target, self.param_model = target, param_model
        self.estimator, self.optimizer = estimator, optimizer
        self.param_space = param_model.space
        self.num_examples = int(num_examples)
        # jitted once per core: an estimator's init may anneal (a while loop), slow op
        # by op and costly to recompile
        self.init_estimator = jax.jit(estimator.init, static_argnums=1)

    def init(self, rng_key, batch, init_params: Optional[dict] = None,
             check: bool = True) -> LearnState:
        """The initial state: parameters (``init_params`` or the model's), optimizer
        state, and the estimator's state initialized on ``batch`` (all examples, for a
        conditional model).

        With ``check``, a model with real sites that is visibly not normalizable at the
        initial parameters is refused first (:func:`check_start`). Not jitted as a
        whole; the estimator's init is (:attr:`init_estimator`).
        """
        param_key, est_key, key, data_key = jax.random.split(rng_key, 4)
        params = (self.param_model.init(param_key) if init_params is None
                  else dict(init_params))
        self.param_space.check(params)
        if check:
            check_start(self.target, params, init_params is not None)
        # dtypes fixed here, once: a Python float (``numpyro.param("J", 0.1)``) becomes an
        # array of JAX's default float dtype, so that the state a checkpoint saves and the
        # template it is restored into agree (issue 46)
        params = jax.tree.map(_fixed_dtype, params)
        unconstrained = self.param_space.to_unconstrained(params)
        estimator_state = self.init_estimator(est_key, self.target, params, batch)
        return LearnState(unconstrained, self.optimizer.init(unconstrained), estimator_state,
                          key, data_key, jnp.zeros((), jnp.int32), -jnp.ones((), jnp.int32))

    def restart_estimator(self, rng_key, state: LearnState, batch,
                          position: Optional[dict] = None) -> LearnState:
        """``state`` with the estimator started afresh at its parameters on ``batch`` (all
        examples, for a conditional model), its chains at ``position`` if given (for
        estimators whose state holds kernel states); the rest of ``state`` is kept."""
        fresh = self.init_estimator(rng_key, self.target, self.get_params(state), batch)
        if position is not None:
            kernel_state = getattr(fresh, "kernel_state", None)
            if kernel_state is None:
                raise TypeError(f"{self.estimator!r} keeps no kernel states to start "
                                "from given positions")
            expected = {k: jnp.shape(v) for k, v in kernel_state.position.items()}
            given = {k: jnp.shape(v) for k, v in dict(position).items()}
            if given != expected:
                raise ValueError(f"restart_estimator: position has sites and shapes "
                                 f"{given}; this learner's particles have {expected}")
            position = {k: jnp.asarray(v, kernel_state.position[k].dtype)
                        for k, v in position.items()}
            fresh = fresh._replace(kernel_state=kernel_state._replace(position=position))
        return state._replace(estimator_state=fresh)

    def get_params(self, state: LearnState, averaged: bool = False) -> dict:
        """Parameters of ``state`` in the constrained space; with ``averaged``, the mean
        of the iterates kept by an optimizer wrapped in
        :func:`~numpyro_ugm.learn.averaging.averaged` (averaged in the unconstrained
        space, where the optimizer runs)."""
        if not averaged:
            return self.param_space.to_constrained(state.params)
        opt_state = state.opt_state
        if not isinstance(opt_state, AveragedState):
            raise TypeError("get_params(averaged=True) needs an optimizer wrapped in "
                            "ugm.averaged(...) as the learner's optimizer, got optimizer "
                            f"state {type(opt_state).__name__}")
        if int(opt_state.count) == 0:
            raise ValueError(f"get_params(averaged=True): no iterate averaged yet (step "
                             f"{int(opt_state.step)}; the average starts after its "
                             "'start' updates)")
        return self.param_space.to_constrained(opt_state.mean)

    def objective(self, unconstrained, params, positive, negative):
        """What the update ascends, from the batch mean of F (``positive``) and the
        weighted particles' (``negative``): the per-case log-likelihood plus
        log p(θ) / N."""
        return positive - negative + self.param_model.log_prior(params) / self.num_examples

    def update(self, state: LearnState, batch):
        """One update on ``batch`` (jit-able).

        Returns
        -------
        state : LearnState
            The new state, or ``state`` itself with ``failed_at`` set when the step
            produced non-finite gradients, parameters or particles.
        info : StepInfo
            The estimator's typed info, ``grad_norm``, ``positive`` (batch mean of F) and,
            when the estimator reports ``log_z``, the running ``log_likelihood``.
        """
        candidate, finite, info = self.propose(state, batch)
        return settle(state, candidate, finite), info

    def propose(self, state: LearnState, batch):
        """The state one update on ``batch`` makes, not yet checked (jit-able):
        :meth:`update` is :func:`settle` on it. A caller that keeps ``state`` itself
        (:meth:`MLE.update <numpyro_ugm.MLE.update>`, on the host) settles without the
        device pass over the whole state that :func:`settle` is.

        Returns
        -------
        candidate : LearnState
            The updated state (``failed_at`` that of ``state``).
        finite : bool scalar
            Whether the gradients, the new parameters (and their log prior), the
            estimator's state and the chains' spread are finite.
        info : StepInfo
        """
        target, space = self.target, self.param_space
        key, est_key = jax.random.split(state.rng_key)
        params = space.to_constrained(state.params)
        estimator_state, particles, info = self.estimator.update(
            est_key, state.estimator_state, target, params, batch)
        weights = jax.lax.stop_gradient(jnp.exp(particles.log_weights))
        positions = jax.lax.stop_gradient(particles.position)
        conditional = isinstance(batch, ConditionalBatch)
        data, inputs = (batch.data, batch.inputs) if conditional else (batch, None)
        exact = exact_negative(self.estimator)

        def objective(u):
            p = space.to_constrained(u)
            positive = jnp.mean(target.free_energies(p, data, inputs))
            if exact is not None:  # log Z itself: its gradient is E_p[∇θ f], exactly
                negative = exact(target, p, inputs)
            elif inputs is None:
                negative = jnp.sum(weights * target.free_energies(p, positions))
            else:  # per example: its own weighted particles under its own inputs
                def example_negative(w, inp, x):
                    many = jax.tree.map(lambda a: jnp.broadcast_to(a, w.shape + a.shape), inp)
                    return jnp.sum(w * target.free_energies(p, x, many))

                negative = jnp.mean(jax.vmap(example_negative)(weights, inputs, positions))
            return self.objective(u, p, positive, negative), (positive, negative)

        grads, (positive, negative) = jax.grad(objective, has_aux=True)(state.params)
        if exact is not None:
            info = info._replace(log_z=negative)
        estimator_state = self.estimator.record_gradients(estimator_state, grads)
        neg_grads = jax.tree.map(jnp.negative, grads)
        updates, opt_state = self.optimizer.update(neg_grads, state.opt_state, state.params)
        new_params = optax.apply_updates(state.params, updates)

        candidate = LearnState(new_params, opt_state, estimator_state, key, state.data_key,
                               state.step + 1, state.failed_at)
        # particles of zero weight (log weight −inf, e.g. underflow in a tempering step)
        # are not a failure; parameters whose log prior is not finite are (float32 values
        # past ~1e19 under a Normal prior: a diverging step size)
        grad_norm, grads_finite = _norm_and_finite(grads)
        spread = chain_spread(target, positions) if target.real_sites and exact is None \
            else None
        finite = (grads_finite & all_finite(new_params)
                  & jnp.all(jnp.stack([v <= DIVERGED for v in (spread or {}).values()]
                                      or [jnp.array(True)]))
                  & jnp.isfinite(self.param_model.log_prior(space.to_constrained(new_params)))
                  & all_finite((estimator_state, particles.log_weights), allow_minus_inf=True))
        log_likelihood = None
        if "log_z" in info._fields:  # the running log Z as the diagnostics record it
            log_likelihood = (positive - jnp.asarray(info.log_z, jnp.float32)).astype(
                jnp.float32)
        return candidate, finite, StepInfo(info, grad_norm.astype(jnp.float32),
                                           positive.astype(jnp.float32), log_likelihood,
                                           spread)


def settle(state: LearnState, candidate: LearnState, finite) -> LearnState:
    """What :meth:`LearnerCore.update` returns from ``state`` and its
    :meth:`~LearnerCore.propose`: ``candidate`` when ``finite`` (and ``state`` had not
    failed), else ``state`` with ``failed_at`` set to its step (kept if already set)."""
    ok = finite & (state.failed_at < 0)
    new_state = jax.tree.map(lambda a, b: jnp.where(ok, a, b), candidate, state)
    return new_state._replace(failed_at=jnp.where(
        (state.failed_at < 0) & ~finite, state.step, state.failed_at))
