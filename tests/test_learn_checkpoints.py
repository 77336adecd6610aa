"""Checkpoints that restore what they saved and lose no work (issue 46, items 17-20, 24
and the checkpoint cases of 26): a bounded number of state files, each update's
diagnostics stored once."""

import errno

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import optax
import pytest

import numpyro_ugm as ugm
from numpyro_ugm import checkpoint


def ising_chain():
    """An Ising chain whose coupling is declared with a Python float."""
    x = numpyro.sample("x", ugm.Spin((4,)))
    J = numpyro.param("J", 0.1)
    ugm.factor("chain", J * jnp.sum(x[:-1] * x[1:]))


@pytest.fixture(scope="module")
def spins():
    return {"x": np.where(np.random.default_rng(0).random((40, 4)) < 0.7, 1, -1)}


def learner():
    return ugm.MLE(ising_chain, ugm.PCD(8), optax.sgd(0.05))


def test_a_python_float_parameter_restores(spins, tmp_path):
    """Item 17. Before: CheckpointError '.params['J'] has shape () and dtype float32,
    expected () and float64' (the template kept the Python float)."""
    result = learner().run(jax.random.PRNGKey(0), 4, spins, progress_bar=False,
                           checkpoint_every=2, checkpoint_dir=tmp_path)
    state, _ = learner().restore(checkpoint.latest(tmp_path), spins)
    assert int(state.step) == 4
    np.testing.assert_array_equal(state.params["J"], result.state.params["J"])


def test_a_full_disk_keeps_the_state_computed(spins, tmp_path, monkeypatch):
    """Item 19. Before: a bare OSError [Errno 28], no state attached, last_state at 0."""
    def full(path, **arrays):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez", full)
    fit = learner()
    with pytest.raises(OSError) as error:
        fit.run(jax.random.PRNGKey(0), 6, spins, progress_bar=False, checkpoint_every=3,
                checkpoint_dir=tmp_path)
    assert error.value.errno == errno.ENOSPC and "kept" in str(error.value)
    assert int(error.value.state[0].step) == 3 and int(fit.last_state.step) == 3
    assert len(error.value.diagnostics["grad_norm"]) == 3


def gaussian():
    x = numpyro.sample("x", ugm.Real(3))
    a = numpyro.param("a", 0.5)
    numpyro.factor("q", -0.5 * a * jnp.sum(x ** 2))


def test_a_divergence_keeps_the_last_good_state(tmp_path):
    """Item 18. Before: error.state and the failure checkpoint held the precision at
    which the chains diverged (a < 0); a retry from it with a smaller rate failed at
    once."""
    data = {"x": np.random.default_rng(0).normal(size=(200, 3)) * 10.0}
    fit = ugm.MLE(gaussian, ugm.PCD(16), optax.sgd(5.0))
    with pytest.raises(ugm.NonFiniteError, match="diverged") as error:
        fit.run(jax.random.PRNGKey(0), 5, data, progress_bar=False, checkpoint_every=5,
                checkpoint_dir=tmp_path)
    e = error.value
    assert float(e.state.params["a"]) > 0 and int(e.state.step) == e.step - 1
    retry = ugm.MLE(gaussian, ugm.PCD(16), optax.sgd(0.001))
    state, diagnostics = retry.restore(checkpoint.latest(tmp_path), data)
    assert float(state.params["a"]) > 0 and len(diagnostics["grad_norm"]) == e.step + 1
    retry.run(None, 2, data, init_state=state, progress_bar=False)  # no failure


def test_a_directory_of_another_run_is_refused(spins, tmp_path):
    """Item 20. Before: the second run wrote into the first's directory, latest()
    returned whichever step was higher and restore accepted it silently."""
    learner().run(jax.random.PRNGKey(0), 4, spins, progress_bar=False, checkpoint_every=2,
                  checkpoint_dir=tmp_path)
    with pytest.raises(checkpoint.CheckpointError, match="another run"):
        learner().run(jax.random.PRNGKey(1), 2, spins, progress_bar=False,
                      checkpoint_every=2, checkpoint_dir=tmp_path)
    # the run itself continues there, after a restore too
    resumed = learner()
    state, _ = resumed.restore(checkpoint.latest(tmp_path), spins)
    resumed.run(None, 2, spins, init_state=state, progress_bar=False, checkpoint_every=2,
                checkpoint_dir=tmp_path)
    assert checkpoint.latest(tmp_path).name == "step_000000006.npz"
    # and another takes it over only when asked, the other run's files deleted
    learner().run(jax.random.PRNGKey(1), 2, spins, progress_bar=False, checkpoint_every=2,
                  checkpoint_dir=tmp_path, checkpoint_overwrite=True)
    assert sorted(p.name for p in tmp_path.glob("*.npz")) == ["step_000000002.npz"]
    assert stored_rows(tmp_path) == [0, 1]  # the other run's diagnostics deleted too


