"""Checks of ``defaults_sweep.py``: the network analysis at its defaults —
``network.fit_ergm`` (dyad-independent models against scikit-learn's logistic
regression, a dependent one against the exact MLE over all 2^21 graphs on 7 nodes),
``network.gof_ergm`` (its simulations at θ̂ against the exact expectations there, its
observed distributions against networkx), ``network.mple`` and ``ergm_statistics``."""

import functools
import warnings

import networkx as nx
import numpy as np

from numpyro_ugm import datasets
from numpyro_ugm.network import ergm_statistics, fit_ergm, gof_ergm, graph_to_edges, mple

import _sweep_reference as ref
from _sweep_rows import check, close, flag, fmt, zcheck

FIT_DEFAULTS = "control=ErgmControl() (MPLE start, MCMLE, 4 chains), log_likelihood=True"


def dyad_design(G, columns):
    """(X (D, k), y (D,)) over the node pairs i < j of G in node order: the change
    statistics ``columns(i, j)`` of each dyad and whether it is a tie."""
    nodes = list(G.nodes())
    rows, cols = np.triu_indices(len(nodes), 1)
    X = np.array([columns(nodes[a], nodes[b]) for a, b in zip(rows, cols)], np.float64)
    y = np.array([G.has_edge(nodes[a], nodes[b]) for a, b in zip(rows, cols)], np.float64)
    return X, y


def logistic_rows(call, fit, X, y):
    beta, se, loglik = ref.logistic_mle(X, y)
    return [close(call + ": estimates", FIT_DEFAULTS, fit.estimates, beta, 1e-5,
                  note="ref: sklearn LogisticRegression(C=inf)"),
            close(call + ": stderr", "exact (dyad independent)", fit.stderr, se,
                  1e-5 * np.max(se), note="ref: own Fisher information"),
            close(call + ": log-likelihood", "", fit.log_likelihood, loglik, 1e-6)]


