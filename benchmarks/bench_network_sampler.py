"""The sparse-network TNT sampler (numpyro_ugm.network.sampling.tnt) on real-size
sparse networks: dyad proposals per second, against a pure-Python neighbour-set sampler
with the same proposal and against ergmx (a Rust-core port of R's ergm).

What is counted: one *proposal* is one TNT Metropolis–Hastings step of one chain (draw a
dyad, compute its change statistics, accept or reject, update the state). For our
sampler, proposals per second = chains × proposals per chain / seconds of
``network_mh_step`` (compiled before timing; the compile time is printed apart). For
ergmx, ``simulate(..., nsim=1, burnin=B, triadic_weight=0)`` makes B MCMC proposals
(its default ``triadic_weight=0.5`` would propose triangle-closing toggles half the time;
0 makes it plain TNT like ours); the rate is the difference of two burn-ins divided by
the difference of their times, so that its setup cost (network conversion, model
initialisation) cancels.

Rows (each printed as a RESULT line, with its settings):

a. faux.magnolia.high (1,461 nodes, 974 edges, N = 1,066,530 dyads), edges + gwesp(0.25)
   and edges + triangles: proposals per second of ours with 1, 8, 32 and 128 chains in
   one call, of the most chains split over the CPU's cores (as ``fit_ergm`` runs them),
   of the compiled sampler (numba, ``network.sampling.compiled``; on one thread and on every core),
   of the pure-Python sampler and of ergmx; ratios measured in this run. And the time of
   one "sweep" equivalent (N proposals) at each rate (the package's dense Gibbs sweep
   is O(n³) here: not run).
b. A 10^4-node sparse random network with 10^4 edges (N ≈ 5·10^7 dyads), edges +
   gwesp(0.25): the same rates.

Run: ``python benchmarks/bench_network_sampler.py`` (a few minutes on 2 CPU cores);
``--quick`` uses fewer proposals and only 1 and 32 chains.
"""

import argparse
import os
import math
import random
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from numpyro_ugm.datasets import networks
from numpyro_ugm.network.sampling import chains as nc
from numpyro_ugm.network.sampling import compiled as nn
from numpyro_ugm.network.terms import compiled as nt
from numpyro_ugm.network.sampling import tnt as ns
from numpyro_ugm.network.terms.structural import resolve_terms
from numpyro_ugm.network.sampling.simulation import _each_group, chain_groups

try:
    from _report import report, timeit_many
except ImportError:  # run from the repository root
    from benchmarks._report import report, timeit_many

DATA = Path(networks.__file__).parent / "statnet"  # statnet's networks, shipped in the package
DECAY = 0.25


# --- the models: change functions from the sampler's view ------------------------------


def edges_gwesp(view):
    r = -jnp.expm1(-DECAY)
    return jnp.stack([jnp.ones_like(view.value),
                      jnp.exp(DECAY) * (1 - r ** view.shared) + view.partner_terms(r)])


def edges_triangles(view):
    return jnp.stack([jnp.ones_like(view.value), view.shared])


def statistics_of(edges, n, model):
    """s(y) of an edge list: edges and gwesp(DECAY) or triangles (sparse products)."""
    import scipy.sparse as sp
    A = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    A = (A + A.T).tocsr()
    shared = (A @ A).multiply(A).tocoo().data  # shared partners of each edge, twice
    if model == "gwesp":
        r = -math.expm1(-DECAY)
        return np.array([len(edges), math.exp(DECAY) * np.sum(1 - r ** shared) / 2])
    return np.array([len(edges), shared.sum() / 6])


# --- the pure-Python reference: dict of sets, the same TNT proposal ----------------


