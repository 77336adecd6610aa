"""PCD with MALA chains on real-valued models: numpyro_ugm against a hand-written
blackjax / plain-JAX step of the same algorithm, timed interleaved in the same run.

One update = the gradient of the data term, one kernel step of every persistent chain
and one optimizer step, for

* (a) a Gaussian–Bernoulli RBM (``--visible`` x ``--hidden``, default 784 x 500, batch
  100 of MNIST intensities in [0, 1] (synthetic if the shipped set is absent), 100
  chains): a Gibbs draw of h | v, then a MALA step of v | h
  (``ugm.kernels.mala(sites=("v",))``: blackjax's MALA on v, although v | h is Gaussian
  and would be drawn exactly by default), the free energy's gradient (h summed out) and
  SGD;
* (b) the neural EBM of ``examples/ebm_2d.py`` (an equinox MLP 2 → 64 → 64 → 1 energy,
  batch 200 of two-moons points, 256 chains): one MALA step of every chain, the gradient
  of mean f(data) − mean f(chains) and Adam.

The hand-written step is what one would write with blackjax: ``blackjax.mala`` vmapped
over the chains, started afresh at each update (the parameters, and for the RBM h, have
changed since the last one, so the cached log-density and gradient are stale), the same
step-size adaptation (log ε += 0.05 (mean acceptance − 0.574)), the same float32 dtype,
the whole step jitted; the RBM's gradients in closed form, the EBM's by ``jax.grad``.

Rows, each ours / hand-written (> 1: ours slower): ``MLE.update`` (one public step on a
prepared batch, with its host-side failure check), the jitted ``learner.core.update``
alone, and ``MLE.run`` of ``--steps`` updates (``--ebm-steps`` for the EBM, whose update is
~20x cheaper, so that the run's fixed host work weighs as little) per step against the
hand-written step in a ``lax.scan``. Target (issue 31): <= 1.2.
Run: python benchmarks/bench_gradient_pcd.py [--repeats 30] [--steps 50] [--ebm-steps 500]
"""

import argparse

import blackjax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import optax
from numpyro.contrib.module import eqx_module

from _report import learner_step, report, timeit_many

import numpyro_ugm as ugm

LR, TARGET_ACCEPTANCE, ADAPTATION_RATE, STEP_SIZE = 0.01, 0.574, 0.05, 0.1


# --- (a) Gaussian–Bernoulli RBM -----------------------------------------------------------


gbrbm = ugm.models.gaussian_rbm


def adapted(eps, acceptance):
    """The population step-size adaptation of ``ugm.kernels.mala``."""
    return jnp.exp(jnp.log(eps) + ADAPTATION_RATE * (jnp.mean(acceptance)
                                                     - TARGET_ACCEPTANCE))


def mala_chains(key, positions, logdensity_fns, eps):
    """One blackjax MALA step of each chain, each started afresh (``mala.init``)."""
    kernel = blackjax.mala.build_kernel()

    def one(k, x, extra):
        f = lambda y: logdensity_fns(y, extra)  # noqa: E731
        state, info = kernel(k, blackjax.mala.init(x, f), f, eps)
        return state.position, info.acceptance_rate

    return one, jax.random.split(key, jax.tree.leaves(positions)[0].shape[0])


def plain_gbrbm_step(chains):
    """The hand-written PCD-MALA step of the GB-RBM."""

    def step(state, batch, key):
        (W, b, c), v, eps = state
        k_h, k_v = jax.random.split(key)
        h = (jax.random.uniform(k_h, (chains, W.shape[1])) < jax.nn.sigmoid(v @ W + c)
             ).astype(v.dtype)
        one, keys = mala_chains(
            k_v, v, lambda x, hh: -0.5 * jnp.sum((x - b) ** 2) + x @ W @ hh + c @ hh, eps)
        v, acceptance = jax.vmap(one)(keys, v, h)
        p_data, p_model = jax.nn.sigmoid(batch @ W + c), jax.nn.sigmoid(v @ W + c)
        gW = batch.T @ p_data / batch.shape[0] - v.T @ p_model / chains
        gb = jnp.mean(batch - b, 0) - jnp.mean(v - b, 0)
        gc = jnp.mean(p_data, 0) - jnp.mean(p_model, 0)
        return (W + LR * gW, b + LR * gb, c + LR * gc), v, adapted(eps, acceptance)

    return step