@check("network")
def dyad_independent_fits(quick):
    flo = datasets.network("flomarriage")
    wealth = nx.get_node_attributes(flo, "wealth")
    X, y = dyad_design(flo, lambda i, j: [wealth[i] + wealth[j]])
    fit = fit_ergm(flo, "edges + nodecov('wealth')")
    rows = logistic_rows("fit_ergm(flomarriage, 'edges + nodecov(wealth)')", fit, X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = np.asarray(gof_ergm(fit)["model"].simulated, np.float64)
    eta = fit.estimates[0] + X @ np.asarray(fit.estimates[1:])
    p = 1 / (1 + np.exp(-eta))
    expected = np.array([p.sum(), p @ X[:, 0]])
    sd = np.sqrt([np.sum(p * (1 - p)), np.sum(p * (1 - p) * X[:, 0] ** 2)])
    rows.append(zcheck("gof_ergm(flomarriage fit): mean simulated statistics",
                       "num_sims=100 (independent dyads: exact draws)", sim.mean(0), expected,
                       (sim.mean(0) - expected) / (sd / np.sqrt(len(sim))),
                       note="ref: Σ p_ij, own"))
    mesa = datasets.network("faux.mesa.high")
    grade, race = (nx.get_node_attributes(mesa, k) for k in ("Grade", "Race"))
    levels = sorted(set(grade.values()))[1:]  # statnet's nodefactor drops the first level
    X, y = dyad_design(mesa, lambda i, j: [(grade[i] == g) + (grade[j] == g) for g in levels]
                       + [race[i] == race[j]])
    fit = fit_ergm(mesa, "edges + nodefactor('Grade') + nodematch('Race')")
    return rows + logistic_rows("fit_ergm(faux.mesa.high, 'edges + nodefactor(Grade) + "
                                "nodematch(Race)')", fit, X, y)


SMALL_EDGES = [(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (4, 5), (5, 6), (3, 5), (1, 6)]


@functools.lru_cache(maxsize=1)
def small_network():
    """The 7-node graph, the statistics of all 2^21 graphs on 7 nodes and the observed
    graph's row."""
    G = nx.Graph(SMALL_EDGES)
    Y, stats = ref.graph_statistics_table(7)
    rows, cols = np.triu_indices(7, 1)
    code = sum(1 << k for k, (a, b) in enumerate(zip(rows, cols)) if G.has_edge(a, b))
    return G, stats, code


@check("network")
def dependent_fit_and_gof(quick):
    G, stats, code = small_network()
    F = np.stack([stats["edges"], stats["triangle"]], 1)
    theta, loglik, cov = ref.exp_family_mle(F, F[code])
    se = np.sqrt(np.diag(np.linalg.inv(cov)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a warning would show in the row's note below
        fit = fit_ergm(G, "edges + triangle")
        gof = gof_ergm(fit)
    call = "fit_ergm(7-node graph, 'edges + triangle')"
    rows = [
        close(call + ": estimates", FIT_DEFAULTS, fit.estimates, theta, float(0.1 * se.min()),
              note="ref: exact MLE over 2^21 graphs; tol 0.1 s.e."),
        close(call + ": stderr / exact", "", np.asarray(fit.stderr) / se, [1, 1], 0.1),
        close(call + ": log-likelihood", "bridge sampling", fit.log_likelihood, loglik, 0.02),
    ]
    p = ref.probabilities(F @ np.asarray(fit.estimates, np.float64))
    expected, sd = p @ F, np.sqrt(p @ F ** 2 - (p @ F) ** 2)
    sim = np.asarray(gof["model"].simulated, np.float64)
    ess = gof.effective_size or len(sim)
    rows.append(zcheck("gof_ergm(fit): mean simulated edges, triangles at θ̂",
                       "num_sims=100, interval from the fit", sim.mean(0), expected,
                       (sim.mean(0) - expected) / (sd / np.sqrt(ess)),
                       note=f"ref: exact E at θ̂; effective size {ess:.0f}"))
    degree = np.asarray(stats["degree"], np.int64)
    expected_degree = p @ np.stack([(degree == k).sum(1) for k in range(7)], 1)
    sim_degree = np.asarray(gof["degree"].simulated, np.float64)[:, :7]
    sd_degree = np.sqrt(np.maximum(sim_degree.var(0), 1e-12))
    rows.append(zcheck("gof_ergm(fit): mean simulated degree counts", "num_sims=100",
                       sim_degree.mean(0), expected_degree,
                       (sim_degree.mean(0) - expected_degree) / (sd_degree / np.sqrt(ess)),
                       note="ref: exact E at θ̂"))
    return rows + gof_observed_rows(gof, G)


def gof_observed_rows(gof, G):
    """The observed network's GOF distributions against networkx's counts."""
    n = G.number_of_nodes()
    degree = np.bincount([d for _, d in G.degree()], minlength=n)[:n]
    esp = np.bincount([len(list(nx.common_neighbors(G, a, b))) for a, b in G.edges()],
                      minlength=n - 1)[:n - 1]
    lengths = dict(nx.all_pairs_shortest_path_length(G))
    nodes = list(G.nodes())
    dist = [lengths[a].get(b, n) for k, a in enumerate(nodes) for b in nodes[k + 1:]]
    distance = np.bincount(dist, minlength=n + 1)[1:]
    rows = []
    for name, own in (("degree", degree), ("espartners", esp), ("distance", distance)):
        observed = np.asarray(gof[name].observed, np.float64)
        rows.append(close(f"gof_ergm(fit)['{name}'].observed", "", observed, own, 0,
                          note="ref: networkx"))
    return rows


def separated_mple(G, A, y):
    """``edges + kstar(2)`` on the 7-node graph: its 2-star count (15) is the least any
    graph of 9 edges on 7 nodes has, so the ties' change statistics (Δ kstar2 ≤ 4) and
    the non-ties' (≥ 4) are quasi-separated and no MPLE exists (nor an MLE): ``mple``
    must say it has not converged."""
    degree = A.sum(1)
    rows, cols = np.triu_indices(7, 1)
    delta = degree[rows] + degree[cols] - 2 * A[rows, cols]
    separated = delta[y == 1].max() <= delta[y == 0].min()
    fit = mple(G, "edges + kstar(2)")
    theta = np.asarray(fit.params["theta"], np.float64)
    return flag("mple(7-node graph, 'edges + kstar(2)'): converged", "num_steps=100, tol=1e-10",
                f"converged={bool(fit.converged)}, θ = {fmt(theta)}",
                f"{'quasi-separated: no MPLE' if separated else 'MPLE exists'}",
                not (separated and bool(fit.converged)),
                note="ref: own change statistics")


@check("network")
def mple_and_statistics(quick):
    G, _, _ = small_network()
    A = nx.to_numpy_array(G, nodelist=range(7))

    def change(i, j):
        return [1.0, float(A[i] @ A[j])]  # edges, triangles closed by the tie i-j

    X, y = dyad_design(G, change)
    beta, _, _ = ref.logistic_mle(X[:, 1:], y)
    ours = np.asarray(mple(G, "edges + triangle").params["theta"], np.float64)
    flo = datasets.network("flomarriage")
    stats = ergm_statistics(graph_to_edges(flo), ["edges", "triangles", "kstar2", "isolates"])
    degrees = np.array([d for _, d in flo.degree()])
    own = [flo.number_of_edges(), sum(nx.triangles(flo).values()) / 3,
           np.sum(degrees * (degrees - 1) / 2), np.sum(degrees == 0)]
    return [
        close("mple(7-node graph, 'edges + triangle')", "num_steps=100, tol=1e-10 (Newton)",
              ours, beta, 1e-5, note="ref: sklearn on own change statistics"),
        separated_mple(G, A, y),
        close("ergm_statistics(graph_to_edges(flomarriage), [edges, triangles, kstar2, "
              "isolates])", "", stats, own, 0, note="ref: networkx"),
    ]