def test_only_the_newest_checkpoints_are_kept(spins, tmp_path):
    """Item 24. Before: every checkpoint was kept (200 files, 196 MB for 100,000 steps
    every 500)."""
    learner().run(jax.random.PRNGKey(0), 10, spins, progress_bar=False, checkpoint_every=1,
                  checkpoint_dir=tmp_path / "a", checkpoint_keep=3)
    assert sorted(p.name for p in (tmp_path / "a").glob("*.npz")) == [
        f"step_{s:09d}.npz" for s in (8, 9, 10)]
    learner().run(jax.random.PRNGKey(0), 4, spins, progress_bar=False, checkpoint_every=1,
                  checkpoint_dir=tmp_path / "b", checkpoint_keep=1)
    assert [p.name for p in (tmp_path / "b").glob("*.npz")] == ["step_000000004.npz"]
    with pytest.raises(ValueError, match="checkpoint_keep"):
        learner().run(jax.random.PRNGKey(0), 2, spins, progress_bar=False,
                      checkpoint_every=1, checkpoint_dir=tmp_path / "c", checkpoint_keep=0)


def test_a_checkpoint_dir_that_is_a_file_is_refused_before_the_run(spins, tmp_path):
    """Item 26. Before: the run went on and failed at its first checkpoint."""
    path = tmp_path / "file"
    path.write_text("not a directory")
    fit = learner()
    with pytest.raises(checkpoint.CheckpointError, match="is a file"):
        fit.run(jax.random.PRNGKey(0), 4, spins, progress_bar=False, checkpoint_every=2,
                checkpoint_dir=path)
    assert int(fit.last_state.step) == 0  # refused before any update


def test_a_checkpoint_with_nan_parameters_is_refused(spins, tmp_path):
    """Item 26. Before: restored, and the run went on from NaN parameters."""
    fit = learner()
    state = fit.init(jax.random.PRNGKey(0), spins)
    state = state._replace(params={"J": jnp.full((), jnp.nan)})
    checkpoint.save(checkpoint.step_path(tmp_path, 0), state)
    with pytest.raises(checkpoint.CheckpointError, match="'J'.*earlier checkpoint"):
        learner().restore(checkpoint.step_path(tmp_path, 0), spins)


def stored_rows(directory):
    """The updates each diagnostics file in ``directory`` holds, all files together."""
    rows = []
    for path in sorted((directory / checkpoint.DIAGNOSTICS).glob("*.npz")):
        with np.load(path) as f:
            first, stride, size = int(f["first"]), int(f["stride"]), len(f["rows/grad_norm"])
        rows += list(range(first + stride - 1, first + size * stride, stride))
    return sorted(rows)


def test_each_checkpoint_adds_only_the_diagnostics_since_the_previous_one(spins, tmp_path):
    """Item 24. Before: every checkpoint held every diagnostic so far (the directory grew
    quadratically: 200 files, 196 MB for 100,000 updates every 500). Now each update's
    diagnostics are stored once, beside the state files, and every checkpoint restores
    the whole history bit-identically."""
    result = learner().run(jax.random.PRNGKey(0), 12, spins, progress_bar=False,
                           checkpoint_every=3, checkpoint_dir=tmp_path, checkpoint_keep=None)
    assert stored_rows(tmp_path) == list(range(12))
    for step in (3, 6, 9, 12):
        with np.load(checkpoint.step_path(tmp_path, step)) as f:
            assert not [k for k in f.files if k.startswith("diagnostics/")]
        # the state file names its history's files (a name, 44 bytes, per checkpoint)
        assert len(checkpoint.history_of(checkpoint.step_path(tmp_path, step))) == step // 3
        state, diagnostics = learner().restore(checkpoint.step_path(tmp_path, step), spins)
        assert int(state.step) == step and set(diagnostics) == set(result.diagnostics)
        for name, values in result.diagnostics.items():
            np.testing.assert_array_equal(diagnostics[name], values[:step])


def test_three_checkpoints_are_kept_by_default_with_the_whole_history(spins, tmp_path):
    """Item 24. Before: every checkpoint was kept by default."""
    result = learner().run(jax.random.PRNGKey(0), 10, spins, progress_bar=False,
                           checkpoint_every=2, checkpoint_dir=tmp_path)
    assert [p.name for p in sorted(tmp_path.glob("*.npz"))] == [
        f"step_{s:09d}.npz" for s in (6, 8, 10)]
    assert stored_rows(tmp_path) == list(range(10))
    _, diagnostics = learner().restore(checkpoint.step_path(tmp_path, 6), spins)
    np.testing.assert_array_equal(diagnostics["grad_norm"],
                                  result.diagnostics["grad_norm"][:6])