def python_tnt(edges, n, theta, model, num_proposals, seed=0):
    """TNT Metropolis–Hastings on neighbour sets; returns the final edge count."""
    rnd = random.Random(seed)
    nbr = [set() for _ in range(n)]
    tie_list, where = [], {}
    for a, b in edges.tolist():
        nbr[a].add(b), nbr[b].add(a)
        where[(min(a, b), max(a, b))] = len(tie_list)
        tie_list.append((min(a, b), max(a, b)))
    num_dyads = n * (n - 1) / 2
    r = -math.expm1(-DECAY)
    t0, t1 = theta
    for _ in range(num_proposals):
        m = len(tie_list)
        if m and rnd.random() < 0.5:
            i, j = tie_list[int(rnd.random() * m)]
        else:
            i = rnd.randrange(n)
            j = rnd.randrange(n - 1)
            j += j >= i
        on = j in nbr[i]
        common = nbr[i] & nbr[j]
        if model == "gwesp":
            ni, nj = nbr[i], nbr[j]
            partner = sum(r ** (len(ni & nbr[k]) - on) + r ** (len(nj & nbr[k]) - on)
                          for k in common)
            change = t0 + t1 * (math.exp(DECAY) * (1 - r ** len(common)) + partner)
        else:
            change = t0 + t1 * len(common)
        m_after = m - 1 if on else m + 1
        q_forward = (0.5 * on / m + 0.5 / num_dyads) if m else 1 / num_dyads
        q_reverse = (0.5 * (not on) / m_after + 0.5 / num_dyads) if m_after else 1 / num_dyads
        log_ratio = (-change if on else change) + math.log(q_reverse / q_forward)
        if log_ratio >= 0 or rnd.random() < math.exp(log_ratio):
            key = (min(i, j), max(i, j))
            if on:
                nbr[i].discard(j), nbr[j].discard(i)
                p = where.pop(key)
                last = tie_list.pop()
                if last != key:
                    tie_list[p], where[last] = last, p
            else:
                nbr[i].add(j), nbr[j].add(i)
                where[key] = len(tie_list)
                tie_list.append(key)
    return len(tie_list)


# --- ergmx ---------------------------------------------------------------------------


def ergmx_rate(edges, n, theta, model, burnins):
    """Proposals per second of ergmx.simulate (slope between two burn-ins), or None."""
    try:
        import ergmx
        import networkx as nx
    except ImportError:
        return None
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(edges.tolist())
    formula = (f"edges + gwesp({DECAY}, fixed=TRUE)" if model == "gwesp"
               else "edges + triangle")

    def run(burnin):
        return lambda: ergmx.simulate(graph, formula, list(theta), nsim=1, burnin=burnin,
                                      interval=1, output="stats", seed=1,
                                      triadic_weight=0.0)

    times = timeit_many({b: run(b) for b in burnins}, 3)
    return (burnins[1] - burnins[0]) / (times[burnins[1]] - times[burnins[0]])


# --- ours ----------------------------------------------------------------------------


def our_rate(edges, n, theta, model, num_chains, num_proposals, threads=1):
    """(proposals per second, compile seconds, mean acceptance, mean final edges); the
    chains in ``threads`` groups run side by side on threads as fit_ergm runs them."""
    change = edges_gwesp if model == "gwesp" else edges_triangles
    groups = chain_groups(num_chains, threads)
    states = [nc.init_network_chains(edges, n, size, directed=False,
                                     statistics0=statistics_of(edges, n, model))
              for _, size in groups]
    theta = jnp.asarray(theta, jnp.float32)
    key = jax.random.PRNGKey(0)

    def step(group):
        (offset, _), state = group
        return jax.block_until_ready(ns.network_mh_step(key, state, theta, change,
                                                        num_proposals, first_chain=offset))

    t = time.perf_counter()
    _each_group(step, list(zip(groups, states)))
    first = time.perf_counter() - t
    result = {}

    def run():
        result["out"] = _each_group(step, list(zip(groups, states)))

    seconds = timeit_many({"run": run}, 3, warmup=0)["run"]
    finals = result["out"]
    acceptance = np.concatenate([info["acceptance_rate"] for _, info in finals])
    final_edges = np.concatenate([final.num_edges for final, _ in finals])
    return (num_chains * num_proposals / seconds, first - seconds,
            float(np.mean(acceptance)), float(np.mean(final_edges)))


