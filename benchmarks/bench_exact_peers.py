"""Exact inference on thin graphs: ``ugm.exact`` (variable elimination, compiled with
JAX) against pgmpy's exact inference on the same models, and the exact log Z of a
10 × 200 Ising strip against a transfer matrix and against AIS's bracket.

(a) pgmpy. Binary spin models f(x) = Σ h_i x_i + Σ_(i,j) J_ij x_i x_j on

* random trees (each variable joined to a uniformly chosen earlier one; h ~ N(0, 0.3²),
  J ~ N(0, 0.5²)),
* L × W strips with free boundary (same random h and J),

declared once for ``ugm`` (one coupling per edge) and once as a pgmpy
``DiscreteMarkovNetwork`` of unary and pairwise ``DiscreteFactor`` tables (each scaled
to a largest entry of 1, the scales added back to log Z, so that pgmpy's products in
probability space stay in float64's range). Measured:

* log Z: ``ugm.exact.log_partition`` (method "auto": elimination above 2^16
  configurations) and pgmpy's ``VariableElimination.query([x0])`` (its default
  "greedy" contraction through opt_einsum; the factor is unnormalized for a Markov
  network, so its sum is Z);
* all single-variable marginals: ``ugm.exact.marginals`` and, on trees, pgmpy's
  ``BeliefPropagation`` (junction tree, one calibration, each variable's marginal read
  off a clique belief that holds it); on strips pgmpy's junction tree exhausts the
  memory (a 4 × 50 strip: killed for memory on a 23 GB machine), so one
  ``VariableElimination`` query per variable, timed on 8 variables and scaled to all.

ugm's first call (compilation with it; the model is traced and analysed before) is
reported apart from later calls (the median of ``--repeats``, timed interleaved with
pgmpy's in one process). The later calls of the public functions include their checks on
the host; the compiled elimination alone (``evaluate.elimination.run_log_z`` /
``run_marginals``, after those checks) is timed beside them. pgmpy compiles nothing:
one untimed warm-up call, then the same interleaved median. Values are checked equal (log
Z to 1e-5 relative, marginals to 1e-4 absolute; ugm computes in float32, pgmpy in
float64). pgmpy's variable elimination with a named heuristic order falls back, for a
Markov network, to an arbitrary order (exponential tables on a tree), so it is not used.

(b) A thin lattice: the Ising strip 10 × 200, coupling β (default 0.44), no field, free
boundary. Exact log Z by ``ugm.exact.log_partition`` against the column transfer matrix
(2^10 states, float64, written here), and AIS (``ugm.evaluate.ais.log_partition``:
default block-Gibbs kernel, uniform base, ``--chains`` forward chains over the
``ais.default_betas(--betas)`` schedule, reverse chains from as many exact draws by
``ugm.exact.sample``): the bracket, its width, whether it holds the exact value.

Trees have no narrow band, so ugm eliminates them unrolled, one compiled step per
variable: their first call grows with n (a 400-variable tree compiles in about a minute,
a 1000-variable one took over 11 minutes on 2 loaded cores), hence the default of 200.

Run: python benchmarks/bench_exact_peers.py [--trees 200] [--strips 4x50 10x20 10x200]
[--repeats 3] [--beta 0.44] [--betas 1000] [--chains 100] [--skip-ais]
"""

import argparse
import os
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from _report import report, timeit_many
from scipy.special import logsumexp

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import ais, elimination, exact

SPINS = np.array([-1.0, 1.0])

#: variables whose marginals pgmpy computes one query at a time on a strip (timed, scaled)
PGMPY_SAMPLE = 8


def spin_graph(n, edges):
    """Spins with a field per variable and a coupling per edge."""
    h = numpyro.param("h", jnp.zeros(n))
    J = numpyro.param("J", jnp.zeros(len(edges)))
    x = numpyro.sample("x", ugm.Spin(n))
    numpyro.factor("f", h @ x + jnp.sum(J * x[edges[:, 0]] * x[edges[:, 1]]))


def tree_edges(n, rng):
    return np.array([(int(rng.integers(i)), i) for i in range(1, n)])


def strip_edges(height, width):
    index = np.arange(height * width).reshape(height, width)
    return np.concatenate([np.stack([index[:, :-1].ravel(), index[:, 1:].ravel()], 1),
                           np.stack([index[:-1].ravel(), index[1:].ravel()], 1)])


