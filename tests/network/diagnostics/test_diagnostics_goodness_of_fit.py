"""Goodness of fit (``network/diagnostics/goodness_of_fit.py`` and ``gof_plot.py``): ergm's
Monte Carlo p-values and intervals on cases with a known answer, the figures (Agg), and
the observed distributions and p-values against ergmx."""


import numpy as np
import pytest

from numpyro_ugm.network.diagnostics.distributions import shared_partner_distribution
from numpyro_ugm.network.diagnostics.gof_plot import shown_columns
from numpyro_ugm.network.diagnostics.goodness_of_fit import goodness_of_fit, monte_carlo_p_values
from helpers.network import STATNET


NETWORKS = STATNET


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
def test_gof_directed_defaults_and_figures(pyplot_agg, random_graph):
    plt = pyplot_agg

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


@pytest.mark.slow
@pytest.mark.parametrize("name", ["faux_mesa_high", "faux_dixon_high"])
def test_observed_distributions_and_p_values_match_ergmx(name):
    ergmx = pytest.importorskip("ergmx")
    path = NETWORKS / f"{name}.npz"
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