def test_a_continued_run_writes_only_what_follows(spins, tmp_path):
    """A run continued (by the same learner, or after a restore from the directory)
    writes the diagnostics of its own updates only, and its checkpoints restore the
    history of a run never interrupted."""
    whole = learner().run(jax.random.PRNGKey(0), 15, spins, progress_bar=False)
    fit = learner()
    first = fit.run(jax.random.PRNGKey(0), 6, spins, progress_bar=False, checkpoint_every=3,
                    checkpoint_dir=tmp_path)
    fit.run(None, 6, spins, init_state=first.state, progress_bar=False, checkpoint_every=3,
            checkpoint_dir=tmp_path)
    assert stored_rows(tmp_path) == list(range(12))
    resumed = learner()
    state, _ = resumed.restore(checkpoint.latest(tmp_path), spins)
    resumed.run(None, 3, spins, init_state=state, progress_bar=False, checkpoint_every=3,
                checkpoint_dir=tmp_path)
    assert stored_rows(tmp_path) == list(range(15))
    _, diagnostics = learner().restore(checkpoint.latest(tmp_path), spins)
    for name, values in whole.diagnostics.items():
        np.testing.assert_array_equal(diagnostics[name], values)


def test_a_retry_from_an_earlier_checkpoint_replaces_the_later_history(spins, tmp_path):
    """Restored from step 3 of 9 and run on with another learning rate in the same
    directory: the checkpoints of steps 6 and 9 are the retry's, their history its own
    after step 3, and the first attempt's diagnostics after step 3 are deleted."""
    first = learner().run(jax.random.PRNGKey(0), 9, spins, progress_bar=False,
                          checkpoint_every=3, checkpoint_dir=tmp_path, checkpoint_keep=None)
    retry = ugm.MLE(ising_chain, ugm.PCD(8), optax.sgd(0.01))
    state, _ = retry.restore(checkpoint.step_path(tmp_path, 3), spins)
    second = retry.run(None, 6, spins, init_state=state, progress_bar=False,
                       checkpoint_every=3, checkpoint_dir=tmp_path, checkpoint_keep=None)
    _, diagnostics = learner().restore(checkpoint.step_path(tmp_path, 9), spins)
    expected = np.concatenate([first.diagnostics["grad_norm"][:3],
                               second.diagnostics["grad_norm"]])
    assert not np.array_equal(expected, first.diagnostics["grad_norm"])
    np.testing.assert_array_equal(diagnostics["grad_norm"], expected)
    assert stored_rows(tmp_path) == list(range(9))


def test_checkpoints_of_format_1_restore_and_later_formats_are_refused(spins, tmp_path):
    """Format 1 (no version field, the diagnostics inside each state file) is read; a
    file of a later format than this package writes names its format."""
    fit = learner()
    state = fit.init(jax.random.PRNGKey(0), spins)
    path = checkpoint.step_path(tmp_path, 0)
    checkpoint.save(path, state, {"grad_norm": np.arange(3.0)})
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files if k not in ("format", "history")}
    np.savez(path, **arrays)  # as format 1 wrote it
    _, diagnostics = learner().restore(path, spins)
    np.testing.assert_array_equal(diagnostics["grad_norm"], np.arange(3.0))
    np.savez(path, **arrays, format=np.asarray(checkpoint.FORMAT + 1))
    with pytest.raises(checkpoint.CheckpointError,
                       match=f"of format {checkpoint.FORMAT + 1}.*upgrade numpyro_ugm"):
        learner().restore(path, spins)


def test_a_lost_diagnostics_file_leaves_the_state_restorable(spins, tmp_path):
    """A checkpoint copied without the diagnostics folder: the state restores, the
    updates whose diagnostics are gone read NaN, with a warning naming them."""
    result = learner().run(jax.random.PRNGKey(0), 4, spins, progress_bar=False,
                           checkpoint_every=2, checkpoint_dir=tmp_path)
    (first,) = [p for p in (tmp_path / checkpoint.DIAGNOSTICS).iterdir()
                if p.name.startswith("000000000-")]
    first.unlink()
    with pytest.warns(RuntimeWarning, match="updates 0-2 are lost"):
        state, diagnostics = learner().restore(checkpoint.latest(tmp_path), spins)
    np.testing.assert_array_equal(state.params["J"], result.state.params["J"])
    assert np.all(np.isnan(diagnostics["grad_norm"][:2]))
    np.testing.assert_array_equal(diagnostics["grad_norm"][2:],
                                  result.diagnostics["grad_norm"][2:])