def pgmpy_network(n, edges, h, J):
    """The model as a pgmpy DiscreteMarkovNetwork, and the log of the scales taken out
    of its factors (each scaled to a largest entry of 1)."""
    from pgmpy.factors.discrete import DiscreteFactor
    from pgmpy.models import DiscreteMarkovNetwork

    net = DiscreteMarkovNetwork()
    net.add_nodes_from(range(n))
    net.add_edges_from([(int(i), int(j)) for i, j in edges])
    factors, offset = [], 0.0
    for i in range(n):
        v = h[i] * SPINS
        factors.append(DiscreteFactor([i], [2], np.exp(v - v.max())))
        offset += v.max()
    for (i, j), w in zip(edges, J):
        v = w * np.outer(SPINS, SPINS)
        factors.append(DiscreteFactor([int(i), int(j)], [2, 2], np.exp(v - v.max())))
        offset += v.max()
    net.add_factors(*factors)
    return net, offset


def pgmpy_log_z(net, offset):
    from pgmpy.inference import VariableElimination
    phi = VariableElimination(net).query([0], show_progress=False)
    return float(np.log(phi.values.sum()) + offset)


def pgmpy_marginals(net, n):
    """p(x_i = +1) of every variable by belief propagation on pgmpy's junction tree."""
    from pgmpy.inference import BeliefPropagation
    bp = BeliefPropagation(net)
    bp.calibrate()
    out = np.empty(n)
    for clique, belief in bp.get_clique_beliefs().items():
        for v in clique:
            m = belief.marginalize([u for u in clique if u != v], inplace=False).values
            out[v] = m[1] / m.sum()
    return out


def pgmpy_marginals_one_by_one(net, variables):
    """p(x_i = +1) of ``variables``, one variable elimination query each."""
    from pgmpy.inference import VariableElimination
    ve = VariableElimination(net)
    out = []
    for v in variables:
        m = ve.query([int(v)], show_progress=False).values
        out.append(m[1] / m.sum())
    return np.array(out)


def timed(fn):
    t = time.perf_counter()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - t


def compare(name, n, edges, repeats, rng, tree):
    """One model: ugm's first and later calls, pgmpy's calls, values checked."""
    h, J = rng.normal(0, 0.3, n), rng.normal(0, 0.5, len(edges))
    m = ugm.UGM(spin_graph, n, edges)
    params = {"h": jnp.asarray(h, jnp.float32), "J": jnp.asarray(J, jnp.float32)}
    _, trace_s = timed(lambda: m.target().structure)
    log_z, first_z = timed(lambda: exact.log_partition(m, params))
    mu, first_mu = timed(lambda: exact.marginals(m, params)["x"])
    el = elimination.prepare(m, "bench")
    band = el.plan.band
    width = f"{el.plan.width}" + ("" if band is None else f" (band {band.width}, scanned)")
    # float32 tables, as ugm.exact builds them: the checked values use the same rounding
    h32, J32 = np.asarray(params["h"], np.float64), np.asarray(params["J"], np.float64)
    net, offset = pgmpy_network(n, edges, h32, J32)
    if tree:  # one calibration of the junction tree gives every marginal
        some, scale, how = np.arange(n), 1.0, "belief propagation"
        pg_marginals = lambda: pgmpy_marginals(net, n)  # noqa: E731
    else:  # pgmpy's junction tree of a strip exhausts the memory: a query per variable,
        # timed on a sample of them and scaled to all n
        some = np.sort(rng.choice(n, PGMPY_SAMPLE, replace=False))
        scale = n / PGMPY_SAMPLE
        how = f"a query per variable, {PGMPY_SAMPLE} timed x n/{PGMPY_SAMPLE}"
        pg_marginals = lambda: pgmpy_marginals_one_by_one(net, some)  # noqa: E731
    times = timeit_many({
        "ugm log Z": lambda: jax.block_until_ready(exact.log_partition(m, params)),
        "ugm log Z compiled": lambda: jax.block_until_ready(elimination.run_log_z(el, params)),
        "ugm marginals": lambda: jax.block_until_ready(exact.marginals(m, params)),
        "ugm marginals compiled": lambda: jax.block_until_ready(
            elimination.run_marginals(el, params)),
        "pgmpy log Z": lambda: pgmpy_log_z(net, offset),
        "pgmpy marginals": pg_marginals}, repeats)
    times["pgmpy marginals"] *= scale
    z_pgmpy, mu_pgmpy = pgmpy_log_z(net, offset), pg_marginals()
    z_err = abs(float(log_z) - z_pgmpy) / abs(z_pgmpy)
    mu_err = float(np.max(np.abs(np.asarray(mu)[some, 1] - mu_pgmpy)))
    agree = z_err < 1e-5 and mu_err < 1e-4
    print(f"\n{name}: {n} variables, {len(edges)} edges, min-fill width {width}; "
          f"log Z {float(log_z):.4f} (pgmpy {z_pgmpy:.4f}, rel. diff {z_err:.1e}); "
          f"marginals max |diff| {mu_err:.1e} ({len(some)} checked); structure analysis "
          f"{trace_s:.2f} s; pgmpy marginals: {how}")
    print(f"  {'':<12}{'ugm first':>11}{'ugm later':>11}{'compiled':>10}{'pgmpy':>11}"
          f"{'pgmpy/ugm':>11}")
    for what, first in (("log Z", first_z), ("marginals", first_mu)):
        ours, alone, theirs = (times[f"ugm {what}"], times[f"ugm {what} compiled"],
                               times[f"pgmpy {what}"])
        print(f"  {what:<12}{first:>10.3f}s{ours:>10.4f}s{alone:>9.4f}s{theirs:>10.3f}s"
              f"{theirs / ours:>10.1f}x")
        report(f"exact peers {name} {what}: ugm later call / first call (s)",
               f"{ours:.4f} / {first:.2f}",
               f"compiled program alone {alone:.4f} s; pgmpy {theirs:.4f} s "
               f"(pgmpy/ugm {theirs / ours:.1f}x); values agree {agree}")
    return agree


