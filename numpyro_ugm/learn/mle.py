"""``MLE``: the learning driver users call, shaped like ``numpyro.infer.SVI``.

It traces the model and checks the data (:mod:`.setup`), places data and particles on a
device mesh (:mod:`.data`), compiles the functional core
(:class:`~numpyro_ugm.learn.core.LearnerCore`) over minibatches (:mod:`.steps`) and runs
it with the package's run loop (:mod:`numpyro_ugm.runtime.runloop`: progress bar, checkpoints,
interrupts), keeping the per-step diagnostics across runs (:mod:`.diagnostics`).
Conditional models get their estimator wrapped in
:class:`~numpyro_ugm.estimators.per_example.PerExample`.

Two public hooks make other learners of the same driver: ``core_class`` (a
:class:`~numpyro_ugm.learn.core.LearnerCore` subclass whose ``objective`` the update
ascends) with the optimizer (any optax transformation), and ``run``'s ``thinning`` and
``record`` (keep every ``thinning``-th update, with what ``record`` reads of its state).
:class:`~numpyro_ugm.posterior.SGMCMC` is this learner with the log posterior as objective,
a Langevin step as optimizer, and the parameters recorded.
"""

import contextlib
import functools
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..runtime import checkpoint
from ..runtime.checks import as_key, check_count
from ..model.diagnose import diverged_sites
from ..estimators.base import Estimator
from ..model.ugm import UGM
from ..runtime.runloop import Interrupted, SaveFailed, capacity, chunk_size, run_loop
from ..model.validation import validate_data
from .core import LearnerCore, LearnState, StepInfo
from .data import Placement
from .checkpoints import (DEFAULT_KEEP, check_restored, checkpoint_meta, good_state,
                          new_run_id, run_id_of, start_writing, stored_in)
from .diagnostics import (History, Piece, until_failure, warn_if_collapsed,
                          warn_if_log_z_unreliable)
from .setup import set_up


