"""Neural energy-based models on 2-D densities: an MLP energy declared through numpyro's
module helper for equinox, learned by PCD with MALA chains and by SMC, with the exact
test log-likelihood of each learned model by 2-D quadrature, and the effect of the kernel
that moves PCD's persistent chains (MALA, HMC, unadjusted Langevin).

Setup:

* three data sets, drawn with numpy and standardized per coordinate with the training
  set's mean and standard deviation: **two moons** (noise 0.1), **rings** (three
  concentric circles of radii 1, 2, 3, equal counts, noise 0.1) and **8 Gaussians**
  (means on the circle of radius 2, standard deviation 0.2); ``--train`` training and
  ``--test`` held-out points each;
* the model: one site ``x = ugm.Real(2)`` and the log-potential
  f(x) = 10 tanh(g(x) / 10) − |x|² / (2 · 3²), g an ``equinox.nn.MLP``
  (2 → 64 → 64 → 1, SiLU) declared with ``numpyro.contrib.module.eqx_module`` (one
  ``numpyro.param`` site holding the network's arrays, which the learner optimizes);
  the network's output bounded to (−10, 10) and the fixed Gaussian envelope keep the
  density normalizable and its scale sane whatever the weights. (With the raw network,
  ``--unbounded``, PCD ran away — test log-likelihoods from −243 to −5·10⁸ — with
  Langevin chains on all three sets, MALA on two moons and rings, HMC on rings: chains
  stuck where the energy is steep push it further down; SMC, which draws fresh particles
  at every update, did not. See benchmarks/results/ebm_2d.md.)
* learners (``ugm.MLE`` with Adam, its learning rate decayed from 1e-2 to 1e-4 on a
  cosine over the run, minibatches of 200, the same steps and initial network for every
  learner): PCD with 256 persistent chains and 5 kernel
  steps per update (the persistent-buffer recipe of EBM training) moved by
  ``ugm.kernels.mala()`` (step size adapted to acceptance 0.574), by
  ``ugm.kernels.hmc(num_integration_steps=5)`` (one step per update: the same number of
  gradients) and by the unadjusted ``ugm.kernels.langevin`` at two step sizes; and SMC
  (``ugm.SMC``, 256 particles annealed afresh from the base Normal at every update,
  2 MALA steps per β);
* evaluation: the exact mean log-likelihood of the test points (standardized
  coordinates) by ``ugm.quadrature.log_likelihood`` on the box [−5, 5]² (401 × 401
  points; its error estimate is printed), against the base Normal fitted to the
  training data and, for the 8 Gaussians, the true density.

Outputs: the table on stdout, ``<out>/ebm_2d.json`` and ``<out>/ebm_2d.png`` (per data
set: the test data beside each learned density, by quadrature).

Run: ``python examples/ebm_2d.py`` (about 10 minutes on 2 CPU cores) or ``--quick``
(8 Gaussians only, 300 steps, fewer points: a check of the pipeline, about a minute).
"""

import argparse
import json
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import optax
from numpyro.contrib.module import eqx_module

import numpyro_ugm as ugm

ENVELOPE = 3.0  # standard deviation of the Gaussian envelope of the energy
BOUND = 10.0  # the network's output is bounded to (-BOUND, BOUND) (tanh)
BOX = (-5.0, 5.0)


# --- data ---------------------------------------------------------------------------------


def two_moons(rng, n, noise=0.1):
    """The two interleaved half circles."""
    upper = rng.random(n) < 0.5
    t = np.pi * rng.random(n)
    x = np.where(upper, np.cos(t), 1 - np.cos(t))
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t))
    return np.stack([x, y], 1) + noise * rng.standard_normal((n, 2))


def rings(rng, n, noise=0.1):
    """Three concentric circles of radii 1, 2, 3."""
    r = rng.integers(1, 4, n).astype(float)
    t = 2 * np.pi * rng.random(n)
    return np.stack([r * np.cos(t), r * np.sin(t)], 1) + noise * rng.standard_normal((n, 2))


EIGHT_RADIUS, EIGHT_SD = 2.0, 0.2
EIGHT_MEANS = EIGHT_RADIUS * np.stack([np.cos(np.arange(8) * np.pi / 4),
                                       np.sin(np.arange(8) * np.pi / 4)], 1)


