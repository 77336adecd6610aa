"""ERGMs at the sizes their users work at: the package's samplers and learner against a
hand-written plain-JAX sampler that updates node-disjoint dyads from change statistics.

Rows (each printed as a RESULT line, with its settings):

a. Florentine marriages (16 nodes, networkx + the isolated Pucci family), edges +
   triangles, PCD-1 with 200 chains, 2000 SGD steps: package learner / hand-written
   learner (same blocks, optimizer and steps), time, interleaved.
b. ERGM sampling on a 100-node graph (edges + twostars + triangles), 20 chains: dyad
   updates per second, package Gibbs kernel / hand-written sweep.
e. The same through the user path: ``ugm.sample(ugm.UGM(ergm, 100, stats), params, key,
   20, num_chains=20)`` end to end (the compile excluded by a warm call), against a
   hand-written matching-block sampler that keeps each chain's adjacency matrix (rows
   read as slices, the block's ties written back by a scatter), and against the sweep
   of row b (adjacency gathered from the dyads per block): dyad updates per second.
   Again with 16 chains (``ugm.sample`` runs 20 chains as 32: it compiles for chain
   counts rounded up to powers of two).
c. A 205-node network of faux.mesa.high's size and density (203 edges, synthetic):
   time per sweep of the package sampler (edges + gwdegree; edges + gwesp), and per
   PCD fit (edges + gwdegree).
d. A 1,000-node sparse synthetic network (1,000 edges), edges + gwesp: time per 10^5
   dyad updates of the package sampler, from one random-scan sweep of one chain
   (499,500 single-dyad updates, about a minute here).

Run: ``python benchmarks/bench_ergm.py`` (a few minutes on 2 CPU cores); ``--quick``
shortens row a and skips c and d.
"""

import argparse
import time

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import optax

import numpyro_ugm as ugm
from numpyro_ugm.kernels.base import step_chains
from numpyro_ugm.models import ergm
from numpyro_ugm.network import ergm_statistics, graph_to_edges, mple, num_pairs

try:
    from _report import report, timeit_many
except ImportError:  # run from the repository root
    from benchmarks._report import report, timeit_many


# --- the hand-written plain-JAX ERGM (edges + twostars + triangles) ----------------------


def matchings(n):
    """(colors, n // 2) table of node-disjoint pairs (round robin), as edge indices."""
    m = n + n % 2
    i, j = np.triu_indices(n, 1)
    color = np.where(j == m - 1, 2 * i, i + j) % (m - 1)
    return np.stack([np.flatnonzero(color == c) for c in range(color.max() + 1)])


def plain_sweep(n, table):
    """``sweep(key, y, theta)``: one Gibbs sweep of every chain of ``y`` (chains, E) over
    the matchings of ``table``, the conditionals of edges + twostars + triangles (θ of
    length 2 or 3) from the adjacency rows of each matching's nodes. All chains at once
    (no vmap), one draw of uniforms per sweep, the adjacency by one gather per matching,
    new values merged by one gather."""
    i, j = np.triu_indices(n, 1)
    num = len(i)
    pair = np.full((n, n), num, np.int32)
    pair[i, j] = pair[j, i] = np.arange(num)
    merge = np.tile(np.arange(num, dtype=np.int32), (len(table), 1))
    for c, idx in enumerate(table):
        merge[c, idx] = num + np.arange(len(idx))
    nodes_i, nodes_j = jnp.asarray(i[table]), jnp.asarray(j[table])
    table, merge, pair = jnp.asarray(table), jnp.asarray(merge), jnp.asarray(pair)

    def sweep(key, y, theta):
        u = jax.random.uniform(key, (table.shape[0], y.shape[0], table.shape[1]), y.dtype)

        def one(y, xs):
            u, idx, ni, nj, mg = xs
            adjacency = jnp.concatenate([y, jnp.zeros((y.shape[0], 1), y.dtype)], 1)[:, pair]
            a, b, v = adjacency[:, ni], adjacency[:, nj], y[:, idx]
            shared = jnp.sum(a * b, -1)
            if theta.shape[0] == 2:  # edges + triangles
                logit = theta[0] + theta[1] * shared
            else:  # edges + twostars + triangles
                stars = jnp.sum(a, -1) + jnp.sum(b, -1) - 2 * v
                logit = theta[0] + theta[1] * stars + theta[2] * shared
            on = (u < jax.nn.sigmoid(logit)).astype(y.dtype)
            return jnp.concatenate([y, on], 1)[:, mg], None

        return jax.lax.scan(one, y, (u, table, nodes_i, nodes_j, merge))[0]

    return sweep