def native_rate(edges, n, theta, model, num_chains, num_proposals, threads=1):
    """(proposals per second, compile seconds) of the compiled sampler
    (numpyro_ugm.network.sampling.compiled), the chains in ``threads`` groups on threads."""
    formula = f"edges + gwesp({DECAY}, fixed=TRUE)" if model == "gwesp" else "edges + triangle"
    program = nt.native_program(resolve_terms(formula, n), n)
    groups = chain_groups(num_chains, threads)
    states = [nt.native_chains(nc.init_network_chains(
        edges, n, size, directed=False, statistics0=statistics_of(edges, n, model)))
        for _, size in groups]

    def step(group):
        (offset, _), state = group
        return nn.native_run(state, program, theta, (0, 1), offset, num_proposals, 0, 1,
                             0.0)

    t = time.perf_counter()
    nn.native_run(states[0], program, theta, (0, 1), 0, 10, 0, 1, 0.0)
    first = time.perf_counter() - t
    seconds = timeit_many({"run": lambda: _each_group(step, list(zip(groups, states)))}, 3,
                          warmup=0)["run"]
    return num_chains * num_proposals / seconds, first


def random_network(n, num_edges, seed):
    rng = np.random.default_rng(seed)
    chosen = set()
    while len(chosen) < num_edges:
        a, b = rng.integers(0, n, 2)
        if a != b:
            chosen.add((min(a, b), max(a, b)))
    return np.array(sorted(chosen), np.int64)


