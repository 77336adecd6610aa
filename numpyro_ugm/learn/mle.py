"""``MLE``: the learning driver users call, shaped like ``numpyro.infer.SVI``.

It traces the model, checks the data, places data and particles on a device mesh
(:mod:`.data`), and runs the functional core (:class:`~numpyro_ugm.learn.core.LearnerCore`) over minibatches
with the package's run loop (:mod:`numpyro_ugm.runloop`: progress bar, checkpoints,
failure handling). Conditional models get their estimator wrapped in
:class:`~numpyro_ugm.estimators.per_example.PerExample`.
"""

import warnings
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import checkpoint
from .._checks import as_count, as_key
from ..conditionals import free_energy
from ..estimators.base import Estimator
from ..estimators.per_example import ConditionalBatch, PerExample
from ..model import UGM, as_ugm
from ..runloop import chunk_size, run_loop
from .core import LearnerCore, LearnState
from .data import Minibatches, Placement, check_inputs


class RunResult(NamedTuple):
    """What :meth:`MLE.run` returns.

    Attributes
    ----------
    params : dict
        Learned parameters (constrained space).
    state : LearnState
        Final state (pass as ``init_state`` to continue).
    diagnostics : dict of str -> ndarray, each of shape ``(num_steps,)``
        Per step: ``grad_norm``, ``positive`` (batch mean of F), the estimator's info
        (e.g. ``ess``, ``resampled``, ``rejuvenated``, ``num_betas``, ``acceptance``,
        ``log_z``) and, with a ``log_z``, the running ``log_likelihood``.
    """

    params: dict
    state: LearnState
    diagnostics: dict


class NonFiniteError(FloatingPointError):
    """A learning step produced non-finite gradients or parameters.

    Attributes
    ----------
    step : int
        The failing step.
    state : LearnState
        The last good state (before the failing step).
    diagnostics : dict
        Diagnostics of the steps run so far, failing step included.
    """

    def __init__(self, message, step, state, diagnostics):
        super().__init__(message)
        self.step, self.state, self.diagnostics = step, state, diagnostics


class PreparedBatch(NamedTuple):
    """A batch checked and converted once by :meth:`MLE.prepare` (model representation),
    so that :meth:`MLE.update` does no host-side work for it."""

    batch: Any


def _warn_if_collapsed(diagnostics, start):
    """Warn when the weighted particles degenerated to about one (ESS < 1.5)."""
    ess = diagnostics.get("ess")
    if ess is None:
        return
    collapsed = np.flatnonzero(np.asarray(ess) < 1.5)
    if collapsed.size:
        warnings.warn(
            f"the importance weights collapsed to about one particle (ESS < 1.5) on "
            f"{collapsed.size} of {len(ess)} steps, first at step {start + collapsed[0]}: "
            "the particle approximation was poor there. Lower the learning rate, use "
            "more particles, a higher resample_threshold (PF) or target_ess (SMC, PSMC), or (PF) a weight temperature > 1.",
            RuntimeWarning, stacklevel=3)


