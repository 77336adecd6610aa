"""One run loop for every iterative job of the package: learning (:class:`~numpyro_ugm.MLE`,
and :class:`~numpyro_ugm.posterior.SGMCMC` through it) and the deterministic fits
(:func:`~numpyro_ugm.learn.exact_fit.fit_exact`,
:func:`~numpyro_ugm.evaluate.pseudo.fit_pseudo_likelihood`).

The caller supplies ``advance(state, length)``: a compiled function that runs ``length``
steps (at most the chunk size it was built for) and returns the new state and per-step
diagnostics. The loop runs it chunk by chunk, so that a progress bar can move and
checkpoints can be written between chunks; everything else stays on the device. Because
``advance`` takes the number of steps as a traced argument (:func:`fill_rows`: a
``fori_loop`` with a dynamic trip count writing NaN-filled buffers), a run split into
chunks is bit-identical to one long run.

This module sits below its callers and imports none of them: what it is handed are plain
functions of their arguments (the compiled program, a stop predicate, a writer), never
methods of the object that called it.

:func:`minimize` drives an optax optimizer on a deterministic objective with this loop
(stopping at a gradient-norm tolerance), and is what the exact and pseudo-likelihood fits
share.
"""

import functools
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm.auto import tqdm

from .distributed import is_primary

__all__ = ["run_loop", "Interrupted", "SaveFailed", "converged", "chunk_size", "capacity", "nan_filled", "fill_rows",
           "minimize", "MinimizeResult"]


#: most steps per compiled call (a return to the host every this many steps costs nothing
#: next to them)
MAX_CHUNK = 1024