def eight_gaussians(rng, n):
    """An equal mixture of 8 Gaussians on a circle."""
    return EIGHT_MEANS[rng.integers(0, 8, n)] + EIGHT_SD * rng.standard_normal((n, 2))


def eight_gaussians_log_density(x):
    """log density of :func:`eight_gaussians` at ``x`` (raw coordinates)."""
    d2 = np.sum((x[:, None, :] - EIGHT_MEANS[None]) ** 2, -1)
    log_k = -0.5 * d2 / EIGHT_SD ** 2 - np.log(2 * np.pi * EIGHT_SD ** 2) - np.log(8)
    top = log_k.max(1)
    return top + np.log(np.exp(log_k - top[:, None]).sum(1))


DATASETS = {"two moons": two_moons, "rings": rings, "8 Gaussians": eight_gaussians}


def make_data(name, num_train, num_test, seed=0):
    """Standardized train and test points, and the standardization (mean, sd)."""
    rng = np.random.default_rng(seed)
    raw_train, raw_test = (DATASETS[name](rng, n) for n in (num_train, num_test))
    mean, sd = raw_train.mean(0), raw_train.std(0)
    return (raw_train - mean) / sd, (raw_test - mean) / sd, raw_test, sd


# --- model --------------------------------------------------------------------------------


def energy_model(network, bound=BOUND):
    """The EBM whose energy network is ``network(x)``, a function called inside the model
    that declares the network's parameters (with ``eqx_module``, ``flax_module``,
    ``nnx_module`` or ``numpyro.param``) and returns its scalar output."""

    def ebm():
        x = numpyro.sample("x", ugm.Real(2))
        g = network(x)
        if bound is not None:
            g = bound * jnp.tanh(g / bound)
        numpyro.factor("energy", g - 0.5 * jnp.sum(x ** 2) / ENVELOPE ** 2)

    return ebm


def make_model(net, bound=BOUND):
    """The EBM whose energy network starts at ``net`` (an equinox module)."""
    return energy_model(lambda x: eqx_module("net", net)(x), bound)


def equinox_model(net):
    """:func:`make_model` of ``net`` and no ``init_params`` (the network's own weights):
    equinox's entry in :func:`compare`."""
    return make_model(net), None


def make_network(seed):
    """The equinox MLP every learner starts from (2 -> 64 -> 64 -> 1, SiLU)."""
    return eqx.nn.MLP(2, "scalar", 64, 2, activation=jax.nn.silu,
                      key=jax.random.PRNGKey(seed))


def dense_layers(net):
    """The ``(kernel, bias)`` of each layer of the equinox MLP ``net``, each kernel of
    shape (inputs, outputs) as flax and ``x @ kernel`` take it (equinox keeps the
    transpose): to start another library's network at the same weights."""
    return [(layer.weight.T, layer.bias) for layer in net.layers]


def normal_log_density(x, train):
    """log density at ``x`` of the Normal with the training data's per-coordinate mean and
    standard deviation (the learners' base distribution)."""
    mu, sd = train.mean(0), train.std(0)
    return np.sum(-0.5 * ((x - mu) / sd) ** 2 - np.log(sd) - 0.5 * np.log(2 * np.pi), 1)


def learners(quick):
    """Learner name -> estimator."""
    particles = 128 if quick else 256
    mala = ugm.kernels.mala()
    return {
        "PCD-5 MALA": ugm.PCD(particles, num_mcmc_steps=5, kernel=mala),
        "PCD-1 HMC (5 leapfrog)": ugm.PCD(
            particles, num_mcmc_steps=1, kernel=ugm.kernels.hmc(num_integration_steps=5)),
        "PCD-5 Langevin eps=0.01": ugm.PCD(
            particles, num_mcmc_steps=5, kernel=ugm.kernels.langevin(step_size=0.01)),
        **({} if quick else {"PCD-5 Langevin eps=0.1": ugm.PCD(
            particles, num_mcmc_steps=5, kernel=ugm.kernels.langevin(step_size=0.1))}),
        "SMC (MALA moves)": ugm.SMC(particles, num_mcmc_steps=2, kernel=mala),
    }


