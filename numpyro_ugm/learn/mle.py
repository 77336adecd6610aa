"""``MLE``: the learning driver users call, shaped like ``numpyro.infer.SVI``.

It traces the model, checks the data, places data and particles on a device mesh
(:mod:`.data`), and runs the functional core (:class:`~numpyro_ugm.learn.core.LearnerCore`) over minibatches
with the package's run loop (:mod:`numpyro_ugm.runloop`: progress bar, checkpoints,
failure handling). Conditional models get their estimator wrapped in
:class:`~numpyro_ugm.estimators.per_example.PerExample`.
"""

import hashlib
import warnings
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import checkpoint
from .._checks import as_key, check_count
from ..estimators.base import Estimator
from ..estimators.per_example import ConditionalBatch, PerExample
from ..model import UGM, as_ugm
from ..runloop import capacity, chunk_size, run_loop
from .core import LearnerCore, LearnState
from .data import Minibatches, Placement, check_inputs
from ..validation import validate_data


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
        ``log_z`` and its standard error ``log_z_se``) and, with a ``log_z``, the
        running ``log_likelihood`` (per case; its standard error is ``log_z_se``). A
        run warns when that running log-likelihood is impossible (positive) or its
        standard error exceeds ``LOG_Z_SE_TOLERANCE`` (1 nat).
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


def _layout(tree):
    """Names, shapes and dtypes of a dict of arrays (None stays None)."""
    if tree is None:
        return None
    return tuple(sorted((n, np.shape(v), str(np.asarray(v).dtype) if not hasattr(v, "dtype")
                         else str(v.dtype)) for n, v in tree.items()))


def _fingerprint(tree):
    """A digest of the values of a dict of arrays (None stays None): CRF inputs shape the
    traced model, so new values mean a new setup."""
    if tree is None:
        return None
    digest = hashlib.blake2b(digest_size=16)
    for name in sorted(tree):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(np.asarray(tree[name])).tobytes())
    return digest.hexdigest()


class _History:
    """Per-step diagnostics of the steps that led to the learner's last state, kept
    across runs, updates and restores, so that a checkpoint holds them all (entry i is
    step i; NaN for steps this learner did not record)."""

    def __init__(self):
        self.pieces, self.key = [], None  # [(first step, {name: array})], end state's key

    def resume(self, state, step=None):
        """Continue from ``state`` (whose step is ``step``, when the caller knows it):
        keep what led to it, up to its step, if it is the state the history ends at
        (same PRNG key); else start afresh."""
        key = state.rng_key
        if self.key is None or (key is not self.key and not np.array_equal(
                np.asarray(key), np.asarray(self.key))):
            self.pieces = []
            return
        # pieces are recorded in step order without overlap, so only the last ones can
        # reach beyond ``step``: trimming from the end keeps a long run of update() calls
        # linear in its length (rebuilding every piece made each call cost O(steps))
        step = int(state.step) if step is None else step
        while self.pieces:
            first, d = self.pieces[-1]
            if first >= step:
                self.pieces.pop()
                continue
            if first + len(next(iter(d.values()))) > step:
                self.pieces[-1] = (first, {k: v[:step - first] for k, v in d.items()})
            break

    def add(self, first, diagnostics, state):
        """Record the diagnostics of the steps from ``first`` on, which led to ``state``."""
        if diagnostics:
            self.pieces.append((first, diagnostics))
        self.key = state.rng_key  # compared by identity first (no transfer)

    def arrays(self, *extra):
        """Everything recorded (and the ``(first, diagnostics)`` pieces ``extra``), as
        arrays indexed by step."""
        pieces = [p for p in self.pieces + list(extra) if p[1]]
        if not pieces:
            return {}
        end = max(first + len(next(iter(d.values()))) for first, d in pieces)
        out = {}
        for first, d in pieces:
            for k, v in d.items():
                v = np.asarray(v)
                if k not in out:
                    out[k] = np.full((end,) + v.shape[1:], np.nan, np.result_type(v, np.float32))
                out[k][first:first + len(v)] = v
        return out


#: standard error (nats) of a running log Z beyond which MLE.run warns that the running
#: log-likelihood is no longer a useful measure
LOG_Z_SE_TOLERANCE = 1.0


