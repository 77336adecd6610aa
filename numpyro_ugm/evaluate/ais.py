"""Annealed importance sampling (Neal 2001) of log Z for models too large to enumerate,
as Salakhutdinov & Murray (2008) run it for RBMs, with the reverse direction that
brackets it (Burda, Grosse & Salakhutdinov 2015; Grosse, Ghahramani & Adams 2015).

The path p_k(x) ∝ q(x)^{1−β_k} exp(β_k f(x; θ)) goes from a base distribution q of
independent variables — fitted to the data marginals (the "base-rate" model) or uniform —
to the model. Latent sites that do not interact with each other are summed out in closed
form in the weights (for an RBM: the hidden units), so the importance weights are those of
the visible marginal (lower variance); each move at β_k first draws the summed sites from
their conditionals at β_k, then applies the kernel (block Gibbs by default), so that the
moves leave the visible marginal of p_k invariant.

**Forward AIS** starts from q and gives an unbiased estimate of Z, so its log is a
stochastic *lower* bound on log Z (too short a schedule understates log Z, and overstates
log-likelihoods, by any amount, with a small standard error). **Reverse AIS** starts from
states distributed as the model and anneals back to q: its weights estimate Z_q / Z
without bias, so its estimate of log Z is a stochastic *upper* bound when the starting
states are exact draws from the model (the bidirectional bracket of Grosse et al.; on
data simulated from the model). Started from the data cases themselves (RAISE, Burda et
al.) the reverse run estimates each case's likelihood under the "annealing model" from
below, a conservative estimate of the log-likelihood. A bracket wider than its tolerance
means that the schedule is too short for the model: :func:`log_partition` and
:func:`log_likelihood` then warn.
"""

import functools
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import as_key, check_count, check_inputs
from ..conditionals import LogDensity, linear_combination, sum_out
from ..kernels import gibbs
from ..kernels.base import as_spec, draw_block, step_chains
from ..kernels.blocks import BlockKernelSpec
from ..model import UGM
from ..validation import validate_data
from ..compile_cache import cached
from ..sharding import shard_particles

__all__ = ["log_partition", "log_likelihood", "AISResult", "default_betas",
           "base_rate_log_probs", "DEFAULT_TOLERANCE"]

#: Width of the bracket (upper − lower estimate, in nats; per case for
#: :func:`log_likelihood`) above which the estimates warn.
DEFAULT_TOLERANCE = 1.0


class AISResult(NamedTuple):
    """An AIS estimate, and the bracket of the reverse direction when it was run.

    Attributes
    ----------
    log_z : scalar
        The forward estimate (of log Z, or of the mean log-likelihood for
        :func:`log_likelihood`).
    stderr : scalar
        Its delta-method standard error.
    log_weights : (num_chains,) array
        Final log importance weights of the forward run (for diagnostics: their spread).
    lower, upper : scalar or None
        The bracket: for :func:`log_partition` the forward estimate (``lower``) and the
        reverse one (``upper``); for :func:`log_likelihood` the reverse (RAISE) estimate
        (``lower``) and the forward one (``upper``). ``None`` without a reverse run.
    lower_stderr, upper_stderr : scalar or None
        Their standard errors.
    """

    log_z: jax.Array
    stderr: jax.Array
    log_weights: jax.Array
    lower: Any = None
    lower_stderr: Any = None
    upper: Any = None
    upper_stderr: Any = None

    @property
    def width(self):
        """``upper − lower`` (``None`` without a reverse run)."""
        return None if self.upper is None else self.upper - self.lower


def default_betas(num_betas: int = 14500) -> np.ndarray:
    """Salakhutdinov & Murray's schedule: 500 βs in [0, 0.5), 4,000 in [0.5, 0.9) and
    10,000 in [0.9, 1] — with ``num_betas`` βs in all, in the same proportions."""
    num_betas = check_count("ais.default_betas", "num_betas", num_betas, 6)
    first = max(2, round(num_betas * 500 / 14500))
    second = max(2, round(num_betas * 4000 / 14500))
    return np.concatenate([np.linspace(0.0, 0.5, first, endpoint=False),
                           np.linspace(0.5, 0.9, second, endpoint=False),
                           np.linspace(0.9, 1.0, num_betas - first - second)])


