"""The panels of the goodness-of-fit figure
(:meth:`~numpyro_ugm.network.diagnostics.goodness_of_fit.GoodnessOfFit.plot`, ergm's
``plot(gof(fit))``): which values a panel shows and how it draws them.
"""

import numpy as np

__all__ = ["plot_panel", "shown_columns"]

_X_LABELS = {"model": "model statistic", "distance": "minimum geodesic distance",
             "odegree": "odegree", "idegree": "idegree", "degree": "degree",
             "espartners": "edge-wise shared partners"}
_UNITS = {"model": "statistics", "distance": "dyads", "odegree": "nodes",
          "idegree": "nodes", "degree": "nodes", "espartners": "edges"}


def shown_columns(stat):
    """ergm's plot.gof choice of columns (0-based): all for model statistics; else up to
    3 past the last p-value below 1 (or the last observed non-zero; where there is none
    either, the first 4 values, where ergm shows them all), with the Inf column of
    distances appended."""
    L = len(stat.labels)
    if stat.name == "model":
        return list(range(L)), False
    infinite = stat.name == "distance"
    finite = L - 1 if infinite else L
    p = stat.p_values[:finite]
    marks = np.flatnonzero(p < 1 if p.min() < 1 else stat.observed[:finite] > 0)
    last = marks.max() + 1 + 3 if len(marks) else 4
    cols = list(range(min(last, finite)))
    return (cols + [L - 1], True) if infinite else (cols, False)


def plot_panel(ax, stat, log_odds):
    """One :class:`~numpyro_ugm.network.diagnostics.goodness_of_fit.GofStatistic` as
    ergm's ``plot(gof)`` panel on the matplotlib axes ``ax``."""
    cols, gap = shown_columns(stat)
    sim = stat.simulated_proportions
    obs = stat.observed_proportions
    bds = np.quantile(sim, [0.025, 0.975], axis=0)
    unit = _UNITS[stat.name]
    if stat.name == "model":
        ylabel = ("log-odds of the " if log_odds else "") + "quantile among simulations"
    else:
        ylabel = f"log-odds for {unit}" if log_odds else f"proportion of {unit}"
    if log_odds:
        with np.errstate(divide="ignore", invalid="ignore"):
            sim, obs, bds = (np.log(v / (1 - v)) for v in (sim, obs, bds))
        finite = np.concatenate([a[np.isfinite(a)].ravel() for a in (sim, obs, bds)])
        lo, hi = (finite.min(), finite.max()) if finite.size else (-1.0, 1.0)
        sim, obs, bds = (np.where(np.isposinf(v), hi, np.where(np.isneginf(v), lo, v))
                         for v in (sim, obs, bds))
    x = np.arange(1, len(cols) + 1)
    labels = [stat.labels[c] for c in cols]
    if gap:
        labels[-1] = "NR"
    ax.boxplot(sim[:, cols], positions=x, widths=0.6, showfliers=False, patch_artist=True,
               boxprops={"facecolor": "white"}, medianprops={"color": "black"})
    ax.set_xticks(x, labels, fontsize=7, rotation=90 if stat.name == "model" else 0)
    # the finite values joined by lines; the unreachable pairs apart, as ergm
    parts = [slice(0, len(cols) - 1), slice(len(cols) - 1, None)] if gap else [slice(None)]
    for part in parts:
        xs, cs = x[part], cols[part]
        for q in (0, 1):
            ax.plot(xs, bds[q, cs], color="0.75", lw=1)
            ax.plot(xs, bds[q, cs], "o", mfc="none", mec="black", ms=4)
        ax.plot(xs, obs[cs], color="black", lw=2.5)
        ax.plot(xs, obs[cs], "o", color="black", ms=4)
    ax.plot(x, sim[:, cols].mean(axis=0), "D", color="blue", ms=5)
    ax.set_xlabel(_X_LABELS[stat.name])
    ax.set_ylabel(ylabel)
