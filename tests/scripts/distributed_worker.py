"""One process of tests/test_runtime_distributed.py (launched by tests/multiprocess.py): the same
script runs as 1 process with 4 CPU devices and as 2 processes with 2 each, over a global
mesh of all 4, and writes what each case computed (gathered to whole arrays) for the test
to compare.

Cases (command-line arguments): ``learn`` (PCD with minibatches, checkpoints every 5
steps, progress bar on), ``resume`` (restores the step-5 checkpoint from ``--from DIR``
and runs to step 10), ``steps`` (``MLE.update`` on given and own minibatches, then
``ugm.predict``), ``smc`` (the running log Z of SMC), ``pf`` and ``psmc`` (learning
with PF and PSMC: parameters, running log Z, particles and log-weights), ``ais`` (AIS
log Z with the chains over the mesh), ``sample`` (``ugm.sample``); ``host`` (the
host-side pieces alone, no learning: a sharded state's checkpoint round trip, an error
seen on one process raised on both, data that differ between processes refused),
``wait`` (a learning loop that runs until the test kills a process).
"""

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import multiprocess  # noqa: E402

multiprocess.join()

import jax  # noqa: E402
import optax  # noqa: E402

import numpyro_ugm as ugm  # noqa: E402
from numpyro_ugm import checkpoint  # noqa: E402
from numpyro_ugm.datasets import vbm_problem  # noqa: E402
from numpyro_ugm.runtime.distributed import to_host  # noqa: E402
from numpyro_ugm.evaluate import ais  # noqa: E402

KEY = jax.random.PRNGKey(1)
UNITS, STEPS = 8, 10


def learner(mesh, estimator=None):
    return ugm.MLE(ugm.models.vbm, estimator or ugm.PCD(64), optax.adam(0.05), mesh=mesh)


def learn(mesh, train, out):
    ckpt = Path(multiprocess.out_dir()) / "checkpoints"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ugm.distributed.warn("a warning from every process", RuntimeWarning)
        run = learner(mesh).run(KEY, STEPS, train, UNITS, batch_size=20, progress_bar=True,
                                checkpoint_every=5, checkpoint_dir=ckpt)
    out.update(learn_W=run.params["W"], learn_grad_norm=run.diagnostics["grad_norm"],
               learn_particles=to_host(run.state.estimator_state.position["x"]),
               learn_warnings=len(caught),
               learn_checkpoints=sorted(int(p.stem[5:]) for p in ckpt.glob("step_*.npz")))


def resume(mesh, train, out, source):
    mle = learner(mesh)
    state, _ = mle.restore(checkpoint.step_path(Path(source) / "checkpoints", 5), train,
                           UNITS, batch_size=20)
    run = mle.run(KEY, STEPS - 5, train, UNITS, batch_size=20, init_state=state,
                  progress_bar=False)
    out.update(resume_W=run.params["W"], resume_grad_norm=run.diagnostics["grad_norm"],
               resume_particles=to_host(run.state.estimator_state.position["x"]))


def smc(mesh, train, out):
    run = learner(mesh, ugm.SMC(64)).run(KEY, 3, train, UNITS, progress_bar=False)
    out.update(smc_log_z=run.diagnostics["log_z"], smc_W=run.params["W"])


def reweighted(mesh, train, out, name, estimator):
    """A weighted estimator's run (PF: particle-filtered MCMC-MLE; PSMC: persistent
    tempered SMC): its parameters, running log Z and its particles and log-weights (split
    over the mesh, gathered)."""
    run = learner(mesh, estimator).run(KEY, 5, train, UNITS, progress_bar=False)
    devices = run.state.estimator_state.position["x"].sharding.device_set
    particles = to_host(run.state.estimator_state)
    out.update({f"{name}_W": run.params["W"], f"{name}_log_z": run.diagnostics["log_z"],
                f"{name}_processes": len({d.process_index for d in devices}),
                f"{name}_resampled": run.diagnostics.get("resampled", 0.0),
                f"{name}_grad_norm": run.diagnostics["grad_norm"],
                f"{name}_particles": particles.position["x"],
                f"{name}_log_weights": particles.log_weights})


def anneal(mesh, out):
    m = ugm.UGM(ugm.models.rbm, 12, 4).observe(["v"])
    params = {k: 0.5 * jax.random.normal(jax.random.PRNGKey(i), v.shape)
              for i, (k, v) in enumerate(m.init_params(KEY).items())}
    result = ais.log_partition(m, params, KEY, 64, 50, mesh=mesh)
    out.update(ais_log_z=result.log_z, ais_log_w=result.log_weights)