def _base_log_prob(domain, x, log_probs):
    """Σ_i log q_i(x_i) for independent variables with log-probabilities ``log_probs``
    (num_variables, K), multilinear in x (a sum of products, no stacked indicators)."""
    if domain.event_shape:
        return jnp.sum(x.reshape((domain.num_variables, domain.num_values)) * log_probs)
    low, high = domain.values
    one = (x.reshape(-1) - low) / (high - low)
    return jnp.sum(log_probs[:, 0]) + one @ (log_probs[:, 1] - log_probs[:, 0])


def base_rate_log_probs(m: UGM, data: dict | None = None, smoothing: float = 1.0) -> dict:
    """Per site, log-probabilities (num_variables, K) of independent variables: the
    data marginals with ``smoothing`` pseudo-counts per value (Salakhutdinov & Murray's
    base rate) for the sites in ``data``, uniform for the others."""
    out = {}
    for s, d in m.state_sites.items():
        if data is not None and s in data:
            labels = np.asarray(d.labels(d.to_model(np.asarray(data[s])))).reshape(
                len(data[s]), d.num_variables)
            counts = np.stack([(labels == k).sum(0) for k in range(d.num_values)], -1)
            probs = (counts + smoothing) / (len(labels) + smoothing * d.num_values)
            out[s] = jnp.asarray(np.log(probs), jnp.result_type(float))
        else:
            out[s] = jnp.full((d.num_variables, d.num_values), -np.log(d.num_values),
                              jnp.result_type(float))
    return out


def _summable(m, sites):
    structure = m.structure
    return bool(sites) and structure.multilinear and structure.independent(sites)


def _schedule(betas):
    betas = np.linspace(0.0, 1.0, check_count("ais", "betas (a number)", betas, 2)) \
        if isinstance(betas, (int, np.integer)) \
        else default_betas() if betas is None else np.asarray(betas, float)
    if betas.ndim != 1 or betas.size < 2 or betas[0] != 0.0 or betas[-1] != 1.0 \
            or np.any(np.diff(betas) < 0):
        raise ValueError("ais: betas must increase from 0 to 1")
    return betas


class _Setup(NamedTuple):
    """What both directions share: summed sites, base, its log-normalizer, kernel."""

    summed: tuple
    logq: dict
    log_z_base: float
    spec: Any


def _setup(m, params, data, base_log_probs, sum_out_sites, kernel):
    m.param_space.check(params)
    domains = m.state_sites
    summed = tuple(m.latent_sites) if sum_out_sites is None else tuple(sum_out_sites)
    if summed and not _summable(m, summed):
        if sum_out_sites is not None:
            raise ValueError(f"ais: sites {list(summed)} cannot be summed out in closed "
                             "form (they interact, or the potential is not multilinear)")
        summed = ()
    logq = base_rate_log_probs(m, data) if base_log_probs is None else base_log_probs
    for s in summed:  # summed sites are uniform at β = 0
        logq = {**logq, s: jnp.zeros_like(logq[s]) - np.log(domains[s].num_values)}
    log_z_base = sum(float(jnp.sum(jax.nn.logsumexp(logq[s], -1))) for s in domains)
    return _Setup(summed, logq, log_z_base, as_spec(kernel, _default_kernel(m, summed)))


def _default_kernel(m, summed):
    """Systematic-scan block Gibbs, visiting the summed sites first when they make the
    last block (an RBM's hidden units): the draw of the summed sites that starts each
    move is then the sweep's own first block (see :func:`_refreshes`)."""
    blocks = m.structure.blocks
    last = {s: None for s in summed}
    return gibbs(backward=bool(summed) and len(blocks) > 1 and dict(blocks[-1]) == last)


def _refreshes(m, spec, summed):
    """Whether a move must draw the summed sites before the kernel's step: not when the
    kernel's step starts by drawing exactly them (systematic block scan)."""
    if not summed:
        return False
    if isinstance(spec, BlockKernelSpec) and spec.scan == "systematic":
        blocks = m.structure.blocks
        first = blocks[-1] if spec.backward else blocks[0]
        return dict(first) != {s: None for s in summed}
    return True


def _reverse_kernel(m, spec, summed):
    """The kernel of the reverse run: the reverse operator of the forward move on the
    visible marginal. With two blocks, one of them the summed sites, the move draws the
    summed sites given the rest and then the rest given them (data augmentation), which is
    reversible: the same kernel."""
    blocks = m.structure.blocks
    augmentation = (summed and len(blocks) == 2 and not _refreshes(m, spec, summed)
                    and {s: None for s in summed} in [dict(b) for b in blocks])
    return spec if augmentation else spec.reverse()