def chunk_size(num_steps: int, progress_bar: bool, checkpoint_every: Optional[int] = None) -> int:
    """Steps per compiled call: about 1 % of the run with a progress bar, else all of it,
    at most :data:`MAX_CHUNK` (and ``checkpoint_every``)."""
    chunk = max(1, -(-num_steps // 100)) if progress_bar else max(num_steps, 1)
    chunk = min(chunk, MAX_CHUNK)
    return chunk if checkpoint_every is None else min(chunk, checkpoint_every)


def capacity(chunk: int) -> int:
    """The number of steps a compiled call is built for, to run ``chunk`` of them: the
    next power of two, so that runs of other lengths reuse the same program."""
    return 1 << (int(chunk) - 1).bit_length()


#: past this many chains, chain counts are rounded up to a multiple of it, not to a power
#: of two (every padded chain is computed, unlike a padded step or draw)
CHAIN_GRAIN = 8


def chain_capacity(num_chains: int) -> int:
    """The number of chains a compiled sampler is built for, to run ``num_chains``: the
    next power of two up to :data:`CHAIN_GRAIN`, then the next multiple of it (20 chains
    run as 24, not 32), so that other counts on the same grid reuse the program."""
    num_chains = int(num_chains)
    if num_chains <= CHAIN_GRAIN:
        return capacity(num_chains)
    return -(-num_chains // CHAIN_GRAIN) * CHAIN_GRAIN


class Interrupted(KeyboardInterrupt):
    """A :class:`KeyboardInterrupt` during :func:`run_loop`, raised once the loop has saved
    (with ``save``) what it had completed.

    Attributes
    ----------
    state : pytree
        The state after the last completed chunk.
    diagnostics : dict of str -> ndarray
        The per-step diagnostics of the chunks completed (those of ``state``).
    """

    def __init__(self, state, diagnostics):
        super().__init__()
        self.state, self.diagnostics = state, diagnostics


class SaveFailed(OSError):
    """An ``OSError`` raised while :func:`run_loop` saved a checkpoint (a full disk, a
    directory that vanished, no permission), carrying what the loop had computed so that
    nothing is lost: retry the save elsewhere, or continue from ``state``.

    Attributes
    ----------
    state : pytree
        The state after the last completed chunk (the one the save was writing).
    diagnostics : dict of str -> ndarray
        The per-step diagnostics of the chunks completed (those of ``state``).
    """

    def __init__(self, error, state, diagnostics):
        super().__init__(error.errno, f"{error.strerror or error}: the checkpoint could not "
                         "be written; the state computed so far is kept in this error's "
                         "state (and diagnostics) and in the learner's last_state",
                         error.filename)
        self.state, self.diagnostics = state, diagnostics


def _saved(save, state, diagnostics):
    """``save(state, diagnostics)``, its ``OSError`` raised as :class:`SaveFailed`."""
    try:
        save(state, diagnostics)
    except OSError as error:
        raise SaveFailed(error, state, diagnostics) from error


def _advanced(bar, count, first):
    """Move ``bar`` by ``count``; after the first chunk, restart its clock there, so that
    the rate and ETA come from measured steps, not from the compilation the first chunk
    also paid for."""
    if not first or bar.disable:
        bar.update(count)
        return
    bar.reset()
    bar.n = bar.last_print_n = bar.initial = count
    bar.refresh()


def nan_filled(template: Any, rows: Optional[int] = None) -> Any:
    """Arrays shaped like ``template`` (a pytree of ``jax.ShapeDtypeStruct`` or arrays),
    with a leading axis of ``rows`` if given, filled with NaN: the one way the package marks
    entries that no step has written (buffers of a compiled loop, a result not yet
    evaluated)."""
    lead = () if rows is None else (rows,)
    return jax.tree.map(lambda t: jnp.full(lead + tuple(t.shape), jnp.nan, t.dtype), template)


def fill_rows(one: Callable, carry: Any, length, capacity: int):
    """Run ``one(carry) -> (carry, row)`` ``length`` times (traced, at most ``capacity``) in a
    ``fori_loop`` with a dynamic trip count, writing row ``i`` into NaN-filled buffers of
    ``capacity`` rows (:func:`nan_filled`). Returns ``(carry, rows)``.

    The loop body is the same compiled computation for every ``length``, so that a run split
    into chunks is bit-identical to one long run, and one program serves every length up
    to ``capacity``."""
    buffers = nan_filled(jax.eval_shape(lambda c: one(c)[1], carry), capacity)

    def body(i, loop):
        carry, buffers = loop
        carry, row = one(carry)
        return carry, jax.tree.map(lambda b, v: b.at[i].set(v), buffers, row)

    return jax.lax.fori_loop(0, length, body, (carry, buffers))


def run_loop(advance: Callable, state: Any, num_steps: int, *, chunk: int,
             progress_bar: bool = True, desc: str = "running",
             stop: Optional[Callable] = None, postfix: Optional[Callable] = None,
             checkpoint_every: Optional[int] = None, save: Optional[Callable] = None,
             steps_per_row: int = 1, unit: str = "step", delay: float = 0.0):
    """Run ``num_steps`` steps of ``advance`` in chunks of at most ``chunk`` steps.

    The callables are plain functions of the values they are given (the loop never calls
    back into the object that started it): a compiled program, a predicate, a formatter
    and a writer.

    Parameters
    ----------
    advance : callable
        ``(state, length) -> (state, info)``; ``info`` is a dict of arrays whose leading
        axis holds (at least) one entry per step run.
    state : pytree
        The state to start from.
    num_steps : int
    chunk : int
        Largest number of steps per call of ``advance``.
    progress_bar : bool
        Show a tqdm bar (on the primary process only, under ``jax.distributed``).
    desc : str
        The bar's label.
    steps_per_row : int
        What one step of ``advance`` counts on the bar (e.g. the updates of a thinned
        record): the bar counts ``num_steps * steps_per_row`` of ``unit``, and its rate
        and ETA are measured from the second chunk on (the first compiles).
    unit : str
        What the bar counts.
    delay : float
        Seconds before the bar appears (a run shorter than that shows none).
    stop : callable, optional
        ``state -> bool``: end the run after the chunk that made it true (a failed or
        converged run).
    postfix : callable, optional
        ``info -> dict`` shown beside the bar after each chunk.
    checkpoint_every : int, optional
        Call ``save`` after every this many steps (chunks end there), at the end, when
        ``stop`` ends the run, and on ``KeyboardInterrupt`` (with the last completed
        chunk's state) before raising :class:`Interrupted`.
    save : callable, optional
        ``(state, diagnostics) -> None``.

    Returns
    -------
    state : pytree
        The state after the last completed chunk.
    diagnostics : dict of str -> ndarray
        Per-step diagnostics of the steps run (concatenated chunks).

    Raises
    ------
    Interrupted
        On ``KeyboardInterrupt``: it carries the last completed chunk's state and the
        diagnostics of the chunks completed, which always belong together (a chunk's
        state is taken only once its diagnostics are on the host).
    SaveFailed
        When ``save`` raises an ``OSError`` (e.g. a full disk): it carries the state and
        diagnostics being saved.
    """
    pieces = []

    def collected(count):
        return ({k: np.concatenate([p[k] for p in pieces[:count]]) for k in pieces[0]}
                if count else {})

    # what the completed chunks produced, replaced in one assignment: an interrupt lands
    # before or after it, never between a chunk's state and its diagnostics
    done = (state, 0, 0)  # (state, chunks, steps)
    saved_at, stopped = 0, False
    # one bar for a run of several processes (jax.distributed): the primary's
    with tqdm(total=num_steps * steps_per_row, disable=not (progress_bar and is_primary()),
              desc=desc, unit=unit, delay=delay) as bar:
        try:
            while done[2] < num_steps:
                steps = done[2]
                length = min(chunk, num_steps - steps)
                if checkpoint_every is not None:  # chunks end at every checkpoint
                    length = min(length, checkpoint_every - steps % checkpoint_every)
                new_state, info = advance(done[0], length)
                # waits for the chunk (asynchronous dispatch): most of the wall time
                pieces.append(jax.tree.map(lambda v: np.asarray(v)[:length], info))
                done = (new_state, len(pieces), steps + length)
                _advanced(bar, length * steps_per_row, first=len(pieces) == 1)
                if progress_bar and postfix is not None:
                    bar.set_postfix(postfix(pieces[-1]))
                stopped = stop is not None and bool(stop(done[0]))
                if stopped:
                    break
                if checkpoint_every is not None and done[2] % checkpoint_every == 0:
                    _saved(save, done[0], collected(done[1]))
                    saved_at = done[2]
        except KeyboardInterrupt as interrupt:
            state, diagnostics = done[0], collected(done[1])
            if save is not None:
                _saved(save, state, diagnostics)
            raise Interrupted(state, diagnostics) from interrupt
    state, diagnostics = done[0], collected(done[1])
    if checkpoint_every is not None and (stopped or saved_at != done[2]):
        _saved(save, state, diagnostics)
    return state, diagnostics


# --- deterministic minimization -----------------------------------------------------------


class MinimizeState(NamedTuple):
    """State of :func:`minimize`: the iterate, the optimizer's state, the last finite
    evaluation (iterate, value, auxiliary output, gradient norm), whether it stopped and
    whether it converged (:func:`converged`)."""

    step: jax.Array
    params: Any
    opt_state: Any
    best: tuple
    stopped: jax.Array
    converged: jax.Array


def converged(value, grad_norm, params, stepped, tol):
    """The convergence rule of :func:`minimize`, at parameters ``params`` where the
    objective is ``value`` with gradient norm ``grad_norm``, the optimizer's next iterate
    being ``stepped``: ``(converged, stalled)``.

    Converged: the gradient norm fell to ``tol`` or to the dtype's resolution relative to
    the objective's scale, ``16 eps max(1, |value|)`` (eps the dtype's machine epsilon:
    float32 cannot reach 1e-6 on an objective of order 100), whichever is larger; or the
    optimizer stalled with a gradient norm at most ``sqrt(eps) max(1, |value|)``.
    Stalled: the step moves the iterate by no more than rounding (``|stepped - params|
    <= 4 eps max(1, |params|)``: the line search found no better point the dtype can
    represent), so the optimizer cannot go on."""
    eps = jnp.finfo(jnp.result_type(value)).eps
    scale = jnp.maximum(1.0, jnp.abs(value))
    moved = optax.tree.norm(jax.tree.map(jnp.subtract, stepped, params))
    stalled = moved <= 4 * eps * jnp.maximum(1.0, optax.tree.norm(params))
    reached = (grad_norm <= tol) | (grad_norm <= 16 * eps * scale)
    return reached | (stalled & (grad_norm <= jnp.sqrt(eps) * scale)), stalled


class MinimizeResult(NamedTuple):
    """What :func:`minimize` returns.

    Attributes
    ----------
    params : pytree
        The last iterate at which the objective and its gradient were finite.
    value, aux, grad_norm : arrays
        The objective, its auxiliary output and the gradient norm there.
    num_steps : int
        Optimizer steps taken.
    converged : bool
        Whether the gradient norm reached ``tol``, or the objective stopped changing at
        its dtype's resolution with a gradient that small there (:func:`converged`).
    trace : dict of str -> ndarray (num_steps + 1,)
        ``value``, ``aux`` and ``grad_norm`` at every evaluation (NaN after the last).
    """

    params: Any
    value: jax.Array
    aux: Any
    grad_norm: jax.Array
    num_steps: int
    converged: bool
    trace: dict


def minimize(loss: Callable, init_params: Any, optimizer: optax.GradientTransformation | None,
             num_steps: int, *args, tol: float = 1e-6, progress_bar: bool = True,
             desc: str = "fitting", cached: Callable | None = None,
             delay: float = 3.0, aux: Callable | None = None) -> MinimizeResult:
    """Minimize ``loss(params, *args) -> (value, aux)`` with an optax optimizer (``None``:
    ``optax.lbfgs()`` with its line search), stopping once converged (:func:`converged`:
    the gradient norm fell to ``tol``, or the objective stopped changing at its dtype's
    resolution), when the objective stops changing, after ``num_steps`` steps, or at a
    non-finite value (the last finite iterate is kept). The progress bar appears on runs
    longer than ``delay`` seconds.

    ``args`` (e.g. the data), ``num_steps`` and ``tol`` are arguments of the compiled
    steps, not constants in them. With ``cached`` (``build -> program``, e.g.
    ``lambda build: cached(target.cache_key, key, build)``), the compiled program is built
    once per key and reused by later calls: the key must then identify ``loss`` and
    ``optimizer``.

    With ``aux`` (``(params, value, *args) -> aux``: the auxiliary output recovered from
    the value, e.g. the log-likelihood from the penalized objective), an optimizer whose
    last transformation is a line search that keeps the value and gradient at the point
    it accepts (``optax.lbfgs``) has them reused as the next step's: one gradient a step
    instead of two (after a further transformation, e.g. clipping, they are computed).

    Returns
    -------
    MinimizeResult
    """
    build = lambda: _minimizer(loss, optimizer, aux)  # noqa: E731
    program = build() if cached is None else cached(build)
    # evaluations: one per step, and one at the final iterate
    total = num_steps + 1
    chunk = chunk_size(total, progress_bar)
    state = program.init(init_params, args)
    limits = (jnp.asarray(num_steps, jnp.int32), jnp.asarray(tol, jnp.result_type(float)))
    state, trace = run_loop(
        lambda s, n: program.advance(s, n, limits, args, capacity=capacity(chunk)), state,
        total, chunk=chunk, progress_bar=progress_bar, desc=desc, stop=lambda s: s.stopped,
        delay=delay)
    trace = {k: np.concatenate([v, np.full((total - len(v),) + v.shape[1:], np.nan, v.dtype)])
             for k, v in trace.items()}
    params, value, aux, gnorm = state.best
    return MinimizeResult(params, value, aux, gnorm, int(state.step),
                          bool(state.converged), trace)


class _Minimizer(NamedTuple):
    init: Callable
    advance: Callable


def _line_search_state(opt_state):
    """The state of the optimizer's last transformation (a chain's state is a tuple of
    its parts') when it keeps a line search's value and gradient at the point it
    accepted — the next iterate only if nothing transforms the step after it — else
    None."""
    last = opt_state
    while type(last) is tuple and last:
        last = last[-1]
    stored = (getattr(last, "value", None), getattr(last, "grad", None))
    return None if any(v is None for v in stored) else last


def _evaluate(loss, aux, state, args):
    """``((value, aux), grad)`` at the iterate: taken from the optimizer's state where its
    line search stored them (with ``aux``; the first step computes them), else computed."""
    search = None if aux is None else _line_search_state(state.opt_state)
    if search is None:
        return jax.value_and_grad(loss, has_aux=True)(state.params, *args)
    value, grad = optax.value_and_grad_from_state(lambda u, *a: loss(u, *a)[0])(
        state.params, *args, state=search)
    return (value, aux(state.params, value, *args)), grad


def _minimizer(loss, optimizer, aux=None):
    """The compiled steps of :func:`minimize`: ``init(params, args)`` and
    ``advance(state, length, (num_steps, tol), args, capacity=...)``."""
    opt = optax.with_extra_args_support(optax.lbfgs() if optimizer is None else optimizer)

    def one(state, limits, args):
        num_steps, tol = limits
        (value, aux_value), grad = _evaluate(loss, aux, state, args)
        gnorm = optax.tree.norm(grad)
        finite = jnp.isfinite(value) & jnp.isfinite(gnorm)
        best = jax.tree.map(lambda a, b: jnp.where(finite, a, b),
                            (state.params, value, aux_value, gnorm), state.best)
        updates, opt_state = opt.update(grad, state.opt_state, state.params, value=value,
                                        grad=grad, value_fn=lambda v: loss(v, *args)[0])
        stepped = optax.apply_updates(state.params, updates)
        done, stalled = converged(value, gnorm, state.params, stepped, tol)
        done, stalled = finite & done, finite & stalled
        stop = (~finite) | done | stalled | (state.step >= num_steps)
        params = jax.tree.map(lambda a, b: jnp.where(stop, a, b), state.params, stepped)
        state = MinimizeState(state.step + (~stop).astype(state.step.dtype), params,
                              opt_state, best, stop, done)
        return state, {"value": value, "aux": aux_value, "grad_norm": gnorm}

    @jax.jit
    def init(params, args):
        probe = jax.eval_shape(lambda p: loss(p, *args), params)
        nan = nan_filled(probe)
        return MinimizeState(jnp.zeros((), jnp.int32), params, opt.init(params),
                             (params, nan[0], nan[1], nan[0]), jnp.array(False),
                             jnp.array(False))

    @functools.partial(jax.jit, static_argnames="capacity")
    def advance(state, length, limits, args, *, capacity):
        template = jax.eval_shape(lambda s: one(s, limits, args)[1], state)

        def step(state):  # a stopped minimization writes NaN rows
            return jax.lax.cond(state.stopped, lambda s: (s, nan_filled(template)),
                                lambda s: one(s, limits, args), state)

        return fill_rows(step, state, length, capacity)

    return _Minimizer(init, advance)