def _warn_if_log_z_unreliable(diagnostics, start):
    """Warn when the running log-likelihood is impossible (> 0: a probability mass is at
    most 1) or its standard error exceeds :data:`LOG_Z_SE_TOLERANCE`."""
    log_likelihood = diagnostics.get("log_likelihood")
    if log_likelihood is None:
        return
    log_likelihood = np.asarray(log_likelihood)
    impossible = np.flatnonzero(log_likelihood > 0)
    if impossible.size:
        worst = impossible[np.argmax(log_likelihood[impossible])]
        warnings.warn(
            f"the running log-likelihood was positive on {impossible.size} of "
            f"{len(log_likelihood)} steps, first at step {start + impossible[0]} and up to "
            f"{log_likelihood[worst]:+.3g} nats per case at step {start + worst}: "
            "impossible for a discrete model (log p(x) <= 0), so the running log Z is "
            "wrong by at least that much. The particle weights missed probability mass; "
            "do not read the running log-likelihood, evaluate the model with "
            "ugm.evaluate.exact or ugm.evaluate.ais.", RuntimeWarning, stacklevel=3)
    se = diagnostics.get("log_z_se")
    if se is None:
        return
    beyond = np.flatnonzero(np.asarray(se) > LOG_Z_SE_TOLERANCE)
    if beyond.size:
        warnings.warn(
            f"the running log Z's standard error exceeded {LOG_Z_SE_TOLERANCE} nat from "
            f"step {start + beyond[0]} on (up to {float(np.nanmax(se)):.3g}; diagnostics "
            "'log_z_se'): from there the running log-likelihood is too uncertain to "
            "compare models; evaluate with ugm.evaluate.exact or ugm.evaluate.ais.",
            RuntimeWarning, stacklevel=3)