def log_partition(m: UGM, params: dict, rng_key: jax.Array, num_chains: int = 100,
                  betas: int | np.ndarray | None = None, *, data: dict | None = None,
                  base_log_probs: dict | None = None,
                  sum_out_sites: Sequence[str] | None = None, kernel: Any = None,
                  mesh: jax.sharding.Mesh | None = None, reverse_from: dict | None = None,
                  tolerance: float = DEFAULT_TOLERANCE) -> AISResult:
    """AIS estimate of log Z(θ) with a standard error; with ``reverse_from``, the
    bidirectional bracket.

    Parameters
    ----------
    m : UGM
    params : dict
        Parameters (constrained space).
    rng_key : PRNGKey
    num_chains : int
        Independent annealing runs C.
    betas : int or array, optional
        Increasing schedule from 0 to 1 (an int: that many spaced uniformly); default
        :func:`default_betas` (14,500 βs).
    data : dict, optional
        Observed sites (data representation): the base distribution is fitted to their
        marginals; without it, and for sites it lacks, the base is uniform.
    base_log_probs : dict, optional
        Explicit base log-probabilities per site (num_variables, K), e.g. from
        :func:`base_rate_log_probs`.
    sum_out_sites : sequence of str, optional
        Sites summed out in closed form in the weights (default: ``m.latent_sites`` when
        they do not interact with each other).
    kernel : KernelSpec, optional
        Transition at each β (default: systematic-scan block Gibbs, summed sites first).
    mesh : jax.sharding.Mesh, optional
        Split the chains over the mesh's first axis (multi-device); same estimate.
    reverse_from : dict, optional
        Exact draws from the model (data representation, every site not summed out; one
        reverse chain per draw), e.g. from :func:`~numpyro_ugm.evaluate.exact.sample`:
        reverse AIS from them gives a stochastic upper bound on log Z, and the result the
        bracket ``lower`` (forward) ≤ log Z ≤ ``upper`` (reverse). Draws that are not
        exact (a chain's states) make ``upper`` an estimate only.
    tolerance : float
        Warn when ``upper − lower`` exceeds this many nats.

    Returns
    -------
    AISResult
    """
    betas = _schedule(betas)
    num_chains = check_count("ais", "num_chains", num_chains, 2)
    rng_key = as_key(rng_key, "ais")
    tolerance = _check_tolerance(tolerance)
    setup = _setup(m, params, data, base_log_probs, sum_out_sites, kernel)
    forward_key, reverse_key = jax.random.split(rng_key)
    log_w = _anneal(m, setup, params, forward_key, betas, num_chains, mesh)
    _warn_if_degenerate("ais.log_partition", log_w)
    log_z, stderr = _log_mean_exp(log_w)
    log_z = setup.log_z_base + log_z
    if reverse_from is None:
        return AISResult(log_z, stderr, log_w)
    start = _start_states(m, setup.summed, reverse_from, "reverse_from")
    num_reverse = jax.tree.leaves(start)[0].shape[0]
    check_count("ais", "reverse_from (number of draws)", num_reverse, 2)
    log_w_reverse = _anneal(m, setup, params, reverse_key, betas[::-1].copy(),
                            num_reverse, mesh, start)
    log_ratio, upper_stderr = _log_mean_exp(log_w_reverse)  # estimates log(Z_q / Z)
    result = AISResult(log_z, stderr, log_w, log_z, stderr,
                       setup.log_z_base - log_ratio, upper_stderr)
    _warn_if_wide("ais.log_partition", result, tolerance, "log Z")
    return result


