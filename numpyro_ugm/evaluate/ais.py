"""Annealed importance sampling (Neal 2001) of log Z for models too large to enumerate,
as Salakhutdinov & Murray (2008) run it for RBMs.

The path p_k(x) ∝ q(x)^{1−β_k} exp(β_k f(x; θ)) goes from a base distribution q of
independent variables — fitted to the data marginals (the "base-rate" model) or uniform —
to the model. Latent sites that do not interact with each other are summed out in closed
form in the weights (for an RBM: the hidden units), so the importance weights are those of
the visible marginal (lower variance); the transitions are block-Gibbs sweeps of the
joint at each β. The estimate of log Z is log Z_q + log mean_c w_c over chains; its
standard error is the delta-method std(w) / (mean(w) √C).
"""

import functools
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import as_key, check_count
from ..estimators.base import shard_particles
from ..kernels import gibbs
from ..kernels.base import as_spec, step_chains
from ..conditionals import LogDensity, free_energy, linear_combination, sum_out
from ..model import UGM

__all__ = ["log_partition", "log_likelihood", "AISResult", "default_betas",
           "base_rate_log_probs"]


class AISResult(NamedTuple):
    """An AIS estimate.

    Attributes
    ----------
    log_z : scalar
        The estimate (of log Z, or of the mean log-likelihood for :func:`log_likelihood`).
    stderr : scalar
        Its delta-method standard error.
    log_weights : (num_chains,) array
        Final log importance weights (for diagnostics: their spread).
    """

    log_z: jax.Array
    stderr: jax.Array
    log_weights: jax.Array


def default_betas() -> np.ndarray:
    """Salakhutdinov & Murray's schedule: 500 βs in [0, 0.5), 4,000 in [0.5, 0.9) and
    10,000 in [0.9, 1]."""
    return np.concatenate([np.linspace(0.0, 0.5, 500, endpoint=False),
                           np.linspace(0.5, 0.9, 4000, endpoint=False),
                           np.linspace(0.9, 1.0, 10000)])


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


def log_partition(m: UGM, params: dict, rng_key: jax.Array, num_chains: int = 100,
                  betas: int | np.ndarray | None = None, *, data: dict | None = None,
                  base_log_probs: dict | None = None,
                  sum_out_sites: Sequence[str] | None = None, kernel: Any = None,
                  mesh: jax.sharding.Mesh | None = None) -> AISResult:
    """AIS estimate of log Z(θ) with a standard error.

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
        Transition at each β (default: systematic-scan block Gibbs).
    mesh : jax.sharding.Mesh, optional
        Split the chains over the mesh's first axis (multi-device); same estimate.

    Returns
    -------
    AISResult
    """
    betas = np.linspace(0.0, 1.0, check_count("ais", "betas (a number)", betas, 2)) \
        if isinstance(betas, (int, np.integer)) \
        else default_betas() if betas is None else np.asarray(betas, float)
    if betas.ndim != 1 or betas.size < 2 or betas[0] != 0.0 or betas[-1] != 1.0 \
            or np.any(np.diff(betas) < 0):
        raise ValueError("ais: betas must increase from 0 to 1")
    num_chains = check_count("ais", "num_chains", num_chains, 2)
    rng_key = as_key(rng_key, "ais")
    m.check_params(params)
    domains = m.state_sites
    summed = tuple(m.latent_sites) if sum_out_sites is None else tuple(sum_out_sites)
    if not _summable(m, summed):
        if sum_out_sites is not None:
            raise ValueError(f"ais: sites {list(summed)} cannot be summed out in closed "
                             "form (they interact, or the potential is not multilinear)")
        summed = ()
    logq = base_rate_log_probs(m, data) if base_log_probs is None else base_log_probs
    for s in summed:  # summed sites are uniform at β = 0
        logq = {**logq, s: jnp.zeros_like(logq[s]) - np.log(domains[s].num_values)}
    log_z_base = sum(float(jnp.sum(jax.nn.logsumexp(logq[s], -1))) for s in domains)
    spec = as_spec(kernel, gibbs())
    run = _cached_run(m, spec, summed, num_chains, mesh)
    args = (params, logq, rng_key, jnp.asarray(betas, jnp.result_type(float)))
    if mesh is None:
        log_w = run(*args)
    else:
        with jax.set_mesh(jax.sharding.Mesh(mesh.devices, mesh.axis_names, axis_types=(
                jax.sharding.AxisType.Auto,) * len(mesh.axis_names))):
            log_w = run(*args)
    log_mean = jax.nn.logsumexp(log_w) - jnp.log(num_chains)
    w = jnp.exp(log_w - jnp.max(log_w))
    stderr = jnp.std(w) / (jnp.mean(w) * jnp.sqrt(num_chains))
    return AISResult(log_z_base + log_mean, stderr, log_w)