def mnist_intensities(num, visible):
    try:
        from numpyro_ugm.datasets import mnist
        x = mnist("train")[0][:num].reshape(num, -1).astype(np.float32)
        x = x / 255.0 if x.max() > 1 else x
        return x[:, :visible]
    except Exception:  # synthetic data when the shipped set is absent
        return np.random.default_rng(0).random((num, visible)).astype(np.float32)


# --- (b) neural EBM -----------------------------------------------------------------------


ENVELOPE = 3.0


def ebm_energy(net, x):
    return net(x) - 0.5 * jnp.sum(x ** 2) / ENVELOPE ** 2


def make_ebm(net):
    def ebm():
        x = numpyro.sample("x", ugm.Real(2))
        numpyro.factor("energy", ebm_energy(eqx_module("net", net), x))

    return ebm


def plain_ebm_step(optimizer, static):
    """The hand-written PCD-MALA step of the EBM (``static``: the network's non-array
    part; the arrays are the parameters)."""

    def energy(arrays, x):
        return ebm_energy(eqx.combine(arrays, static), x)

    def step(state, batch, key):
        arrays, opt_state, x, eps = state
        one, keys = mala_chains(key, x, lambda y, _: energy(arrays, y), eps)
        x, acceptance = jax.vmap(lambda k, y: one(k, y, None))(keys, x)

        def loss(a):
            return -(jnp.mean(jax.vmap(energy, (None, 0))(a, batch))
                     - jnp.mean(jax.vmap(energy, (None, 0))(a, x)))

        grads = jax.grad(loss)(arrays)
        updates, opt_state = optimizer.update(grads, opt_state, arrays)
        return optax.apply_updates(arrays, updates), opt_state, x, adapted(eps, acceptance)

    return step


def two_moons(rng, n, noise=0.1):
    upper = rng.random(n) < 0.5
    t = np.pi * rng.random(n)
    x = np.stack([np.where(upper, np.cos(t), 1 - np.cos(t)),
                  np.where(upper, np.sin(t), 0.5 - np.sin(t))], 1)
    x = x + noise * rng.standard_normal((n, 2))
    return ((x - x.mean(0)) / x.std(0)).astype(np.float32)


# --- timing -------------------------------------------------------------------------------