def adjacency_sweep(n, table):
    """``sweep(key, A, theta)``: as :func:`plain_sweep`, on adjacency matrices A
    (chains, n, n): each matching reads its nodes' rows and writes its ties back (both
    triangles of A) by a scatter."""
    i, j = np.triu_indices(n, 1)
    nodes_i, nodes_j = jnp.asarray(i[table]), jnp.asarray(j[table])

    def sweep(key, A, theta):
        u = jax.random.uniform(key, (table.shape[0], A.shape[0], table.shape[1]), A.dtype)

        def one(A, xs):
            u, ni, nj = xs
            a, b, v = A[:, ni], A[:, nj], A[:, ni, nj]
            logit = theta[0] + theta[-1] * jnp.sum(a * b, -1)  # edges, triangles
            if theta.shape[0] == 3:  # twostars
                logit = logit + theta[1] * (jnp.sum(a, -1) + jnp.sum(b, -1) - 2 * v)
            on = (u < jax.nn.sigmoid(logit)).astype(A.dtype)
            return A.at[:, ni, nj].set(on).at[:, nj, ni].set(on), None

        return jax.lax.scan(one, A, (u, nodes_i, nodes_j))[0]

    return sweep


def plain_statistics(y, n):
    """edges, triangles of edge data (..., E)."""
    i, j = np.triu_indices(n, 1)
    A = jnp.zeros(y.shape[:-1] + (n, n), y.dtype).at[..., i, j].set(y).at[..., j, i].set(y)
    return jnp.stack([jnp.sum(y, -1), jnp.einsum("...ab,...bc,...ca->...", A, A, A) / 6], -1)


def plain_learner(n, num_chains, num_steps, optimizer):
    """PCD-1 on edges + triangles: ``run(key, data_stats, theta0) -> theta``."""
    sweep = plain_sweep(n, matchings(n))

    @jax.jit
    def run(key, observed, theta):
        def step(carry, key):
            theta, opt_state, y = carry
            y = sweep(key, y, theta)
            grad = -(observed - jnp.mean(plain_statistics(y, n), 0))  # minimize -loglik
            updates, opt_state = optimizer.update(grad, opt_state, theta)
            return (optax.apply_updates(theta, updates), opt_state, y), None

        init_key, run_key = jax.random.split(key)
        y = jax.random.bernoulli(init_key, 0.5, (num_chains, num_pairs(n))).astype(theta.dtype)
        carry = (theta, optimizer.init(theta), y)
        return jax.lax.scan(step, carry, jax.random.split(run_key, num_steps))[0][0]

    return run


# --- rows ----------------------------------------------------------------------------


def florentine():
    graph = nx.florentine_families_graph()
    graph.add_node("Pucci")
    return {"y": graph_to_edges(graph, nodelist=sorted(graph.nodes))[None]}


