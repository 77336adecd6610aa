"""One call from a network to a fitted ERGM, as statnet's
``ergm(net ~ edges + nodematch("Grade") + gwesp(0.5, fixed=TRUE))``, and its goodness of
fit.

:func:`fit_ergm` reads the network (a networkx graph with node attributes), resolves
the terms (:mod:`~numpyro_ugm.network.terms.term`), starts at the MPLE
(:func:`~numpyro_ugm.network.mple`) and then

* for dyad-independent terms (covariates, edges), stops there: it is the exact MLE, with
  exact standard errors and log-likelihood;
* otherwise runs Monte Carlo maximum likelihood to ergm's convergence criterion
  (:func:`~numpyro_ugm.network.estimation.mcmle.mcmle`) with persistent chains of a
  :class:`~numpyro_ugm.network.sampling.simulation.NetworkSimulator` (sparse tie / no-tie
  Metropolis–Hastings or dense block Gibbs), or, given ``estimator=`` (any of the
  package's estimators: ``ugm.PCD(...)``, ``ugm.PSMC(...)``, ...), learns θ with
  :class:`~numpyro_ugm.learn.MLE` instead; then standard errors from a final sample at
  the estimate and the log-likelihood by bridge sampling.

Networks of more than :data:`SPARSE_LIMIT` dyads never hold an O(N) array: the observed
statistics come from the edge list
(:func:`~numpyro_ugm.network.estimation.sparse_statistics.sparse_statistics`), the MPLE from
every tie and a weighted sample of non-ties, as R ergm's ``init.MPLE.samplesize``
(:mod:`~numpyro_ugm.network.estimation.sampled_mple`), the log-likelihood's reference log Z by
exact sums over the dyads in blocks; see ``mple_samplesize``.

:func:`gof_ergm` simulates networks from a fit and compares their degree, edgewise
shared partner and geodesic distance distributions with the observed network's
(:mod:`~numpyro_ugm.network.diagnostics.goodness_of_fit`).
"""

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import as_key, check_count
from .estimation.dyad_independent import dyad_independent_mle, newton_mle
from .estimation.sampled_mple import mple_samplesize as mple_samplesize_rule
from .estimation.sampled_mple import sample_dyads, sampled_mple, sampled_reference
from .summary import ErgmFit, dyad_independent_fit, exact_fit, fit_at, mcmle_fit
from .diagnostics.mcmc import check_ergm_degeneracy
from .diagnostics.goodness_of_fit import GoodnessOfFit, goodness_of_fit
from .terms.covariates import covariate_design
from .terms.structural import (DEFAULT_DECAY, change_statistics, ergm_statistics, resolve_terms,
                               term_names)
from .terms.term import Network, as_network
from .graphs import check_edge_list, graph_edge_list, num_dyads, pair_tables
from .sampling.chains import init_network_chains
from .terms.compiled import (native_chains, native_design, native_program,
                                   native_statistics)
from .sampling.tnt import _check_triadic
from .sampling.simulation import (NetworkSimulator, adaptive_simulate, dense_simulator,
                                 sparse_simulator)
from .estimation.sparse_statistics import dyadic_sums, sparse_statistics

__all__ = ["fit_ergm", "gof_ergm", "NetworkFit"]

#: networks with at most this many dyads use dense block Gibbs under ``sampler="auto"``
#: when the sparse sampler cannot run compiled (a term users built)
DENSE_LIMIT = 500
#: networks with more dyads than this (about 510 nodes undirected) get their observed
#: statistics, MPLE and log-likelihood reference from the edge list and neighbour lists
#: under ``mple_samplesize="auto"``, not from (n, n) matrices: the dense path's O(n³)
#: work and its compilation outgrow the rest of a fit (edges + 2 covariates + gwesp, 1.5
#: ties per node, 2-core CPU: 20 s at 1,500 nodes, 82 s at 2,900, against 5 s for the
#: sparse path; the whole faux.magnolia.high fit, 1.07·10⁶ dyads, 22 s with the dense
#: MPLE and 14 s without, once the sampler ran compiled)
SPARSE_LIMIT = 2 ** 17
#: the most dyads :func:`gof_ergm` draws one by one for a dyad-independent fit
DYAD_DRAWS_LIMIT = 2 ** 21


