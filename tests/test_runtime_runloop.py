"""The shared run loop: chunking, checkpoints at every multiple, stopping, interrupts, and
the deterministic minimizer the exact and pseudo-likelihood fits use."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from numpyro_ugm.runtime.runloop import (MAX_CHUNK, Interrupted, capacity, chunk_size, fill_rows,
                                 minimize, nan_filled, run_loop)


def counting_advance(calls):
    def advance(state, length):
        calls.append(length)
        steps = state + np.arange(1, length + 1)
        return int(steps[-1]), {"step": steps}
    return advance


def test_checkpoints_at_every_multiple_whatever_the_chunk():
    calls, saved = [], []
    state, diagnostics = run_loop(
        counting_advance(calls), 0, 23, chunk=4, progress_bar=True, checkpoint_every=6,
        save=lambda s, d: saved.append((s, len(d["step"]))))
    assert state == 23
    np.testing.assert_array_equal(diagnostics["step"], np.arange(1, 24))
    assert [s for s, _ in saved] == [6, 12, 18, 23]  # every 6, and the end
    assert all(s == n for s, n in saved)  # each with the diagnostics so far
    assert max(calls) <= 4


def test_stop_ends_the_run_and_saves():
    saved = []
    state, diagnostics = run_loop(counting_advance([]), 0, 50, chunk=5, progress_bar=False,
                                  stop=lambda s: s >= 10, checkpoint_every=20,
                                  save=lambda s, d: saved.append(s))
    assert state == 10 and len(diagnostics["step"]) == 10 and saved == [10]


def test_interrupt_saves_the_last_completed_chunk_and_reraises():
    saved = []

    def advance(state, length):
        if state >= 8:
            raise KeyboardInterrupt
        return state + length, {"step": np.arange(state + 1, state + length + 1)}

    with pytest.raises(KeyboardInterrupt):
        run_loop(advance, 0, 40, chunk=4, progress_bar=False, checkpoint_every=100,
                 save=lambda s, d: saved.append((s, len(d["step"]))))
    assert saved == [(8, 8)]


class RaisesOnTransfer:
    """A chunk's diagnostics still on the device: reading them raises KeyboardInterrupt,
    as Ctrl-C does while the host waits for them (asynchronous dispatch)."""

    def __array__(self, dtype=None, copy=None):
        raise KeyboardInterrupt


def test_interrupt_while_a_chunk_reaches_the_host_saves_state_and_diagnostics_together():
    """Issue 34 item 3: the loop once took a chunk's state before its diagnostics reached
    the host, so an interrupt there saved the new state with the old diagnostics (a
    checkpoint at step 20 holding 10 steps)."""
    saved, calls = [], []

    def advance(state, length):
        calls.append(length)
        steps = np.arange(state + 1, state + length + 1)
        return state + length, {"step": RaisesOnTransfer() if len(calls) == 2 else steps}

    with pytest.raises(KeyboardInterrupt) as interrupt:
        run_loop(advance, 0, 40, chunk=10, progress_bar=False, checkpoint_every=10,
                 save=lambda s, d: saved.append((s, len(d.get("step", ())))))
    assert saved == [(10, 10), (10, 10)]  # at the checkpoint, and again on the interrupt
    assert isinstance(interrupt.value, Interrupted)
    assert interrupt.value.state == 10 and len(interrupt.value.diagnostics["step"]) == 10


def test_nan_filled_marks_unwritten_rows():
    template = {"a": jax.ShapeDtypeStruct((2,), jnp.float32), "b": jnp.zeros((), jnp.int8)}
    out = nan_filled({"a": template["a"]}, 3)
    assert out["a"].shape == (3, 2) and np.all(np.isnan(out["a"]))
    assert nan_filled(jnp.zeros((), jnp.float16)).dtype == jnp.float16
    carry, rows = jax.jit(lambda n: fill_rows(lambda c: (c + 1, {"c": c * 1.0}), 0, n, 4))(2)
    assert int(carry) == 2
    np.testing.assert_array_equal(rows["c"], [0.0, 1.0, np.nan, np.nan])


def test_chunk_size_and_capacity():
    assert chunk_size(1000, False) == 1000
    assert chunk_size(5000, False) == MAX_CHUNK
    assert [capacity(n) for n in (1, 2, 3, 5, 8, 9, 1000)] == [1, 2, 4, 8, 8, 16, 1024]
    assert chunk_size(1000, True) == 10
    assert chunk_size(1000, True, checkpoint_every=3) == 3
    assert chunk_size(0, False) == 1


def quadratic(u, target):
    value = 0.5 * jnp.sum((u["x"] - target) ** 2)
    return value, -value


def test_minimize_converges_and_chunks_give_identical_iterates():
    target = jnp.arange(5.0)
    u0 = {"x": jnp.zeros(5)}
    one = minimize(quadratic, u0, optax.lbfgs(), 50, target)
    assert one.converged and one.num_steps < 50
    np.testing.assert_allclose(one.params["x"], target, atol=1e-5)
    assert one.trace["value"].shape == (51,)
    assert np.all(np.isnan(one.trace["value"][one.num_steps + 1:]))
    slow = minimize(quadratic, u0, optax.adam(0.1), 30, target)
    chunked = minimize(quadratic, u0, optax.adam(0.1), 30, target, progress_bar=True)
    assert not slow.converged and slow.num_steps == 30
    np.testing.assert_array_equal(slow.params["x"], chunked.params["x"])
    np.testing.assert_array_equal(slow.trace["grad_norm"], chunked.trace["grad_norm"])


@pytest.mark.parametrize("clipped", [False, True])
def test_minimize_reuses_the_line_search_only_where_it_made_the_iterate(clipped):
    """With ``aux``, L-BFGS's line-search value and gradient serve the next step — the
    same trace as computing them — but not after a transformation that changes the step
    (clipping: the line search's point is not the iterate)."""
    def loss(u, x):
        v = jnp.sum((u - x) ** 2 * jnp.arange(1.0, 4.0)) + jnp.sum(u ** 4)
        return v, -v

    x = jnp.array([3.0, -2.0, 5.0])
    opt = optax.chain(optax.lbfgs(), optax.clip(0.3)) if clipped else optax.lbfgs()
    reused = minimize(loss, jnp.zeros(3), opt, 15, x, aux=lambda u, v, x: -v)
    computed = minimize(loss, jnp.zeros(3), opt, 15, x)
    np.testing.assert_allclose(reused.trace["value"], computed.trace["value"], rtol=1e-6)
    np.testing.assert_allclose(reused.trace["aux"], -reused.trace["value"])


def test_minimize_keeps_the_last_finite_iterate():
    def blows_up(u):
        return jnp.where(u["x"] > 3.0, jnp.nan, -u["x"]), u["x"]

    out = minimize(blows_up, {"x": jnp.asarray(0.0)}, optax.sgd(1.0), 20)
    assert float(out.params["x"]) == 3.0 and np.isfinite(float(out.value))
    assert out.num_steps == 4 and not out.converged  # the 4th step reached NaN
    np.testing.assert_equal(jax.device_get(out.aux), 3.0)