class RunResult(NamedTuple):
    """What :meth:`MLE.run` returns.

    Attributes
    ----------
    params : dict
        Learned parameters (constrained space).
    state : LearnState
        Final state (pass as ``init_state`` to continue).
    diagnostics : dict of str -> ndarray, each with a leading axis of ``num_steps``
        A trace: the fields of each update's :class:`~numpyro_ugm.learn.core.StepInfo`
        (:meth:`~numpyro_ugm.learn.core.StepInfo.diagnostics`), stacked per step and keyed
        by name, since checkpoints store them by name: ``grad_norm``, ``positive`` (batch
        mean of F), the estimator's info (e.g. ``ess``, ``resampled``, ``rejuvenated``,
        ``num_betas``, ``acceptance``, ``log_z`` and its standard error ``log_z_se``)
        and, with a ``log_z``, the running ``log_likelihood`` (per case; its standard
        error is ``log_z_se``); with ``thinning``, one entry per ``thinning`` updates
        (the last one's), and what ``record`` returned. A run warns when the running
        log-likelihood is impossible (positive) or its standard error exceeds
        ``LOG_Z_SE_TOLERANCE`` (1 nat). A dict, as numpyro's
        ``MCMC.get_extra_fields()``: its keys depend on the estimator and on
        ``record``.
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
        The last good state: before the update that made the parameters the failing
        step failed at (the initial state if the first step failed).
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
        minimizes the negative of the core's objective.
    mesh : jax.sharding.Mesh, optional
        Particles (and the examples of data and CRF inputs) split over the mesh's first
        axis, parameters replicated: the numbers of a one-device run, up to the order of
        floating-point sums. Multi-host: ``jax.distributed.initialize()`` on every host.
    core_class : type
        The :class:`~numpyro_ugm.learn.core.LearnerCore` (sub)class, called as
        ``core_class(target, param_model, estimator, optimizer, num_examples)``; a
        subclass changes the objective (e.g. :class:`~numpyro_ugm.posterior.PosteriorCore`).

    Examples
    --------
    >>> learner = ugm.MLE(ugm.models.vbm, ugm.PCD(100), optax.adam(0.01))
    >>> result = learner.run(jax.random.PRNGKey(0), 1000, {"x": x}, 15)
    """

    def __init__(self, model, estimator: Estimator, optimizer: optax.GradientTransformation,
                 *, mesh: Optional[jax.sharding.Mesh] = None,
                 core_class: type = LearnerCore):
        _check_parts(estimator, optimizer, core_class)
        self._placement = Placement(mesh)
        self.model, self.estimator, self.optimizer = model, estimator, optimizer
        self.mesh, self.core_class = self._placement.mesh, core_class  # a checked mesh
        self._setup = self.last_state = None  # a Setup after init or run
        # and the run that run() continues: (run id, directory of a restored checkpoint)
        self._history, self._run = History(), (None, None)
        self._check_start = True  # init's check of the start (off for restore's template)

    def _set_up(self, data, model_args, model_kwargs, inputs, batch_size):
        previous, self._setup = self._setup, None  # none if tracing fails (setup.set_up)
        self._setup = set_up(previous, self.model, self.estimator, self.optimizer,
                             self.core_class, self._placement, data, model_args,
                             model_kwargs, inputs, batch_size)

    @property
    def core(self) -> LearnerCore:
        """The functional core (after :meth:`init`): ``core.update(state, batch)`` is
        a pure, jit-able step on a batch from :meth:`prepare`, for loops of one's own."""
        return _ready(self._setup).core

    @property
    def ugm(self) -> UGM:
        """The traced model (observed sites set by the data given to :meth:`init`)."""
        return _ready(self._setup).problem.model

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
            Initial parameters (constrained space); default ``m.init_params``. Where the
            model is visibly not normalizable, FloatingPointError (:func:`.core.check_start`).
        """
        rng_key = as_key(rng_key, "MLE.init")
        self._set_up(data, model_args, model_kwargs, inputs, batch_size)
        setup = self._setup
        state = _estimator_checked(setup, self._placement.run(setup.core.init)(
            rng_key, setup.all(), init_params, self._check_start))
        sizes = (getattr(setup.core.estimator, "num_particles", None),
                 setup.steps.batches.num_examples if setup.inputs is not None else None)
        state = state._replace(estimator_state=self._placement.shard(state.estimator_state,
                                                                     *sizes))
        self.last_state, self._history, self._run = state, History(), (None, None)
        self._history.add(Piece(0, {}), state)
        return state

    def prepare(self, batch) -> PreparedBatch:
        """Check ``batch`` (observed sites, data representation) against the domains
        once and convert it for :meth:`update` (and for ``core.update``:
        ``prepare(batch).batch``)."""
        return PreparedBatch(validate_data(self.core.target.state_sites, batch))

    def update(self, state: LearnState, batch=None) -> tuple[LearnState, StepInfo]:
        """One learning step on ``batch`` (observed sites, data representation, or from
        :meth:`prepare`); default: the minibatch of ``state.step`` from the data given to
        :meth:`init` (required with CRF ``inputs``, whose particles belong to the
        examples). Returns the new state and that step's
        :class:`~numpyro_ugm.learn.core.StepInfo` (``info.grad_norm``,
        ``info.estimator.ess``, ...). A failed step raises :class:`NonFiniteError` with the
        last good state, as :meth:`run`: the input of the update() that made ``state``."""
        setup = _ready(self._setup, "before update()")
        batch = _update_batch(setup, state, batch, self.prepare)
        new_state, info, (step, failed_at, values) = setup.steps.attempt(state, batch)
        recorded = {k: values[i:i + 1] for i, k in enumerate(info.names)}
        if new_state is None:  # settled here: the state stays, its failure noted
            new_state = state._replace(failed_at=jnp.full_like(state.failed_at, failed_at))
        self._history.resume(state, step)
        self._history.add(Piece(step, recorded), new_state, None if failed_at >= 0 else state)
        self.last_state = _kept(self._history, state, new_state, failed_at)
        _raise_if_failed(self.last_state, recorded, failed_at)
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

    def restart_estimator(self, rng_key, state: LearnState, *, position=None) -> LearnState:
        """``state`` with this learner's estimator started afresh at the current
        parameters (parameters, optimizer state, keys and step are kept): to switch
        estimators mid-run (``other.restart_estimator(key, state)`` for a learner
        ``other`` built with another estimator, after ``other.init`` on the same data)
        or to re-seed one (e.g. a new MCMC-MLE round now). ``position``: start the new
        chains there (e.g. ``learner.particles(state)`` of the learner being left), for
        estimators whose state holds kernel states (PCD and its tempered variants)."""
        return self._placement.run(self.core.restart_estimator)(
            as_key(rng_key, "MLE.restart_estimator"), state, self._setup.all(), position)

    def restore(self, path, data, *model_args, inputs=None, batch_size=None,
                **model_kwargs):
        """``(state, diagnostics)`` saved in a checkpoint (``run(checkpoint_dir=...)``) for
        the same model, data and settings (another model, optimizer or averaging start
        raises ``CheckpointError``): diagnostics entry ``i`` is update ``i`` (NaN where the
        saver did not record, or thinned away), the failing step included. Continue with
        ``run(..., init_state=state)``: bit-identical to a run never interrupted, its
        checkpoints holding the restored diagnostics too. After a failed step the state
        is the last good one, ready to retry (e.g. with another learning rate)."""
        with _template_only(self):  # its values are the checkpoint's
            template = self.init(jax.random.PRNGKey(0), data, *model_args, inputs=inputs,
                                 batch_size=batch_size, **model_kwargs)
        state, diagnostics = checkpoint.load(path, template, checkpoint_meta(self.ugm, template))
        check_restored(path, self.get_params(state), self.core.param_space)
        state = state._replace(failed_at=-jnp.ones((), jnp.int32))  # may retry a failure
        self.last_state, self._history = state, History(stored=stored_in(path))
        self._run = (run_id_of(path), Path(path).parent)
        self._history.add(Piece(0, diagnostics), state)
        return state, diagnostics

    def run(self, rng_key, num_steps, data, *model_args, inputs=None, batch_size=None,
            progress_bar=True, init_state=None, init_params=None, checkpoint_every=None,
            checkpoint_dir=None, checkpoint_keep=DEFAULT_KEEP, checkpoint_overwrite=False,
            thinning=1, record: Optional[Callable] = None, **model_kwargs) -> RunResult:
        """Learn for ``num_steps`` updates.

        Parameters
        ----------
        rng_key : jax PRNGKey
        num_steps : int
        data, *model_args, inputs, batch_size, init_params, **model_kwargs
            As for :meth:`init`. Each epoch of minibatches visits a fresh permutation.
        progress_bar : bool
            Show a tqdm bar (the run then goes in chunks; results are identical).
        init_state : LearnState, optional
            Continue from this state (e.g. ``result.state`` of an earlier run, or
            ``error.state`` of a failed one: retried).
        checkpoint_every : int, optional
            Save the state, with the diagnostics of every step so far (earlier runs,
            updates and restored checkpoints of this state's history included), every
            this many updates (a multiple of ``thinning``), at the end, and when the run
            stops early (non-finite step, interruption), as
            ``checkpoint_dir/step_<step>.npz`` (plain arrays; see :meth:`restore`).
        checkpoint_dir : str or Path, optional
            Where checkpoints go (required with ``checkpoint_every``): a directory of
            this run's (a continued run's) only; one of another run is refused.
        checkpoint_keep : int or None
            Keep the newest this many checkpoints (None: all) and their diagnostics.
        checkpoint_overwrite : bool
            Take over a directory of another run, deleting its checkpoints.
        thinning : int
            Keep the diagnostics of every ``thinning``-th update only (``num_steps`` must
            be a multiple); the updates themselves are unchanged.
        record : callable, optional
            ``(core, state) -> dict of arrays``, traced after each kept update: its
            entries join the diagnostics (e.g. the parameters, ``core.get_params(state)``).
            Pass the same function to reuse the compiled steps.

        Returns
        -------
        RunResult

        Raises
        ------
        NonFiniteError
            When a step produces non-finite values; it carries the last good state.
        Interrupted, SaveFailed
            On Ctrl-C, or an ``OSError`` writing a checkpoint (a full disk): the last
            completed chunk kept (``error.state``, ``error.diagnostics``, ``last_state``).
        """
        num_steps, thinning, every = _check_run(num_steps, thinning, checkpoint_every,
                                                checkpoint_dir)
        if init_state is None:
            state = self.init(rng_key, data, *model_args, inputs=inputs,
                              batch_size=batch_size, init_params=init_params, **model_kwargs)
        else:
            self._set_up(data, model_args, model_kwargs, inputs, batch_size)
            state = _retried(init_state)
        self._history.resume(state)
        start, setup = int(state.step), self._setup
        self._run = self._run if self._run[0] else (new_run_id(), None)
        chunk = chunk_size(num_steps // thinning, progress_bar, every)
        advance = functools.partial(setup.steps.run, data=setup.data, inputs=setup.inputs,
                                    capacity=capacity(chunk), thinning=thinning, record=record)
        writer = None if every is None else start_writing(
            checkpoint_dir, self._run[0], keep=checkpoint_keep, resumed_from=self._run[1],
            overwrite=checkpoint_overwrite, history=self._history, first=start,
            stride=thinning, meta=checkpoint_meta(self.ugm, state))
        try:
            carry, rows = run_loop(
                advance, setup.steps.carry(state), num_steps // thinning, chunk=chunk,
                progress_bar=progress_bar, desc="learning", stop=_failed, postfix=_postfix,
                checkpoint_every=every, save=writer, steps_per_row=thinning, unit="update")
            state = good_state(carry)
        except (Interrupted, SaveFailed) as interrupt:  # keep what the chunks did
            state = good_state(interrupt.state)
            self._history.add(until_failure(state, Piece(start, interrupt.diagnostics,
                                                         thinning)), state)
            self.last_state = state
            raise
        piece = until_failure(state, Piece(start, rows, thinning))
        self._history.add(piece, state)
        self.last_state = state
        warn_if_collapsed(piece, setup.core.estimator)
        warn_if_log_z_unreliable(piece)
        _raise_if_failed(state, piece.rows)
        return RunResult(self.get_params(state), state, piece.rows)


def _check_parts(estimator, optimizer, core_class):
    if not isinstance(estimator, Estimator):
        raise TypeError(f"estimator must be a ugm estimator such as ugm.PCD(100), got "
                        f"{estimator!r}")
    if not isinstance(optimizer, optax.GradientTransformation):
        raise TypeError(f"optimizer must be an optax GradientTransformation, got "
                        f"{optimizer!r}")
    if not (isinstance(core_class, type) and issubclass(core_class, LearnerCore)):
        raise TypeError(f"core_class must be ugm.learn.LearnerCore or a subclass, got "
                        f"{core_class!r}")


def _update_batch(setup, state, batch, prepare):
    """The batch :meth:`MLE.update` steps on: ``batch`` prepared, or by default the
    minibatch of ``state.step`` from the learner's data."""
    if batch is None:
        batches = setup.steps.batches
        perm = None if batches.full else batches.permutation(state)
        return setup.steps.batch(batches.indices(state, perm), setup.data, setup.inputs)
    if setup.inputs is not None:
        raise ValueError("with per-example inputs the learner steps on its own "
                         "minibatches (their particles persist per example): call "
                         "update(state) without a batch")
    return (batch if isinstance(batch, PreparedBatch) else prepare(batch)).batch