def log_likelihood(m: UGM, params: dict, data: dict, rng_key: jax.Array,
                   num_chains: int = 100, betas: int | np.ndarray | None = None, *,
                   inputs: dict | None = None, reverse: bool = False,
                   num_reverse: int | None = None, tolerance: float = DEFAULT_TOLERANCE,
                   base_log_probs: dict | None = None,
                   sum_out_sites: Sequence[str] | None = None, kernel: Any = None,
                   mesh: jax.sharding.Mesh | None = None) -> AISResult:
    """Mean log-likelihood of ``data`` (latent sites summed out) with log Z from AIS;
    with ``reverse=True``, the bracket of a conservative (RAISE) estimate.

    The base distribution is fitted to ``data`` unless ``base_log_probs`` is given (use
    the training data's base for test sets, as Salakhutdinov & Murray do).

    Parameters
    ----------
    m, params, data, rng_key, num_chains, betas
        As in :func:`log_partition`; ``data`` holds the observed sites.
    inputs : dict of str -> array, optional
        A CRF's per-example inputs (model keyword arguments with a leading example axis,
        as in learning): each example gets its own log Z, from ``num_chains`` chains.
    reverse : bool
        Also run reverse AIS from the data cases (Burda, Grosse & Salakhutdinov's RAISE;
        one chain per case, the same schedule): each gives a stochastic lower bound on
        the case's log-likelihood under the annealing model, so their mean is a
        conservative estimate of the mean log-likelihood (a stochastic lower bound when
        ``data`` are exact draws from the model), to set against the forward estimate,
        which a short schedule overstates. The latent sites must be summed out.
    num_reverse : int, optional
        Run the reverse chains from this many cases drawn at random (default all).
    tolerance : float
        Warn when the bracket is wider than this many nats per case.
    base_log_probs, sum_out_sites, kernel, mesh
        As in :func:`log_partition` (``mesh`` not with ``inputs``).

    Returns
    -------
    AISResult
        ``log_z`` holds the forward estimate of the mean log-likelihood, ``stderr`` that
        of its log Z (of the mean log Z with ``inputs``); with ``reverse``, ``lower`` is
        the reverse estimate (its standard error from the spread of the reverse weights,
        which with ``inputs`` also holds the spread of log Z over the examples) and
        ``upper`` the forward one.
    """
    betas = _schedule(betas)
    num_chains = check_count("ais", "num_chains", num_chains, 2)
    rng_key = as_key(rng_key, "ais")
    tolerance = _check_tolerance(tolerance)
    if num_reverse is not None:
        num_reverse = check_count("ais", "num_reverse", num_reverse, 2)
    observed = m.observe(tuple(data))
    model_data = validate_data(observed.state_sites, data)
    num_cases = int(jax.tree.leaves(model_data)[0].shape[0])
    if inputs is not None:
        if mesh is not None:
            raise ValueError("ais.log_likelihood: a mesh is not supported with inputs")
        inputs, _ = check_inputs(inputs, m.kwargs, num_cases)
        observed = observed.for_inputs(inputs)
    setup = _setup(observed, params, data if base_log_probs is None else None,
                   base_log_probs, sum_out_sites, kernel)
    forward_key, reverse_key, pick_key = jax.random.split(rng_key, 3)
    free_energies = cached(observed.cache_key, ("ais.free_energies",), lambda: jax.jit(jax.vmap(
        lambda p, x, u: (observed.bind(**u) if u else observed).target().free_energy(p, x),
        (None, 0, 0))))
    log_w = _anneal(observed, setup, params, forward_key, betas, num_chains, mesh,
                    inputs=inputs)
    _warn_if_degenerate("ais.log_likelihood", log_w)
    log_z, stderr = (_log_mean_exp(log_w) if inputs is None
                     else jax.vmap(_log_mean_exp)(log_w))
    positive = free_energies(params, model_data, {} if inputs is None else inputs)
    forward = jnp.mean(positive - log_z) - setup.log_z_base
    if inputs is not None:
        stderr = jnp.sqrt(jnp.sum(stderr ** 2)) / num_cases
    if not reverse:
        return AISResult(forward, stderr, log_w)
    if set(setup.summed) != set(observed.latent_sites):
        raise ValueError("ais.log_likelihood: reverse AIS from the data needs the latent "
                         f"sites {list(observed.latent_sites)} summed out in closed form")
    if num_reverse is not None and num_reverse < num_cases:
        pick = jax.random.choice(pick_key, num_cases, (num_reverse,), replace=False)
        model_data = jax.tree.map(lambda v: v[pick], model_data)
        inputs = None if inputs is None else jax.tree.map(lambda v: v[pick], inputs)
        positive = positive[pick]
    start = _start_states(observed, setup.summed, model_data, None)
    num_start = jax.tree.leaves(start)[0].shape[0]
    if inputs is None:
        log_w_reverse = _anneal(observed, setup, params, reverse_key, betas[::-1].copy(),
                                num_start, mesh, start)
    else:  # one chain per example, each under its inputs
        start = jax.tree.map(lambda v: v[:, None], start)
        log_w_reverse = _anneal(observed, setup, params, reverse_key, betas[::-1].copy(),
                                1, None, start, inputs)[:, 0]
    # per case: log p̂(v) = F(v) − log Z_q + log ŵ(v), ŵ estimating Z_q / Z
    lower = jnp.mean(positive + log_w_reverse) - setup.log_z_base
    # the spread of the weights, not of the cases' likelihoods: with a perfect schedule
    # every reverse weight is Z_q / Z (the forward standard error, too, is that of log Z)
    lower_stderr = jnp.std(log_w_reverse) / jnp.sqrt(num_start)
    out = AISResult(forward, stderr, log_w, lower, lower_stderr, forward, stderr)
    _warn_if_wide("ais.log_likelihood", out, tolerance, "the mean log-likelihood")
    return out