def strip_transfer_log_z(height, width, beta):
    """log Z of the free-boundary Ising strip by the column transfer matrix (float64):
    α_(c+1)(s') = E(s') + log Σ_s exp(α_c(s) + β s·s'), E the column's own bonds."""
    columns = np.where((np.arange(2 ** height)[:, None] >> np.arange(height)) & 1, -1.0, 1.0)
    own = beta * np.sum(columns[:, 1:] * columns[:, :-1], 1)
    coupling = beta * columns @ columns.T
    alpha = own
    for _ in range(width - 1):
        alpha = own + logsumexp(alpha[:, None] + coupling, 0)
    return float(logsumexp(alpha))


def ising_strip(height, width):
    beta = numpyro.param("beta", jnp.asarray(0.44))
    x = numpyro.sample("x", ugm.Spin((height, width)))
    numpyro.factor("f", beta * (jnp.sum(x[:, :-1] * x[:, 1:]) + jnp.sum(x[:-1] * x[1:])))


def thin_lattice(args):
    height, width = 10, 200
    m = ugm.UGM(ising_strip, height, width)
    params = {"beta": jnp.asarray(args.beta, jnp.float32)}
    reference = strip_transfer_log_z(height, width, float(params["beta"]))
    log_z, first = timed(lambda: exact.log_partition(m, params))
    _, later = timed(lambda: exact.log_partition(m, params))
    diff = abs(float(log_z) - reference)
    print(f"\nIsing strip {height}x{width}, beta {args.beta}: exact log Z {float(log_z):.4f}, "
          f"transfer matrix {reference:.4f} (|diff| {diff:.1e}); first call {first:.1f} s, "
          f"later {later:.3f} s")
    report(f"exact peers strip {height}x{width} log Z: |ugm - transfer matrix|",
           f"{diff:.1e}", f"log Z {reference:.4f}; ugm first call {first:.1f} s, later "
           f"{later:.3f} s")
    if args.skip_ais:
        return
    draws, draw_s = timed(lambda: exact.sample(m, params, jax.random.PRNGKey(1), args.chains))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result, ais_s = timed(lambda: ais.log_partition(
            m, params, jax.random.PRNGKey(2), args.chains, ais.default_betas(args.betas),
            reverse_from=draws))
    lower, upper = float(result.lower), float(result.upper)
    contains = lower <= reference <= upper
    print(f"AIS ({args.chains} chains each way, {args.betas} betas, default block Gibbs, "
          f"uniform base): [{lower:.3f}, {upper:.3f}] (± {float(result.lower_stderr):.3f}, "
          f"{float(result.upper_stderr):.3f}), width {upper - lower:.3f}, contains the "
          f"exact value: {contains}; {ais_s:.1f} s (exact draws {draw_s:.1f} s)")
    report(f"exact peers strip {height}x{width}: AIS bracket width (nats)",
           f"{upper - lower:.3f}",
           f"[{lower - reference:+.3f}, {upper - reference:+.3f}] around the exact value, "
           f"contains it: {contains}; {args.chains} chains, {args.betas} betas, {ais_s:.0f} s")


def main(args):
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, {os.cpu_count()} CPUs; "
          f"load {os.getloadavg()[0]:.2f}")
    rng = np.random.default_rng(0)
    agree = True
    for n in args.trees:
        agree &= compare(f"tree {n}", n, tree_edges(n, rng), args.repeats, rng, True)
    for size in args.strips:
        height, width = (int(s) for s in size.split("x"))
        agree &= compare(f"strip {size}", height * width, strip_edges(height, width),
                         args.repeats, rng, False)
    if args.trees or args.strips:
        report("exact peers: ugm and pgmpy values agree", str(agree), "log Z and marginals")
    thin_lattice(args)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, nargs="*", default=[200])
    parser.add_argument("--strips", nargs="*", default=["4x50", "10x20", "10x200"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--beta", type=float, default=0.44)
    parser.add_argument("--betas", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--skip-ais", action="store_true")
    main(parser.parse_args())
