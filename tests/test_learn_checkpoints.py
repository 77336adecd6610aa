"""Checkpoints that restore what they saved and lose no work (issue 46, items 17-20, 24
and the checkpoint cases of 26)."""

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