def learn(model, estimator, train, steps, seed, init_params=None):
    """Learned parameters, wall time and the final diagnostics (from ``init_params``,
    default: the model's own initial values)."""
    learner = ugm.MLE(model, estimator, optax.adam(optax.cosine_decay_schedule(
        1e-2, steps, alpha=0.01)))
    start = time.perf_counter()
    result = learner.run(jax.random.PRNGKey(seed), steps, {"x": train}, batch_size=200,
                         init_params=init_params, progress_bar=False)
    jax.block_until_ready(result.params)
    seconds = time.perf_counter() - start
    last = {k: float(np.mean(np.asarray(v)[-max(1, steps // 10):]))
            for k, v in result.diagnostics.items() if k in ("acceptance", "num_betas")}
    return result.params, seconds, last


def run(names, steps, num_train, num_test, num_points, quick, bound, seed=0):
    """Every learner on every data set: the table's rows and the densities."""
    rows, densities, data = [], {}, {}
    for name in names:
        train, test, raw_test, sd = make_data(name, num_train, num_test, seed)
        data[name] = test
        model = ugm.as_ugm(make_model(make_network(seed), bound))
        x = {"x": test}
        rows += reference_rows(name, train, test, raw_test, sd)
        for learner, estimator in learners(quick).items():
            try:
                params, seconds, last = learn(model, estimator, train, steps, seed + 1)
            except FloatingPointError as e:  # a diverging learner is a result, not a crash
                rows.append(dict(data=name, learner=learner, test_ll=float("nan"),
                                 error=float("nan"), seconds=float("nan"),
                                 failed=str(e).splitlines()[0]))
                print(f"{name:12s} {learner:26s} failed: {rows[-1]['failed']}", flush=True)
                continue
            ll = ugm.quadrature.log_likelihood(model, params, x, bounds=BOX,
                                               num_points=num_points)
            d = ugm.quadrature.density(model, params, bounds=BOX, num_points=num_points)
            densities[(name, learner)] = d
            rows.append(dict(data=name, learner=learner, test_ll=ll.value, error=ll.error,
                             seconds=seconds, **last))
            print(f"{name:12s} {learner:26s} test LL {ll.value:8.4f} (± {ll.error:.1e}) "
                  f"{seconds:6.1f} s {last}", flush=True)
    return rows, densities, data


def reference_rows(name, train, test, raw_test, sd):
    """The table's rows of the base Normal fitted to ``train`` and, for the 8 Gaussians,
    of the true density (in standardized coordinates)."""
    base = float(np.mean(normal_log_density(test, train)))
    rows = [dict(data=name, learner="base Normal (fitted)", test_ll=base, error=0.0,
                 seconds=0.0)]
    if name == "8 Gaussians":
        true = float(np.mean(eight_gaussians_log_density(raw_test)) + np.sum(np.log(sd)))
        rows.append(dict(data=name, learner="true density", test_ll=true, error=0.0,
                         seconds=0.0))
    return rows


def compare(declarations, args, title):
    """Per data set, the energy network declared each way of ``declarations`` (label ->
    function of the equinox network to start from -> ``(model, init_params)``), learned
    from the same weights with the same keys by ``args.learner``: the test
    log-likelihoods by quadrature, with the base Normal's (and the truth's), on stdout
    and in ``<args.out>/<title>.json``. The examples of other network libraries run it."""
    names = ["8 Gaussians"] if args.quick else list(DATASETS)
    steps = 300 if args.quick else args.steps
    num_points = 201 if args.quick else 401
    print(f"{title}: {args.learner}, {len(names)} data set(s), {steps} steps, "
          f"{args.train} train / {args.test} test points, quadrature {num_points}^2 "
          f"points on {BOX}^2", flush=True)
    rows = []
    for name in names:
        train, test, raw_test, sd = make_data(name, args.train, args.test, args.seed)
        rows += reference_rows(name, train, test, raw_test, sd)
        for label, declare in declarations.items():
            model, init_params = declare(make_network(args.seed))
            model = ugm.as_ugm(model)
            params, seconds, _ = learn(model, learners(args.quick)[args.learner], train,
                                       steps, args.seed + 1, init_params)
            ll = ugm.quadrature.log_likelihood(model, params, {"x": test}, bounds=BOX,
                                               num_points=num_points)
            rows.append(dict(data=name, learner=label, test_ll=ll.value, error=ll.error,
                             seconds=seconds))
            print(f"{name:12s} {label:26s} test LL {ll.value:8.4f} (± {ll.error:.1e}) "
                  f"{seconds:6.1f} s", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = title + ("_quick" if args.quick else "")
    (out / f"{name}.json").write_text(json.dumps(dict(steps=steps, learner=args.learner,
                                                      rows=rows), indent=1))
    print_table(rows)
    print(f"wrote {out / name}.json")


def print_table(rows):
    """The rows as a table on stdout."""
    print(f"\n{'data':12s} {'learner':26s} {'test LL':>9s} {'± quad.':>8s} {'time s':>7s}")
    for r in rows:
        print(f"{r['data']:12s} {r['learner']:26s} {r['test_ll']:9.4f} {r['error']:8.1e} "
              f"{r['seconds']:7.1f}")


def comparison_parser(description, quick_minutes="about a minute"):
    """The command line of :func:`compare`'s examples: ``--quick``, ``--steps``, ``--train``,
    ``--test``, ``--out``, ``--learner`` and ``--seed``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true",
                   help=f"8 Gaussians only, 300 steps ({quick_minutes})")
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--train", type=int, default=2000)
    p.add_argument("--test", type=int, default=2000)
    p.add_argument("--out", default="outputs")
    p.add_argument("--learner", default="PCD-5 MALA", choices=list(learners(False)))
    p.add_argument("--seed", type=int, default=0)
    return p


def plot(densities, data, path):
    """Per data set: the test points, then each learner's density."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(data)
    columns = sorted({k[1] for k in densities}, key=lambda c: list(
        dict.fromkeys(k[1] for k in densities)).index(c))
    fig, axes = plt.subplots(len(names), 1 + len(columns),
                             figsize=(2.4 * (1 + len(columns)), 2.4 * len(names)),
                             squeeze=False)
    for i, name in enumerate(names):
        ax = axes[i, 0]
        ax.scatter(data[name][:, 0], data[name][:, 1], s=1, c="k")
        ax.set_title(f"{name}: test data" if i == 0 else name, fontsize=8)
        for j, col in enumerate(columns, 1):
            ax = axes[i, j]
            d = densities.get((name, col))
            if d is not None:
                ax.imshow(np.exp(d.log_density).T, origin="lower", cmap="viridis",
                          extent=(*BOX, *BOX))
            if i == 0:
                ax.set_title(col, fontsize=8)
        for ax in axes[i]:
            ax.set_xlim(*BOX)
            ax.set_ylim(*BOX)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_aspect("equal")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(args):
    names = ["8 Gaussians"] if args.quick else list(DATASETS)
    steps = 300 if args.quick else args.steps
    num_points = 201 if args.quick else 401
    print(f"EBM 2-D{' (unbounded energy)' if args.unbounded else ''}: {len(names)} data "
          f"sets, {steps} steps, {args.train} train / "
          f"{args.test} test points, quadrature {num_points}^2 points on {BOX}^2; "
          f"{jax.device_count()} {jax.devices()[0].platform} device(s)", flush=True)
    rows, densities, data = run(names, steps, args.train, args.test, num_points, args.quick,
                                None if args.unbounded else BOUND)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = ("ebm_2d_quick" if args.quick else "ebm_2d") + ("_unbounded" if args.unbounded
                                                           else "")
    (out / f"{name}.json").write_text(json.dumps(dict(steps=steps, rows=rows), indent=1))
    plot(densities, data, out / f"{name}.png")
    print_table(rows)
    print(f"wrote {out / name}.json and .png")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--train", type=int, default=2000)
    parser.add_argument("--test", type=int, default=2000)
    parser.add_argument("--out", default="outputs")
    parser.add_argument("--unbounded", action="store_true",
                        help="the raw network as the energy (no tanh bound)")
    main(parser.parse_args())
