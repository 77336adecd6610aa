"""ERGM goodness of fit (models/network_distributions.py, network_goodness_of_fit.py,
network_gof_plot.py, network_diagnostics.py): the distributions against networkx
on small random graphs (degrees, shared partners per edge by their definitions, all-pairs
shortest paths with the unreachable pairs), ergm's Monte Carlo p-values and intervals on
cases with a known answer, the figures (Agg), the MCMC diagnostics against the closed
form ESS of AR(1) chains, and the degeneracy warning naming the right term."""

import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from numpyro_ugm.network import DegeneracyWarning, graph_to_edges
from numpyro_ugm.network.diagnostics import distributions as network_distributions
from numpyro_ugm.network.diagnostics.degeneracy import check_fit_degeneracy
from numpyro_ugm.network.diagnostics.mcmc import mcmc_diagnostics
from numpyro_ugm.network.diagnostics.distributions import (
    degree_distribution, edgewise_shared_partners, geodesic_distance_distribution,
    indicators_to_edge_lists, network_densities, shared_partner_distribution)
from numpyro_ugm.network.diagnostics.gof_plot import shown_columns
from numpyro_ugm.network.diagnostics.goodness_of_fit import goodness_of_fit, monte_carlo_p_values

NETWORKS = Path(__file__).resolve().parents[2] / "shared" / "data" / "networks"


def random_graph(n, p, seed, directed, reciprocity=0.0):
    """A G(n, p) graph (directed: with a fraction ``reciprocity`` of its edges made
    mutual) and its edge list (rows shuffled, undirected rows in either orientation)."""
    nx = pytest.importorskip("networkx")
    graph = nx.gnp_random_graph(n, p, seed=seed, directed=directed)
    rng = np.random.default_rng(seed)
    if directed:
        arcs = list(graph.edges())
        graph.add_edges_from((j, i) for k, (i, j) in enumerate(arcs)
                             if rng.random() < reciprocity)
    edges = np.array(list(graph.edges()), np.int64).reshape(-1, 2)
    edges = edges[rng.permutation(len(edges))]
    if not directed:
        flip = rng.random(len(edges)) < 0.5
        edges[flip] = edges[flip, ::-1]
    return graph, edges


def pyplot_agg():
    """matplotlib.pyplot on the Agg backend (nothing displayed), or skip."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def reference_distances(graph, n, directed):
    """Counts of pairs at distance 1..n−1 and Inf from networkx's all-pairs BFS."""
    nx = pytest.importorskip("networkx")
    lengths = dict(nx.all_pairs_shortest_path_length(graph))
    counts = np.zeros(n, np.int64)
    for i in range(n):
        for j in range(n):
            if i == j or (not directed and j < i):
                continue
            d = lengths[i].get(j)
            counts[n - 1 if d is None else d - 1] += 1
    return counts


@pytest.mark.parametrize("directed", [False, True])
def test_degree_distribution_matches_networkx(directed):
    n = 40
    graphs = [random_graph(n, p, seed, directed) for seed, p in enumerate((0.02, 0.06, 0.15))]
    if directed:
        for kind, degrees in (("idegree", "in_degree"), ("odegree", "out_degree")):
            ref = np.stack([np.bincount([d for _, d in getattr(g, degrees)()], minlength=n)
                            for g, _ in graphs])
            got = degree_distribution([e for _, e in graphs], n, directed=True, kind=kind)
            np.testing.assert_array_equal(got, ref)
            np.testing.assert_array_equal(
                degree_distribution(graphs[1][1], n, directed=True, kind=kind), ref[1])
        with pytest.raises(ValueError, match="kind"):
            degree_distribution(graphs[0][1], n, directed=True)
    else:
        ref = np.stack([np.bincount([d for _, d in g.degree()], minlength=n)
                        for g, _ in graphs])
        np.testing.assert_array_equal(degree_distribution([e for _, e in graphs], n), ref)
        np.testing.assert_array_equal(degree_distribution(graphs[2][1], n), ref[2])
        assert degree_distribution(graphs[0][1], n).sum() == n


