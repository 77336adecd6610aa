"""Exponential random graph models (ERGMs, p* models) of undirected and directed
networks.

The model :func:`ergm` has one :class:`~numpyro_ugm.domains.Binary` site ``"y"`` over the
dyads of a network (:mod:`numpyro_ugm.network.graphs`: n(n−1)/2 node pairs, or n(n−1)
ordered pairs) and the log-potential θ·s(y) for the statistics s of its terms
(:mod:`numpyro_ugm.network.terms.structural`, :mod:`numpyro_ugm.network.terms.covariates`),
with one parameter per coefficient in the site ``"theta"``.

Its one factor gives the samplers their conditionals (:func:`numpyro_ugm.factor`): the
change statistics θ·Δs of a block of dyads, from the adjacency rows of the block's
nodes, never a gradient of the whole graph's statistics. It also declares its Gibbs
blocks, so no structure analysis runs at setup: covariate terms couple no dyads (one
block when every term is dyad independent); structural terms but gwesp couple dyads
only through a shared node, so the blocks are **matchings** (the round-robin schedule:
n − 1 perfect matchings for even n, n for odd n; for a directed network each matching's
pairs split into the two directions, 2(n − 1) blocks); with ``gwesp`` any two dyads
interact, so each dyad is its own block (for large sparse networks use the sparse
Metropolis–Hastings sampler of :mod:`numpyro_ugm.network.sampling.tnt` instead).

Helpers beside the model: :mod:`numpyro_ugm.network.estimation.mple` (the MPLE start of
MCMC maximum likelihood, the degeneracy check).
"""

import functools

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.typing import ArrayLike

from ..domains import Binary
from ..model.factors import factor
from .terms.structural import (DEFAULT_DECAY, change_statistics_of, is_multilinear,
                               resolve_terms, statistics_of, term_names)
from .terms.term import as_network
from .graphs import num_dyads

__all__ = ["ergm", "dyad_colors"]

# --- the Gibbs blocks and conditionals the model declares ----------------------------


def dyad_colors(net, terms) -> np.ndarray:
    """The Gibbs coloring of the dyads: one color when every term is dyad independent,
    one color per dyad with a ``"partners"`` term (gwesp), else matchings."""
    dependence = {t.dependence for t in terms}
    if dependence <= {"dyadic"}:
        return np.zeros(num_dyads(net.num_nodes, net.directed), np.int64)
    if "partners" in dependence:
        return np.arange(num_dyads(net.num_nodes, net.directed))
    return _matching_colors(net.num_nodes, net.directed)


@functools.lru_cache(maxsize=8)
def _matching_colors(n, directed=False):
    """A color per dyad such that each color's dyads are node disjoint: the round-robin
    schedule, n − 1 colors for even n, n for odd n (the fewest possible). Pairs (i, j)
    of the first m − 1 nodes (m = n rounded up to even) get (i + j) mod (m − 1); pairs
    with node m − 1 get 2i mod (m − 1). Directed: the ties i → j and j → i of a pair
    take the pair's color doubled, plus one for i > j."""
    m = n + n % 2
    if directed:
        i, j = np.nonzero(~np.eye(n, dtype=bool))
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        color = np.where(hi == m - 1, 2 * lo, lo + hi) % (m - 1)
        return 2 * color + (i > j)
    i, j = np.triu_indices(n, 1)
    return np.where(j == m - 1, 2 * i, i + j) % (m - 1)


def _conditionals(y, theta, net, terms):
    """The ``conditionals(site, idx)`` hook of the model's factor: log-probabilities
    (b, 2) of the dyads ``idx`` being off / on, [0, θ·Δ s]."""
    def conditionals(site, idx):
        if site != "y":
            return None
        log_odds = change_statistics_of(y, net, terms, idx) @ theta
        return jnp.stack([jnp.zeros_like(log_odds), log_odds], axis=-1)

    return conditionals


# --- the model -----------------------------------------------------------------------


