"""ERGM on a 10^4-node sparse network (issue 32, item 7): time per sweep of the sparse
sampler and the wall time of a whole ``fit_ergm`` with covariates and gwesp, how close
the estimate is to the θ that made the network, and ergmx on the same network.

The network: n nodes (default 10^4, N = n(n − 1)/2 ≈ 5·10^7 dyads) with a categorical
attribute ``group`` (``--groups`` equally likely levels, 20) and a numeric ``x``
(standard normal, two decimals), drawn with numpy; its ties are simulated from the model
itself, ``edges + nodematch('group') + nodecov('x') + gwesp(0.25, fixed=TRUE)`` at
``--theta`` (default: about 1.4 within-group and 0.8 between-group ties per node before
gwesp), by the package's sparse TNT sampler (one chain, ``--sim-proposals`` proposals,
3·10^7: the gwesp statistic still grows after 10^7)
from a random graph with the dyad-independent part's expected numbers of within- and
between-group ties; the statistics along the way are printed, to see
that they settled. The network is kept in ``--out`` (``--fresh`` draws it again; a kept network of
fewer proposals is continued).

Then:

* the sampler's rate (proposals per second, all chains together) at the true θ with
  ``--num-chains`` chains, and the time of one sweep-equivalent (N proposals) at it;
* ``fit_ergm(graph, formula, control=ErgmControl(SamplingControl(num_chains=,
  samplesize=)), log_likelihood=False)`` (the
  log-likelihood's bridge sampling too with ``--loglik``): its wall time (with
  compilation) and its parts before the Monte Carlo MLE (observed statistics from the
  edge list, the case-control MPLE, the bridge reference's exact log Z), timed apart;
  the estimate against the true θ in its standard errors;
* ``ergmx.ergm`` (if installed: the bench extra) on the same networkx graph, in a
  subprocess killed after ``--ergmx-timeout`` seconds.

Run: ``python benchmarks/bench_ergm_large.py`` (hours on 2 CPU cores: with ergm 4's
adaptive interval and "confidence" termination the MCMLE had not converged after 3
iterations and 2 hours, the gwesp statistic mixing over millions of proposals per chain;
``--interval 65536 --termination none --max-iterations 2`` bounds it; ``--nodes 2100
--sim-proposals 400000`` for a quick look at the machinery).
"""

import argparse
import json
import multiprocessing
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

FORMULA = "edges + nodematch('group') + nodecov('x') + gwesp(0.25, fixed=TRUE)"

try:
    from _report import peak_rss_mb, report
except ImportError:  # run from the repository root
    from benchmarks._report import peak_rss_mb, report


def hardware():
    import jax
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
            f"jax {jax.__version__} {jax.default_backend()}")


def command():
    return "python " + " ".join(shlex.quote(a) for a in sys.argv)


# --- the network -----------------------------------------------------------------------


def attributes(n, groups, seed):
    rng = np.random.default_rng(seed)
    return {"group": rng.integers(groups, size=n), "x": np.round(rng.normal(size=n), 2)}