def compare(label, learner, data, model_args, plain_step, plain_state, repeats, num_steps):
    """Time ours against the hand-written step (``plain_step(state, batch, key) ->
    state`` from ``plain_state``) on the same batch, and report the three ratios."""
    key = jax.random.PRNGKey(0)
    batch = jnp.asarray(next(iter(data.values())))
    step = jax.jit(plain_step)

    @jax.jit
    def scan(state, batch, k):
        return jax.lax.scan(lambda s, kk: (step(s, batch, kk), None), state,
                            jax.random.split(k, num_steps))[0]

    box = [plain_state]

    def plain():
        box[0] = step(box[0], batch, key)
        jax.block_until_ready(box[0])

    def plain_run():
        box[0] = scan(box[0], batch, key)
        jax.block_until_ready(box[0])

    ours = [learner.init(key, data, *model_args)]
    cores = list(ours)  # the core step's own chain: update() continues from its states
    prepared = learner.prepare(data)

    def update():
        ours[0], _ = learner.update(ours[0], prepared)
        jax.block_until_ready(ours[0].params)

    def core():
        cores[0], _ = learner_step(learner, cores[0], prepared.batch)
        jax.block_until_ready(cores[0].params)

    def ours_run():
        ours[0] = learner.run(key, num_steps, data, *model_args, progress_bar=False,
                              init_state=ours[0]).state
        jax.block_until_ready(ours[0].params)

    t = timeit_many({"plain": plain, "update": update, "core": core}, repeats)
    t.update(timeit_many({"plain run": plain_run, "run": ours_run}, max(3, repeats // 10)))
    t["plain run"] /= num_steps
    t["run"] /= num_steps
    print(f"\n{label}\n{'implementation':<44}{'ms / update':>14}")
    for name, row in (("plain", "hand-written blackjax step (jitted)"),
                      ("update", "MLE.update"), ("core", "core step (learner.core.update)"),
                      ("plain run", "hand-written, lax.scan, per step"),
                      ("run", f"MLE.run ({num_steps} steps), per step")):
        print(f"{row:<44}{1e3 * t[name]:>14.3f}")
    ratios = {}
    for name, ours_name, plain_name in (("MLE.update", "update", "plain"),
                                        ("core step", "core", "plain"),
                                        (f"MLE.run ({num_steps} steps)", "run", "plain run")):
        ratio = ratios[name] = t[ours_name] / t[plain_name]
        print(f"ratio {name} / hand-written = {ratio:.2f}  (target <= 1.2)")
        report(f"{label}, {name}: ours / hand-written blackjax (time)", f"{ratio:.2f}",
               f"{1e3 * t[ours_name]:.3f} vs {1e3 * t[plain_name]:.3f} ms per update, "
               "median; target <= 1.2")
    return ratios


def bench_gbrbm(visible, hidden, repeats, num_steps, chains=100, batch_size=100):
    data = mnist_intensities(batch_size, visible)
    key = jax.random.PRNGKey(0)
    params = (0.01 * jax.random.normal(key, (visible, hidden)), jnp.zeros(visible),
              jnp.zeros(hidden))
    v0 = jnp.asarray(data[:chains] if chains <= batch_size
                     else jax.random.normal(key, (chains, visible)))
    learner = ugm.MLE(gbrbm, ugm.PCD(chains, num_mcmc_steps=1,
                                     kernel=ugm.kernels.mala(sites=("v",))),
                      optax.sgd(LR))
    return compare(f"GB-RBM {visible}x{hidden} PCD-1 MALA ({chains} chains, batch "
                   f"{batch_size})", learner, {"v": data}, (visible, hidden),
                   plain_gbrbm_step(chains), (params, v0, jnp.asarray(STEP_SIZE, jnp.float32)),
                   repeats, num_steps)


def bench_ebm(repeats, num_steps, chains=256, batch_size=200):
    data = two_moons(np.random.default_rng(0), batch_size)
    net = eqx.nn.MLP(2, "scalar", 64, 2, activation=jax.nn.silu, key=jax.random.PRNGKey(0))
    optimizer = optax.adam(1e-3)
    arrays, static = eqx.partition(net, eqx.is_inexact_array)
    x0 = jax.random.normal(jax.random.PRNGKey(1), (chains, 2))
    learner = ugm.MLE(make_ebm(net), ugm.PCD(chains, num_mcmc_steps=1, kernel=ugm.kernels.mala()),
                      optimizer)
    return compare(f"neural EBM (MLP 2-64-64-1) PCD-1 MALA ({chains} chains, batch "
                   f"{batch_size})", learner, {"x": data}, (),
                   plain_ebm_step(optimizer, static),
                   (arrays, optimizer.init(arrays), x0, jnp.asarray(STEP_SIZE, jnp.float32)),
                   repeats, num_steps)


def main(repeats=30, num_steps=50, ebm_steps=500, visible=784, hidden=500,
         which=("gbrbm", "ebm")):
    print(f"{jax.device_count()} {jax.devices()[0].platform} device(s), float32")
    out = {}
    if "gbrbm" in which:
        out["gbrbm"] = bench_gbrbm(visible, hidden, repeats, num_steps)
    if "ebm" in which:
        out["ebm"] = bench_ebm(repeats, ebm_steps)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--steps", type=int, default=50, help="steps per MLE.run")
    parser.add_argument("--ebm-steps", type=int, default=500, help="steps per MLE.run, EBM")
    parser.add_argument("--visible", type=int, default=784)
    parser.add_argument("--hidden", type=int, default=500)
    parser.add_argument("--only", choices=["gbrbm", "ebm"], default=None)
    args = parser.parse_args()
    main(args.repeats, args.steps, args.ebm_steps, args.visible, args.hidden,
         (args.only,) if args.only else ("gbrbm", "ebm"))