def ergm(network, statistics=("edges", "triangles"), *, directed: bool | None = None,
         decay: float = DEFAULT_DECAY, prior_scale: float | None = None,
         init: ArrayLike | None = None) -> jnp.ndarray:
    """Exponential random graph model: p(y; θ) ∝ exp(θ·s(y)) over networks; returns the
    dyad variables ``y`` (so a model can add factors of its own on them).

    Sites: ``"y"``, a :class:`~numpyro_ugm.domains.Binary` site of the dyads (order of
    :func:`~numpyro_ugm.network.graphs.pair_tables`; data from
    :func:`~numpyro_ugm.network.graph_to_edges`), and ``"theta"``, one parameter per
    coefficient (names: :func:`~numpyro_ugm.network.terms.structural.term_names`).

    Terms (statnet's names and conventions; see
    :mod:`~numpyro_ugm.network.terms.structural` and
    :mod:`~numpyro_ugm.network.terms.covariates`): ``edges``, ``kstar(k)``
    (``twostars``, ``threestars``), ``triangle``, ``isolates``, ``degree(d)``,
    ``gwesp(α)``, ``gwdegree(α)``; directed ``mutual``, ``istar(k)``, ``ostar(k)``,
    ``ttriple``, ``ctriple``, ``idegree``, ``odegree``, ``gwidegree``, ``gwodegree``;
    covariates ``nodecov``, ``nodeocov``, ``nodeicov``, ``nodefactor``,
    ``nodeofactor``, ``nodeifactor``, ``nodematch``, ``absdiff``, ``nodemix``,
    ``edgecov``. The PF paper's triad model (Asuncion et al. 2010, sec. 4.2) is
    ``statistics=("edges", "twostars", "triangles")``.

    Gibbs takes each block's conditionals from its change statistics (see the module
    docstring). A further ``numpyro.factor`` of the user's own (e.g. θ₂ · Σ_e w_e y_e)
    joins the declared blocks when it is linear in ``y`` or declares its own colors.

    Parameters
    ----------
    network : int, Network or networkx graph
        The number of nodes n (at least 2), or a network whose node attributes the
        covariate terms read (:class:`~numpyro_ugm.network.terms.term.Network`, or a
        networkx ``Graph`` / ``DiGraph``: its nodes' attributes; its ties are not used
        here, they are the data).
    statistics : terms
        Names (``"triangles"``), (name, argument) pairs (``("gwesp", 0.25)``),
        :func:`~numpyro_ugm.network.term` s, or a statnet formula
        (``"edges + nodematch('Grade') + gwesp(0.5, fixed=TRUE)"``).
    directed : bool, optional
        Whether ties are directed (default: the network's; False for a node count).
    decay : float
        Default decay α > 0 of the geometrically weighted terms.
    prior_scale : float, optional
        If given, ``theta`` gets independent Normal(0, prior_scale) priors (MAP);
        otherwise it is a ``numpyro.param`` site (maximum likelihood).
    init : array (k,), optional
        Initial ``theta`` of the ``numpyro.param`` site (default zeros).
    """
    net = as_network(network, directed)
    if net.num_nodes < 2:
        raise ValueError(f"ergm: a network needs at least 2 nodes, got {net.num_nodes}")
    terms = resolve_terms(statistics, net, decay)
    k = len(term_names(terms))
    if prior_scale is None:
        start = jnp.zeros(k) if init is None else jnp.asarray(init, jnp.result_type(float))
        if start.shape != (k,):
            raise ValueError(f"ergm: init must have shape ({k},) (one value per "
                             f"coefficient: {term_names(terms)}), got {start.shape}")
        theta = numpyro.param("theta", start)
    else:
        theta = numpyro.sample("theta", dist.Normal(0.0, prior_scale).expand((k,)).to_event(1))
    y = numpyro.sample("y", Binary(num_dyads(net.num_nodes, net.directed)))
    factor("statistics", theta @ statistics_of(y, net, terms),
           conditionals=_conditionals(y, theta, net, terms),
           colors={"y": dyad_colors(net, terms)},
           multilinear=is_multilinear(terms))
    return y