@dataclasses.dataclass
class NetworkFit:
    """What :func:`fit_ergm` keeps besides the :class:`ErgmFit` numbers: the network,
    its terms and the simulator whose chains sit at the estimate (for :func:`gof_ergm`)."""

    network: Network
    edges: np.ndarray
    statistics: Any
    observed: np.ndarray
    simulator: NetworkSimulator | None
    interval: int
    burnin: int = 0


#: draws per bridge of the log-likelihood (16 bridges: 8,192 draws in all, ergmx's
#: 33 x 256 = 8,448)
BRIDGE_DRAWS = 512


def _observed_network(network, edges):
    """(Network, ties (m, 2)) from a networkx graph (ties in the order of the dyads), or
    a Network with ``edges``; no (n, n) array."""
    if isinstance(network, Network):
        if edges is None:
            raise ValueError("fit_ergm: with a Network, give its ties as edges=(m, 2)")
        return network, check_edge_list("fit_ergm", "edges", edges, network.num_nodes,
                                        network.directed)
    if edges is not None:
        raise ValueError("fit_ergm: edges= is for a Network; a graph carries its own ties")
    return as_network(network), graph_edge_list(network)


def _dense_dyads(net, ties):
    """The dyad indicators y (N,) of the ties (the dense path)."""
    y = np.zeros(num_dyads(net.num_nodes, net.directed), np.float32)
    y[pair_tables(net.num_nodes, net.directed)[0][ties[:, 0], ties[:, 1]]] = 1
    return y


def _sample_size(mple_samplesize, N, m):
    """Non-ties of the sampled MPLE, or None for the dense path (every dyad)."""
    if isinstance(mple_samplesize, str):
        if mple_samplesize != "auto":
            raise ValueError(f"fit_ergm: mple_samplesize must be 'auto', a count or None, got "
                             f"{mple_samplesize!r}")
        return None if N <= SPARSE_LIMIT else mple_samplesize_rule(N, m)
    return None if mple_samplesize is None else check_count(
        "fit_ergm", "mple_samplesize", mple_samplesize)