def sample(mesh, out):
    """Chains split over the mesh, and (the same draws) not split."""
    m = ugm.UGM(ugm.models.vbm, UNITS)
    params = m.init_params(KEY)
    out.update(sample_x=ugm.sample(m, params, KEY, 20, num_chains=8, mesh=mesh)["x"],
               sample_unsplit_x=ugm.sample(m, params, KEY, 20, num_chains=8)["x"])


def host(mesh, out):
    """The host-side pieces on a state split over the processes, without compiling a
    learner (the quick test of the default suite)."""
    import jax.numpy as jnp
    import numpy as np

    P, S = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
    state = {"particles": jax.device_put(np.arange(32.0).reshape(8, 4),
                                         S(mesh, P("particles"))),
             "params": jax.device_put(np.ones(3, np.float32), S(mesh, P())),
             "step": jnp.asarray(7, jnp.int32)}
    path = Path(multiprocess.out_dir()) / "host.npz"
    checkpoint.save(path, state, {"grad_norm": np.arange(7.0)}, meta={"model": "m"})
    template = jax.tree.map(lambda a: jax.device_put(jnp.zeros_like(a), a.sharding), state)
    restored, diagnostics = checkpoint.load(path, template, {"model": "m"})
    out.update(host_particles=to_host(restored["particles"]),
               host_sharded=restored["particles"].sharding == state["particles"].sharding,
               host_diagnostics=diagnostics["grad_norm"])
    errors = []
    try:  # fails on process 1 only; both must raise
        ugm.distributed.agree(jax.process_index() != 1, ValueError("a check failed"))
    except ValueError as error:
        errors.append(str(error))
    data = {"x": np.full((4, 2), jax.process_index(), np.int8)}
    try:
        ugm.distributed.check_identical(data, "the data")
    except ValueError as error:
        errors.append(str(error))
    split = jax.make_array_from_process_local_data(S(mesh, P("particles")),
                                                  np.ones((4, 2), np.int8))
    try:  # data loaded per process: refused with a clear error
        learner(mesh).init(KEY, {"x": split}, 2)
    except TypeError as error:
        errors.append(str(error))
    print("\n".join(["errors:"] + errors), flush=True)
    out.update(host_errors=len(errors))


def wait(mesh, train, fail_at=None):
    """Learn step by step until killed (the test kills a process), printing each step;
    with ``fail_at``, process 1 raises an exception at that step instead."""
    mle = learner(mesh)
    state = mle.init(KEY, train, UNITS, batch_size=20)
    for step in range(100_000):
        if step == fail_at and jax.process_index() == 1:
            raise RuntimeError(f"process 1 fails at step {step}")
        state, _ = mle.update(state)
        print("step", step, flush=True)
        if step == 3:  # the test may kill a process now
            (Path(multiprocess.out_dir()) / f"stepping_{jax.process_index()}").touch()


def steps(mesh, train, out):
    """The step API with batches of one's own and of the learner, then predictions of
    the learned model (every process computes all of them)."""
    import numpy as np

    mle = learner(mesh)
    state = mle.init(KEY, train, UNITS, batch_size=20)
    for i in range(3):
        state, info = mle.update(state, {"x": train["x"][20 * i:20 * (i + 1)]})
        state, info = mle.update(state)
    params = mle.get_params(state)
    prediction = ugm.predict(mle.ugm, params, method="map")
    out.update(steps_W=params["W"], steps_grad_norm=np.asarray(info.grad_norm),
               predict_x=prediction.labels["x"])


def main(args):
    cases = [a for a in args if not a.startswith("--")]
    source = args[args.index("--from") + 1] if "--from" in args else None
    assert len(jax.devices()) == 4, jax.devices()
    mesh = jax.make_mesh((4,), ("particles",))
    if set(cases) & {"wait", "raise", "learn", "resume", "smc", "pf", "psmc",
                      "steps"}:
        _, train, _ = vbm_problem(jax.random.PRNGKey(0), UNITS, 100, 10)
    out = {}
    if "host" in cases:
        host(mesh, out)
    if "wait" in cases:
        wait(mesh, train)
    if "raise" in cases:
        wait(mesh, train, fail_at=3)
    if "learn" in cases:
        learn(mesh, train, out)
    if "resume" in cases:
        resume(mesh, train, out, source)
    if "steps" in cases:
        steps(mesh, train, out)
    if "smc" in cases:
        smc(mesh, train, out)
    if "pf" in cases:
        reweighted(mesh, train, out, "pf", ugm.PF(64))
    if "psmc" in cases:
        reweighted(mesh, train, out, "psmc", ugm.PSMC(64))
    if "ais" in cases:
        anneal(mesh, out)
    if "sample" in cases:
        sample(mesh, out)
    multiprocess.write(**to_host(out))


if __name__ == "__main__":
    main(sys.argv[1:])