def _log_mean_exp(log_w):
    """log of the mean of exp(log_w), and its delta-method standard error."""
    log_mean = jax.nn.logsumexp(log_w) - jnp.log(log_w.shape[0])
    w = jnp.exp(log_w - jnp.max(log_w))
    return log_mean, jnp.std(w) / (jnp.mean(w) * jnp.sqrt(log_w.shape[0]))


def _check_tolerance(tolerance):
    """The bracket's tolerance as a float >= 0 (``inf``: never warn)."""
    if not float(tolerance) >= 0:
        raise ValueError(f"ais: tolerance must be >= 0 (nats), got {tolerance}")
    return float(tolerance)


def _warn_if_degenerate(owner, log_w):
    """Warn when one chain carries the forward weights (an effective number of chains
    below 2; per example with inputs): the standard error, computed from those same
    weights, then means nothing either."""
    w = np.exp(np.asarray(log_w, np.float64) - np.max(log_w, axis=-1, keepdims=True))
    ess = np.sum(w, -1) ** 2 / np.sum(w ** 2, -1)
    num_chains = w.shape[-1]
    if np.min(ess) < 2.0:
        warnings.warn(
            f"{owner}: the AIS weights are degenerate (effective number of chains "
            f"{np.min(ess):.3g} of {num_chains}): the estimate and its standard error are "
            "unreliable (log Z is likely too low); use more betas, or bracket it with the "
            "reverse direction", RuntimeWarning, stacklevel=3)


def _warn_if_wide(owner, result, tolerance, what):
    """Warn when the bracket is wider than ``tolerance``, or inverted by more than it
    (the lower estimate above the upper one: at least one direction is biased)."""
    width = float(result.upper) - float(result.lower)
    ends = (f"(lower {float(result.lower):.6g} ± {float(result.lower_stderr):.2g}, "
            f"upper {float(result.upper):.6g} ± {float(result.upper_stderr):.2g})")
    if not width <= tolerance:
        warnings.warn(
            f"{owner}: the forward and reverse estimates of {what} disagree by {width:.3g} "
            f"nats {ends}, more than the tolerance {tolerance:g}: the schedule is too "
            "short for this model; use more betas (the true value may lie anywhere in the "
            "bracket)", RuntimeWarning, stacklevel=3)
    elif width < -tolerance:
        warnings.warn(
            f"{owner}: the bracket of {what} is inverted by {-width:.3g} nats {ends}, more "
            f"than the tolerance {tolerance:g}: at least one direction is biased (reverse "
            "AIS from real data bounds the annealing chain's likelihood, which a short "
            "schedule can put above the model's); use more betas", RuntimeWarning,
            stacklevel=3)


def _start_states(m, summed, states, name):
    """Model-representation starting states of the reverse chains: ``states`` (data
    representation when ``name`` is given, else already the model's), with every site
    not summed out, the summed sites at their reference values (each move draws them)."""
    domains = m.state_sites
    needed = [s for s in domains if s not in summed]
    if name is not None:
        if not isinstance(states, Mapping):
            raise TypeError(f"ais: {name} must be a dict of site -> draws")
        missing = [s for s in needed if s not in states]
        if missing:
            raise KeyError(f"ais: {name} lacks the site(s) {missing}, which are not summed "
                           "out: the reverse chains start from complete draws")
        states = validate_data(m.state_sites, {s: states[s] for s in needed})
    num = jax.tree.leaves(states)[0].shape[0]
    reference = m.target().reference_state()
    return {s: jnp.asarray(states[s]) if s in needed else
            jnp.broadcast_to(reference[s], (num,) + reference[s].shape) for s in domains}


def _anneal(m, setup, params, rng_key, betas, num_chains, mesh, start=None, inputs=None):
    """Final log-weights of ``num_chains`` runs along ``betas`` (from ``start``, or from
    the base when it is None); with ``inputs``, ``num_chains`` runs per example (leading
    axis of the result and of ``start``), each under its inputs."""
    spec = setup.spec if start is None else _reverse_kernel(m, setup.spec, setup.summed)
    run = _cached_run(m, spec, setup.summed, num_chains, mesh, start is not None,
                      None if inputs is None else tuple(sorted(inputs)))
    args = (params, setup.logq, rng_key, jnp.asarray(betas, jnp.result_type(float)),
            start, inputs)
    if mesh is None:
        return run(*args)
    with jax.set_mesh(jax.sharding.Mesh(mesh.devices, mesh.axis_names, axis_types=(
            jax.sharding.AxisType.Auto,) * len(mesh.axis_names))):
        return run(*args)