def compare(label, edges, n, theta, model, chain_counts, num_proposals, python_proposals,
            burnins):
    num_dyads = n * (n - 1) // 2
    rates = {}
    for chains in chain_counts:
        rate, compile_s, acceptance, final_edges = our_rate(edges, n, theta, model, chains,
                                                            num_proposals)
        rates[chains] = rate
        per_chain = rate / chains
        print(f"{label} {model}: ours, {chains} chains x {num_proposals} proposals: "
              f"{rate:.3g} proposals/s ({per_chain:.3g} per chain), compile "
              f"{compile_s:.1f} s, acceptance {acceptance:.3f}, edges after "
              f"{final_edges:.0f}; a sweep-equivalent (N = {num_dyads} proposals): "
              f"{num_dyads / rate:.1f} s at this total rate, {num_dyads / per_chain:.1f} s "
              f"for every chain to make one", flush=True)
        report(f"TNT sampler {label} edges+{model}: proposals per second, ours, "
               f"{chains} chains", f"{rate:.3g}",
               f"{num_proposals} proposals per chain, {jax.default_backend()}")
    cores = os.cpu_count() or 1
    if cores > 1:  # the largest chain count on every core, as fit_ergm runs it
        chains = max(chain_counts)
        rate = our_rate(edges, n, theta, model, chains, num_proposals, threads=cores)[0]
        print(f"{label} {model}: ours, {chains} chains in {cores} groups on {cores} "
              f"threads: {rate:.3g} proposals/s ({rate / rates[chains]:.2f}x one call)",
              flush=True)
        report(f"TNT sampler {label} edges+{model}: proposals per second, ours, "
               f"{chains} chains on {cores} threads", f"{rate:.3g}",
               f"{num_proposals} proposals per chain, {jax.default_backend()}")
        rates[chains] = max(rates[chains], rate)
    chains = max(chain_counts)
    for threads in sorted({1, cores}):
        rate, first = native_rate(edges, n, theta, model, chains, 10 * num_proposals,
                                  threads)
        print(f"{label} {model}: compiled (numba), {chains} chains on {threads} "
              f"thread(s): {rate:.3g} proposals/s ({rate / rates[chains]:.2f}x the JAX "
              f"sampler's best), first call {first:.1f} s", flush=True)
        report(f"TNT sampler {label} edges+{model}: proposals per second, compiled, "
               f"{chains} chains on {threads} thread(s)", f"{rate:.3g}",
               f"{10 * num_proposals} proposals per chain")
        rates[f"compiled, {threads} thread(s)"] = rate
    if not python_proposals:  # our rates only (e.g. on an accelerator)
        return
    t = time.perf_counter()
    final = python_tnt(edges, n, theta, model, python_proposals)
    python = python_proposals / (time.perf_counter() - t)
    print(f"{label} {model}: pure Python (sets), {python_proposals} proposals: "
          f"{python:.3g} proposals/s, edges after {final}; a sweep-equivalent "
          f"{num_dyads / python:.1f} s", flush=True)
    theirs = ergmx_rate(edges, n, theta, model, burnins)
    if theirs is not None:
        print(f"{label} {model}: ergmx.simulate (TNT, triadic_weight=0), burn-ins "
              f"{burnins}: {theirs:.3g} proposals/s; a sweep-equivalent "
              f"{num_dyads / theirs:.1f} s", flush=True)
    best = max(rates, key=rates.get)
    best_label = f"JAX, {best} chains" if isinstance(best, int) else best
    report(f"TNT sampler {label} edges+{model}: proposals per second, pure Python",
           f"{python:.3g}", f"{python_proposals} proposals, one chain")
    report(f"TNT sampler {label} edges+{model}: ours ({best_label}) / pure Python",
           f"{rates[best] / python:.2f}", "proposals per second, same run")
    report(f"TNT sampler {label} edges+{model}: ours (JAX, 1 chain) / pure Python",
           f"{rates[min(chain_counts)] / python:.2f}", "proposals per second, same run")
    if theirs is not None:
        report(f"TNT sampler {label} edges+{model}: proposals per second, ergmx",
               f"{theirs:.3g}", f"slope between burn-ins {burnins}, one chain")
        report(f"TNT sampler {label} edges+{model}: ours ({best_label}) / ergmx",
               f"{rates[best] / theirs:.2f}", "proposals per second, same run")
        report(f"TNT sampler {label} edges+{model}: ours (compiled, 1 thread) / ergmx",
               f"{rates['compiled, 1 thread(s)'] / theirs:.2f}",
               "proposals per second, same run, one core each")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rows", default="ab")
    parser.add_argument("--chains", help="chain counts, comma separated")
    parser.add_argument("--proposals", type=int, help="proposals per chain")
    parser.add_argument("--ours-only", action="store_true",
                        help="skip the pure-Python and ergmx baselines")
    args = parser.parse_args()
    print(f"jax {jax.__version__}, devices {jax.devices()}")
    chains = (1, 32) if args.quick else (1, 8, 32, 128)
    chains = tuple(int(c) for c in args.chains.split(",")) if args.chains else chains
    proposals = args.proposals or (2_000 if args.quick else 20_000)
    python_proposals = 0 if args.ours_only else (20_000 if args.quick else 100_000)
    burnins = (20_000, 220_000) if args.quick else (50_000, 1_050_000)
    if "a" in args.rows:
        data = np.load(DATA / "faux_magnolia_high.npz", allow_pickle=False)
        edges, n = data["edges"].astype(np.int64), int(data["num_nodes"])
        for model, theta in (("gwesp", (-7.5, 1.5)), ("triangles", (-7.5, 1.0))):
            compare("faux.magnolia.high", edges, n, theta, model, chains, proposals,
                    python_proposals, burnins)
    if "b" in args.rows:
        n = 10_000
        edges = random_network(n, 10_000, 0)
        compare("10^4-node random (10^4 edges)", edges, n, (-8.6, 1.5), "gwesp",
                chains if args.chains else tuple(c for c in chains if c <= 32),
                proposals, python_proposals, burnins)


if __name__ == "__main__":
    main()
