"""Exponential random graph models (ERGMs, p* models) of undirected graphs.

The model :func:`ergm` has one :class:`~numpyro_ugm.domains.Binary` site ``"y"`` over the
``n(n-1)/2`` node pairs of a graph (:mod:`numpyro_ugm.models.graphs`) and the
log-potential θ·s(y) for a vector of graph statistics s
(:mod:`numpyro_ugm.models.graph_statistics`), with one parameter per statistic in the
site ``"theta"``.

Its one factor gives the samplers their conditionals (:func:`numpyro_ugm.factor`): the
change statistics θ·Δ_e s of a block of pairs, from the adjacency rows of the block's
nodes, never a gradient of the whole graph's statistics. It also declares its Gibbs
blocks, so no structure analysis runs at setup: pairs interact only through a shared
node for every statistic but gwesp, so the blocks are **edge matchings** (the round-robin
schedule: n − 1 perfect matchings for even n, n for odd n); with ``edges`` alone, one
block; with ``gwesp`` any two pairs interact (through the shared partners of their
neighbours), so each pair is its own block.

Helpers beside the model: :mod:`numpyro_ugm.models.graph_estimation` (the MPLE start of
MCMC maximum likelihood, the degeneracy check).
"""

import functools
from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.typing import ArrayLike

from .._checks import check_count
from ..domains import Binary
from ..factors import factor
from .graph_statistics import (DEFAULT_DECAY, change_statistics_of, is_multilinear,
                               parse_statistics, statistics_of)
from .graphs import num_pairs

__all__ = ["ergm"]

# --- the Gibbs blocks and conditionals the model declares ----------------------------


def _colors(n, names):
    """The Gibbs coloring of the pairs: one color when the statistics are dyad
    independent (edges only), one color per pair with gwesp (any two pairs interact
    through the shared partners of their neighbours), else matchings (pairs interact
    only through a shared node)."""
    if set(names) <= {"edges"}:
        return np.zeros(num_pairs(n), np.int64)
    if "gwesp" in names:
        return np.arange(num_pairs(n))
    return _matching_colors(n)


@functools.lru_cache(maxsize=8)
def _matching_colors(n):
    """A color per edge variable such that each color is a matching (node-disjoint
    pairs): the round-robin schedule, n − 1 colors for even n, n for odd n (the fewest
    possible). Pairs (i, j) of the first m − 1 nodes (m = n rounded up to even) get
    (i + j) mod (m − 1); pairs with node m − 1 get 2i mod (m − 1)."""
    m = n + n % 2
    i, j = np.triu_indices(n, 1)
    return np.where(j == m - 1, 2 * i, i + j) % (m - 1)


def _conditionals(y, theta, n, parsed):
    """The ``conditionals(site, idx)`` hook of the model's factor: log-probabilities
    (b, 2) of the pairs ``idx`` being off / on, [0, θ·Δ s]."""
    def conditionals(site, idx):
        if site != "y":
            return None
        log_odds = change_statistics_of(y, n, parsed, idx) @ theta
        return jnp.stack([jnp.zeros_like(log_odds), log_odds], axis=-1)

    return conditionals


# --- the model -----------------------------------------------------------------------


def ergm(num_nodes: int, statistics: Sequence = ("edges", "triangles"), *,
         decay: float = DEFAULT_DECAY, prior_scale: float | None = None,
         init: ArrayLike | None = None) -> None:
    """Exponential random graph model: p(y; θ) ∝ exp(θ·s(y)) over undirected graphs.

    Sites: ``"y"``, a :class:`~numpyro_ugm.domains.Binary` site of the n(n−1)/2 node pairs
    (order of ``numpy.triu_indices(n, 1)``; data from
    :func:`~numpyro_ugm.models.graph_to_edges`), and ``"theta"``, one parameter per
    statistic in the order of ``statistics``.

    Statistics (:data:`~numpyro_ugm.models.graph_statistics.STATISTICS`):

    * ``"edges"``: number of edges;
    * ``"twostars"``: Σ_i C(d_i, 2), pairs of edges sharing a node (``"kstar2"``);
    * ``"threestars"``: Σ_i C(d_i, 3) (``"kstar3"``);
    * ``"triangles"``: number of triangles (``"triangle"``);
    * ``"isolates"``: number of nodes of degree 0;
    * ``"gwesp"``: geometrically weighted edgewise shared partners with fixed decay α,
      e^α Σ_k (1 − (1 − e^{−α})^k) EP_k (statnet's ``gwesp(α, fixed=TRUE)``);
    * ``"gwdegree"``: geometrically weighted degree, e^α Σ_i (1 − (1 − e^{−α})^{d_i}).

    Gibbs takes each block's conditionals from its change statistics (see the module
    docstring): blocks are edge matchings, single pairs with ``gwesp``. The PF paper's
    triad model (Asuncion et al. 2010, sec. 4.2) is
    ``statistics=("edges", "twostars", "triangles")``.

    Parameters
    ----------
    num_nodes : int
        Number of nodes n (at least 2).
    statistics : sequence of str or (str, float)
        Statistic names; ``("gwesp", 0.25)`` gives a statistic its own decay.
    decay : float
        Default decay α > 0 of ``gwesp`` / ``gwdegree``.
    prior_scale : float, optional
        If given, ``theta`` gets independent Normal(0, prior_scale) priors (MAP);
        otherwise it is a ``numpyro.param`` site (maximum likelihood).
    init : array (num_statistics,), optional
        Initial ``theta`` of the ``numpyro.param`` site (default zeros).
    """
    n = check_count("ergm", "num_nodes", num_nodes, minimum=2)
    parsed = parse_statistics(statistics, decay)
    k = len(parsed)
    if prior_scale is None:
        start = jnp.zeros(k) if init is None else jnp.asarray(init, jnp.result_type(float))
        if start.shape != (k,):
            raise ValueError(f"ergm: init must have shape ({k},) (one value per statistic), "
                             f"got {start.shape}")
        theta = numpyro.param("theta", start)
    else:
        theta = numpyro.sample("theta", dist.Normal(0.0, prior_scale).expand((k,)).to_event(1))
    y = numpyro.sample("y", Binary(num_pairs(n)))
    factor("statistics", theta @ statistics_of(y, n, parsed),
           conditionals=_conditionals(y, theta, n, parsed),
           colors={"y": _colors(n, tuple(name for name, _ in parsed))},
           multilinear=is_multilinear(parsed))