def _warn_if_collapsed(diagnostics, start, estimator):
    """Warn when the importance-weighted particles degenerated to about one (ESS < 1.5);
    not for estimators without importance weights (CD, PCD: their ESS counts chains,
    one per example for CD on a CRF)."""
    ess = diagnostics.get("ess")
    if ess is None or not estimator.importance_weighted:
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

    #: the functional core the learner builds (a subclass changes the objective)
    core_class = LearnerCore

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
        self._history = _History()

    # --- setup ------------------------------------------------------------------------
    def _setup(self, data, model_args, model_kwargs, inputs, batch_size):
        """Trace the model and build the compiled steps, unless what they depend on
        (model arguments, batch size, the data's layout, the inputs' values) is unchanged;
        the data given is checked and taken every time (the steps take it as an argument,
        so new data of the same layout reuses them)."""
        if batch_size is not None:
            batch_size = check_count("MLE", "batch_size", batch_size)
        inputs = check_inputs(inputs, data)
        key = (model_args, tuple(sorted(model_kwargs.items())), batch_size, _layout(data),
               _layout(inputs), _fingerprint(inputs))
        try:
            reuse = self._core is not None and bool(key == self._setup_key)
        except (TypeError, ValueError):  # array-valued model arguments: compare no further
            reuse = False
        if reuse:
            data = validate_data(self._core.m.state_sites, data)
        else:
            self._setup_key = None
            data = self._build(data, model_args, model_kwargs, inputs, batch_size)
            self._setup_key = key
        num_examples = self._batches.num_examples
        self._data = self._placement.shard(data, num_examples)
        self._inputs = self._placement.shard(inputs, num_examples)

    def _build(self, data, model_args, model_kwargs, inputs, batch_size):
        """Trace the model, check the data (returned in the model representation) and
        build the core and its compiled steps."""
        first = {} if inputs is None else {k: v[0] for k, v in inputs.items()}
        traced_with = {} if isinstance(self.model, UGM) else first  # a UGM is bound
        m = as_ugm(self.model, *model_args, **model_kwargs, **traced_with)
        if inputs is not None:
            m = m.for_inputs(inputs)  # blocks valid for every example, not the first only
        if first and not traced_with:
            m = m.bind(**first)
        data = validate_data(m.state_sites, data)
        m = m.observe(data.keys())
        m.structure  # analyse once, outside any trace
        if m.latent_sites:
            m.target().free_energy(m.init_params(jax.random.PRNGKey(0)),
                        {n: v[0] for n, v in data.items()})  # raises if not summable
        num_examples = int(jax.tree.leaves(data)[0].shape[0])
        batch = num_examples if batch_size is None else batch_size
        if batch > num_examples:
            raise ValueError(f"MLE: batch_size must be in [1, {num_examples}] (the number of "
                             f"examples), got {batch_size}")
        estimator = self.estimator if inputs is None else PerExample(self.estimator)
        self._core = self.core_class(m, estimator, self.optimizer, num_examples)
        self._batches = Minibatches(num_examples, batch)
        self._update_jit = self._placement.run(jax.jit(self._update_and_summary))
        self._scan_jit = self._placement.run(jax.jit(self._scan, static_argnums=4))
        return data

    def _batch(self, indices, data=None, inputs=None):
        """The core's batch for the examples ``indices`` (None: all) of ``data`` and
        ``inputs`` (default: those of the last :meth:`init` / :meth:`run`)."""
        data = self._data if data is None else data
        inputs = self._inputs if inputs is None else inputs
        take = (lambda tree: tree) if indices is None else (
            lambda tree: jax.tree.map(lambda a: a[indices], tree))
        if inputs is None:
            return take(data)
        return ConditionalBatch(take(data), take(inputs), indices)

    def _no_order(self, state):
        """The example order before any is drawn: ``(permutation, its epoch = -1)``."""
        batches = self._batches
        size = 0 if batches.full else batches.num_examples
        return jnp.zeros((size,), jnp.int32), -jnp.ones((), state.step.dtype)

    def _scan(self, state, data, inputs, order, capacity, num_steps):
        """Run ``num_steps`` (traced, <= ``capacity``) updates on ``data`` (and CRF
        ``inputs``) in a ``fori_loop`` with a dynamic trip count, so that the loop body is
        the same compiled computation for any chunking: a run split into pieces is
        bit-identical to one long run.

        ``order`` is the minibatch order ``(permutation, epoch)`` carried from the
        previous piece (returned updated): the permutation is drawn only when an epoch
        starts (a permutation of 50,000 examples costs ~10x a PCD-1 step of an RBM), not
        again for each piece a progress bar asks for. A full batch ignores it."""
        batches, core = self._batches, self._core
        batch = lambda indices: self._batch(indices, data, inputs)  # noqa: E731
        template = jax.eval_shape(lambda s: core.update(s, batch(
            None if batches.full else jnp.zeros(batches.batch_size, jnp.int32)))[1], state)
        buffers = jax.tree.map(lambda t: jnp.full((capacity,) + t.shape, jnp.nan, t.dtype),
                               template)

        def body(i, carry):
            state, buffers, order = carry
            state, info, order = self._advance(state, data, inputs, order)
            buffers = jax.tree.map(lambda b, v: b.at[i].set(v), buffers, info)
            return state, buffers, order

        return jax.lax.fori_loop(0, num_steps, body, (state, buffers, order))

    def _advance(self, state, data, inputs, order):
        """One update on the next minibatch of ``data`` (traced); ``order`` as in
        :meth:`_scan`. Returns ``(state, info, order)``."""
        batches = self._batches
        if not batches.full:
            epoch = state.step // batches.per_epoch
            order = jax.lax.cond(epoch != order[1],
                                 lambda: (batches.permutation(state), epoch),
                                 lambda: order)
        indices = batches.indices(state, order[0])
        state, info = self._core.update(state, self._batch(indices, data, inputs))
        return state, info, order

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
        self._history = _History()
        self._history.add(0, {}, state)
        return state

    def prepare(self, batch) -> PreparedBatch:
        """Check ``batch`` (observed sites, data representation) against the domains
        once and convert it for :meth:`update` (and for ``core.update``:
        ``prepare(batch).batch``)."""
        return PreparedBatch(validate_data(self.core.m.state_sites, batch))

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
        new_state, info, (counts, values) = self._update_jit(state, batch)
        step, failed_at = np.asarray(counts).tolist()
        values = np.asarray(values)
        recorded = {k: values[i:i + 1] for i, k in enumerate(info)}
        self._history.resume(state, step)
        self._history.add(step, recorded, new_state)
        self._raise_if_failed(new_state, recorded, failed_at)
        self.last_state = new_state
        return new_state, info

    def get_params(self, state: LearnState, averaged: bool = False) -> dict:
        """Parameters of ``state`` in the constrained space; with ``averaged``, the mean
        of the iterates kept by an optimizer wrapped in :func:`~numpyro_ugm.averaged`
        (e.g. ``learner.get_params(result.state, averaged=True)``)."""
        return self.core.get_params(state, averaged)

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
            as_key(rng_key, "MLE.restart_estimator"), core.target, core.get_params(state),
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

    def _update_and_summary(self, state, batch):
        """The core's update, and what :meth:`update` reads on the host packed in two
        arrays (one transfer each, not one per scalar): the steps of ``state`` and of
        the new state's ``failed_at``, and the diagnostics' values."""
        new_state, info = self._core.update(state, batch)
        return new_state, info, (jnp.stack([state.step, new_state.failed_at]),
                                 jnp.stack([info[k] for k in info]))

    def _raise_if_failed(self, state, diagnostics, failed_at=None):
        failed_at = int(state.failed_at) if failed_at is None else failed_at
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
            The per-step diagnostics recorded up to the checkpoint: entry ``i`` is step
            ``i`` (NaN for steps the saving learner did not record, e.g. before an
            ``init_state`` from elsewhere); after a failed step it includes that step.
            Checkpoints written by a run continued from this state hold them too.
        """
        template = self.init(jax.random.PRNGKey(0), data, *model_args, inputs=inputs,
                             batch_size=batch_size, **model_kwargs)
        state, diagnostics = checkpoint.load(path, template)
        state = state._replace(failed_at=-jnp.ones((), jnp.int32))  # may retry a failure
        self.last_state = state
        self._history = _History()
        self._history.add(0, diagnostics, state)
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
            Save the state (and the diagnostics of every step so far, those of earlier
            runs, updates and restored checkpoints of this state's history included)
            every this many steps, at the end, and when the run stops early
            (non-finite step, interruption), as ``checkpoint_dir/step_<step>.npz``
            (plain arrays; see :meth:`restore`).
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
        num_steps = check_count("MLE.run", "num_steps", num_steps, minimum=0)
        if (checkpoint_every is None) != (checkpoint_dir is None):
            raise ValueError("give both checkpoint_every and checkpoint_dir, or neither")
        every = (None if checkpoint_every is None
                 else check_count("MLE.run", "checkpoint_every", checkpoint_every))
        if init_state is None:
            state = self.init(rng_key, data, *model_args, inputs=inputs,
                              batch_size=batch_size, init_params=init_params, **model_kwargs)
        else:
            self._setup(data, model_args, model_kwargs, inputs, batch_size)
            state = init_state
        chunk = chunk_size(num_steps, progress_bar, every)
        size = capacity(chunk)  # one compiled program for every run length up to it
        start = int(state.step)
        self._history.resume(state)

        def kept(state, diagnostics):
            """Diagnostics up to the failing step, if one failed."""
            if int(state.failed_at) < 0:
                return diagnostics
            return {k: v[:int(state.failed_at) - start + 1] for k, v in diagnostics.items()}

        order = [self._no_order(state)]

        def advance(state, length):
            state, info, order[0] = self._scan_jit(state, self._data, self._inputs, order[0],
                                                   size, length)
            self.last_state = state
            return state, info

        def save(state, diagnostics):
            checkpoint.save(checkpoint.step_path(checkpoint_dir, int(state.step)), state,
                            self._history.arrays((start, kept(state, diagnostics))))

        state, diagnostics = run_loop(
            advance, state, num_steps, chunk=chunk, progress_bar=progress_bar,
            desc="learning", stop=lambda s: int(s.failed_at) >= 0,
            postfix=lambda info: {"grad_norm": f"{float(info['grad_norm'][-1]):.3g}"},
            checkpoint_every=every, save=save if every is not None else None)
        diagnostics = kept(state, diagnostics)
        self._history.add(start, diagnostics, state)
        _warn_if_collapsed(diagnostics, start, self._core.estimator)
        _warn_if_log_z_unreliable(diagnostics, start)
        self._raise_if_failed(state, diagnostics)
        return RunResult(self.get_params(state), state, diagnostics)
