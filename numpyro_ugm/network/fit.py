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
  Metropolis–Hastings or dense block Gibbs), or, given ``control.estimator`` (any of the
  package's estimators: ``ugm.PCD(...)``, ``ugm.PSMC(...)``, ...), learns θ with
  :class:`~numpyro_ugm.learn.MLE` instead; then standard errors from a final sample at
  the estimate and the log-likelihood by bridge sampling.

Every setting lives in one :class:`~numpyro_ugm.network.control.ErgmControl`. Networks of
more than ``control.sampling.sparse_limit`` dyads never hold an O(N) array: the observed
statistics come from the edge list
(:func:`~numpyro_ugm.network.estimation.sparse_statistics.sparse_statistics`), the MPLE from
every tie and a weighted sample of non-ties, as R ergm's ``init.MPLE.samplesize``
(:mod:`~numpyro_ugm.network.estimation.sampled_mple`), the log-likelihood's reference log Z by
exact sums over the dyads in blocks; see ``ErgmControl.mple_samplesize``.

:func:`gof_ergm` simulates networks from a fit and compares their degree, edgewise
shared partner and geodesic distance distributions with the observed network's
(:mod:`~numpyro_ugm.network.diagnostics.goodness_of_fit`).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..runtime.checks import as_key, check_count, seed_key
from .control import ErgmControl
from .diagnostics.degeneracy import check_fit_degeneracy, outside_sample_error
from .diagnostics.estimate_sample import (check_estimate_sample, gof_effective_size,
                                          simulate_at_estimate, simulate_independent)
from .diagnostics.goodness_of_fit import GoodnessOfFit, goodness_of_fit
from .estimation.dyad_independent import dyad_independent_mle, dyadic_reference, newton_mle
from .estimation.identifiability import (check_dyadic_columns, check_mple_exists,
                                         check_sampled_identifiable)
from .estimation.sampled_mple import mple_samplesize as mple_samplesize_rule
from .estimation.sampled_mple import sample_dyads, sampled_mple, sampled_reference
from .estimation.sparse_statistics import dyadic_sums, sparse_statistics
from .graphs import check_edge_list, graph_edge_list, num_dyads, pair_tables
from .sampling.chains import init_network_chains
from .sampling.guard import ChainsRanAwayError, DensityGuard, density_guard
from .sampling.simulation import (NetworkSimulator, adaptive_simulate, dense_simulator,
                                  sparse_simulator)
from .summary import ErgmFit, dyad_independent_fit, exact_fit, fit_at, mcmle_fit
from .terms.compiled import native_chains, native_design, native_program, native_statistics
from .terms.covariates import covariate_design
from .terms.structural import (DEFAULT_DECAY, change_statistics, ergm_statistics,
                               resolve_terms, term_names)
from .terms.term import Network, as_network

__all__ = ["fit_ergm", "gof_ergm", "NetworkFit"]


@dataclasses.dataclass(frozen=True, eq=False)
class NetworkFit:
    """What :func:`fit_ergm` keeps besides the :class:`ErgmFit` numbers: the network,
    its ties, formula and observed statistics, the simulator with the interval and
    burn-in its effective-size check reached, the control, the chains at the end of
    the final sample at θ̂ (``final_state``, before the log-likelihood's bridges moved
    them), the longest interval and the density guard of its adaptive sample (for
    :func:`gof_ergm`)."""

    network: Network
    edges: np.ndarray
    statistics: Any
    observed: np.ndarray
    simulator: NetworkSimulator | None
    interval: int
    burnin: int = 0
    control: ErgmControl = dataclasses.field(default_factory=ErgmControl)
    final_state: tuple | None = None
    max_interval: int = 0
    guard: DensityGuard | None = None


class _Design(NamedTuple):
    """The observed network as a fit sees it: the network and its ties, the formula and
    its terms, the dyads, the MPLE's sample size (None: every dyad), the dyad indicators
    y and change statistics X of the dense path (else None), the observed statistics and
    the compiled program of the terms (None: users' terms or ``native=False``)."""

    net: Network
    ties: np.ndarray
    formula: Any
    decay: float
    terms: list
    names: list
    num_dyads: int
    size: int | None
    y: np.ndarray | None
    X: np.ndarray | None
    observed: np.ndarray
    program: Any


class _Chains(NamedTuple):
    """The chains of a Monte Carlo fit: the simulator, ``simulate(theta, rng_key)`` for
    the MCMLE and the final sample, the adapted interval and burn-in (``current``),
    ``rewind``, the bridges' ``bridge_simulate`` and ``final["state"]``, the chains at
    the end of the final sample (before any bridge), the longest interval and the
    density guard."""

    simulator: NetworkSimulator
    simulate: Any
    current: dict
    rewind: Any
    bridge_simulate: Any
    final: dict
    max_interval: int
    guard: DensityGuard | None


def fit_ergm(network: Any, formula: Any = "edges", *, edges: Any = None,
             control: ErgmControl | None = None, decay: float = DEFAULT_DECAY,
             rng_key: Any = None, log_likelihood: bool = True,
             verbose: bool = False) -> ErgmFit:
    """Fit an ERGM to one observed network, as statnet's ``ergm()``.

    Parameters
    ----------
    network : networkx.Graph / DiGraph, or Network
        The observed network with its node attributes (a ``Network`` needs ``edges``).
    formula : terms
        A statnet formula (``"edges + nodematch('Grade') + gwesp(0.5, fixed=TRUE)"``),
        names, (name, argument) pairs or :func:`~numpyro_ugm.network.term` s.
    edges : array (m, 2), optional
        The ties of a ``Network`` (sender, receiver when directed).
    control : ErgmControl, optional
        Every setting of the fit, as statnet's ``control.ergm()``: the chains
        (:class:`~numpyro_ugm.network.control.SamplingControl`: sampler, ``num_chains``,
        ``samplesize``, ``interval``, ``burnin``, ``effective_size``, ...), the Monte
        Carlo MLE (:class:`~numpyro_ugm.network.control.MCMLEControl`), the start
        (``init``, ``mple_samplesize``) or another estimator. Default ``ErgmControl()``.
    decay : float
        Default decay of the geometrically weighted terms.
    rng_key : jax PRNG key, optional
        Default PRNGKey(0): the same key gives the same fit.
    log_likelihood : bool
        Estimate the log-likelihood (bridge sampling) for AIC/BIC.
    verbose : bool
        Print each MCMLE iteration and each change of the adaptive interval.

    Returns
    -------
    ErgmFit
        ``print(fit)`` prints R's ``summary(ergm)``; arrays ``estimates``, ``stderr``,
        ``cov``, ``mcmc_percent``, ``z``, ``p_values``; ``log_likelihood``, ``aic``,
        ``bic``; the MCMLE's per-iteration diagnostics in ``fit.mcmle``; the network,
        terms, control and chains in ``fit.network_fit`` (for :func:`gof_ergm`).
    """
    control = _check_control(control)
    # the default key is made when first needed (making it compiles a program: 0.1 s
    # of a 4 ms dyad-independent fit)
    rng_key = None if rng_key is None else as_key(rng_key, "fit_ergm")
    design = _observed_design(network, edges, formula, decay, control)
    if all(t.dependence == "dyadic" for t in design.terms):
        fit = _dyad_independent(design, rng_key)
        return dataclasses.replace(fit, network_fit=NetworkFit(
            design.net, design.ties, formula, design.observed, None, 0, control=control))
    if design.X is not None:
        check_dyadic_columns("fit_ergm", design.X, design.observed, design.names,
                             [t.dependence == "dyadic" for t in design.terms
                              for _ in t.names])
    sampler = _choose_sampler(design, control.sampling)
    rng_key = _default_key(rng_key)
    start, reference = _start(design, control, rng_key, log_likelihood)
    chains = _run_chains(design, control, sampler, verbose)
    try:
        if control.estimator is None:
            fit = mcmle_fit(chains.simulate, design.observed, start, rng_key,
                            num_dyads=design.num_dyads, names=design.names,
                            control=control.mcmle, log_likelihood=log_likelihood,
                            bridge_simulate=chains.bridge_simulate,
                            bridge_reference=reference, rewind=chains.rewind,
                            verbose=verbose)
        else:
            fit = _fit_with_estimator(design, control, start, chains, reference, rng_key,
                                      log_likelihood)
    except ChainsRanAwayError as error:  # the final sample's or a bridge's chains
        raise outside_sample_error(f"fit_ergm: {error}", error.last_draws,
                                   design.observed, design.names) from error
    if fit.final_statistics is not None:
        check_fit_degeneracy(fit.final_statistics, design.observed, design.names)
    return dataclasses.replace(fit, network_fit=NetworkFit(
        design.net, design.ties, formula, design.observed, chains.simulator,
        chains.current["interval"], chains.current["burnin"], control,
        chains.final.get("state", chains.simulator.snapshot()), chains.max_interval,
        chains.guard))


def _check_control(control):
    if control is None:
        return ErgmControl()
    if not isinstance(control, ErgmControl):
        raise TypeError(f"fit_ergm: control must be an ErgmControl, got "
                        f"{type(control).__name__}")
    return control


def observed_network(network, edges):
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


def _sample_size(control, N, m):
    """Non-ties of the sampled MPLE, or None for the dense path (every dyad)."""
    if control.mple_samplesize == "auto":
        return None if N <= control.sampling.sparse_limit else mple_samplesize_rule(N, m)
    return control.mple_samplesize


def _observed_design(network, edges, formula, decay, control):
    """The :class:`_Design` of the observed network: its terms, observed statistics and
    (on the dense path) every dyad's change statistics."""
    net, ties = observed_network(network, edges)
    if net.num_nodes < 2:
        raise ValueError(f"fit_ergm: the network has {net.num_nodes} node(s); an ERGM "
                         "needs at least 2 (one dyad)")
    terms = resolve_terms(formula, net, decay)
    names = term_names(terms)
    N = num_dyads(net.num_nodes, net.directed)
    size = _sample_size(control, N, len(ties))
    # the terms for the compiled kernel (None: users' terms, or native=False)
    program = None if control.sampling.native is False else native_program(terms,
                                                                           net.num_nodes)
    if control.init is not None and len(control.init) != len(names):
        raise ValueError(f"fit_ergm: init must be {len(names)} finite values, one per "
                         f"coefficient {list(names)}, got {list(control.init)!r}")
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
        X = np.asarray(change_statistics(y, formula, decay=decay, network=net), np.float64)
        observed = np.asarray(ergm_statistics(y, formula, decay=decay, network=net),
                              np.float64)
    return _Design(net, ties, formula, decay, terms, names, N, size, y, X, observed, program)


def _dyad_independent(design, rng_key):
    """The exact fit of a dyad-independent model (every dyad, or Newton on sums over the
    dyads from a sampled MLE for large networks)."""
    if design.size is None:
        return dyad_independent_fit(design.X, design.observed, design.names)
    return _large_dyad_independent_fit(design.net, design.terms, design.ties,
                                       design.observed, design.names, design.size,
                                       _default_key(rng_key))


def _start(design, control, rng_key, log_likelihood):
    """(θ_0, the log-likelihood's reference): the MPLE (or ``control.init``), and the
    dyad-independent terms at their MLE with their exact log Z."""
    init = None if control.init is None else np.asarray(control.init, np.float64)
    if design.size is None:  # the MPLE: a logistic regression of y on X (as mple())
        X = design.X
        if init is None:  # an MPLE at infinity is no start (separated dyads)
            check_mple_exists("fit_ergm", X, design.y, design.names)
        start = init if init is not None else dyad_independent_mle(X, X.T @ design.y).theta
        return start, dyadic_reference(design.terms, X, design.observed)
    sample = sample_dyads(design.net, design.terms, design.ties, design.observed,
                          design.size, _numpy_rng(rng_key))
    check_sampled_identifiable("fit_ergm", design.net, design.terms,
                               sample.change_statistics, design.names)
    start = init if init is not None else sampled_mple(sample).theta
    reference = (sampled_reference(design.net, design.terms, sample) if log_likelihood
                 else None)
    return start, reference


def _choose_sampler(design, sampling):
    """``"sparse"`` or ``"gibbs"``: ``sampling.sampler``, or under ``"auto"`` the sparse
    sampler when it runs compiled, else Gibbs up to ``sampling.dense_limit`` dyads."""
    sampler = sampling.sampler
    if sampler == "auto":
        sampler = ("gibbs" if design.num_dyads <= sampling.dense_limit
                   and design.program is None else "sparse")
    if sampler == "gibbs" and design.num_dyads > sampling.sparse_limit:
        raise ValueError(
            f"fit_ergm: sampler='gibbs' holds every dyad of every chain, {design.num_dyads} "
            f"here, above SamplingControl.sparse_limit = {sampling.sparse_limit}: use "
            "sampler='sparse' (or raise sparse_limit if the memory is there)")
    if sampler != "sparse" and sampling.triadic is not None:
        raise ValueError(f"fit_ergm: triadic= is a share of the sparse sampler's "
                         f"proposals; this fit uses {sampler!r} (pass sampler='sparse' "
                         f"or leave triadic unset)")
    if sampler != "sparse" and sampling.native:
        raise ValueError(f"fit_ergm: native=True asks for the compiled sparse sampler; "
                         f"this fit uses {sampler!r} (pass sampler='sparse' or leave "
                         f"native unset)")
    return sampler


def _run_chains(design, control, sampler, verbose):
    """The :class:`_Chains` of a Monte Carlo fit: the simulator at the observed network,
    its adaptive sample (``control.sampling``) and the bridges' cheaper one."""
    sampling, net = control.sampling, design.net
    if sampler == "sparse":
        interval = 1024 if sampling.interval is None else sampling.interval
        burnin = 16 * interval if sampling.burnin is None else sampling.burnin
        simulator = sparse_simulator(net, design.terms, design.ties, design.observed,
                                     sampling.num_chains, burnin=burnin,
                                     max_degree=sampling.max_degree,
                                     triadic=sampling.triadic, threads=sampling.threads,
                                     native=sampling.native)
    else:
        interval = (max(1, round(1024 / design.num_dyads)) if sampling.interval is None
                    else sampling.interval)
        burnin = 16 * interval if sampling.burnin is None else sampling.burnin
        y = _dense_dyads(net, design.ties) if design.y is None else design.y
        simulator = dense_simulator(net, design.formula, design.terms, y,
                                    sampling.num_chains, burnin=burnin, decay=design.decay)
    max_interval = (1024 * interval if sampling.max_interval is None
                    else max(interval, sampling.max_interval))
    draws = sampling.draws_per_chain
    guard = density_guard(sampling.density_guard, sampling.density_guard_min,
                          len(design.ties), design.num_dyads)
    simulate, current, rewind = adaptive_simulate(simulator, draws, interval, burnin,
                                                  sampling.effective_size, max_interval,
                                                  bool(verbose), guard)
    bridge_draws = max(-(-control.mcmle.bridge_draws // sampling.num_chains), 2)

    def bridge_simulate(theta, rng_key):  # bridge_draws per bridge, in one call
        return simulator.simulate(theta, rng_key, min(bridge_draws, draws),
                                  current["interval"], current["burnin"])

    final = {}

    def bridge_simulate_after_final(theta, rng_key):  # the final sample's chains kept
        final.setdefault("state", simulator.snapshot())
        return bridge_simulate(theta, rng_key)

    return _Chains(simulator, simulate, current, rewind, bridge_simulate_after_final, final,
                   max_interval, guard)


def _fit_with_estimator(design, control, start, chains, reference, rng_key,
                        log_likelihood):
    """θ from :class:`~numpyro_ugm.learn.MLE` with ``control.estimator`` (from the MPLE,
    iterates averaged over the second half), then the standard errors and log-likelihood
    of a Monte Carlo fit at it."""
    import optax

    from ..learn import MLE, averaged
    from .model import ergm

    key_learn, key_final = jax.random.split(rng_key)
    num_steps = control.num_steps
    learner = MLE(ergm, control.estimator, averaged(control.optimizer or optax.adam(0.01),
                                                    num_steps // 2))
    y = design.y if design.y is not None else _dense_dyads(design.net, design.ties)
    result = learner.run(key_learn, num_steps, {"y": jnp.asarray(y)[None]}, design.net,
                         design.formula, decay=design.decay,
                         init_params={"theta": jnp.asarray(start, jnp.float32)},
                         progress_bar=False)
    theta = np.asarray(learner.get_params(result.state, averaged=True)["theta"], np.float64)
    return fit_at(chains.simulate, design.observed, theta, key_final,
                  num_dyads=design.num_dyads, names=design.names, update=False,
                  log_likelihood=log_likelihood, bridge_simulate=chains.bridge_simulate,
                  bridge_reference=reference,
                  method=f"MLE with {type(control.estimator).__name__}",
                  message=f"{num_steps} optimizer steps, iterates averaged over the second half")


def _default_key(rng_key):
    return seed_key(0) if rng_key is None else rng_key  # PRNGKey(0), made on the host


def _numpy_rng(rng_key):
    """A numpy generator for the dyad sample, from ``rng_key`` (which stays unused)."""
    return np.random.default_rng(np.asarray(jax.random.fold_in(rng_key, 0x5A3D)))


def _large_dyad_independent_fit(net, terms, ties, observed, names, size, rng_key):
    """The exact MLE of a dyad-independent model of a large network: Newton on sums over
    every dyad (:func:`~numpyro_ugm.network.estimation.sparse_statistics.dyadic_sums`, a
    pass of O(N) work each), started at the MLE of a case-control sample of dyads."""
    sample = sample_dyads(net, terms, ties, observed, size, _numpy_rng(rng_key))
    check_sampled_identifiable("fit_ergm", net, terms, sample.change_statistics, names)
    start = sampled_mple(sample).theta
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
                                              statistics0=np.zeros(program.k), host=True))
    _, heads, tails = pair_tables(net.num_nodes, net.directed)
    empty = np.concatenate([t.empty_value() for t in terms])
    return (native_design(state, program, heads, tails),
            native_statistics(program, empty, ties, net.num_nodes, net.directed))


def gof_ergm(fit: ErgmFit, num_sims: int = 100, *, interval: int | None = None,
             effective_size: float | None = None, rng_key: Any = None) -> GoodnessOfFit:
    """Goodness of fit of :func:`fit_ergm`'s result, as statnet's ``gof(fit)``:
    ``num_sims`` networks simulated from the estimate, their degree, edgewise shared
    partner and geodesic distance distributions and model statistics against the
    observed network (``print`` for ergm's table, ``.plot()`` for its boxplot figure).
    A dyad-independent fit draws its dyads one by one, up to the fit's
    ``control.sampling.dyad_draws_limit``. A Monte Carlo fit's chains start from the
    end of its final sample at θ̂, burn in at θ̂ and draw ``interval`` steps apart
    (default: the interval the fit's effective-size check reached); while the
    simulated model statistics' multivariate effective size is below
    ``effective_size`` (default a quarter of ``num_sims``; 0: never) the chains are
    continued and thinned, the interval doubling up to the fit's longest, as the fit's
    own adaptive sample. The result's ``interval`` and ``effective_size`` are the
    sample's (printed under the table), and a warning (also in ``estimate_check``)
    says when the effective size stays small or when the simulated statistics' mean is
    more than 3 Monte Carlo standard errors from the observed statistics (which it
    equals at the MLE)."""
    info = getattr(fit, "network_fit", None)
    if info is None:
        raise TypeError("gof_ergm: expected the result of fit_ergm")
    rng_key = as_key(jax.random.PRNGKey(1) if rng_key is None else rng_key, "gof_ergm")
    num_sims = check_count("gof_ergm", "num_sims", num_sims)
    net = info.network
    if info.simulator is None:  # a dyad-independent fit: its dyads are independent
        simulated, stats = simulate_independent(
            net, info.statistics, fit.estimates, num_sims, rng_key,
            info.control.sampling.dyad_draws_limit)
        step = None
    else:
        step = info.interval if interval is None else check_count("gof_ergm", "interval",
                                                                   interval)
        target = gof_effective_size(effective_size, num_sims)
        try:
            draws = simulate_at_estimate(info.simulator, fit.estimates, info.final_state,
                                         num_sims, step, info.burnin, rng_key,
                                         effective_size=target or None,
                                         max_interval=info.max_interval, guard=info.guard)
        except ChainsRanAwayError as error:
            raise outside_sample_error(f"gof_ergm: {error}", error.last_draws,
                                       info.observed, fit.names) from error
        simulated, stats, step = draws.networks, draws.statistics, draws.interval
    result = goodness_of_fit(info.edges, simulated, net.num_nodes, net.directed,
                             model_names=list(fit.names),
                             observed_model_statistics=info.observed,
                             simulated_model_statistics=stats.reshape(-1, len(fit.names))[
                                 :len(simulated)])
    if step is None:
        return result
    check = check_estimate_sample(stats, info.observed, fit.names)
    if check.message:
        warnings.warn(f"gof_ergm: {check.message}", RuntimeWarning, stacklevel=2)
    return dataclasses.replace(result, effective_size=check.effective_size,
                               estimate_check=check.message, interval=step)
