"""Compile once: the time of a second call relative to the first, for the calls that
used to recompile every time (issue 14's first rows), and minibatch learning with the
progress bar on / off.

On VBM-15 (``ugm.datasets.vbm_problem``, 500 training cases) with PCD-100:

* ``MLE.init``, then again with another key and the examples in another order;
* ``MLE.run`` for 200 steps, then for 150 (another step count, same learner), then for
  200 on the examples in another order (new data of the same shape);
* ``ugm.sample`` on a declared 64×64 periodic Ising model (4 chains, 100 draws), then
  again with another key and warm-up;
* ``fit_exact`` and ``fit_pseudo_likelihood`` (20 L-BFGS steps: few, so that the
  ratio shows compilation, not the 2^15-state enumerations), then again on the examples
  in another order for 18 steps;
* ``pseudo_log_likelihood``, then again at other parameters;
* ``MLE.run`` from the same state with full data of 10⁴ and of 10⁶ examples: the first
  call's time (compilation) should not grow with the data;
* minibatch learning (50,000 examples, batch 100, 2,000 steps) with the progress bar
  on and off (second calls; the parameters must be identical).

Each ratio is measured in one process; the target of each is in issue 14 (≤ 0.15 for a
second call, ≤ 1.3 for the bar).

Run: python benchmarks/bench_recompile.py
"""

import time

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import optax
from _report import report

import numpyro_ugm as ugm
from numpyro_ugm.datasets import vbm_problem
from numpyro_ugm.learn import fit_pseudo_likelihood

N = 15


def timed(fn):
    start = time.perf_counter()
    jax.block_until_ready(jax.tree.leaves(fn()))
    return time.perf_counter() - start


def random_spins(num, seed=0):
    return {"x": np.random.default_rng(seed).choice(np.array([-1, 1], np.int8),
                                                     size=(num, N))}


def shuffled(data, seed=1):
    """The same examples in another order: new data of the same shape."""
    order = np.random.default_rng(seed).permutation(len(data["x"]))
    return {"x": np.asarray(data["x"])[order]}


def periodic_ising(size, beta=0.4):
    """A 64x64 periodic Ising model, declared (the samplers find its checkerboard)."""
    x = numpyro.sample("x", ugm.Spin((size, size)))
    numpyro.factor("couplings", beta * jnp.sum(x * jnp.roll(x, 1, 0) + x * jnp.roll(x, 1, 1)))


def main():
    _, train, _ = vbm_problem(jax.random.PRNGKey(0), N, 500, 10)
    learner = ugm.MLE(ugm.models.vbm, ugm.PCD(100), optax.sgd(0.01))
    state = learner.init(jax.random.PRNGKey(1), train, N)

    def run(steps, data=train, bar=False, **kw):
        return lambda: learner.run(None, steps, data, N, init_state=state, progress_bar=bar,
                                   **kw).params

    fresh = ugm.MLE(ugm.models.vbm, ugm.PCD(100), optax.sgd(0.01))
    first = timed(lambda: fresh.init(jax.random.PRNGKey(1), train, N))
    second = timed(lambda: fresh.init(jax.random.PRNGKey(2), shuffled(train), N))
    report("MLE.init, another key and new data of the same shape: 2nd / 1st call",
           f"{second / first:.3f}", f"{first:.2f} s then {second:.3f} s")

    first, second = timed(run(200)), timed(run(150))
    report("MLE.run, another step count: 2nd / 1st call", f"{second / first:.3f}",
           f"{first:.2f} s then {second:.3f} s")
    third = timed(run(200, data=shuffled(train)))
    report("MLE.run, new data of the same shape: 3rd / 1st call", f"{third / first:.3f}",
           f"{first:.2f} s then {third:.3f} s")

    m, params = learner.ugm, learner.get_params(state)
    ising = ugm.UGM(periodic_ising, 64)
    ising.target().blocks  # structure analysis is setup, not the call
    first = timed(lambda: ugm.sample(ising, {}, jax.random.PRNGKey(0), 100, num_chains=4))
    second = timed(lambda: ugm.sample(ising, {}, jax.random.PRNGKey(1), 100, num_chains=4,
                                      num_warmup=20))
    report("ugm.sample, 64x64 Ising, another key and warm-up: 2nd / 1st call",
           f"{second / first:.3f}", f"{first:.2f} s then {second:.3f} s")

    half = jax.tree.map(lambda v: 0.5 * v, params)
    first = timed(lambda: ugm.pseudo_log_likelihood(m, params, train))
    second = timed(lambda: ugm.pseudo_log_likelihood(m, half, train))
    report("pseudo_log_likelihood: 2nd / 1st call", f"{second / first:.3f}",
           f"{first:.2f} s then {second:.3f} s (structure already analysed)")

    for name, fit in (("fit_exact", ugm.fit_exact),
                      ("fit_pseudo_likelihood", fit_pseudo_likelihood)):
        first = timed(lambda: fit(m, train, num_steps=20).params)
        second = timed(lambda: fit(m, shuffled(train), num_steps=18).params)
        report(f"{name}, new data of the same shape and another step count: 2nd / 1st call",
               f"{second / first:.3f}", f"{first:.2f} s then {second:.3f} s")

    compile_s = {}
    for num in (10_000, 1_000_000):
        data = random_spins(num)
        big = ugm.MLE(ugm.models.vbm, ugm.PCD(100), optax.sgd(0.01))
        start = big.init(jax.random.PRNGKey(1), data, N)
        call = lambda: big.run(None, 10, data, N, init_state=start,  # noqa: E731
                               progress_bar=False).params
        compile_s[num] = timed(call) - timed(call)
    report("full-batch compile, 10^6 / 10^4 examples",
           f"{compile_s[1_000_000] / compile_s[10_000]:.2f}",
           f"{compile_s[10_000]:.2f} s and {compile_s[1_000_000]:.2f} s")

    data = random_spins(50_000)
    mini = ugm.MLE(ugm.models.vbm, ugm.PCD(100), optax.sgd(0.01))
    start = mini.init(jax.random.PRNGKey(1), data, N, batch_size=100)
    seconds, params_by_bar = {}, {}
    for bar in (False, True):
        call = lambda: mini.run(None, 2000, data, N, batch_size=100,  # noqa: E731
                                init_state=start, progress_bar=bar).params
        timed(call)  # compile
        seconds[bar] = timed(call)
        params_by_bar[bar] = call()
    same = all(np.array_equal(params_by_bar[True][k], params_by_bar[False][k])
               for k in params_by_bar[True])
    report("minibatch learning, progress bar on / off", f"{seconds[True] / seconds[False]:.2f}",
           f"{seconds[False]:.2f} s off, {seconds[True]:.2f} s on; identical parameters: "
           f"{same}")


if __name__ == "__main__":
    main()