def _cached_run(m, spec, summed, num_chains, mesh, started, input_names):
    """The jitted annealing run, in the model's compile cache per kernel spec, summed
    sites, number of chains, mesh, whether it is given its starting states and the names
    of its inputs (an unhashable spec: built at each call): parameters, base, schedule,
    starting states and inputs are its arguments, so repeated estimates (e.g. along a
    learning curve) compile once."""
    return cached(m.cache_key, ("ais", spec, summed, num_chains, mesh, started, input_names),
                    lambda: _build_run(m, spec, summed, num_chains))


def _build_run(m, spec, summed, num_chains):
    domains = m.state_sites
    kernel, refresh = spec.build(m.target()), _refreshes(m, spec, summed)
    block = {s: None for s in summed}

    def anneal(f, logq, rng_key, betas, start):
        """Final log-weights of the chains, annealing from the base ``logq`` to ``f``."""
        def base_value(x):
            return sum(_base_log_prob(domains[s], x[s], logq[s]) for s in domains)

        def base_conditionals(x, unused_domains, block):  # independent variables
            return {s: logq[s] if idx is None else logq[s][idx] for s, idx in block.items()}

        base = LogDensity(base_value, base_conditionals)

        def tempered(beta):
            return linear_combination((1.0 - beta, base), (beta, f))

        def marginal(beta, x):
            """log Σ_summed exp(tempered(beta)) — the weight's log-density at β."""
            if not summed:
                return tempered(beta)(x)
            return sum_out(tempered(beta), x, domains, block)

        init_key, run_key = jax.random.split(rng_key)
        if start is None:
            keys = jax.random.split(init_key, len(domains))
            x = {}
            for k, (s, d) in zip(keys, domains.items()):
                labels = jax.random.categorical(k, logq[s],
                                                shape=(num_chains, d.num_variables))
                x[s] = d.label_to_model(labels, betas.dtype).reshape(
                    (num_chains,) + d.batch_shape + d.event_shape)
        else:
            x = {s: v.astype(betas.dtype) for s, v in start.items()}
        x = shard_particles(x)
        states = jax.vmap(lambda y: kernel.init(y, tempered(betas[0])))(x)

        def increment(position, previous, beta):
            return (jax.vmap(lambda y: marginal(beta, y))(position)
                    - jax.vmap(lambda y: marginal(previous, y))(position))

        def move(rng_key, states, beta):
            target = tempered(beta)
            if refresh:
                rng_key, refresh_key = jax.random.split(rng_key)
                keys = jax.random.split(refresh_key, num_chains)
                position = jax.vmap(lambda k, y: draw_block(k, target, y, domains, block))(
                    keys, states.position)
                states = jax.vmap(lambda y: kernel.init(y, target))(position)
            return step_chains(kernel, rng_key, states, target)[0]

        # Step k weights the chains from β_k to β_{k+1}, then moves them at β_{k+1}: the
        # weight and the move's first block update see the same state (XLA computes their
        # shared products once, e.g. an RBM's v·W), and no move is made at the last β
        # (its result would never be used)
        def body(carry, xs):
            states, log_w = carry
            key, previous, beta = xs
            log_w = log_w + increment(states.position, previous, beta)
            return (move(key, states, beta), log_w), None

        steps = (jax.random.split(run_key, betas.shape[0] - 2), betas[:-2], betas[1:-1])
        log_w = jnp.zeros(num_chains, betas.dtype)
        (states, log_w), _ = jax.lax.scan(body, (states, log_w), steps)
        return log_w + increment(states.position, betas[-2], betas[-1])

    @jax.jit
    def run(params, logq, rng_key, betas, start, inputs):
        if inputs is None:
            return anneal(m.logdensity_fn(params), logq, rng_key, betas, start)
        keys = jax.random.split(rng_key, jax.tree.leaves(inputs)[0].shape[0])
        return jax.vmap(lambda k, u, s: anneal(m.bind(**u).logdensity_fn(params), logq, k,
                                               betas, s))(keys, inputs, start)

    return run