def row_a(num_steps, num_chains=200, repeats=3):
    n, stats, lr = 16, ("edges", "triangles"), 0.05
    data = florentine()
    init = mple(data, stats).params
    optimizer = optax.sgd(lr)
    learner = ugm.MLE(ergm, ugm.PCD(num_chains, num_mcmc_steps=1), optimizer)
    plain = plain_learner(n, num_chains, num_steps, optimizer)
    observed = ergm_statistics(data["y"][0], stats)
    key = jax.random.PRNGKey(0)
    out = {}

    def ours():
        r = learner.run(key, num_steps, data, n, stats, init_params=init, progress_bar=False)
        out["ours"] = np.asarray(jax.block_until_ready(r.params["theta"]))

    def hand():
        out["plain"] = np.asarray(jax.block_until_ready(plain(key, observed, init["theta"])))

    times = timeit_many({"ours": ours, "plain": hand}, repeats)
    print(f"a. Florentine edges+triangles, PCD-1, {num_chains} chains, {num_steps} steps, "
          f"sgd({lr}) from the MPLE: ours {times['ours']:.2f} s, plain JAX "
          f"{times['plain']:.2f} s; theta ours {out['ours']}, plain {out['plain']}")
    report(f"ERGM Florentine edges+triangle PCD-1 ({num_chains} chains, {num_steps} steps): "
           "package / hand-written learner, time", f"{times['ours'] / times['plain']:.2f}",
           "target <= 2 (issue 48; was 3.17)")


def row_b(n=100, num_chains=20, num_sweeps=20, repeats=5):
    stats = ("edges", "twostars", "triangles")
    theta = jnp.asarray([-3.5, 0.02, 0.3])
    m = ugm.UGM(ergm, n, stats)
    kernel = ugm.kernels.gibbs().build(m.target())
    f = m.target().logdensity_fn({"theta": theta})
    y0 = jax.random.bernoulli(jax.random.PRNGKey(1), 0.05,
                              (num_chains, num_pairs(n))).astype(jnp.float32)

    @jax.jit
    def ours(key, y):
        states = jax.vmap(lambda x: kernel.init({"y": x}, f))(y)

        def body(k, states):  # the chains step together, as in ugm.sample and PCD
            return step_chains(kernel, jax.random.fold_in(key, k), states, f)[0]

        return jax.lax.fori_loop(0, num_sweeps, body, states).position["y"]

    sweep = plain_sweep(n, matchings(n))

    @jax.jit
    def plain(key, y):
        return jax.lax.fori_loop(
            0, num_sweeps, lambda k, y: sweep(jax.random.fold_in(key, k), y, theta), y)

    key = jax.random.PRNGKey(2)
    times = timeit_many({"ours": lambda: ours(key, y0).block_until_ready(),
                         "plain": lambda: plain(key, y0).block_until_ready()}, repeats)
    updates = num_chains * num_sweeps * num_pairs(n)
    rates = {k: updates / t for k, t in times.items()}
    dens = {k: float(np.mean(np.asarray(fn(key, y0)))) for k, fn in
            (("ours", ours), ("plain", plain))}
    print(f"b. {n} nodes {stats} theta {np.asarray(theta)}, {num_chains} chains x "
          f"{num_sweeps} sweeps: dyad updates/s ours {rates['ours']:.3g}, plain "
          f"{rates['plain']:.3g}; density after: ours {dens['ours']:.4f}, plain "
          f"{dens['plain']:.4f}")
    report(f"ERGM {n}-node sampling ({', '.join(stats)}): dyad updates per second, "
           "package / hand-written", f"{rates['ours'] / rates['plain']:.2f}",
           "target >= 0.3 (was 0.01)")