def fit_ergm(network: Any, statistics: Any = "edges", *, edges: Any = None,
             estimator: Any = None, sampler: str = "auto", num_chains: int = 4,
             num_draws: int = 256, interval: int | None = None, burnin: int | None = None,
             decay: float = DEFAULT_DECAY, rng_key: Any = None, log_likelihood: bool = True,
             max_degree: int | None = None, effective_size: float | None = 64,
             max_interval: int | None = None, num_steps: int = 2000, optimizer: Any = None,
             mple_samplesize: int | str | None = "auto", triadic: float | None = None,
             threads: int | None = None, native: bool | None = None, init: Any = None,
             **mcmle_options) -> ErgmFit:
    """Fit an ERGM to one observed network, as statnet's ``ergm()``.

    Parameters
    ----------
    network : networkx.Graph / DiGraph, or Network
        The observed network with its node attributes (a ``Network`` needs ``edges``).
    statistics : terms
        A statnet formula (``"edges + nodematch('Grade') + gwesp(0.5, fixed=TRUE)"``),
        names, (name, argument) pairs or :func:`~numpyro_ugm.network.term` s.
    edges : array (m, 2), optional
        The ties of a ``Network`` (sender, receiver when directed).
    estimator : Estimator, optional
        Learn θ with :class:`~numpyro_ugm.learn.MLE` and this estimator (``num_steps``
        optimizer steps, Adam(0.01) unless ``optimizer``, iterates averaged over the
        second half) instead of Monte Carlo maximum likelihood.
    sampler : {"auto", "sparse", "gibbs"}
        Chains for the MCMLE, the standard errors and the log-likelihood: tie / no-tie
        Metropolis–Hastings on neighbour lists, or dense block Gibbs; ``"auto"``: the
        sparse sampler when it runs compiled (every term built in; flomarriage +
        triangle: 3.7 s against 17 s for Gibbs), else Gibbs for networks of at most 500
        dyads.
    num_chains, num_draws : int
        Chains run side by side, and draws kept per chain per simulation (ergm's
        ``MCMC.samplesize`` is their product).
    interval : int, optional
        Steps between draws: proposals (sparse; default 1024, ergm's ``MCMC.interval``)
        or sweeps (Gibbs; default enough sweeps for about 1024 dyad updates).
    burnin : int, optional
        Steps run after each change of θ before drawing (default 16 intervals, ergm's;
        it grows with the interval).
    effective_size : float or None
        ergm's ``MCMC.effectiveSize`` (64): a sample whose multivariate effective size
        (:func:`~numpyro_ugm.network.estimation.samples.multivariate_effective_size`)
        falls short is drawn again, the chains continued, with
        the interval (and burn-in) multiplied by a power of two, up to ``max_interval``
        steps (default 1024 intervals); later samples keep the longer interval. ``None``:
        a fixed interval.
    decay : float
        Default decay of the geometrically weighted terms.
    rng_key : jax PRNG key, optional
        Default PRNGKey(0): the same key gives the same fit.
    log_likelihood : bool
        Estimate the log-likelihood (bridge sampling) for AIC/BIC.
    max_degree : int, optional
        Degree capacity of the sparse sampler's neighbour lists.
    triadic : float, optional
        Share of the sparse sampler's proposals that are triadic (a tie k − i and a
        neighbour j of k: toggling (i, j) closes or opens a triangle; directed: two-paths
        i → k → j). Default 0.5 for models with a triangle, triple or shared-partner
        term, 0 otherwise
        (:func:`~numpyro_ugm.network.sampling.simulation.triadic_weight`), as ergmx. For
        the sparse sampler only (an error with Gibbs).
    threads : int, optional
        Threads that run the sparse sampler's chains in groups, side by side (default:
        the CPU's cores; :func:`~numpyro_ugm.network.sampling.simulation.chain_groups`).
        The fit does not depend on it. Gibbs runs its chains in one program.
    native : bool, optional
        Whether the sparse sampler runs compiled by numba
        (:mod:`~numpyro_ugm.network.sampling.compiled`, 5-8x the JAX sampler's proposals per
        second) or in JAX: None (default) compiled when every term is built in, True
        requires it, False the JAX sampler. The two draw different random numbers (the
        same distribution).
    init : array (k,), optional
        θ to start the Monte Carlo MLE from instead of the MPLE (ergm's
        ``control.ergm(init=)``), in the order of the terms' coefficients (``fit.names``):
        to continue a fit that stopped, or start a hard one elsewhere. Unused by
        dyad-independent models (their MLE is exact).
    mple_samplesize : "auto", int or None
        None: the observed statistics, the MPLE and the log-likelihood's reference come
        from every dyad, by (n, n) matrices (O(n²) memory; O(n³) work with triangle or
        gwesp terms). An int: from the edge list and neighbour lists, no O(N) array,
        as R ergm does for large networks (``init.MPLE.samplesize``): the MPLE from
        every tie and that many uniform non-ties, weighted (case-control;
        :mod:`~numpyro_ugm.network.estimation.sampled_mple`; every dyad when it reaches their
        number); the reference's log Z summed exactly over every dyad in blocks; a
        dyad-independent model's exact MLE by Newton on such sums, from the sampled
        one. ``"auto"``: None up to :data:`SPARSE_LIMIT` dyads, else ergm's
        max(√N, m, 40) · 8 (N dyads, m ties).
    **mcmle_options
        Passed to :func:`~numpyro_ugm.network.estimation.mcmle.mcmle`
        (``max_iterations``, ``termination``, ``confidence``, ...).

    Returns
    -------
    ErgmFit
        ``print(fit)`` prints R's ``summary(ergm)``; arrays ``estimates``, ``stderr``,
        ``cov``, ``mcmc_percent``, ``z``, ``p_values``; ``log_likelihood``, ``aic``,
        ``bic``; the MCMLE's per-iteration diagnostics in ``fit.mcmle``; the network,
        terms and chains in ``fit.network_fit`` (for :func:`gof_ergm`).
    """
    # the default key is made when first needed (making it compiles a program: 0.1 s
    # of a 4 ms dyad-independent fit)
    key = None if rng_key is None else as_key(rng_key, "fit_ergm")
    net, ties = _observed_network(network, edges)
    terms = resolve_terms(statistics, net, decay)
    names = term_names(terms)
    N = num_dyads(net.num_nodes, net.directed)
    size = _sample_size(mple_samplesize, N, len(ties))
    if sampler not in ("auto", "sparse", "gibbs"):
        raise ValueError(f"fit_ergm: sampler must be 'auto', 'sparse' or 'gibbs', got "
                         f"{sampler!r}")
    # the terms for the compiled kernel (None: users' terms, or native=False)
    program = None if native is False else native_program(terms, net.num_nodes)
    if sampler == "auto":
        sampler = "gibbs" if N <= DENSE_LIMIT and program is None else "sparse"
    if triadic is not None:
        if sampler != "sparse":
            raise ValueError(f"fit_ergm: triadic= is a share of the sparse sampler's "
                             f"proposals; this fit uses {sampler!r} (pass sampler='sparse' "
                             f"or leave triadic unset)")
        triadic = _check_triadic("fit_ergm", triadic)
    if native is not None:
        if not isinstance(native, (bool, np.bool_)):
            raise TypeError(f"fit_ergm: native must be None, True or False, got {native!r}")
        if native and sampler != "sparse":
            raise ValueError(f"fit_ergm: native=True asks for the compiled sparse sampler; "
                             f"this fit uses {sampler!r} (pass sampler='sparse' or leave "
                             f"native unset)")
    if threads is not None:
        threads = check_count("fit_ergm", "threads", threads)
    num_chains = check_count("fit_ergm", "num_chains", num_chains)
    num_draws = check_count("fit_ergm", "num_draws", num_draws)
    if effective_size is not None and not effective_size > 0:
        raise ValueError(f"fit_ergm: effective_size must be > 0 or None, got {effective_size!r}")
    if effective_size is not None and num_chains * num_draws < 2 * effective_size:
        # the adaptive sample keeps at most 2 num_draws per chain: with fewer than
        # 2 effective_size draws it can only get there by near-independent draws, and
        # doubles the interval towards max_interval
        raise ValueError(f"fit_ergm: num_chains x num_draws = {num_chains * num_draws} "
                         f"draws per sample cannot reach effective_size={effective_size:g} "
                         f"without intervals long enough to make every draw nearly "
                         f"independent; draw at least 2 x effective_size = "
                         f"{2 * effective_size:g} (more chains or draws), or lower "
                         f"effective_size")
    if init is not None:
        given = init
        try:
            init = np.asarray(init, np.float64)
        except (TypeError, ValueError):
            init = np.full(0, np.nan)
        if init.shape != (len(names),) or not np.all(np.isfinite(init)):
            raise ValueError(f"fit_ergm: init must be {len(names)} finite values, one per "
                             f"coefficient {list(names)}, got {given!r}")
    y = None if size is not None else _dense_dyads(net, ties)
    # the dense path: the change statistics X (N, k) of every dyad at the observed
    # network, the MPLE's design (compiled kernel for built-in terms: no JAX program)
    covariates = None if size is not None else covariate_design(terms, net.num_nodes,
                                                               net.directed)
    if size is not None:
        X, observed = None, sparse_statistics(net, terms, ties)
    elif covariates is not None:
        # covariate terms only, in numpy: flomarriage's whole fit takes 3 ms, loading the
        # compiled kernel from numba's cache alone 0.3 s
        X, observed = covariates, covariates.T @ y.astype(np.float64)
    elif program is not None:
        X, observed = _native_design(net, terms, ties, program)
    else:
        X = np.asarray(change_statistics(y, statistics, decay=decay, network=net), np.float64)
        observed = np.asarray(ergm_statistics(y, statistics, decay=decay, network=net),
                              np.float64)
    if all(t.dependence == "dyadic" for t in terms):
        if size is None:
            fit = dyad_independent_fit(X, observed, names)
        else:
            fit = _large_dyad_independent_fit(net, terms, ties, observed, names, size,
                                              _default_key(key))
        fit.network_fit = NetworkFit(net, ties, statistics, observed, None, 0)
        return fit
    key = _default_key(key)
    if size is None:  # the MPLE: a logistic regression of y on X (as mple())
        start = init if init is not None else dyad_independent_mle(X, X.T @ y).theta
        reference = _dyad_independent_reference(terms, X, observed)
    else:
        sample = sample_dyads(net, terms, ties, observed, size, _numpy_rng(key))
        start = init if init is not None else sampled_mple(sample).theta
        reference = sampled_reference(net, terms, sample) if log_likelihood else None
    if sampler == "sparse":
        interval = 1024 if interval is None else check_count("fit_ergm", "interval", interval)
        burnin = 16 * interval if burnin is None else int(burnin)
        simulator = sparse_simulator(net, terms, ties, observed, num_chains, burnin=burnin,
                                     max_degree=max_degree, triadic=triadic, threads=threads,
                                     native=native)
    else:
        interval = (max(1, round(1024 / N)) if interval is None
                    else check_count("fit_ergm", "interval", interval))
        burnin = 16 * interval if burnin is None else int(burnin)
        y = _dense_dyads(net, ties) if y is None else y
        simulator = dense_simulator(net, statistics, terms, y, num_chains, burnin=burnin,
                                    decay=decay)

    max_interval = (1024 * interval if max_interval is None
                    else max(interval, check_count("fit_ergm", "max_interval", max_interval)))
    simulate, current, rewind = adaptive_simulate(simulator, num_draws, interval, burnin,
                                                  effective_size, max_interval,
                                                  bool(mcmle_options.get("verbose")))
    bridge_draws = max(-(-BRIDGE_DRAWS // num_chains), 2)

    def bridge_simulate(theta, k):  # BRIDGE_DRAWS per bridge, in one call
        return simulator.simulate(theta, k, min(bridge_draws, num_draws), current["interval"],
                                  current["burnin"])

    if estimator is None:
        fit = mcmle_fit(simulate, observed, start, key=key, num_dyads=N, names=names,
                        log_likelihood=log_likelihood, bridge_simulate=bridge_simulate,
                        bridge_reference=reference, rewind=rewind, **mcmle_options)
    else:
        y = _dense_dyads(net, ties) if y is None else y
        fit = _fit_with_estimator(estimator, net, statistics, decay, y, start, simulate,
                                  (bridge_simulate, reference), observed, names, N, key,
                                  log_likelihood, num_steps, optimizer)
    check_ergm_degeneracy(fit.final_statistics, observed, names) if (
        fit.final_statistics is not None) else None
    fit.network_fit = NetworkFit(net, ties, statistics, observed, simulator,
                                 current["interval"], current["burnin"])
    return fit


def _fit_with_estimator(estimator, net, statistics, decay, y, start, simulate, bridge,
                        observed, names, num_dyads_, key, log_likelihood, num_steps,
                        optimizer):
    """θ from :class:`~numpyro_ugm.learn.MLE` with ``estimator`` (from the MPLE, iterates
    averaged over the second half), then the standard errors and log-likelihood of a
    Monte Carlo fit at it."""
    import optax

    from ..learn import MLE, averaged
    from .model import ergm

    key_learn, key_final = jax.random.split(key)
    learner = MLE(ergm, estimator, averaged(optimizer or optax.adam(0.01), num_steps // 2))
    result = learner.run(key_learn, num_steps, {"y": jnp.asarray(y)[None]}, net, statistics,
                         decay=decay, init_params={"theta": jnp.asarray(start, jnp.float32)},
                         progress_bar=False)
    theta = np.asarray(learner.get_params(result.state, averaged=True)["theta"], np.float64)
    return fit_at(simulate, observed, theta, key=key_final, num_dyads=num_dyads_, names=names,
                  update=False, log_likelihood=log_likelihood, bridge_simulate=bridge[0],
                  bridge_reference=bridge[1],
                  method=f"MLE with {type(estimator).__name__}",
                  message=f"{num_steps} optimizer steps, iterates averaged over the second half")


def _default_key(key):
    return jax.random.PRNGKey(0) if key is None else key


def _numpy_rng(key):
    """A numpy generator for the dyad sample, from ``key`` (which stays unused)."""
    return np.random.default_rng(np.asarray(jax.random.fold_in(key, 0x5A3D)))


def _large_dyad_independent_fit(net, terms, ties, observed, names, size, key):
    """The exact MLE of a dyad-independent model of a large network: Newton on sums over
    every dyad (:func:`~numpyro_ugm.network.estimation.sparse_statistics.dyadic_sums`, a
    pass of O(N) work each), started at the MLE of a case-control sample of dyads."""
    start = sampled_mple(sample_dyads(net, terms, ties, observed, size, _numpy_rng(key))).theta
    first = dyadic_sums(net, terms, start, True)  # also Σ abs(x_d), the tolerance's scale

    def sums(theta, full):
        out = first if full and np.array_equal(theta, start) else dyadic_sums(
            net, terms, theta, full)
        return out[:3] if full else (out[0], None, None)

    mle = newton_mle(sums, observed, np.maximum(first[3], 1.0), theta0=start)
    return exact_fit(mle, names, num_dyads(net.num_nodes, net.directed))


def _native_design(net, terms, ties, program):
    """(X (N, k), s_obs): the change statistics of every dyad at the observed network
    and its statistics, by the compiled sampler's kernel."""
    state = native_chains(init_network_chains(ties, net.num_nodes, 1, directed=net.directed,
                                              statistics0=np.zeros(program.k)))
    _, heads, tails = pair_tables(net.num_nodes, net.directed)
    empty = np.concatenate([t.empty_value() for t in terms])
    return (native_design(state, program, heads, tails),
            native_statistics(program, empty, ties, net.num_nodes, net.directed))


def _dyad_independent_reference(terms, X, observed):
    """(θ_ref, log Z(θ_ref)): the dyad-independent terms at their exact MLE (the other
    coefficients 0), where the bridge sampling of the log-likelihood starts, as ergm's;
    None when no term is dyad independent (the path then starts at θ = 0). ``X`` (N, k)
    the change statistics of every dyad."""
    columns = np.cumsum([0] + [t.size for t in terms])
    keep = np.concatenate([np.arange(columns[k], columns[k + 1]) for k, t in enumerate(terms)
                           if t.dependence == "dyadic"] or [np.zeros(0, int)])
    if keep.size == 0:
        return None
    X = X[:, keep]
    fit = dyad_independent_mle(X, observed[keep])
    theta = np.zeros(len(observed))
    theta[keep] = fit.theta
    return theta, float(np.sum(np.logaddexp(0.0, X @ fit.theta)))


def gof_ergm(fit: ErgmFit, num_sims: int = 100, *, interval: int | None = None,
             rng_key: Any = None) -> GoodnessOfFit:
    """Goodness of fit of :func:`fit_ergm`'s result, as statnet's ``gof(fit)``:
    ``num_sims`` networks simulated from the estimate (``interval`` steps apart, default
    the fit's), their degree, edgewise shared partner and geodesic distance distributions
    and model statistics against the observed network (``print`` for ergm's table,
    ``.plot()`` for its boxplot figure)."""
    info = getattr(fit, "network_fit", None)
    if info is None:
        raise TypeError("gof_ergm: expected the result of fit_ergm")
    key = as_key(jax.random.PRNGKey(1) if rng_key is None else rng_key, "gof_ergm")
    num_sims = check_count("gof_ergm", "num_sims", num_sims)
    net = info.network
    simulator = info.simulator
    if simulator is None:  # a dyad-independent fit: its dyads are independent Bernoulli
        if num_dyads(net.num_nodes, net.directed) > DYAD_DRAWS_LIMIT:
            raise NotImplementedError(
                f"gof_ergm: the goodness of fit of a dyad-independent fit draws every dyad "
                f"of each simulated network, {num_dyads(net.num_nodes, net.directed)} here: "
                f"not supported above DYAD_DRAWS_LIMIT = {DYAD_DRAWS_LIMIT} dyads")
        X = np.asarray(change_statistics(
            np.zeros(num_dyads(net.num_nodes, net.directed), np.float32), info.statistics,
            network=net), np.float64)
        p = 1 / (1 + np.exp(-(X @ fit.estimates)))
        draws = np.asarray(jax.random.uniform(key, (num_sims, len(p)))) < p
        _, i, j = pair_tables(net.num_nodes, net.directed)
        simulated = [np.stack([i[row], j[row]], 1) for row in draws]
        stats = draws @ X
    else:
        step = info.interval if interval is None else check_count("gof_ergm", "interval",
                                                                   interval)
        simulated, stats = [], []
        chains = None
        for k in jax.random.split(key, -(-num_sims // _num_chains(simulator))):
            stats.append(simulator.simulate(fit.estimates, k, 1, step, info.burnin))
            chains = simulator.networks()
            simulated.extend(chains)
        simulated = simulated[:num_sims]
        stats = np.concatenate(stats, 1).reshape(-1, len(fit.names))[:num_sims]
    return goodness_of_fit(info.edges, simulated, net.num_nodes, net.directed,
                           model_names=list(fit.names),
                           observed_model_statistics=info.observed,
                           simulated_model_statistics=stats)


def _num_chains(simulator):
    return len(simulator.networks())