def shared_partners_by_definition(graph, edges, partner_type):
    """Shared partners of each edge from their definitions (networkx adjacency)."""
    nodes = list(graph.nodes)
    if not graph.is_directed():
        return [len(set(graph[i]) & set(graph[j])) for i, j in edges]
    e = graph.has_edge
    tests = {"OTP": lambda i, j, k: e(i, k) and e(k, j),
             "ITP": lambda i, j, k: e(j, k) and e(k, i),
             "RTP": lambda i, j, k: e(i, k) and e(k, i) and e(k, j) and e(j, k),
             "OSP": lambda i, j, k: e(i, k) and e(j, k),
             "ISP": lambda i, j, k: e(k, i) and e(k, j)}[partner_type]
    return [sum(tests(i, j, k) for k in nodes if k not in (i, j)) for i, j in edges]


@pytest.mark.parametrize("directed", [False, True])
def test_shared_partners_match_their_definition(directed):
    n = 30
    graphs = [random_graph(n, p, seed, directed, reciprocity=0.6)
              for seed, p in ((3, 0.2), (4, 0.35))]
    types = ("OTP", "ITP", "RTP", "OSP", "ISP") if directed else ("OTP",)
    for partner_type in types:
        per_edge = edgewise_shared_partners([e for _, e in graphs], n, directed=directed,
                                            partner_type=partner_type)
        for (graph, edges), got in zip(graphs, per_edge):
            ref = np.array(shared_partners_by_definition(graph, edges, partner_type))
            assert ref.max() >= 2  # the graphs are dense enough to tell counts apart
            np.testing.assert_array_equal(got, ref)
        dist = shared_partner_distribution([e for _, e in graphs], n, directed=directed,
                                           partner_type=partner_type)
        assert dist.shape == (2, n - 1)
        for row, got in zip(dist, per_edge):
            np.testing.assert_array_equal(row, np.bincount(got, minlength=n - 1))
    if not directed:
        # each triangle gives each of its 3 edges a partner; networkx counts it at 3 nodes
        graph, edges = graphs[0]
        triangles = pytest.importorskip("networkx").triangles(graph)
        assert edgewise_shared_partners(edges, n).sum() == sum(triangles.values())


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("block", [64, 4096])
def test_geodesic_distances_match_networkx(directed, block, monkeypatch):
    # 64: sources searched in two blocks (the graph has over 64 nodes with edges)
    monkeypatch.setattr(network_distributions, "_SOURCE_BLOCK", block)
    n = 120
    graphs = [random_graph(n, p, seed, directed) for seed, p in ((5, 0.012), (6, 0.03))]
    got = geodesic_distance_distribution([e for _, e in graphs], n, directed=directed)
    for (graph, edges), row in zip(graphs, got):
        assert len(np.unique(edges)) > 64
        ref = reference_distances(graph, n, directed)
        assert ref[-1] > 0 and np.flatnonzero(ref[:-1]).max() >= 4  # unreachable and long
        np.testing.assert_array_equal(row, ref)
        assert row.sum() == (n * (n - 1) if directed else n * (n - 1) // 2)


def test_geodesic_distances_of_small_components():
    # a dyad, a mutual dyad (directed), a 3-path, an isolate: counted by hand
    edges = np.array([[0, 1], [2, 3], [3, 4]])
    got = geodesic_distance_distribution(edges, 6)
    np.testing.assert_array_equal(got, [3, 1, 0, 0, 0, 15 - 4])
    directed = np.array([[0, 1], [1, 0], [2, 3], [3, 4]])
    got = geodesic_distance_distribution(directed, 6, directed=True)
    np.testing.assert_array_equal(got, [4, 1, 0, 0, 0, 30 - 5])
    empty = geodesic_distance_distribution(np.zeros((0, 2), int), 4)
    np.testing.assert_array_equal(empty, [0, 0, 0, 6])


def test_edge_lists_are_checked():
    ok = np.array([[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="self-loop"):
        degree_distribution(np.array([[0, 1], [2, 2]]), 4)
    with pytest.raises(ValueError, match="repeats the edge"):
        degree_distribution(np.array([[0, 1], [1, 0]]), 4)
    # directed: both orientations are two edges
    degree_distribution(np.array([[0, 1], [1, 0]]), 4, directed=True, kind="idegree")
    with pytest.raises(ValueError, match=r"outside 0\.\.3"):
        degree_distribution(np.array([[0, 4]]), 4)
    with pytest.raises(ValueError, match=r"shape \(m, 2\)"):
        degree_distribution(np.array([0, 1, 2]), 4)
    with pytest.raises(TypeError, match="integer node ids"):
        degree_distribution(ok.astype(float), 4)
    with pytest.raises(TypeError, match="num_nodes"):
        degree_distribution(ok, 4.0)
    with pytest.raises(ValueError, match="num_nodes"):
        degree_distribution(np.zeros((0, 2), int), 1)
    with pytest.raises(TypeError, match="directed"):
        degree_distribution(ok, 4, directed="yes")
    with pytest.raises(ValueError, match="partner_type"):
        edgewise_shared_partners(ok, 4, directed=True, partner_type="XYZ")
    with pytest.raises(ValueError, match=r"simulated_edges has a self-loop .* network 1"):
        goodness_of_fit(ok, [ok, np.array([[0, 0]])], 4)
    with pytest.raises(ValueError, match="single edge list"):
        goodness_of_fit(ok, ok, 4)
    with pytest.raises(ValueError, match="statistics"):
        goodness_of_fit(ok, [ok], 4, statistics=["idegree"])


def test_indicators_to_edge_lists_round_trip():
    graph = pytest.importorskip("networkx").gnp_random_graph(9, 0.4, seed=2)
    y = graph_to_edges(graph, nodelist=range(9))
    edges = indicators_to_edge_lists(y)
    assert sorted(map(tuple, edges.tolist())) == sorted(tuple(sorted(e)) for e in graph.edges)
    both = indicators_to_edge_lists(np.stack([y, 1 - y]))
    assert len(both[0]) + len(both[1]) == 36
    np.testing.assert_allclose(network_densities(both, 9), [y.mean(), 1 - y.mean()])


def test_monte_carlo_p_values_are_ergms():
    sim = np.arange(1, 11)[:, None] * np.ones((1, 4))  # 1..10 in every column
    obs = np.array([5.0, 2.0, 0.0, 11.0])
    # P(sim >= obs), P(sim <= obs): (0.6, 0.5), (0.9, 0.2), (1, 0), (0, 1)
    np.testing.assert_allclose(monte_carlo_p_values(obs, sim), [1.0, 0.4, 0.0, 0.0])
    np.testing.assert_allclose(monte_carlo_p_values([3.0], np.full((7, 1), 3.0)), [1.0])
    with pytest.raises(ValueError, match="observed"):
        monte_carlo_p_values([1.0, 2.0], sim)


def star_and_path(n=13):
    """A 5-star (nodes 0..5), a path (6..11) and isolates (12..n−1)."""
    star = np.array([[0, k] for k in range(1, 6)])
    path = np.array([[k, k + 1] for k in range(6, 11)])
    return np.concatenate([star, path]), n


def test_gof_of_simulations_equal_to_the_observed():
    edges, n = star_and_path()
    sims = [edges[np.random.default_rng(s).permutation(len(edges))] for s in range(20)]
    result = goodness_of_fit(edges, sims, n)
    assert list(result.statistics) == ["degree", "espartners", "distance"]
    for stat in result.statistics.values():
        np.testing.assert_array_equal(stat.p_values, 1.0)
        np.testing.assert_array_equal(stat.minimum, stat.observed)
        np.testing.assert_array_equal(stat.maximum, stat.observed)
        np.testing.assert_allclose(stat.interval()[0], stat.observed_proportions)
    assert result.outside_interval() == {"degree": (), "espartners": (), "distance": ()}
    # ergm's table: obs, min, mean, max, MC p-value, rows zero everywhere dropped
    text = str(result)
    assert text.index("minimum geodesic distance") < text.index("degree") < text.index(
        "edgewise shared partner")
    degree = result["degree"].table().splitlines()
    assert degree[2].split() == ["obs", "min", "mean", "max", "MC", "p-value"]
    np.testing.assert_array_equal([int(r.split()[0]) for r in degree[3:]], [0, 1, 2, 5])
    assert degree[3].split() == ["0", "1", "1", "1", "1", "1"]  # the isolate 11


def test_gof_finds_an_observed_network_outside_the_simulations():
    edges, n = star_and_path()
    rng = np.random.default_rng(0)
    # simulations: perfect matchings of nodes 0..11, node 12 isolated (no partners)
    sims = [rng.permutation(12).reshape(-1, 2) for _ in range(40)]
    obs_model = np.array([10.0, 0.0])
    sim_model = np.column_stack([np.full(40, 6.0), rng.normal(size=40)])
    result = goodness_of_fit(edges, sims, n, model_names=["edges", "noise"],
                             observed_model_statistics=obs_model,
                             simulated_model_statistics=sim_model)
    degree = result["degree"]
    # observed degrees 0 (1 node), 1 (7), 2 (4), 5 (1); every simulation 0 (1), 1 (12)
    np.testing.assert_array_equal(degree.observed[:6], [1, 7, 4, 0, 0, 1])
    np.testing.assert_array_equal(degree.p_values[[1, 2, 5]], 0.0)
    np.testing.assert_array_equal(degree.p_values[[0, 3, 4, 6]], 1.0)
    assert result.outside_interval()["degree"] == ("1", "2", "5")
    # observed pairs at distance 1..5: 10, 14, 3, 2, 1; simulated: 6 at distance 1
    np.testing.assert_array_equal(result["distance"].observed[:6], [10, 14, 3, 2, 1, 0])
    assert result["distance"].outside_interval(scale="count") == ("1", "2", "3", "4", "5",
                                                                  "Inf")
    assert result["espartners"].outside_interval() == ()  # no partners anywhere
    # ergm's plotted values: up to 3 past the last p-value below 1, and "Inf"
    assert shown_columns(degree) == (list(range(9)), False)
    assert shown_columns(result["distance"]) == (list(range(8)) + [12], True)
    model = result["model"]
    assert model.labels == ("edges", "noise")
    np.testing.assert_allclose(model.p_values[0], 0.0)
    assert model.outside_interval() == ("edges",)
    assert "Goodness-of-fit for model statistics" in result.table().splitlines()[0]


@pytest.mark.slow  # 8 s; the directed distributions are checked by default above
def test_gof_directed_defaults_and_figures():
    plt = pyplot_agg()

    graph, edges = random_graph(25, 0.12, 1, True)
    sims = [random_graph(25, 0.12, s, True)[1] for s in range(10, 30)]
    result = goodness_of_fit(edges, sims, 25, directed=True,
                             observed_model_statistics=[len(edges)],
                             simulated_model_statistics=[[len(s)] for s in sims],
                             model_names=["edges"])
    assert list(result.statistics) == ["idegree", "odegree", "espartners", "distance", "model"]
    np.testing.assert_array_equal(result["espartners"].observed,
                                  shared_partner_distribution(edges, 25, directed=True))
    for log_odds in (False, True):
        fig = result.plot(log_odds=log_odds)
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert len(panels) == 5  # one per statistic, ergm's order
        assert [ax.get_xlabel() for ax in panels] == [
            "model statistic", "odegree", "idegree", "edge-wise shared partners",
            "minimum geodesic distance"]
        for ax, name in zip(panels, ["model", "odegree", "idegree", "espartners",
                                     "distance"]):
            cols, _ = shown_columns(result[name])
            assert len(ax.patches) == len(cols)  # one box per value shown
            assert len(ax.get_xticks()) == len(cols)
        assert panels[-1].get_xticklabels()[-1].get_text() == "NR"
        # the observed network as the thick line (proportions, or their log-odds)
        stat = result["idegree"]
        cols, _ = shown_columns(stat)
        thick = [line for line in panels[2].get_lines() if line.get_linewidth() > 2]
        expected = stat.observed_proportions[cols]
        if log_odds:
            with np.errstate(divide="ignore"):
                expected = np.log(expected / (1 - expected))
        finite = np.isfinite(expected)
        np.testing.assert_allclose(thick[0].get_ydata()[finite], expected[finite])
        plt.close(fig)
    fig = result.plot(statistics=["distance"])
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 1
    plt.close(fig)
    with pytest.raises(ValueError, match="lacks"):
        result.plot(statistics=["degree"])


def ar1_chains(rho, num_chains, num_draws, k, seed):
    """Stationary AR(1) chains (unit marginal variance), (num_chains, num_draws, k)."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(size=(num_chains, num_draws, k)) * np.sqrt(1 - rho ** 2)
    x = np.empty_like(noise)
    x[:, 0] = rng.normal(size=(num_chains, k))
    for t in range(1, num_draws):
        x[:, t] = rho * x[:, t - 1] + noise[:, t]
    return x


def test_mcmc_diagnostics_effective_sample_size_of_ar1_chains():
    plt = pyplot_agg()

    C, D = 4, 5000
    iid = np.random.default_rng(1).normal(size=(C, D, 1))
    sticky = ar1_chains(0.8, C, D, 1, seed=2)
    samples = np.concatenate([iid, sticky], axis=-1) + np.array([50.0, 20.0])
    result = mcmc_diagnostics(samples, [50.0, 20.0], ["edges", "triangle"], max_lag=30)
    N = C * D
    assert 0.85 * N < result.effective_sample_size[0] < 1.15 * N
    expected = N * (1 - 0.8) / (1 + 0.8)  # 2222
    assert 0.75 * expected < result.effective_sample_size[1] < 1.25 * expected
    np.testing.assert_allclose(result.autocorrelation[1], [0.0, 0.8], atol=0.03)
    np.testing.assert_allclose(result.autocorrelation[5, 1], 0.8 ** 5, atol=0.05)
    np.testing.assert_allclose(result.r_hat, 1.0, atol=0.02)
    np.testing.assert_allclose(result.monte_carlo_se,
                               result.sd / np.sqrt(result.effective_sample_size))
    assert np.all(np.abs(result.z_scores) < 4)
    # the observed triangle count off by 10 Monte Carlo standard errors
    shifted = mcmc_diagnostics(samples, [50.0, 20.0 - 10 * result.monte_carlo_se[1]],
                               ["edges", "triangle"])
    np.testing.assert_allclose(shifted.z_scores[1], result.z_scores[1] + 10, rtol=1e-6)
    assert shifted.p_values[1] < 1e-10
    assert "triangle" in shifted.table() and "ESS" in shifted.table()
    fig = result.plot(max_lag=20)
    assert len(fig.axes) == 4  # trace and autocorrelation per term
    plt.close(fig)


def test_degeneracy_warning_names_the_far_term():
    rng = np.random.default_rng(3)
    sampled = np.stack([rng.normal(100, 5, (2, 500)), rng.normal(30, 3, (2, 500))], -1)
    names = ["edges", "triangle"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a healthy fit: no warning
        report = check_fit_degeneracy(sampled, [101.0, 29.0], names,
                                      simulated_densities=rng.uniform(0.09, 0.11, 50),
                                      observed_density=0.1)
    assert not report.degenerate and report.far_terms == ()
    with pytest.warns(DegeneracyWarning, match="triangle") as record:
        report = check_fit_degeneracy(sampled, [101.0, 60.0], names)
    assert "edges" not in str(record[0].message).split("outside")[0]
    assert report.degenerate and report.far_terms == ("triangle",)
    assert report.term("triangle").fraction_below == 1.0
    assert report.term("triangle").far and not report.term("edges").far
    assert np.isnan(report.mean_density)  # no simulated densities given
    # the simulated networks collapsed to (nearly) empty graphs
    with pytest.warns(DegeneracyWarning, match="nearly empty"):
        report = check_fit_degeneracy(sampled, [101.0, 29.0], names,
                                      simulated_densities=np.full(50, 0.002),
                                      observed_density=0.1)
    assert report.fraction_near_empty == 1.0 and report.far_terms == ()
    with pytest.warns(DegeneracyWarning, match="complete"):
        check_fit_degeneracy(sampled, [101.0, 29.0], names,
                             simulated_densities=np.ones(10))
    quiet = check_fit_degeneracy(sampled, [101.0, 60.0], names, warn=False)
    assert quiet.degenerate
    with pytest.raises(ValueError, match="observed has 1"):
        check_fit_degeneracy(sampled, [1.0], names)


@pytest.mark.slow
def test_distribution_timing_on_magnolia_sized_networks():
    """Prints (asserts nothing about) the time of the three distributions of 100
    networks the size of faux.magnolia.high."""
    path = NETWORKS / "faux_magnolia_high.npz"
    if not path.exists():
        pytest.skip(f"{path} missing")
    data = np.load(path, allow_pickle=False)
    edges, n = data["edges"], int(data["num_nodes"])
    rng = np.random.default_rng(0)
    sims = []
    for _ in range(100):  # same number of edges, half rewired at random
        keep = edges[rng.random(len(edges)) < 0.5]
        extra = rng.integers(0, n, (3 * len(edges), 2))
        extra = np.unique(np.sort(extra[extra[:, 0] != extra[:, 1]], 1), axis=0)
        both = np.unique(np.concatenate([np.sort(keep, 1), extra[rng.permutation(len(extra))]
                                         [:len(edges) - len(keep)]]), axis=0)
        sims.append(both)
    for name, f in (("degree", degree_distribution),
                    ("espartners", shared_partner_distribution),
                    ("distance", geodesic_distance_distribution)):
        start = time.perf_counter()
        f(sims, n)
        print(f"{name}: {time.perf_counter() - start:.2f} s for 100 networks of {n} nodes")
    start = time.perf_counter()
    goodness_of_fit(edges, sims, n)
    print(f"goodness_of_fit: {time.perf_counter() - start:.2f} s")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["faux_mesa_high", "faux_dixon_high"])
def test_observed_distributions_and_p_values_match_ergmx(name):
    ergmx = pytest.importorskip("ergmx")
    path = NETWORKS / f"{name}.npz"
    if not path.exists():
        pytest.skip(f"{path} missing")
    data = np.load(path, allow_pickle=False)
    edges, n, directed = data["edges"], int(data["num_nodes"]), bool(data["directed"])
    nx = pytest.importorskip("networkx")
    graph = nx.DiGraph() if directed else nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(map(tuple, edges.tolist()))
    formula, coef = ("edges + mutual", [-4.0, 2.0]) if directed else ("edges", [-4.6])
    tables = ergmx.gof(graph, formula, coef=coef, nsim=30, seed=1).tables
    ours = goodness_of_fit(edges, [edges], n, directed=directed)
    for stat in ours.statistics:
        table = tables[stat]
        assert tuple(table.labels) == ours[stat].labels
        np.testing.assert_array_equal(np.asarray(table.observed), ours[stat].observed)
        # ergm's p-values from ergmx's own simulated counts
        np.testing.assert_allclose(
            monte_carlo_p_values(table.observed, np.asarray(table.simulated)),
            np.asarray(table.pvalue), atol=1e-12)