def row_e(n=100, num_chains=20, num_samples=20, repeats=5):
    stats = ("edges", "twostars", "triangles")
    theta = jnp.asarray([-3.5, 0.02, 0.3])
    m = ugm.UGM(ergm, n, stats)
    table = matchings(n)
    sweep, adj_sweep = plain_sweep(n, table), adjacency_sweep(n, table)
    i, j = np.triu_indices(n, 1)
    y0 = jax.random.bernoulli(jax.random.PRNGKey(1), 0.5,
                              (num_chains, num_pairs(n))).astype(jnp.float32)

    @jax.jit
    def adjacency(key, y):
        A = jnp.zeros((y.shape[0], n, n), y.dtype).at[:, i, j].set(y).at[:, j, i].set(y)
        A = jax.lax.fori_loop(0, num_samples, lambda k, A: adj_sweep(
            jax.random.fold_in(key, k), A, theta), A)
        return A[:, i, j]

    @jax.jit
    def plain(key, y):
        return jax.lax.fori_loop(0, num_samples, lambda k, y: sweep(
            jax.random.fold_in(key, k), y, theta), y)

    key = jax.random.PRNGKey(2)
    fns = {"ours": lambda: jax.block_until_ready(
               ugm.sample(m, {"theta": theta}, key, num_samples, num_chains=num_chains)),
           "adjacency": lambda: adjacency(key, y0).block_until_ready(),
           "plain": lambda: plain(key, y0).block_until_ready()}
    times = timeit_many(fns, repeats)
    updates = num_chains * num_samples * num_pairs(n)
    rates = {k: updates / t for k, t in times.items()}
    print(f"e. {n} nodes {stats}, ugm.sample {num_chains} chains x {num_samples} draws "
          f"(thinning 1, no warm-up): dyad updates/s ours {rates['ours']:.3g}, adjacency "
          f"sampler {rates['adjacency']:.3g}, row b's sweep {rates['plain']:.3g}")
    report(f"ERGM {n}-node sampling through ugm.sample ({num_chains} chains x {num_samples} "
           "draws): dyad updates per second, package / matching-block sampler on adjacency "
           "matrices", f"{rates['ours'] / rates['adjacency']:.3f}",
           f"vs row b's sweep {rates['ours'] / rates['plain']:.3f}; target >= 0.5")


def synthetic_graph(n, num_edges, seed):
    """A random graph with ``num_edges`` edges and some triangle closure: every other
    edge closes a random two-path (a - c - b) when there is one, the rest are uniform."""
    rng = np.random.default_rng(seed)
    A = np.zeros((n, n), np.int8)
    count = 0
    while count < num_edges:
        a, b = rng.choice(n, 2, replace=False)
        if count % 2:
            c = rng.integers(n)
            neighbours = np.flatnonzero(A[c])
            if len(neighbours) >= 2:
                a, b = rng.choice(neighbours, 2, replace=False)
        if not A[a, b]:
            A[a, b] = A[b, a] = 1
            count += 1
    return graph_to_edges(A)


def sweep_time(m, theta, y, repeats=3, num_sweeps=1):
    """Median seconds of ``num_sweeps`` systematic Gibbs sweeps of one chain."""
    kernel = ugm.kernels.gibbs().build(m.target())
    f = m.target().logdensity_fn({"theta": jnp.asarray(theta)})

    @jax.jit
    def run(key, x):
        state = kernel.init({"y": x}, f)
        return jax.lax.fori_loop(0, num_sweeps, lambda k, s: kernel.step(
            jax.random.fold_in(key, k), s, f)[0], state).position["y"]

    key = jax.random.PRNGKey(3)
    t = time.perf_counter()
    run(key, y).block_until_ready()
    first = time.perf_counter() - t
    seconds = timeit_many({"run": lambda: run(key, y).block_until_ready()}, repeats,
                          warmup=0)["run"]
    return seconds / num_sweeps, first


