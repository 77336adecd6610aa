"""``MLE``: the learning driver, shaped like ``numpyro.infer.SVI``.

Each step asks the estimator for weighted particles at the current parameters θ_t and
ascends the stochastic gradient

    mean_batch ∇θ F(x_n; θ)  −  Σ_s w_s ∇θ F(x_s; θ)  +  ∇θ log p(θ) / N,

where F is the log-potential with latent sites summed out in closed form (Rao-Blackwell:
the free energy of an RBM), so both phases use it. The optax optimizer runs in the
unconstrained space of the parameters. One step is one jitted function; ``run`` scans it.
"""

import math
import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm.auto import tqdm

from . import checkpoint
from .estimators.base import Estimator
from .model import UGM
from .conditionals import free_energy


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


class RunResult(NamedTuple):
    """What :meth:`MLE.run` returns.

    Attributes
    ----------
    params : dict
        Learned parameters (constrained space).
    state : LearnState
        Final state (pass as ``init_state`` to continue).
    diagnostics : dict of str -> ndarray, each of shape ``(num_steps,)``
        Per step: ``grad_norm``, ``positive`` (batch mean of F), ``log_likelihood``
        (running estimate, NaN when the estimator has no log Z), and the estimator's
        ``ess``, ``resampled``, ``rejuvenated``, ``num_betas``, ``acceptance``, ``log_z``.
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


def _raw_key(key):
    key = jnp.asarray(key) if not hasattr(key, "dtype") else key
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return key


def _check_inputs(inputs, data):
    """Per-example model inputs as arrays sharing the data's leading example axis."""
    if inputs is None:
        return None
    if not isinstance(inputs, dict) or not inputs:
        raise TypeError(f"inputs must be a non-empty dict of per-example model keyword "
                        f"arguments, got {type(inputs).__name__}")
    num = {n: np.shape(v)[0] if np.ndim(v) else None for n, v in data.items()}
    expected = next(iter(num.values()))
    out = {}
    for name, value in inputs.items():
        value = jnp.asarray(value)
        if value.ndim == 0 or value.shape[0] != expected:
            raise ValueError(f"input {name!r} has shape {value.shape}: its leading axis "
                             f"must be the {expected} examples of the data")
        if jnp.issubdtype(value.dtype, jnp.inexact) and not bool(jnp.all(jnp.isfinite(value))):
            raise ValueError(f"input {name!r} holds non-finite values")
        out[name] = value
    return out


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
            "more particles, a higher ess_threshold, or (PF) a weight temperature > 1.",
            RuntimeWarning, stacklevel=3)