def starting_graph(group, theta, seed):
    """A random graph with the expected numbers of within- and between-group ties of the
    dyad-independent part of the model at ``theta`` (the covariate x averaged out)."""
    rng = np.random.default_rng(seed + 1)
    n = len(group)
    sizes = np.bincount(group)
    within = int(np.sum(sizes * (sizes - 1) // 2))
    boost = np.exp(theta[2] ** 2)  # E exp(θ_x (x_i + x_j)), x_i + x_j ~ N(0, 2)
    counts = {True: int(within * np.exp(theta[0] + theta[1]) * boost),
              False: int((n * (n - 1) // 2 - within) * np.exp(theta[0]) * boost)}
    members = [np.flatnonzero(group == g) for g in range(len(sizes))]
    keys = []
    for same, m in counts.items():
        found = np.zeros(0, np.int64)
        while len(found) < m:
            if same:
                g = rng.choice(len(sizes), 4 * m, p=sizes * (sizes - 1) / (2 * within))
                a = np.array([rng.choice(members[k]) for k in g[:2 * m]])
                b = np.array([rng.choice(members[k]) for k in g[:2 * m]])
            else:
                a, b = rng.integers(0, n, 2 * m), rng.integers(0, n, 2 * m)
            a, b = np.minimum(a, b), np.maximum(a, b)
            ok = (a != b) & ((group[a] == group[b]) == same)
            found = np.unique(np.concatenate([found, (a * n + b)[ok]]))
        keys.append(rng.choice(found, m, replace=False))
    keys = np.concatenate(keys)
    return np.stack([keys // n, keys % n], 1)


#: proposals per call of the sampler while simulating the network (progress printed)
SIM_BLOCK = 500_000


def simulate_network(n, groups, theta, proposals, seed, edges=None, done=0):
    """Ties simulated from the model at ``theta`` by one TNT chain of ``proposals``
    proposals, from ``edges`` (after ``done`` proposals) or :func:`starting_graph`."""
    import jax

    from numpyro_ugm.network.terms.structural import resolve_terms
    from numpyro_ugm.network.terms.term import Network
    from numpyro_ugm.network.sampling.chains import init_network_chains, network_edges
    from numpyro_ugm.network.sampling.compiled import native_run
    from numpyro_ugm.network.terms.compiled import native_chains, native_program
    from numpyro_ugm.network.estimation.sparse_statistics import sparse_statistics

    net = Network(n, False, attributes(n, groups, seed))
    terms = resolve_terms(FORMULA, net)
    edges = starting_graph(net.attributes["group"], theta, seed) if edges is None else edges
    state = native_chains(init_network_chains(
        edges, n, 1, directed=False, statistics0=sparse_statistics(net, terms, edges),
        max_degree=64))
    program = native_program(terms, n)  # the compiled sampler, TNT proposals only
    key = jax.random.PRNGKey(seed + done)
    start = time.perf_counter()
    for b in range(-(-proposals // SIM_BLOCK)):
        key, sub = jax.random.split(key)
        count = min(SIM_BLOCK, proposals - b * SIM_BLOCK)
        words = [int(w) for w in np.asarray(sub, np.uint32)]
        state, _, acceptance, overflow = native_run(state, program, theta, words, 0, count,
                                                    0, 1, 0.0)
        assert overflow < 0, "a node outgrew 64 neighbours"
        done += count
        print(f"  simulating: {done:.3g} proposals, statistics "
              f"{np.round(state.statistics[0], 1)}, acceptance {acceptance[0]:.3f}, "
              f"{time.perf_counter() - start:.0f} s", flush=True)
    ties = network_edges(state)[0]
    check = sparse_statistics(net, terms, ties)
    print(f"  statistics recomputed from the final edge list: {np.round(check, 1)}")
    return ties, net.attributes


def load_network(args):
    """The network (ties, attributes, seconds of simulation in all), simulated or read
    from ``--out``; a kept network of fewer proposals at the same θ is continued."""
    path = Path(args.out) / f"network_{args.nodes}.npz"
    theta = np.array(args.theta, np.float64)
    edges, done, seconds = None, 0, 0.0
    if path.exists() and not args.fresh:
        data = np.load(path)
        if (np.array_equal(data["theta"], theta) and int(data["proposals"]) <= args.sim_proposals
                and len(np.unique(data["group"])) == args.groups):
            edges, done, seconds = data["ties"], int(data["proposals"]), float(data["seconds"])
            print(f"network from {path} ({done} proposals)")
    if done < args.sim_proposals:
        start = time.perf_counter()
        edges, _ = simulate_network(args.nodes, args.groups, theta, args.sim_proposals - done,
                                    args.seed, edges, done)
        seconds += time.perf_counter() - start
        attrs = attributes(args.nodes, args.groups, args.seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, ties=edges, group=attrs["group"], x=attrs["x"], theta=theta,
                 proposals=args.sim_proposals, seconds=seconds)
    return edges, attributes(args.nodes, args.groups, args.seed), seconds


def as_graph(n, ties, attrs):
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from((v, {"group": int(attrs["group"][v]), "x": float(attrs["x"][v])})
                         for v in range(n))
    graph.add_edges_from(map(tuple, np.asarray(ties).tolist()))
    return graph


# --- ours ------------------------------------------------------------------------------


def native_rate(graph, theta, num_chains, proposals):
    """Proposals per second of the compiled sampler (all chains, one thread)."""
    from numpyro_ugm.network.terms.structural import resolve_terms
    from numpyro_ugm.network.terms.term import as_network
    from numpyro_ugm.network.graphs import graph_edge_list
    from numpyro_ugm.network.sampling.chains import init_network_chains
    from numpyro_ugm.network.sampling.compiled import native_run
    from numpyro_ugm.network.terms.compiled import native_chains, native_program
    from numpyro_ugm.network.estimation.sparse_statistics import sparse_statistics

    net = as_network(graph)
    terms = resolve_terms(FORMULA, net)
    ties = graph_edge_list(graph)
    state = native_chains(init_network_chains(
        ties, net.num_nodes, num_chains, directed=False,
        statistics0=sparse_statistics(net, terms, ties)))
    program = native_program(terms, net.num_nodes)
    native_run(state, program, theta, (0, 0), 0, 10, 0, 1, 0.5)
    t = time.perf_counter()
    native_run(state, program, theta, (0, 1), 0, proposals, 0, 1, 0.5)
    return num_chains * proposals / (time.perf_counter() - t)


def sampler_rate(graph, theta, num_chains, proposals):
    """(proposals per second of all chains together, compile seconds) of the JAX
    sampler."""
    import jax

    from numpyro_ugm.network.terms.structural import resolve_terms
    from numpyro_ugm.network.terms.term import as_network
    from numpyro_ugm.network.graphs import graph_edge_list
    from numpyro_ugm.network.sampling.chains import init_network_chains
    from numpyro_ugm.network.sampling.tnt import network_mh_step
    from numpyro_ugm.network.sampling.simulation import change_function
    from numpyro_ugm.network.estimation.sparse_statistics import sparse_statistics

    net = as_network(graph)
    terms = resolve_terms(FORMULA, net)
    ties = graph_edge_list(graph)
    state = init_network_chains(ties, net.num_nodes, num_chains, directed=False,
                                statistics0=sparse_statistics(net, terms, ties))
    change = change_function(terms)
    t = time.perf_counter()
    state = jax.block_until_ready(network_mh_step(jax.random.PRNGKey(0), state, theta,
                                                  change, proposals)[0])
    first = time.perf_counter() - t
    t = time.perf_counter()
    jax.block_until_ready(network_mh_step(jax.random.PRNGKey(1), state, theta, change,
                                          proposals))
    seconds = time.perf_counter() - t
    return num_chains * proposals / seconds, first - seconds


def parts_before_mcmle(graph):
    """Seconds of the observed statistics, the case-control MPLE and the reference."""
    from numpyro_ugm.network.estimation.sampled_mple import (mple_samplesize, sample_dyads,
                                                      sampled_mple, sampled_reference)
    from numpyro_ugm.network.terms.structural import resolve_terms
    from numpyro_ugm.network.terms.term import as_network
    from numpyro_ugm.network.graphs import graph_edge_list, num_dyads
    from numpyro_ugm.network.estimation.sparse_statistics import sparse_statistics

    net = as_network(graph)
    terms = resolve_terms(FORMULA, net)
    times = {}
    t = time.perf_counter()
    ties = graph_edge_list(graph)
    times["edge list"] = time.perf_counter() - t
    t = time.perf_counter()
    observed = sparse_statistics(net, terms, ties)
    times["observed statistics"] = time.perf_counter() - t
    t = time.perf_counter()
    size = mple_samplesize(num_dyads(net.num_nodes), len(ties))
    fit = sampled_mple(sample_dyads(net, terms, ties, observed, size,
                                    np.random.default_rng(0)))
    times[f"case-control MPLE ({len(ties)} ties + {size} non-ties)"] = time.perf_counter() - t
    t = time.perf_counter()
    sampled_reference(net, terms, fit.sample)
    times["reference log Z (every dyad)"] = time.perf_counter() - t
    return times, observed, fit


def ours(graph, args):
    import jax

    from numpyro_ugm.network import ErgmControl, MCMLEControl, SamplingControl, fit_ergm

    start = time.perf_counter()
    mcmle = {"termination": args.termination}
    if args.max_iterations is not None:
        mcmle["max_iterations"] = args.max_iterations
    sampling = {"num_chains": args.num_chains, "samplesize": args.num_chains * args.num_draws}
    if args.interval is not None:  # a fixed interval (no adaptation)
        sampling.update(interval=args.interval, effective_size=None)
    control = ErgmControl(SamplingControl(**sampling), MCMLEControl(**mcmle))
    fit = fit_ergm(graph, FORMULA, control=control, rng_key=jax.random.PRNGKey(args.seed),
                   log_likelihood=args.loglik, verbose=args.verbose)
    seconds = time.perf_counter() - start
    return {"names": list(fit.names), "estimates": np.asarray(fit.estimates).tolist(),
            "stderr": np.asarray(fit.stderr).tolist(), "loglik": float(fit.log_likelihood),
            "converged": bool(fit.converged), "iterations": int(fit.iterations),
            "seconds": seconds, "summary": fit.summary()}


# --- ergmx -----------------------------------------------------------------------------


def _ergmx_worker(n, ties, attrs, loglik, queue):
    import ergmx

    graph = as_graph(n, ties, attrs)
    start = time.perf_counter()
    fit = ergmx.ergm(graph, FORMULA, seed=1, eval_loglik=loglik)
    seconds = time.perf_counter() - start
    coef, stderr = fit.coef, fit.stderr
    coef = list(coef.values()) if isinstance(coef, dict) else list(coef)
    stderr = list(stderr.values()) if isinstance(stderr, dict) else list(stderr)
    loglik = fit.loglik() if callable(fit.loglik) else fit.loglik
    queue.put({"names": list(fit.names), "estimates": [float(v) for v in coef],
               "stderr": [float(v) for v in stderr],
               "loglik": float("nan") if loglik is None else float(loglik),
               "seconds": seconds, "summary": str(fit.summary())})


def peer(n, ties, attrs, args):
    try:
        import ergmx  # noqa: F401
    except ImportError:
        return None
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_ergmx_worker,
                              args=(n, np.asarray(ties), attrs, args.loglik, queue))
    start = time.perf_counter()
    process.start()
    process.join(args.ergmx_timeout)
    if process.is_alive():
        process.kill()
        return {"timeout": args.ergmx_timeout, "seconds": time.perf_counter() - start}
    return queue.get() if not queue.empty() else {"error": process.exitcode}


# --- the run ---------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--groups", type=int, default=20, help="levels of group")
    parser.add_argument("--theta", type=float, nargs=4, default=[-9.5, 3.5, 0.3, 1.0],
                        help="edges, nodematch.group, nodecov.x, gwesp.fixed.0.25")
    parser.add_argument("--sim-proposals", type=int, default=30_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-chains", type=int, default=4)
    parser.add_argument("--num-draws", type=int, default=256)
    parser.add_argument("--rate-proposals", type=int, default=20_000,
                        help="proposals per chain for the sampler's rate")
    parser.add_argument("--termination", default="confidence",
                        help="the MCMLE's: confidence (ergm 4's), hotelling or none")
    parser.add_argument("--max-iterations", type=int, help="MCMLE iterations at most (60)")
    parser.add_argument("--interval", type=int,
                        help="a fixed sampling interval (proposals), no adaptation")
    parser.add_argument("--loglik", action="store_true",
                        help="also the bridge-sampled log-likelihood (ours and ergmx's)")
    parser.add_argument("--no-ergmx", action="store_true")
    parser.add_argument("--ergmx-timeout", type=float, default=1800)
    parser.add_argument("--out", default="outputs/ergm_large")
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    where = f"{command()}; {hardware()}"
    print(where, flush=True)
    n = args.nodes
    N = n * (n - 1) // 2
    theta = np.array(args.theta)
    ties, attrs, sim_seconds = load_network(args)
    graph = as_graph(n, ties, attrs)
    degrees = np.bincount(np.asarray(ties).ravel(), minlength=n)
    print(f"network: {n} nodes, {len(ties)} ties, N = {N} dyads, largest degree "
          f"{degrees.max()}, isolates {int(np.sum(degrees == 0))}", flush=True)
    report(f"ERGM {n} nodes: simulating the network", f"{sim_seconds:.0f} s",
           f"{args.sim_proposals} TNT proposals, one chain (possibly over several runs); "
           f"{where}")

    rate, compile_s = sampler_rate(graph, theta, args.num_chains, args.rate_proposals)
    print(f"sampler: {args.num_chains} chains x {args.rate_proposals} proposals: {rate:.3g} "
          f"proposals/s (compile {compile_s:.1f} s); a sweep-equivalent (N = {N} proposals) "
          f"{N / rate:.0f} s", flush=True)
    report(f"ERGM {n} nodes edges+nodematch+nodecov+gwesp: TNT sampler proposals per second",
           f"{rate:.3g}", f"{args.num_chains} chains together; {where}")
    report(f"ERGM {n} nodes edges+nodematch+nodecov+gwesp: time per sweep (N proposals)",
           f"{N / rate:.0f} s", f"N = {N}, {args.num_chains} chains together; {where}")
    compiled = native_rate(graph, theta, args.num_chains, 10 * args.rate_proposals)
    print(f"compiled sampler: {args.num_chains} chains x {10 * args.rate_proposals} "
          f"proposals, one thread: {compiled:.3g} proposals/s; a sweep-equivalent "
          f"{N / compiled:.0f} s", flush=True)
    report(f"ERGM {n} nodes edges+nodematch+nodecov+gwesp: compiled sampler, time per "
           f"sweep (N proposals)", f"{N / compiled:.0f} s",
           f"N = {N}, {args.num_chains} chains, one thread; {where}")

    times, observed, start_fit = parts_before_mcmle(graph)
    for part, seconds in times.items():
        print(f"  {part}: {seconds:.1f} s (with compilation)")
    print(f"observed statistics {np.round(observed, 2)}; case-control MPLE "
          f"{np.round(start_fit.theta, 4)} (its Monte Carlo s.e. "
          f"{np.round(np.sqrt(np.diag(start_fit.sampling_cov)), 4)})", flush=True)
    report(f"ERGM {n} nodes: observed statistics + case-control MPLE + reference",
           f"{sum(times.values()):.1f} s", f"with compilation; {where}")

    a = ours(graph, args)
    print(a["summary"], flush=True)
    z = (np.array(a["estimates"]) - theta) / np.array(a["stderr"])
    for name, est, se, true, zz in zip(a["names"], a["estimates"], a["stderr"], theta, z):
        print(f"  {name:22s} {est:9.4f} ({se:.4f})  true {true:8.4f}  (est - true)/se "
              f"{zz:6.2f}")
    report(f"ERGM {n} nodes: fit_ergm wall time (MPLE, MCMLE, s.e."
           f"{', log-likelihood' if args.loglik else ''})", f"{a['seconds']:.0f} s",
           f"{a['iterations']} MCMLE iterations, converged {a['converged']}, "
           f"{args.num_chains} chains x {args.num_draws} draws, termination "
           f"{args.termination}, interval {args.interval or 'adaptive'}, peak RSS "
           f"{peak_rss_mb():.0f} MB; {where}")
    report(f"ERGM {n} nodes: largest |estimate - true| / s.e.", f"{np.max(np.abs(z)):.2f}",
           f"per term {np.round(z, 2).tolist()}; {where}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    record = {"ours": a, "theta": theta.tolist(), "rate": rate, "parts": times}
    if not args.no_ergmx:
        b = peer(n, ties, attrs, args)
        record["ergmx"] = b
        if b is None:
            print("ergmx is not installed (pip install ergmx, the bench extra)")
        elif "estimates" not in b:
            report(f"ERGM {n} nodes: ergmx.ergm", "did not finish", f"{b}; {where}")
        else:
            print(b["summary"])
            zb = (np.array(b["estimates"]) - theta) / np.array(b["stderr"])
            for k, name in enumerate(a["names"]):
                d = abs(a["estimates"][k] - b["estimates"][k]) / np.hypot(a["stderr"][k],
                                                                           b["stderr"][k])
                print(f"  {name:22s} ours {a['estimates'][k]:9.4f} ({a['stderr'][k]:.4f}) "
                      f"ergmx {b['estimates'][k]:9.4f} ({b['stderr'][k]:.4f}) |d|/se "
                      f"{d:5.2f}; ergmx (est - true)/se {zb[k]:6.2f}")
            report(f"ERGM {n} nodes: fit time ours / ergmx",
                   f"{a['seconds'] / b['seconds']:.2f}",
                   f"{a['seconds']:.0f} s / {b['seconds']:.0f} s; {where}")
    (Path(args.out) / f"fit_{n}.json").write_text(json.dumps(record, indent=1, default=float))


if __name__ == "__main__":
    main()
