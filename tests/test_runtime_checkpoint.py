"""Checkpoints: plain arrays, and an interrupted run resumed from one is bit-identical to
a run that was never interrupted."""

import jax
import numpy as np
import optax
import pytest

import numpyro_ugm as ugm
from numpyro_ugm import checkpoint
from numpyro_ugm.datasets import vbm_problem


@pytest.fixture(scope="module")
def problem():
    _, train, _ = vbm_problem(jax.random.PRNGKey(0), 6, 100, 10)
    return train


def same(a, b):
    return all(np.array_equal(np.asarray(x), np.asarray(y))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


@pytest.mark.parametrize("estimator", [
    ugm.PCD(20),
    # weights, resampling and its own keys as well (slow: -m slow)
    pytest.param(ugm.PF(20, rejuvenate_every=7), marks=pytest.mark.slow)],
    ids=["pcd", "pf"])
def test_interrupted_and_resumed_run_is_bit_identical(problem, estimator, tmp_path):
    key = jax.random.PRNGKey(1)
    optimizer = optax.adam(0.05)
    full = ugm.MLE(ugm.models.vbm, estimator, optimizer).run(
        key, 40, problem, 6, progress_bar=False)

    learner = ugm.MLE(ugm.models.vbm, estimator, optimizer)
    # the "interrupted" run: 27 of 40 steps, checkpointing every 10
    learner.run(key, 27, problem, 6, progress_bar=False, checkpoint_every=10,
                checkpoint_dir=tmp_path)
    names = sorted(p.name for p in tmp_path.glob("*.npz"))
    assert names == ["step_000000010.npz", "step_000000020.npz", "step_000000027.npz"]
    with np.load(tmp_path / names[1], allow_pickle=False) as f:  # plain arrays only
        assert all(f[k].dtype != object for k in f.files)

    fresh = ugm.MLE(ugm.models.vbm, estimator, optimizer)
    state, diagnostics = fresh.restore(tmp_path / "step_000000020.npz", problem, 6)
    assert int(state.step) == 20 and len(diagnostics["grad_norm"]) == 20
    np.testing.assert_array_equal(diagnostics["grad_norm"], full.diagnostics["grad_norm"][:20])
    resumed = fresh.run(key, 20, problem, 6, init_state=state, progress_bar=True,
                        checkpoint_every=10, checkpoint_dir=tmp_path / "resumed")
    assert same(resumed.state, full.state), "resumed run differs from the uninterrupted one"
    np.testing.assert_array_equal(resumed.diagnostics["grad_norm"],
                                  full.diagnostics["grad_norm"][20:])
    # the resumed run's checkpoints hold the diagnostics of all steps, restored ones too
    _, history = fresh.restore(checkpoint.latest(tmp_path / "resumed"), problem, 6)
    for name, values in full.diagnostics.items():
        np.testing.assert_array_equal(history[name], values)


class RaisesOnTransfer:
    """A chunk's diagnostics still on the device: reading them raises KeyboardInterrupt,
    as Ctrl-C does while the host waits for them (asynchronous dispatch)."""

    def __array__(self, dtype=None, copy=None):
        raise KeyboardInterrupt


def test_interrupt_while_diagnostics_reach_the_host_keeps_state_and_diagnostics_together(
        problem, tmp_path, monkeypatch):
    """Issue 34 item 3: Ctrl-C while a chunk's diagnostics reached the host once saved the
    chunk's new state with the previous diagnostics (step 20, 10 diagnostics): resumed,
    steps 10-19 read NaN. Every checkpoint's state and diagnostics are now of one step."""
    from numpyro_ugm.learn import mle

    def interrupted_second_chunk(advance, *args, **kwargs):
        calls = []

        def wrapped(state, length):
            state, info = advance(state, length)
            calls.append(length)
            if len(calls) == 2:
                info = jax.tree.map(lambda _: RaisesOnTransfer(), info)
            return state, info

        return run_loop(wrapped, *args, **kwargs)

    run_loop = mle.run_loop
    monkeypatch.setattr(mle, "run_loop", interrupted_second_chunk)
    learner = ugm.MLE(ugm.models.vbm, ugm.PCD(20), optax.sgd(0.1))
    with pytest.raises(KeyboardInterrupt):
        learner.run(jax.random.PRNGKey(0), 40, problem, 6, progress_bar=False,
                    checkpoint_every=10, checkpoint_dir=tmp_path)
    monkeypatch.undo()
    assert int(learner.last_state.step) == 10  # the last completed chunk's state
    paths = sorted(tmp_path.glob("*.npz"))
    assert [p.name for p in paths] == ["step_000000010.npz"]
    for path in paths:
        state, diagnostics = learner.restore(path, problem, 6)
        assert len(diagnostics["grad_norm"]) == int(state.step) == 10
        assert np.all(np.isfinite(diagnostics["grad_norm"]))


def test_checkpoints_at_every_multiple_with_the_progress_bar(problem, tmp_path):
    learner = ugm.MLE(ugm.models.vbm, ugm.PCD(20), optax.sgd(0.1))
    learner.run(jax.random.PRNGKey(0), 250, problem, 6, progress_bar=True,
                checkpoint_every=7, checkpoint_dir=tmp_path,  # the bar's chunk is 3
                checkpoint_keep=None)
    steps = sorted(int(p.stem[len("step_"):]) for p in tmp_path.glob("*.npz"))
    assert steps == list(range(7, 250, 7)) + [250]


def test_interrupted_save_leaves_no_temporary_file(problem, tmp_path, monkeypatch):
    learner = ugm.MLE(ugm.models.vbm, ugm.PCD(20), optax.sgd(0.1))
    state = learner.init(jax.random.PRNGKey(0), problem, 6)
    stale = tmp_path / "step_000000003.npz.tmp.npz"  # from a process killed mid-save
    stale.write_bytes(b"partial")

    def interrupted(path, **arrays):
        open(path, "wb").write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", interrupted)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save(checkpoint.step_path(tmp_path, 5), state)
    assert list(tmp_path.iterdir()) == []


def test_checkpoint_of_another_model_is_rejected(problem, tmp_path):
    learner = ugm.MLE(ugm.models.vbm, ugm.PCD(20), optax.sgd(0.1))
    learner.run(jax.random.PRNGKey(0), 5, problem, 6, progress_bar=False,
                checkpoint_every=5, checkpoint_dir=tmp_path)
    other = ugm.MLE(ugm.models.vbm, ugm.PCD(30), optax.sgd(0.1))
    with pytest.raises(ValueError, match="shape"):
        other.restore(checkpoint.latest(tmp_path), problem, 6)
    with pytest.raises(ValueError, match="lacks"):
        ugm.MLE(ugm.models.vbm, ugm.PCD(20), optax.adam(0.1)).restore(
            checkpoint.latest(tmp_path), problem, 6)


def test_failed_run_leaves_a_checkpoint_of_the_last_good_state(problem, tmp_path):
    learner = ugm.MLE(ugm.models.vbm, ugm.PCD(20), optax.sgd(1e38))
    with pytest.raises(ugm.NonFiniteError) as err:
        learner.run(jax.random.PRNGKey(0), 50, problem, 6, progress_bar=False,
                    checkpoint_every=100, checkpoint_dir=tmp_path)
    path = checkpoint.latest(tmp_path)
    assert path is not None
    state, diagnostics = learner.restore(path, problem, 6)
    assert same(state.params, err.value.state.params)
    assert int(state.failed_at) == -1 and len(diagnostics["grad_norm"]) == err.value.step + 1
    assert all(np.all(np.isfinite(np.asarray(v))) for v in jax.tree.leaves(state.params))


def test_checkpoint_options_are_checked(problem, tmp_path):
    learner = ugm.MLE(ugm.models.vbm, ugm.PCD(20), optax.sgd(0.1))
    with pytest.raises(ValueError, match="both"):
        learner.run(jax.random.PRNGKey(0), 5, problem, 6, checkpoint_every=5)
    with pytest.raises(ValueError, match=">= 1"):
        learner.run(jax.random.PRNGKey(0), 5, problem, 6, checkpoint_every=0,
                    checkpoint_dir=tmp_path)


@pytest.fixture(scope="module")
def written(problem, tmp_path_factory):
    """A run of 10 steps with checkpoints at steps 5 and 10."""
    directory = tmp_path_factory.mktemp("run")
    learner = ugm.MLE(ugm.models.vbm, ugm.PCD(20), optax.adam(0.1))
    learner.run(jax.random.PRNGKey(0), 10, problem, 6, progress_bar=False,
                checkpoint_every=5, checkpoint_dir=directory)
    return directory


@pytest.mark.parametrize("damage, message", [
    ("truncate", "not a .npz archive"),
    ("empty", "it is empty"),
    ("zero", "cannot be read"),
    ("garbage", "not a .npz archive"),
])
def test_a_damaged_checkpoint_is_a_clear_error_and_latest_skips_it(
        problem, written, tmp_path, damage, message):
    """Before: BadZipFile, EOFError, 'Bad CRC-32' and a misleading 'contains pickled
    (object) data', and latest() returned the damaged newest file."""
    import shutil
    shutil.copytree(written, tmp_path, dirs_exist_ok=True)  # its diagnostics folder too
    newest = checkpoint.step_path(tmp_path, 10)
    raw = newest.read_bytes()
    if damage == "truncate":
        newest.write_bytes(raw[:len(raw) // 2])
    elif damage == "empty":
        newest.write_bytes(b"")
    elif damage == "zero":  # the archive's directory intact, a member's bytes zeroed
        start = raw.index(b"state/") + 200
        newest.write_bytes(raw[:start] + bytes(64) + raw[start + 64:])
    else:
        newest.write_bytes(np.random.default_rng(0).bytes(len(raw)))
    learner = ugm.MLE(ugm.models.vbm, ugm.PCD(20), optax.adam(0.1))
    with pytest.raises(checkpoint.CheckpointError, match=message):
        learner.restore(newest, problem, 6)
    with pytest.warns(RuntimeWarning, match="skipping an unreadable checkpoint"):
        found = checkpoint.latest(tmp_path)
    assert found == checkpoint.step_path(tmp_path, 5)
    state, _ = learner.restore(found, problem, 6)
    assert int(state.step) == 5


def test_an_adam_checkpoint_does_not_load_into_an_sgd_learner(problem, written):
    """SGD's state has fewer leaves than Adam's, all of them found in an Adam
    checkpoint: before, the restore took it."""
    sgd = ugm.MLE(ugm.models.vbm, ugm.PCD(20), optax.sgd(0.1))
    with pytest.raises(checkpoint.CheckpointError, match="lacks|holds"):
        sgd.restore(checkpoint.latest(written), problem, 6)


def ising_ring(n):
    """A model of the same sites and parameter shapes as ``vbm(n)`` (a spin vector and a
    coupling matrix), with another potential: a ring of couplings only."""
    import numpyro
    import jax.numpy as jnp
    W = numpyro.param("W", jnp.zeros((n, n)))
    b = numpyro.param("b", jnp.zeros(n))
    x = numpyro.sample("x", ugm.Spin((n,)))
    ugm.factor("ring", jnp.sum(jnp.diag(W, 1) * x[:-1] * x[1:]) + b @ x)


def test_a_checkpoint_of_another_model_of_the_same_shapes_is_refused(problem, written):
    """Before: restored without a word, and the run went on under the other model."""
    other = ugm.MLE(ising_ring, ugm.PCD(20), optax.adam(0.1))
    with pytest.raises(checkpoint.CheckpointError,
                       match=r"written with model 'numpyro_ugm\.models\.boltzmann\.vbm\(x: "
                             r"Spin\(\(6,\)\)\)'; this one is '.*ising_ring"):
        other.restore(checkpoint.latest(written), problem, 6)
    state, _ = ugm.MLE(ugm.models.vbm, ugm.PCD(20), optax.adam(0.1)).restore(
        checkpoint.latest(written), problem, 6)  # the same model restores
    assert int(state.step) == 10


def test_a_checkpoint_of_another_averaging_start_is_refused(problem, tmp_path):
    """Before: the averaging state (the same leaves) restored under another start."""
    def learner(start):
        return ugm.MLE(ugm.models.vbm, ugm.PCD(20), ugm.averaged(optax.sgd(0.1), start))
    learner(3).run(jax.random.PRNGKey(0), 5, problem, 6, progress_bar=False,
                   checkpoint_every=5, checkpoint_dir=tmp_path)
    with pytest.raises(checkpoint.CheckpointError,
                       match="written with averaging start '3'; this one is '2'"):
        learner(2).restore(checkpoint.latest(tmp_path), problem, 6)
    state, _ = learner(3).restore(checkpoint.latest(tmp_path), problem, 6)
    assert int(state.opt_state.count) == 2  # updates 4 and 5 averaged


def _gaussian_bernoulli():
    import jax.numpy as jnp
    import numpyro
    v = numpyro.sample("v", ugm.Real(4))
    h = numpyro.sample("h", ugm.Binary(2))
    w = numpyro.param("W", 0.1 * jnp.ones((4, 2)))
    numpyro.factor("e", -0.5 * jnp.sum(v ** 2) + v @ w @ h)


@pytest.mark.slow
def test_a_real_valued_run_resumes_bit_identically(tmp_path):
    """Persistent chains of a real site and a MALA step size adapted across updates
    (GradientState) are saved and restored with the rest."""
    data = {"v": np.random.default_rng(0).normal(size=(60, 4))}
    estimator = ugm.PCD(16, kernel=ugm.kernels.mala(sites=("v",)))
    key, optimizer = jax.random.PRNGKey(1), optax.adam(0.05)
    full = ugm.MLE(_gaussian_bernoulli, estimator, optimizer).run(key, 30, data,
                                                                  progress_bar=False)
    assert "chain_spread_v" in full.diagnostics
    learner = ugm.MLE(_gaussian_bernoulli, estimator, optimizer)
    learner.run(key, 10, data, progress_bar=False, checkpoint_every=10,
                checkpoint_dir=tmp_path)
    fresh = ugm.MLE(_gaussian_bernoulli, estimator, optimizer)
    state, _ = fresh.restore(tmp_path / "step_000000010.npz", data)
    resumed = fresh.run(key, 20, data, init_state=state, progress_bar=False)
    assert same(resumed.state, full.state)