def _all_finite(tree, allow_minus_inf=False):
    """Whether every floating-point value of ``tree`` is finite (or −inf, if allowed:
    the log of a zero particle weight)."""
    def ok(x):
        return (~jnp.isnan(x)) & (x < jnp.inf) if allow_minus_inf else jnp.isfinite(x)

    leaves = [jnp.all(ok(x)) for x in jax.tree.leaves(tree)
              if jnp.issubdtype(jnp.result_type(x), jnp.inexact)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.array(True)


class MLE:
    """Maximum-likelihood (or MAP, when parameters have priors) learning of a UGM.

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

    def __init__(self, model, estimator, optimizer, *, mesh=None):
        if mesh is not None and not isinstance(mesh, jax.sharding.Mesh):
            raise TypeError(f"mesh must be a jax.sharding.Mesh, got {mesh!r}")
        if mesh is not None:  # XLA partitions the steps (automatic sharding propagation)
            mesh = jax.sharding.Mesh(mesh.devices, mesh.axis_names, axis_types=(
                jax.sharding.AxisType.Auto,) * len(mesh.axis_names))
        self.mesh = mesh
        if not isinstance(estimator, Estimator):
            raise TypeError(f"estimator must be a ugm estimator such as ugm.PCD(100), got "
                            f"{estimator!r}")
        if not isinstance(optimizer, optax.GradientTransformation):
            raise TypeError(f"optimizer must be an optax GradientTransformation, got "
                            f"{optimizer!r}")
        self.model, self.estimator, self.optimizer = model, estimator, optimizer
        self.m = None
        self.last_state = None
        self._setup_key = None

    # --- setup ------------------------------------------------------------------------
    def _setup(self, data, model_args, model_kwargs, inputs, batch_size):
        ids = lambda d: (tuple(sorted((n, id(v)) for n, v in d.items()))  # noqa: E731
                         if isinstance(d, dict) else id(d))
        key = (ids(data), None if inputs is None else ids(inputs), model_args,
               tuple(sorted(model_kwargs.items())), batch_size)
        try:
            if self.m is not None and key == self._setup_key:
                return  # same model and data: keep the compiled steps
        except (TypeError, ValueError):  # unhashable / array-valued arguments
            pass
        self._setup_key = key
        inputs = _check_inputs(inputs, data)
        first = {} if inputs is None else {k: v[0] for k, v in inputs.items()}
        if isinstance(self.model, UGM):
            if model_args or model_kwargs:
                raise TypeError("model arguments were given but the model is already a UGM")
            m = self.model.bind(**first) if first else self.model
        else:
            m = UGM(self.model, *model_args, **model_kwargs, **first)
        data = m.validate_data(data)
        m = m.observe(data.keys())
        m.structure  # analyse once, outside any trace
        if m.latent_sites:
            free_energy(m, m.init_params(jax.random.PRNGKey(0)),
                        {n: v[0] for n, v in data.items()})  # raises if not summable
        num_examples = int(jax.tree.leaves(data)[0].shape[0])
        if batch_size is not None and not 1 <= int(batch_size) <= num_examples:
            raise ValueError(f"batch_size must be in [1, {num_examples}] (the number of "
                             f"examples), got {batch_size}")
        data, inputs = self._shard(data, num_examples), self._shard(inputs, num_examples)
        self.m, self.data, self.inputs, self.num_examples = m, data, inputs, num_examples
        self.batch_size = num_examples if batch_size is None else int(batch_size)
        self._update_jit = self._in_mesh(jax.jit(self._update))
        self._scan_jit = self._in_mesh(jax.jit(self._scan, static_argnums=1))

    def _in_mesh(self, fn):
        """``fn`` run with the learner's mesh set (estimators then split particles they
        create over it), or ``fn`` itself without a mesh."""
        if self.mesh is None:
            return fn

        def wrapped(*args):
            with jax.set_mesh(self.mesh):
                return fn(*args)

        return wrapped

    def _shard(self, tree, *sizes):
        """With a mesh: split the leading axis of the leaves whose leading axis is one of
        ``sizes`` (particles, examples) over the mesh's first axis; the rest replicated.
        jit then partitions every vmap over particles or examples accordingly."""
        if self.mesh is None or tree is None:
            return tree
        axis = self.mesh.axis_names[0]
        count = self.mesh.shape[axis]
        P = jax.sharding.PartitionSpec

        def place(a):
            split = (np.ndim(a) > 0 and a.shape[0] in sizes and a.shape[0] % count == 0)
            spec = P(axis) if split else P()
            return jax.device_put(a, jax.sharding.NamedSharding(self.mesh, spec))

        return jax.tree.map(place, tree)

    def _epoch_permutation(self, state):
        """The example order of ``state.step``'s epoch (a fresh permutation each)."""
        epoch = state.step // (self.num_examples // self.batch_size)
        return jax.random.permutation(jax.random.fold_in(state.data_key, epoch),
                                      self.num_examples)

    def _batch(self, state, perm=None):
        """The minibatch of ``state.step``: ``(indices, data, inputs)``; ``indices`` is
        None for the full batch. ``perm``: the epoch's permutation, if already drawn."""
        if self.batch_size == self.num_examples:
            return None, self.data, self.inputs
        if perm is None:
            perm = self._epoch_permutation(state)
        position = state.step % (self.num_examples // self.batch_size)
        idx = jax.lax.dynamic_slice(perm, (position * self.batch_size,), (self.batch_size,))
        take = lambda tree: jax.tree.map(lambda a: a[idx], tree)  # noqa: E731
        return idx, take(self.data), take(self.inputs)

    def _negative_phase(self, est_key, estimator_state, params, selection):
        """The estimator's update: once for the model, or per example (CRFs: vmapped
        over the batch's examples, each with its own persistent particles)."""
        m, estimator = self.m, self.estimator
        idx, batch, inputs = selection
        if inputs is None:
            return estimator.update(est_key, estimator_state, m, params, batch)
        states = estimator_state if idx is None else jax.tree.map(
            lambda a: a[idx], estimator_state)

        def one(key, state, example_inputs, example):
            return estimator.update(key, state, m.bind(**example_inputs), params,
                                    jax.tree.map(lambda a: a[None], example))

        keys = jax.random.split(est_key, jax.tree.leaves(batch)[0].shape[0])
        states, particles, info = jax.vmap(one)(keys, states, inputs, batch)
        estimator_state = states if idx is None else jax.tree.map(
            lambda a, b: a.at[idx].set(b), estimator_state, states)
        info = jax.tree.map(lambda v: jnp.mean(jnp.asarray(v, jnp.float32)), info)
        return estimator_state, particles, info

    def _energies(self, params, positions, inputs):
        """F(x; θ) for a batch of configurations (one per example's inputs, if any)."""
        if inputs is None:
            return jax.vmap(free_energy, (None, None, 0))(self.m, params, positions)
        return jax.vmap(lambda inp, x: free_energy(self.m.bind(**inp), params, x))(
            inputs, positions)

    # --- one step -----------------------------------------------------------------------
    def _update(self, state, selection):
        m = self.m
        key, est_key = jax.random.split(state.rng_key)
        params = m.to_constrained(state.params)
        estimator_state, particles, info = self._negative_phase(
            est_key, state.estimator_state, params, selection)
        weights = jax.lax.stop_gradient(jnp.exp(particles.log_weights))
        positions = jax.lax.stop_gradient(particles.position)
        _, batch, inputs = selection

        def objective(u):
            p = m.to_constrained(u)
            positive = jnp.mean(self._energies(p, batch, inputs))
            if inputs is None:
                negative = jnp.sum(weights * self._energies(p, positions, None))
            else:  # per example: its own weighted particles under its own inputs
                def example_negative(w, inp, x):
                    many = jax.tree.map(lambda a: jnp.broadcast_to(a, w.shape + a.shape), inp)
                    return jnp.sum(w * self._energies(p, x, many))

                negative = jnp.mean(jax.vmap(example_negative)(weights, inputs, positions))
            return positive - negative + m.log_prior(p) / self.num_examples, positive

        grads, positive = jax.grad(objective, has_aux=True)(state.params)
        neg_grads = jax.tree.map(jnp.negative, grads)
        updates, opt_state = self.optimizer.update(neg_grads, state.opt_state, state.params)
        new_params = optax.apply_updates(state.params, updates)

        candidate = LearnState(new_params, opt_state, estimator_state, key, state.data_key,
                               state.step + 1, state.failed_at)
        # particles of zero weight (log weight −inf, e.g. underflow in a tempering step)
        # are not a failure
        finite = (_all_finite((grads, new_params))
                  & _all_finite((estimator_state, particles.log_weights), allow_minus_inf=True))
        ok = finite & (state.failed_at < 0)
        new_state = jax.tree.map(lambda a, b: jnp.where(ok, a, b), candidate, state)
        new_state = new_state._replace(failed_at=jnp.where(
            (state.failed_at < 0) & ~finite, state.step, state.failed_at))

        diagnostics = {k: jnp.asarray(v, jnp.float32) for k, v in info._asdict().items()}
        diagnostics["grad_norm"] = optax.tree.norm(grads).astype(jnp.float32)
        diagnostics["positive"] = positive.astype(jnp.float32)
        if "log_z" in diagnostics:
            diagnostics["log_likelihood"] = (positive - diagnostics["log_z"]).astype(
                jnp.float32)
        return new_state, diagnostics

    def _scan(self, state, capacity, num_steps):
        """Run ``num_steps`` (traced, <= ``capacity``) updates in a ``fori_loop`` with a
        dynamic trip count, so that the loop body is the same compiled computation for
        any chunking: a run split into pieces is bit-identical to one long run."""
        template = jax.eval_shape(lambda s: self._update(s, self._batch(s))[1], state)
        buffers = jax.tree.map(lambda t: jnp.full((capacity,) + t.shape, jnp.nan, t.dtype),
                               template)
        # minibatches: the epoch's permutation is drawn on the first step and when an
        # epoch starts, not on every step (a permutation of 50,000 examples costs ~10x a
        # PCD-1 step of an RBM); a full batch ignores it
        minibatches = self.batch_size < self.num_examples
        per_epoch = self.num_examples // self.batch_size
        perm = (jnp.zeros_like(jax.eval_shape(self._epoch_permutation, state)) if minibatches
                else jnp.zeros((0,), jnp.int32))

        def body(i, carry):
            state, buffers, perm = carry
            if minibatches:
                perm = jax.lax.cond((i == 0) | (state.step % per_epoch == 0),
                                    lambda: self._epoch_permutation(state), lambda: perm)
            state, info = self._update(state, self._batch(state, perm))
            buffers = jax.tree.map(lambda b, v: b.at[i].set(v), buffers, info)
            return state, buffers, perm

        state, buffers, _ = jax.lax.fori_loop(0, num_steps, body, (state, buffers, perm))
        return state, buffers

    # --- public API ---------------------------------------------------------------------
    def init(self, rng_key, data, *model_args, inputs=None, batch_size=None,
             init_params=None, **model_kwargs):
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
        self._setup(data, model_args, model_kwargs, inputs, batch_size)
        rng_key = _raw_key(rng_key)
        param_key, est_key, key, data_key = jax.random.split(rng_key, 4)
        params = self.m.init_params(param_key) if init_params is None else dict(init_params)
        self.m.check_params(params)
        unconstrained = self.m.to_unconstrained(params)
        state = LearnState(unconstrained, self.optimizer.init(unconstrained), None, key,
                           data_key, jnp.zeros((), jnp.int32), -jnp.ones((), jnp.int32))
        if self.inputs is None:
            # jitted: an estimator's init may anneal (a while loop), slow op by op
            init_one = jax.jit(lambda key, p, data: self.estimator.init(key, self.m, p, data))
            estimator_state = self._in_mesh(init_one)(est_key, params, self.data)
        else:  # particles per example, each initialized under its own inputs
            def init_one(key, example_inputs, example):
                return self.estimator.init(key, self.m.bind(**example_inputs), params,
                                           jax.tree.map(lambda a: a[None], example))

            estimator_state = self._in_mesh(jax.jit(jax.vmap(init_one)))(
                jax.random.split(est_key, self.num_examples), self.inputs, self.data)
        sizes = (getattr(self.estimator, "num_particles", None),
                 self.num_examples if self.inputs is not None else None)
        state = state._replace(estimator_state=self._shard(estimator_state, *sizes))
        self.last_state = state
        return state

    def update(self, state, batch=None):
        """One learning step.

        Parameters
        ----------
        state : LearnState
        batch : dict, optional
            Observed sites (data representation) to step on; default: the minibatch of
            ``state.step`` from the data given to :meth:`init` (required with CRF
            ``inputs``, whose particles belong to the examples).

        Returns
        -------
        state : LearnState
        info : dict of scalars (that step's diagnostics)
        """
        if self.m is None:
            raise RuntimeError("call init() before update()")
        if batch is None:
            selection = self._batch(state)
        elif self.inputs is not None:
            raise ValueError("with per-example inputs the learner steps on its own "
                             "minibatches (their particles persist per example): call "
                             "update(state) without a batch")
        else:
            selection = (None, self.m.validate_data(batch), None)
        new_state, info = self._update_jit(state, selection)
        self._raise_if_failed(new_state, jax.tree.map(lambda v: np.asarray(v)[None], info))
        self.last_state = new_state
        return new_state, info

    def get_params(self, state):
        """Parameters of ``state`` in the constrained space."""
        return self.m.to_constrained(state.params)

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
            checkpoint_dir=None, **model_kwargs):
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
        if init_state is None:
            state = self.init(rng_key, data, *model_args, inputs=inputs,
                              batch_size=batch_size, init_params=init_params, **model_kwargs)
        else:
            self._setup(data, model_args, model_kwargs, inputs, batch_size)
            state = init_state
        num_steps = int(num_steps)
        if (checkpoint_every is None) != (checkpoint_dir is None):
            raise ValueError("give both checkpoint_every and checkpoint_dir, or neither")
        chunk = max(1, math.ceil(num_steps / 100)) if progress_bar else max(num_steps, 1)
        if checkpoint_every is not None:
            if int(checkpoint_every) < 1:
                raise ValueError(f"checkpoint_every must be >= 1, got {checkpoint_every}")
            chunk = min(chunk, int(checkpoint_every))
        pieces, start = [], int(state.step)

        def collected():
            out = ({k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}
                   if pieces else {})
            if int(state.failed_at) >= 0:
                out = {k: v[:int(state.failed_at) - start + 1] for k, v in out.items()}
            return out

        def save():
            if checkpoint_dir is not None:
                good = self.last_state
                checkpoint.save(checkpoint.step_path(checkpoint_dir, int(good.step)), good,
                                collected())

        with tqdm(total=num_steps, disable=not progress_bar, desc="learning") as bar:
            done = 0
            try:
                while done < num_steps:
                    length = min(chunk, num_steps - done)
                    new_state, info = self._scan_jit(state, chunk, length)
                    state = new_state
                    pieces.append(jax.tree.map(lambda v: np.asarray(v)[:length], info))
                    done += length
                    self.last_state = state
                    bar.update(length)
                    if progress_bar:
                        bar.set_postfix(grad_norm=f"{float(info['grad_norm'][-1]):.3g}")
                    if int(state.failed_at) >= 0:
                        break
                    if checkpoint_every is not None and (
                            (int(state.step) - start) % int(checkpoint_every) == 0):
                        save()
            except KeyboardInterrupt:
                save()  # the last completed chunk's state is kept
                raise
        diagnostics = collected()
        _warn_if_collapsed(diagnostics, start)
        if checkpoint_every is not None and (
                int(state.failed_at) >= 0 or (int(state.step) - start) % int(
                    checkpoint_every)):
            save()
        self._raise_if_failed(state, diagnostics)
        return RunResult(self.get_params(state), state, diagnostics)
