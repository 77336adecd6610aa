"""Goodness of fit of a network model, as statnet's ``gof()`` does it: distributions of
networks simulated from a fit (:mod:`~numpyro_ugm.network.diagnostics.distributions`) against
the observed network's.

:func:`goodness_of_fit` makes the comparison (:class:`GoodnessOfFit`, one
:class:`GofStatistic` per statistic): its table prints like ergm's ``print(gof(fit))``,
:meth:`GoodnessOfFit.plot` draws ergm's boxplot figure (panels drawn by
:mod:`~numpyro_ugm.network.diagnostics.gof_plot`) and :meth:`GoodnessOfFit.outside_interval`
lists the values where the observed network leaves the simulated 95 % band.
:func:`monte_carlo_p_values` are ergm's p-values of the tables.

matplotlib is imported by the plotting method only.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...runtime.optional import require
from .distributions import (check_partner_type, degree_rows, distance_rows, Networks,
                                    shared_partner_rows)
from .gof_plot import plot_panel

__all__ = ["monte_carlo_p_values", "goodness_of_fit", "GoodnessOfFit", "GofStatistic",
           "GOF_STATISTICS"]

#: the distributions :func:`goodness_of_fit` compares (ergm's GOF terms), and "model"
GOF_STATISTICS = ("degree", "idegree", "odegree", "espartners", "distance", "model")

# ergm's order of the tables (print.gof) and of the panels (plot.gof)
_TABLE_ORDER = ("model", "distance", "odegree", "idegree", "degree", "espartners")
_PANEL_ORDER = ("model", "degree", "odegree", "idegree", "espartners", "distance")
_TITLES = {"model": "model statistics", "distance": "minimum geodesic distance",
           "odegree": "out-degree", "idegree": "in-degree", "degree": "degree",
           "espartners": "edgewise shared partner"}


def monte_carlo_p_values(observed: Any, simulated: Any) -> np.ndarray:
    """ergm's two-sided Monte Carlo p-values of observed values among simulated ones.

    ``p = min(1, 2 min(P̂(sim ≥ obs), P̂(sim ≤ obs)))`` per column, the fractions taken
    over the simulations (ties count on both sides, so simulations all equal to the
    observed value give 1; an observed value beyond every simulation gives 0).

    Parameters
    ----------
    observed : array (L,)
    simulated : array (S, L)

    Returns
    -------
    numpy.ndarray (L,)
    """
    obs = np.asarray(observed, np.float64)
    sim = np.asarray(simulated, np.float64)
    if obs.ndim != 1 or sim.ndim != 2 or sim.shape[1] != obs.shape[0] or len(sim) == 0:
        raise ValueError(f"monte_carlo_p_values: need observed (L,) and simulated (S, L) "
                         f"with S >= 1, got {obs.shape} and {sim.shape}")
    above = np.mean(sim >= obs, axis=0)
    below = np.mean(sim <= obs, axis=0)
    return np.minimum(1.0, 2.0 * np.minimum(above, below))


def _decimals(values, most=4):
    """Fewest decimals (<= most) showing every value exactly (to 1e-9), as R's print
    shows a column with one number of decimals."""
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    for d in range(most + 1):
        if np.all(np.abs(np.round(v, d) - v) < 1e-9 * np.maximum(1.0, np.abs(v))):
            return d
    return most


def format_table(labels, columns, header):
    """Right-aligned text table: ``columns`` a list of arrays, one per header name."""
    cells = []
    for col in columns:
        d = _decimals(col)
        cells.append([("NaN" if not np.isfinite(x) else f"{x:.{d}f}") for x in col])
    widths = [max(len(h), *(len(c) for c in cs)) if len(cs) else len(h)
              for h, cs in zip(header, cells)]
    label_width = max([0, *(len(str(x)) for x in labels)])
    lines = [" " * label_width + "".join(f" {h:>{w}}" for h, w in zip(header, widths))]
    for r, lab in enumerate(labels):
        lines.append(f"{str(lab):<{label_width}}" +
                     "".join(f" {cs[r]:>{w}}" for cs, w in zip(cells, widths)))
    return "\n".join(lines)


def _quantiles_of_ranks(sim):
    """Each simulated value's rank in its column over S (R's ``rank``, ties averaged)."""
    ranks = np.empty(sim.shape, np.float64)
    for c, column in enumerate(sim.T):
        ordered = np.sort(column)
        below = np.searchsorted(ordered, column, side="left")
        through = np.searchsorted(ordered, column, side="right")
        ranks[:, c] = (below + 1 + through) / 2
    return ranks / sim.shape[0]


@dataclass(frozen=True)
class GofStatistic:
    """The observed network against the simulated ones for one statistic.

    Attributes
    ----------
    name : str
        ``"degree"``, ``"idegree"``, ``"odegree"``, ``"espartners"``, ``"distance"`` or
        ``"model"``.
    labels : tuple of str
        The value of each column: degrees / shared partners ``"0"``, ``"1"``, ...;
        distances ``"1"``, ..., ``"Inf"``; model statistics their names.
    observed : numpy.ndarray (L,)
        The observed network's counts (or statistics).
    simulated : numpy.ndarray (S, L)
        The simulated networks' counts (or statistics).
    """

    name: str
    labels: tuple
    observed: np.ndarray
    simulated: np.ndarray

    @property
    def title(self) -> str:
        """ergm's title of the table (``"degree"``, ``"minimum geodesic distance"``...)."""
        return _TITLES[self.name]

    @property
    def mean(self) -> np.ndarray:
        """Mean of each column over the simulations."""
        return self.simulated.mean(axis=0)

    @property
    def minimum(self) -> np.ndarray:
        """Smallest value of each column over the simulations."""
        return self.simulated.min(axis=0)

    @property
    def maximum(self) -> np.ndarray:
        """Largest value of each column over the simulations."""
        return self.simulated.max(axis=0)

    @property
    def p_values(self) -> np.ndarray:
        """ergm's two-sided Monte Carlo p-values (:func:`monte_carlo_p_values`)."""
        return monte_carlo_p_values(self.observed, self.simulated)

    @property
    def observed_proportions(self) -> np.ndarray:
        """What ergm's figure shows of the observed network: the counts over their total
        (the fraction of nodes, edges, dyads); for ``"model"``, the fraction of the
        simulations at or above the observed value."""
        if self.name == "model":
            return np.mean(self.simulated >= self.observed, axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.observed / self.observed.sum()

    @property
    def simulated_proportions(self) -> np.ndarray:
        """(S, L) what ergm's figure shows of the simulations: each network's counts over
        its total (1 where the total is 0, as ergm); for ``"model"``, each simulated
        value's rank among the simulations over S."""
        if self.name == "model":
            return _quantiles_of_ranks(self.simulated)
        total = self.simulated.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = self.simulated / total
        return np.where(np.isnan(p), 1.0, p)

    def interval(self, level: float = 0.95, *, scale: str = "proportion") -> np.ndarray:
        """(2, L) central ``level`` interval of the simulations (R's default quantiles):
        of the proportions plotted (``scale="proportion"``, ergm's band; for ``"model"``
        this is the raw statistics) or of the counts (``scale="count"``)."""
        check_level("GofStatistic.interval", level)
        if scale not in ("proportion", "count"):
            raise ValueError(f"GofStatistic.interval: scale must be 'proportion' or "
                             f"'count', got {scale!r}")
        values = (self.simulated_proportions if scale == "proportion"
                  and self.name != "model" else self.simulated)
        tail = (1 - level) / 2
        return np.quantile(values, [tail, 1 - tail], axis=0)

    def outside_interval(self, level: float = 0.95, *, scale: str = "proportion") -> tuple:
        """Labels of the values where the observed network lies outside the central
        ``level`` interval of the simulations (:meth:`interval`)."""
        lo, hi = self.interval(level, scale=scale)
        obs = (self.observed_proportions if scale == "proportion" and self.name != "model"
               else self.observed)
        out = (obs < lo - 1e-12) | (obs > hi + 1e-12)
        return tuple(self.labels[k] for k in np.flatnonzero(out))

    def table(self) -> str:
        """ergm's table: obs, min, mean, max, MC p-value, without the rows that are 0 in
        the observed network and in every simulation."""
        keep = ~((self.observed == 0) & (self.minimum == 0) & (self.maximum == 0))
        rows = np.flatnonzero(keep)
        columns = [self.observed[rows], self.minimum[rows], self.mean[rows],
                   self.maximum[rows], self.p_values[rows]]
        return (f"Goodness-of-fit for {self.title}\n\n" +
                format_table([self.labels[r] for r in rows], columns,
                              ["obs", "min", "mean", "max", "MC p-value"]))

    def __str__(self) -> str:
        return self.table()


def check_level(owner, level):
    """Refuse a ``level`` outside (0, 1)."""
    if not 0 < float(level) < 1:
        raise ValueError(f"{owner}: level must be in (0, 1), got {level!r}")


@dataclass(frozen=True)
class GoodnessOfFit:
    """Result of :func:`goodness_of_fit`: one :class:`GofStatistic` per statistic.

    Print it for ergm's tables, call :meth:`plot` for ergm's figure and
    :meth:`outside_interval` for the values the fit misses.
    """

    statistics: dict
    num_nodes: int
    directed: bool
    num_simulations: int
    partner_type: str = field(default="OTP")
    #: the multivariate effective size of the simulated model statistics (None: not
    #: checked, e.g. independent draws), the check's warning ("" when none) and the
    #: steps between the draws of each chain (None: independent draws)
    effective_size: float | None = None
    estimate_check: str = ""
    interval: int | None = None

    def __getitem__(self, name: str) -> GofStatistic:
        if name not in self.statistics:
            raise KeyError(f"GoodnessOfFit: no statistic {name!r}; it has "
                           f"{list(self.statistics)}")
        return self.statistics[name]

    def table(self) -> str:
        """ergm's ``print(gof(fit))``: the tables in ergm's order (model statistics,
        distances, out-degree, in-degree, degree, edgewise shared partners)."""
        names = [s for s in _TABLE_ORDER if s in self.statistics]
        text = "\n\n".join(self.statistics[s].table() for s in names)
        if self.effective_size is not None:
            text += (f"\n\nEffective sample size of the simulated model statistics: "
                     f"{self.effective_size:.1f} of {self.num_simulations}"
                     + ("" if self.interval is None
                        else f" (draws {self.interval} steps apart)"))
        if self.estimate_check:
            text += f"\nWarning: {self.estimate_check}"
        return text

    def __str__(self) -> str:
        return self.table()

    def outside_interval(self, level: float = 0.95, *, scale: str = "proportion") -> dict:
        """The fit's misses: for each statistic, the labels of the values where the
        observed network leaves the central ``level`` interval of the simulations (the
        light lines of :meth:`plot` for the default ``level``, on the proportions
        plotted; ``scale="count"`` compares the counts). Statistics without a miss map
        to an empty tuple."""
        return {s: self.statistics[s].outside_interval(level, scale=scale)
                for s in self.statistics}

    def plot(self, *, log_odds: bool = False, statistics: Sequence | None = None,
             num_columns: int | None = None, figsize: tuple | None = None,
             title: str = "Goodness-of-fit diagnostics") -> Any:
        """ergm's ``plot(gof(fit))``: one panel per statistic.

        Each panel holds, per value, the boxplot of the simulated proportions (the
        fraction of nodes of each degree, of edges with each number of shared partners,
        of dyads at each distance; without outliers, as ergm), their 2.5 % and 97.5 %
        quantiles as light grey lines with open circles, the simulated means as blue
        diamonds and the observed network as a thick black line. The values shown stop,
        as ergm's, 3 after the last with a p-value below 1 (or, if there is none, the
        last observed non-zero; if none either, after 4 values, where ergm shows every
        value); distances end with the unreachable pairs "NR". The
        model statistics panel shows each simulated statistic's rank among the
        simulations over S and, for the observed, the fraction of simulations at or
        above it (near 0.5 in a good fit).

        Parameters
        ----------
        log_odds : bool
            Plot log(p / (1 − p)) of the proportions instead (ergm's
            ``plotlogodds=TRUE``); infinite values are drawn at the finite extremes.
        statistics : sequence of str, optional
            Which panels (default: all, in ergm's order: model, degree, odegree, idegree,
            espartners, distance).
        num_columns : int, optional
            Panels per row (default: up to 3).
        figsize : (float, float), optional
        title : str
            The figure's title.

        Returns
        -------
        matplotlib.figure.Figure
        """
        plt = require("matplotlib.pyplot", "network", "the figure")

        names = ([s for s in _PANEL_ORDER if s in self.statistics] if statistics is None
                 else list(statistics))
        for s in names:
            if s not in self.statistics:
                raise ValueError(f"GoodnessOfFit.plot: statistics names {s!r}, which this "
                                 f"result lacks (it has {list(self.statistics)})")
        if not names:
            raise ValueError("GoodnessOfFit.plot: no statistics to plot")
        cols = min(len(names), 3) if num_columns is None else int(num_columns)
        if cols < 1:
            raise ValueError(f"GoodnessOfFit.plot: num_columns must be >= 1, got {cols}")
        rows = -(-len(names) // cols)
        fig, axes = plt.subplots(rows, cols, squeeze=False, layout="constrained",
                                 figsize=figsize or (4.8 * cols, 3.9 * rows))
        for ax, s in zip(axes.ravel(), names):
            plot_panel(ax, self.statistics[s], log_odds)
        for ax in axes.ravel()[len(names):]:
            ax.set_visible(False)
        fig.suptitle(title)
        return fig


def goodness_of_fit(observed_edges: Any, simulated_edges: Any, num_nodes: int,
                    directed: bool = False, *, statistics: Sequence | None = None,
                    partner_type: str = "OTP", model_names: Sequence | None = None,
                    observed_model_statistics: Any = None,
                    simulated_model_statistics: Any = None) -> GoodnessOfFit:
    """Goodness of fit of a network model, as statnet's ``gof(fit)``: the observed
    network's distributions against those of networks simulated from the fit.

    Parameters
    ----------
    observed_edges : array (m, 2)
        The observed network's edge list (0-based node ids).
    simulated_edges : sequence of arrays (m_s, 2)
        Edge lists of the S networks simulated from the fitted model (ergm uses 100).
    num_nodes : int
        Number of nodes n of every network.
    directed : bool
        Whether rows are sender → receiver.
    statistics : sequence of str, optional
        Among ``"degree"`` (undirected), ``"idegree"``, ``"odegree"`` (directed),
        ``"espartners"``, ``"distance"`` and ``"model"``. Default, as ergm's: degree,
        espartners and distance (directed: idegree, odegree, espartners, distance), and
        model when model statistics are given.
    partner_type : str
        Shared partners of a directed edge
        (:data:`~numpyro_ugm.network.diagnostics.distributions.SHARED_PARTNER_TYPES`): OTP, ergm's
        default.
    model_names, observed_model_statistics, simulated_model_statistics
        The fitted model's statistics: names (k,), observed (k,) and of the simulated
        networks (S, k), for the ``"model"`` table (optional).

    Returns
    -------
    GoodnessOfFit
        One :class:`GofStatistic` per statistic (counts of the values 0..n−1 for degrees,
        0..n−2 for shared partners, 1..n−1 and Inf for distances), with ergm's table and
        figure.
    """
    owner = "goodness_of_fit"
    obs = Networks(owner, "observed_edges", observed_edges, num_nodes, directed)
    if not obs.single:
        raise ValueError(f"{owner}: observed_edges must be one edge list (m, 2), got "
                         f"{obs.count} networks")
    sims = Networks(owner, "simulated_edges", simulated_edges, num_nodes, directed)
    if sims.single:
        raise ValueError(f"{owner}: simulated_edges must be a sequence of edge lists (one "
                         "per simulated network), got a single edge list")
    n, directed, S = obs.n, obs.directed, sims.count
    check_partner_type(owner, partner_type)
    has_model = observed_model_statistics is not None or simulated_model_statistics is not None
    allowed = (("idegree", "odegree") if directed else ("degree",)) + (
        "espartners", "distance", "model")
    if statistics is None:
        statistics = allowed[:-1] + (("model",) if has_model else ())
    statistics = list(statistics)
    for s in statistics:
        if s not in allowed:
            raise ValueError(f"{owner}: statistics must be among {allowed} for a "
                             f"{'directed' if directed else 'undirected'} network, got {s!r}")
    if len(set(statistics)) != len(statistics):
        raise ValueError(f"{owner}: statistics repeats a name: {statistics}")

    result = {}
    for s in statistics:
        if s in ("degree", "idegree", "odegree"):
            pair = [degree_rows(x, s) for x in (obs, sims)]
            labels = tuple(str(d) for d in range(n))
        elif s == "espartners":
            pair = [shared_partner_rows(x, partner_type) for x in (obs, sims)]
            labels = tuple(str(d) for d in range(n - 1))
        elif s == "distance":
            pair = [distance_rows(x) for x in (obs, sims)]
            labels = tuple(str(d) for d in range(1, n)) + ("Inf",)
        else:
            pair, labels = _model_statistics(owner, model_names, observed_model_statistics,
                                             simulated_model_statistics, S)
            pair = [pair[0][None], pair[1]]
        result[s] = GofStatistic(s, labels, np.asarray(pair[0][0]), np.asarray(pair[1]))
    return GoodnessOfFit(result, n, directed, S, partner_type)


def _model_statistics(owner, names, observed, simulated, num_sims):
    if observed is None or simulated is None:
        raise ValueError(f"{owner}: the 'model' table needs observed_model_statistics (k,) "
                         "and simulated_model_statistics (S, k)")
    obs = np.asarray(observed, np.float64)
    sim = np.asarray(simulated, np.float64)
    if obs.ndim != 1 or sim.ndim != 2 or sim.shape[1] != obs.shape[0]:
        raise ValueError(f"{owner}: observed_model_statistics must be (k,) and "
                         f"simulated_model_statistics (S, k), got {obs.shape} and "
                         f"{sim.shape}")
    if sim.shape[0] != num_sims:
        raise ValueError(f"{owner}: simulated_model_statistics has {sim.shape[0]} rows, "
                         f"one per simulated network is {num_sims}")
    names = (tuple(f"stat{k}" for k in range(obs.shape[0])) if names is None
             else tuple(str(x) for x in names))
    if len(names) != obs.shape[0]:
        raise ValueError(f"{owner}: model_names has {len(names)} names for "
                         f"{obs.shape[0]} statistics")
    return [obs, sim], names