def row_c(num_steps=100, num_chains=10):
    n, num_edges = 205, 203
    y = jnp.asarray(synthetic_graph(n, num_edges, 0), jnp.float32)
    stats = ("edges", ("gwdegree", 0.25))
    m = ugm.UGM(ergm, n, stats)
    per_sweep, first = sweep_time(m, [-4.0, 0.5], y)
    print(f"c. {n} nodes, {num_edges} edges, {stats}: {per_sweep * 1e3:.1f} ms per sweep "
          f"({num_pairs(n)} dyads, {len(m.target().blocks)} blocks); first call {first:.1f} s")
    report(f"ERGM {n}-node (faux.mesa.high size) edges+gwdegree: time per sweep, one chain",
           f"{per_sweep * 1e3:.1f} ms", f"{num_pairs(n)} dyad updates, CPU")
    stats_esp = ("edges", ("gwesp", 0.25))
    m_esp = ugm.UGM(ergm, n, stats_esp)
    per_sweep, first = sweep_time(m_esp, [-4.0, 0.5], y, repeats=1)
    print(f"c. {n} nodes, {stats_esp}: {per_sweep:.2f} s per sweep (one dyad per block); "
          f"first call {first:.1f} s")
    report(f"ERGM {n}-node edges+gwesp: time per sweep, one chain", f"{per_sweep:.2f} s",
           f"{num_pairs(n)} single-dyad blocks, CPU")
    data = {"y": np.asarray(y, np.int8)[None]}
    init = mple(data, stats).params
    # chains start uniform (density 1/2): a small rate keeps the first steps sane
    learner = ugm.MLE(ergm, ugm.PCD(num_chains, num_mcmc_steps=1), optax.sgd(1e-4))
    t = time.perf_counter()
    result = learner.run(jax.random.PRNGKey(4), num_steps, data, n, stats,
                         init_params=init, progress_bar=False)
    jax.block_until_ready(result.params)
    fit = time.perf_counter() - t
    print(f"c. PCD-1 fit of {stats}, {num_chains} chains, {num_steps} steps from the MPLE "
          f"{np.asarray(init['theta'])}: {fit:.1f} s with compilation -> "
          f"{np.asarray(result.params['theta'])}")
    report(f"ERGM {n}-node edges+gwdegree PCD-1 fit ({num_chains} chains, {num_steps} "
           "steps): time", f"{fit:.1f} s", "with compilation, CPU")


def row_d(num_updates=100_000):
    n, num_edges = 1000, 1000
    y = jnp.asarray(synthetic_graph(n, num_edges, 1), jnp.float32)
    stats = ("edges", ("gwesp", 0.25))
    t = time.perf_counter()
    m = ugm.UGM(ergm, n, stats)
    blocks = len(m.target().blocks)
    setup = time.perf_counter() - t
    kernel = ugm.kernels.gibbs(scan="random").build(m.target())
    f = m.target().logdensity_fn({"theta": jnp.asarray([-6.0, 0.5])})
    num_blocks = len(m.target().blocks)

    @jax.jit
    def run(key, x):
        # random scan: one step updates num_blocks random dyads; time a fraction of it
        return kernel.step(key, kernel.init({"y": x}, f), f)[0].position["y"]

    print(f"d. {n} nodes, {num_edges} edges, {stats}: setup {setup:.1f} s, {blocks} blocks")
    key = jax.random.PRNGKey(5)
    t = time.perf_counter()
    compiled = run.lower(key, y).compile()  # compile without running a sweep
    first = time.perf_counter() - t
    after = {}
    seconds = timeit_many({"run": lambda: after.setdefault(
        "y", compiled(key, y).block_until_ready())}, 1, warmup=0)["run"]
    per = seconds / num_blocks * num_updates
    print(f"d. one random-scan sweep ({num_blocks} dyad updates): {seconds:.1f} s "
          f"(compile {first:.1f} s) -> {per:.2f} s per {num_updates} dyad updates; "
          f"edges before {int(y.sum())}, after {int(np.asarray(after['y']).sum())}")
    report(f"ERGM {n}-node sparse edges+gwesp: time per 10^5 dyad updates, one chain",
           f"{per:.2f} s", f"a sweep ({num_blocks} dyads) {seconds:.1f} s, CPU")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rows", default="abecd")
    args = parser.parse_args()
    print(f"jax {jax.__version__}, devices {jax.devices()}")
    if "a" in args.rows:
        row_a(500 if args.quick else 2000)
    if "b" in args.rows:
        row_b()
    if "e" in args.rows:
        row_e()  # 20 chains run as 32 (ugm.sample pads chains to a power of two)
        row_e(num_chains=16)
    if not args.quick and "c" in args.rows:
        row_c()
    if not args.quick and "d" in args.rows:
        row_d()


if __name__ == "__main__":
    main()