class MLE:
    """Maximum-likelihood (or MAP, when parameters have priors) learning of a UGM.

    MAP maximizes mean_n log p(x_n; θ) + log p(θ) / N with the prior density of θ itself:
    the optimizer runs in the unconstrained space, without the log-Jacobian of that map
    (see :mod:`numpyro_ugm.learn.core`).

    Parameters
    ----------
    model : callable or UGM
        numpyro model function (its arguments are given to :meth:`init` / :meth:`run`),
        or an already traced :class:`~numpyro_ugm.model.UGM`.
    estimator : Estimator
        Negative-phase estimator, e.g. ``ugm.PCD(100)``.
    optimizer : optax.GradientTransformation
        e.g. ``optax.sgd(optax.linear_schedule(...))`` or ``optax.adam(1e-2)``; it
        minimizes the negative log-likelihood.
    mesh : jax.sharding.Mesh, optional
        Scale out over devices: particles (and the examples of the data and of CRF
        inputs) are split over the mesh's first axis, parameters replicated; the jitted
        steps are partitioned by XLA and give the numbers of a one-device run (up to
        the order of floating-point sums). Multi-host: call
        ``jax.distributed.initialize()`` on every host first and build the mesh over
        ``jax.devices()``.

    Examples
    --------
    >>> learner = ugm.MLE(ugm.models.vbm, ugm.PCD(100), optax.adam(0.01))
    >>> result = learner.run(jax.random.PRNGKey(0), 1000, {"x": x}, 15)
    """

    def __init__(self, model, estimator: Estimator, optimizer: optax.GradientTransformation,
                 *, mesh: Optional[jax.sharding.Mesh] = None):
        if mesh is not None and not isinstance(mesh, jax.sharding.Mesh):
            raise TypeError(f"mesh must be a jax.sharding.Mesh, got {mesh!r}")
        if mesh is not None:  # XLA partitions the steps (automatic sharding propagation)
            mesh = jax.sharding.Mesh(mesh.devices, mesh.axis_names, axis_types=(
                jax.sharding.AxisType.Auto,) * len(mesh.axis_names))
        self.mesh = mesh
        self._placement = Placement(mesh)
        if not isinstance(estimator, Estimator):
            raise TypeError(f"estimator must be a ugm estimator such as ugm.PCD(100), got "
                            f"{estimator!r}")
        if not isinstance(optimizer, optax.GradientTransformation):
            raise TypeError(f"optimizer must be an optax GradientTransformation, got "
                            f"{optimizer!r}")
        self.model, self.estimator, self.optimizer = model, estimator, optimizer
        self._core = None
        self.last_state = None
        self._setup_key = None

    # --- setup ------------------------------------------------------------------------
    def _setup(self, data, model_args, model_kwargs, inputs, batch_size):
        ids = lambda d: (tuple(sorted((n, id(v)) for n, v in d.items()))  # noqa: E731
                         if isinstance(d, dict) else id(d))
        key = (ids(data), None if inputs is None else ids(inputs), model_args,
               tuple(sorted(model_kwargs.items())), batch_size)
        try:
            if self._core is not None and key == self._setup_key:
                return  # same model and data: keep the compiled steps
        except (TypeError, ValueError):  # unhashable / array-valued arguments
            pass
        self._setup_key = key
        inputs = check_inputs(inputs, data)
        first = {} if inputs is None else {k: v[0] for k, v in inputs.items()}
        traced_with = {} if isinstance(self.model, UGM) else first  # a UGM is bound
        m = as_ugm(self.model, *model_args, **model_kwargs, **traced_with)
        if first and not traced_with:
            m = m.bind(**first)
        data = m.validate_data(data)
        m = m.observe(data.keys())
        m.structure  # analyse once, outside any trace
        if m.latent_sites:
            free_energy(m, m.init_params(jax.random.PRNGKey(0)),
                        {n: v[0] for n, v in data.items()})  # raises if not summable
        num_examples = int(jax.tree.leaves(data)[0].shape[0])
        if batch_size is not None and not 1 <= as_count(
                batch_size, "batch_size", "MLE") <= num_examples:
            raise ValueError(f"batch_size must be in [1, {num_examples}] (the number of "
                             f"examples), got {batch_size}")
        self._data = self._placement.shard(data, num_examples)
        self._inputs = self._placement.shard(inputs, num_examples)
        estimator = self.estimator if inputs is None else PerExample(self.estimator)
        self._core = LearnerCore(m, estimator, self.optimizer, num_examples)
        self._batches = Minibatches(num_examples, num_examples if batch_size is None
                                     else int(batch_size))
        self._update_jit = self._placement.run(jax.jit(self._core.update))
        self._scan_jit = self._placement.run(jax.jit(self._scan, static_argnums=1))

    def _batch(self, indices):
        """The core's batch for the examples ``indices`` (None: all)."""
        take = (lambda tree: tree) if indices is None else (
            lambda tree: jax.tree.map(lambda a: a[indices], tree))
        if self._inputs is None:
            return take(self._data)
        return ConditionalBatch(take(self._data), take(self._inputs), indices)

    def _scan(self, state, capacity, num_steps):
        """Run ``num_steps`` (traced, <= ``capacity``) updates in a ``fori_loop`` with a
        dynamic trip count, so that the loop body is the same compiled computation for
        any chunking: a run split into pieces is bit-identical to one long run."""
        batches, core = self._batches, self._core
        template = jax.eval_shape(lambda s: core.update(s, self._batch(
            None if batches.full else jnp.zeros(batches.batch_size, jnp.int32)))[1], state)
        buffers = jax.tree.map(lambda t: jnp.full((capacity,) + t.shape, jnp.nan, t.dtype),
                               template)
        # minibatches: the epoch's permutation is drawn on the first step and when an
        # epoch starts, not on every step (a permutation of 50,000 examples costs ~10x a
        # PCD-1 step of an RBM); a full batch ignores it
        perm = (jnp.zeros_like(jax.eval_shape(batches.permutation, state)) if not
                batches.full else jnp.zeros((0,), jnp.int32))

        def body(i, carry):
            state, buffers, perm = carry
            if not batches.full:
                perm = jax.lax.cond((i == 0) | (state.step % batches.per_epoch == 0),
                                    lambda: batches.permutation(state), lambda: perm)
            state, info = core.update(state, self._batch(batches.indices(state, perm)))
            buffers = jax.tree.map(lambda b, v: b.at[i].set(v), buffers, info)
            return state, buffers, perm

        state, buffers, _ = jax.lax.fori_loop(0, num_steps, body, (state, buffers, perm))
        return state, buffers

    # --- public API ---------------------------------------------------------------------
    @property
    def core(self) -> LearnerCore:
        """The functional core (after :meth:`init`): ``core.update(state, batch)`` is
        a pure, jit-able step on a batch from :meth:`prepare`, for loops of one's own."""
        if self._core is None:
            raise RuntimeError("call init() first")
        return self._core

    @property
    def ugm(self) -> UGM:
        """The traced model (observed sites set by the data given to :meth:`init`)."""
        return self.core.m

    def init(self, rng_key, data, *model_args, inputs=None, batch_size=None,
             init_params=None, **model_kwargs) -> LearnState:
        """Trace the model, check the data and build the initial :class:`LearnState`.

        Parameters
        ----------
        rng_key : jax PRNGKey
        data : dict of str -> array
            Observed state sites with a leading example axis (data representation).
        *model_args, **model_kwargs
            Arguments of the model function.
        batch_size : int, optional
            Minibatch size for :meth:`run` (default: the full data set every step).
        inputs : dict of str -> array, optional
            Conditional models (CRFs): per-example model keyword arguments with the
            data's leading example axis. The model is called once per example
            (vectorized) and the estimator keeps particles per example.
        init_params : dict, optional
            Initial parameters (constrained space); default ``m.init_params``.
        """
        rng_key = as_key(rng_key, "MLE.init")
        self._setup(data, model_args, model_kwargs, inputs, batch_size)
        state = self._placement.run(self._core.init)(rng_key, self._batch(None), init_params)
        sizes = (getattr(self._core.estimator, "num_particles", None),
                 self._batches.num_examples if self._inputs is not None else None)
        state = state._replace(estimator_state=self._placement.shard(state.estimator_state, *sizes))
        self.last_state = state
        return state

    def prepare(self, batch) -> PreparedBatch:
        """Check ``batch`` (observed sites, data representation) against the domains
        once and convert it for :meth:`update` (and for ``core.update``:
        ``prepare(batch).batch``)."""
        return PreparedBatch(self.core.m.validate_data(batch))

    def update(self, state: LearnState, batch=None):
        """One learning step.

        Parameters
        ----------
        state : LearnState
        batch : dict or PreparedBatch, optional
            Observed sites (data representation, or from :meth:`prepare`) to step on;
            default: the minibatch of ``state.step`` from the data given to
            :meth:`init` (required with CRF ``inputs``, whose particles belong to the
            examples).

        Returns
        -------
        state : LearnState
        info : dict of scalars (that step's diagnostics)
        """
        if self._core is None:
            raise RuntimeError("call init() before update()")
        if batch is None:
            batches = self._batches
            perm = None if batches.full else batches.permutation(state)
            batch = self._batch(batches.indices(state, perm))
        elif self._inputs is not None:
            raise ValueError("with per-example inputs the learner steps on its own "
                             "minibatches (their particles persist per example): call "
                             "update(state) without a batch")
        else:
            batch = (batch if isinstance(batch, PreparedBatch) else self.prepare(batch)).batch
        new_state, info = self._update_jit(state, batch)
        self._raise_if_failed(new_state, jax.tree.map(lambda v: np.asarray(v)[None], info))
        self.last_state = new_state
        return new_state, info

    def get_params(self, state: LearnState) -> dict:
        """Parameters of ``state`` in the constrained space."""
        return self.core.get_params(state)

    def particles(self, state: LearnState):
        """The estimator's current particle positions (model representation; leading
        axis: particles, or examples then particles for a conditional model)."""
        return state.estimator_state.position

    def restart_estimator(self, state: LearnState, rng_key, *, position=None) -> LearnState:
        """``state`` with this learner's estimator started afresh at the current
        parameters (parameters, optimizer state, keys and step are kept): to switch
        estimators mid-run (``other.restart_estimator(state, key)`` for a learner
        ``other`` built with another estimator, after ``other.init`` on the same data)
        or to re-seed one (e.g. a new MCMC-MLE round now).

        Parameters
        ----------
        state : LearnState
        rng_key : jax PRNGKey
        position : dict, optional
            Start the new chains from these particle positions (e.g.
            ``learner.particles(state)`` of the learner being left) instead of the
            estimator's own initialization; for estimators whose state holds kernel
            states (PCD and its tempered variants).
        """
        core = self.core
        fresh = self._placement.run(core.init_estimator)(
            as_key(rng_key, "MLE.restart_estimator"), core.m, core.get_params(state),
            self._batch(None))
        if position is not None:
            kernel_state = getattr(fresh, "kernel_state", None)
            if kernel_state is None:
                raise TypeError(f"{self.estimator!r} keeps no kernel states to start "
                                "from given positions")
            expected = {k: np.shape(v) for k, v in kernel_state.position.items()}
            given = {k: np.shape(v) for k, v in dict(position).items()}
            if given != expected:
                raise ValueError(f"restart_estimator: position has sites and shapes "
                                 f"{given}; this learner's particles have {expected}")
            position = {k: jnp.asarray(v, kernel_state.position[k].dtype)
                        for k, v in position.items()}
            fresh = fresh._replace(kernel_state=kernel_state._replace(position=position))
        return state._replace(estimator_state=fresh)

    def _raise_if_failed(self, state, diagnostics):
        failed_at = int(state.failed_at)
        if failed_at >= 0:
            raise NonFiniteError(
                f"learning step {failed_at} produced non-finite gradients or parameters; "
                "the run stopped and kept the last good state (error.state). Lower the "
                "learning rate, add a prior, or check the model's factors.",
                failed_at, state, diagnostics)

    def restore(self, path, data, *model_args, inputs=None, batch_size=None,
                **model_kwargs):
        """The :class:`LearnState` saved in a checkpoint (see ``run(checkpoint_dir=...)``),
        for the same model, data and settings: continue with
        ``run(..., init_state=learner.restore(path, ...))`` — the result is bit-identical
        to a run that was never interrupted. A checkpoint written when a step failed
        holds the last good state, ready to retry (e.g. with another learning rate).

        Returns
        -------
        state : LearnState
        diagnostics : dict
            The per-step diagnostics recorded up to the checkpoint.
        """
        template = self.init(jax.random.PRNGKey(0), data, *model_args, inputs=inputs,
                             batch_size=batch_size, **model_kwargs)
        state, diagnostics = checkpoint.load(path, template)
        state = state._replace(failed_at=-jnp.ones((), jnp.int32))  # may retry a failure
        self.last_state = state
        return state, diagnostics

    def run(self, rng_key, num_steps, data, *model_args, inputs=None, batch_size=None,
            progress_bar=True, init_state=None, init_params=None, checkpoint_every=None,
            checkpoint_dir=None, **model_kwargs) -> RunResult:
        """Learn for ``num_steps`` updates.

        Parameters
        ----------
        rng_key : jax PRNGKey
        num_steps : int
        data : dict of str -> array
            Observed state sites with a leading example axis (data representation).
        *model_args, **model_kwargs
            Arguments of the model function.
        inputs : dict of str -> array, optional
            Per-example model keyword arguments (CRFs), leading axis = examples.
        batch_size : int, optional
            Minibatch size (default: full batch). Each epoch visits a fresh permutation.
        progress_bar : bool
            Show a tqdm bar (the scan then runs in chunks; results are identical).
        init_state : LearnState, optional
            Continue from this state (e.g. ``result.state`` of an earlier run).
        init_params : dict, optional
            Initial parameters (constrained space).
        checkpoint_every : int, optional
            Save the state (and the diagnostics so far) every this many steps, at the
            end, and when the run stops early (non-finite step, interruption), as
            ``checkpoint_dir/step_<step>.npz`` (plain arrays; see :meth:`restore`).
        checkpoint_dir : str or Path, optional
            Where checkpoints go (required with ``checkpoint_every``).

        Returns
        -------
        RunResult

        Raises
        ------
        NonFiniteError
            When a step produces non-finite values; it carries the last good state.
        """
        num_steps = as_count(num_steps, "num_steps", "MLE.run", 0)
        if init_state is None:
            state = self.init(rng_key, data, *model_args, inputs=inputs,
                              batch_size=batch_size, init_params=init_params, **model_kwargs)
        else:
            self._setup(data, model_args, model_kwargs, inputs, batch_size)
            state = init_state
        if (checkpoint_every is None) != (checkpoint_dir is None):
            raise ValueError("give both checkpoint_every and checkpoint_dir, or neither")
        every = (None if checkpoint_every is None
                 else as_count(checkpoint_every, "checkpoint_every", "MLE.run"))
        chunk = chunk_size(num_steps, progress_bar, every)
        start = int(state.step)

        def kept(state, diagnostics):
            """Diagnostics up to the failing step, if one failed."""
            if int(state.failed_at) < 0:
                return diagnostics
            return {k: v[:int(state.failed_at) - start + 1] for k, v in diagnostics.items()}

        def advance(state, length):
            state, info = self._scan_jit(state, chunk, length)
            self.last_state = state
            return state, info

        def save(state, diagnostics):
            checkpoint.save(checkpoint.step_path(checkpoint_dir, int(state.step)), state,
                            kept(state, diagnostics))

        state, diagnostics = run_loop(
            advance, state, num_steps, chunk=chunk, progress_bar=progress_bar,
            desc="learning", stop=lambda s: int(s.failed_at) >= 0,
            postfix=lambda info: {"grad_norm": f"{float(info['grad_norm'][-1]):.3g}"},
            checkpoint_every=every, save=save if every is not None else None)
        diagnostics = kept(state, diagnostics)
        _warn_if_collapsed(diagnostics, start)
        self._raise_if_failed(state, diagnostics)
        return RunResult(self.get_params(state), state, diagnostics)