def _check_run(num_steps, thinning, checkpoint_every, checkpoint_dir):
    """:meth:`MLE.run`'s counts checked: ``(num_steps, thinning, checkpoint_every in
    records)``."""
    num_steps = check_count("MLE.run", "num_steps", num_steps, minimum=0)
    thinning = check_count("MLE.run", "thinning", thinning)
    every = _check_checkpoints(checkpoint_every, checkpoint_dir, thinning)
    if num_steps % thinning:
        raise ValueError(f"MLE.run: num_steps ({num_steps}) must be a multiple of "
                         f"thinning ({thinning})")
    return num_steps, thinning, every


def _check_checkpoints(checkpoint_every, checkpoint_dir, thinning) -> Optional[int]:
    """``checkpoint_every`` in records of ``thinning`` updates (None: no checkpoints)."""
    if (checkpoint_every is None) != (checkpoint_dir is None):
        raise ValueError("give both checkpoint_every and checkpoint_dir, or neither")
    if checkpoint_every is None:
        return None
    every = check_count("MLE.run", "checkpoint_every", checkpoint_every)
    if every % thinning:
        raise ValueError(f"MLE.run: checkpoint_every ({every}) must be a multiple of "
                         f"thinning ({thinning})")
    return every // thinning


def _estimator_checked(setup, state: LearnState) -> LearnState:
    """``state`` once the estimator's own check before learning, on the host, passed, if
    it has one (:class:`~numpyro_ugm.learn.exact_estimator.Exact`: its sums fit, its
    tables hold)."""
    check = getattr(setup.core.estimator, "check", None)
    if check is not None:
        check(setup.problem.model, setup.core.target, setup.core.get_params(state),
              setup.problem.num_examples, setup.problem.inputs)
    return state