def _cached_run(m, spec, summed, num_chains, mesh):
    """The jitted annealing run, in the model's compile cache per kernel spec, summed
    sites, number of chains and mesh (an unhashable spec: built at each call):
    parameters, base and schedule are its arguments, so repeated estimates (e.g. along a
    learning curve) compile once."""
    return m.cached(("ais", spec, summed, num_chains, mesh),
                    lambda: _build_run(m, spec.build(m), summed, num_chains))


def _build_run(m, kernel, summed, num_chains):
    domains = m.state_sites
    block = {s: None for s in summed}

    @jax.jit
    def run(params, logq, rng_key, betas):
        def base_value(x):
            return sum(_base_log_prob(domains[s], x[s], logq[s]) for s in domains)

        def base_conditionals(x, unused_domains, block):  # independent variables
            return {s: logq[s] if idx is None else logq[s][idx] for s, idx in block.items()}

        base = LogDensity(base_value, base_conditionals)
        f = m.logdensity_fn(params)

        def tempered(beta):
            return linear_combination((1.0 - beta, base), (beta, f))

        def marginal(beta, x):
            """log Σ_summed exp(tempered(beta)) — the weight's log-density at β."""
            if not summed:
                return tempered(beta)(x)
            return sum_out(tempered(beta), x, domains, block)

        init_key, run_key = jax.random.split(rng_key)
        keys = jax.random.split(init_key, len(domains))
        x = {}
        for k, (s, d) in zip(keys, domains.items()):
            labels = jax.random.categorical(k, logq[s], shape=(num_chains, d.num_variables))
            x[s] = d.label_to_model(labels, betas.dtype).reshape(
                (num_chains,) + d.batch_shape + d.event_shape)
        x = shard_particles(x)
        states = jax.vmap(lambda y: kernel.init(y, tempered(betas[0])))(x)

        def increment(position, previous, beta):
            return (jax.vmap(lambda y: marginal(beta, y))(position)
                    - jax.vmap(lambda y: marginal(previous, y))(position))

        # The loop is rotated: step k moves the chains at β_k, then weights them from β_k
        # to β_{k+1}, so that the weight and the sweep's last block update see the same
        # state (XLA computes their shared products once, e.g. an RBM's v·W), and no
        # move is made at β = 1 (its result was never used)
        def body(carry, xs):
            states, log_w = carry
            key, beta, following = xs
            states = step_chains(kernel, key, states, tempered(beta))[0]
            return (states, log_w + increment(states.position, beta, following)), None

        log_w = increment(states.position, betas[0], betas[1])
        steps = (jax.random.split(run_key, betas.shape[0] - 1)[:-1], betas[1:-1], betas[2:])
        (_, log_w), _ = jax.lax.scan(body, (states, log_w), steps)
        return log_w

    return run


def log_likelihood(m: UGM, params: dict, data: dict, rng_key: jax.Array,
                   num_chains: int = 100, betas: int | np.ndarray | None = None,
                   **kwargs: Any) -> AISResult:
    """Mean log-likelihood of ``data`` (latent sites summed out) with log Z from AIS.

    The base distribution is fitted to ``data`` unless ``base_log_probs`` is given (use
    the training data's base for test sets, as Salakhutdinov & Murray do).

    Returns
    -------
    AISResult
        ``log_z`` holds the mean log-likelihood; ``stderr`` that of log Z.
    """
    observed = m.observe(tuple(data))
    model_data = observed.validate_data(data)
    kwargs.setdefault("data", data if "base_log_probs" not in kwargs else None)
    result = log_partition(observed, params, rng_key, num_chains, betas, **kwargs)
    free_energies = observed.cached(("ais.free_energies",), lambda: jax.jit(
        jax.vmap(functools.partial(free_energy, observed), (None, 0))))
    positive = jnp.mean(free_energies(params, model_data))
    return AISResult(positive - result.log_z, result.stderr, result.log_weights)