def _ready(setup, when="first"):
    """``setup`` (a learner's), after checking that :meth:`MLE.init` made it."""
    if setup is None:
        raise RuntimeError(f"call init() {when}")
    return setup


@contextlib.contextmanager
def _template_only(learner):
    """``learner.init`` without its check of the starting parameters (a template whose
    values :meth:`MLE.restore` replaces by a checkpoint's)."""
    learner._check_start = False
    try:
        yield
    finally:
        learner._check_start = True


def _retried(state):
    """``state`` ready for another update: a state kept after a failure (``failed_at``
    set: ``error.state``) is tried again, not returned unchanged."""
    return state._replace(failed_at=-jnp.ones_like(state.failed_at))


def _kept(history, state, new_state, failed_at):
    """What the learner keeps after :meth:`MLE.update` from ``state``: ``new_state``,
    or after a failure the last good state (:meth:`History.before
    <numpyro_ugm.learn.diagnostics.History.before>`) with the failure noted, as
    :meth:`MLE.run` keeps."""
    if failed_at < 0:
        return new_state
    return history.before(state)._replace(failed_at=new_state.failed_at)


def _failed(carry) -> bool:
    """Whether the run loop's ``(state, order)`` holds a failed step."""
    return int(carry[0].failed_at) >= 0


def _postfix(rows) -> dict:
    return {"grad_norm": f"{float(rows['grad_norm'][-1]):.3g}"}


def _raise_if_failed(state, diagnostics, failed_at=None):
    failed_at = int(state.failed_at) if failed_at is None else failed_at
    if failed_at < 0:
        return
    spread = {k[len("chain_spread_"):]: np.asarray(v).reshape(-1)[-1]
              for k, v in (diagnostics or {}).items() if k.startswith("chain_spread_")}
    diverged = diverged_sites(spread)
    if diverged is not None:
        raise NonFiniteError(
            f"learning step {failed_at}: {diverged}. The run stopped; error.state is the "
            "last good state, before the step that made the parameters at which the "
            "chains diverged. "
            "Parametrize such terms to stay normalizable (a Cholesky factor, a positive "
            "transform) or lower the learning rate.",
            failed_at, state, diagnostics)
    raise NonFiniteError(
        f"learning step {failed_at} produced non-finite gradients or parameters; "
        "the run stopped and kept the last good state (error.state). Lower the "
        "learning rate, add a prior, or check the model's factors.",
        failed_at, state, diagnostics)
