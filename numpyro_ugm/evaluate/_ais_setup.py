"""What an AIS run (:mod:`numpyro_ugm.evaluate.ais`) is set up with and how its estimates
are read: the schedule of βs, the base distribution q of independent variables, the
sites summed out in closed form, the kernel of each direction, the starting states of the
reverse chains, and the log-mean-exp of the weights with the warnings about them.

The base q is a product of independent variables, each given by the same array as its
conditional in the samplers (:func:`~numpyro_ugm.conditionals.block_logits`): a finite
variable by log-probabilities of its K values, a real one (``ugm.Real``) by the natural
parameters (η, λ) of a Normal N(η/λ, 1/λ) — so the tempered log-density
(1 − β) log q + β f keeps exact conditionals where f has them.

Everything here takes the model's :class:`~numpyro_ugm.model.target.Target` (or its domains)
and checks what the user supplies — the schedule, the base log-probabilities, the sites
to sum out, the starting draws, the tolerance — with errors that name the argument.
"""

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..runtime import distributed
from ..runtime.checks import check_count
from ..kernels import gibbs
from ..kernels.base import KernelSpec, as_spec, gaussian_from_uniforms
from ..kernels.blocks import BlockKernelSpec
from ..model.ugm import UGM
from ..model.target import Target
from ..model.validation import validate_data

__all__ = ["default_betas", "base_rate_log_probs", "schedule", "Setup", "setup",
           "base_log_prob", "base_draws", "refreshes", "reverse_kernel", "start_states",
           "log_mean_exp", "check_tolerance", "warn_if_degenerate", "warn_if_wide"]


def default_betas(num_betas: int = 14500) -> np.ndarray:
    """Salakhutdinov & Murray's schedule: 500 βs in [0, 0.5), 4,000 in [0.5, 0.9) and
    10,000 in [0.9, 1] — with ``num_betas`` βs in all, in the same proportions."""
    num_betas = check_count("ais.default_betas", "num_betas", num_betas, 6)
    first = max(2, round(num_betas * 500 / 14500))
    second = max(2, round(num_betas * 4000 / 14500))
    return np.concatenate([np.linspace(0.0, 0.5, first, endpoint=False),
                           np.linspace(0.5, 0.9, second, endpoint=False),
                           np.linspace(0.9, 1.0, num_betas - first - second)])


def schedule(betas: int | np.ndarray | None) -> np.ndarray:
    """The schedule as a float array: ``None`` the default, an int that many βs spaced
    uniformly, else the given βs, which must be finite and increase (never decrease) from
    exactly 0 to exactly 1; the error names the first β at fault."""
    if betas is None:
        return default_betas()
    if isinstance(betas, (int, np.integer)) or (isinstance(betas, (bool, np.bool_))):
        return np.linspace(0.0, 1.0, check_count("ais", "betas (a number)", betas, 2))
    try:
        betas = np.asarray(betas, float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"ais: betas must be a number of βs or an array of them, got "
                         f"{type(betas).__name__}") from error
    if betas.ndim != 1 or betas.size < 2:
        raise ValueError(f"ais: betas must be a 1-d array of at least 2 βs from 0 to 1, "
                         f"got shape {betas.shape}")
    bad = np.flatnonzero(~np.isfinite(betas))
    if bad.size:
        raise ValueError(f"ais: betas must be finite; betas[{bad[0]}] is {betas[bad[0]]}")
    if betas[0] != 0.0 or betas[-1] != 1.0:
        raise ValueError(f"ais: betas must increase from 0 to 1; they run from "
                         f"{betas[0]:g} to {betas[-1]:g}")
    down = np.flatnonzero(np.diff(betas) < 0)
    if down.size:
        i = int(down[0]) + 1
        raise ValueError(f"ais: betas must increase from 0 to 1; betas[{i}] = "
                         f"{betas[i]:g} < betas[{i - 1}] = {betas[i - 1]:g}")
    return betas


def base_log_prob(domain, x: jax.Array, log_probs: jax.Array) -> jax.Array:
    """Σ_i log q_i(x_i) for independent variables: finite ones with log-probabilities
    ``log_probs`` (num_variables, K), multilinear in x (a sum of products, no stacked
    indicators); real ones Normal with natural parameters ``log_probs`` (num_variables, 2)
    = (η, λ), normalized (quadratic in x)."""
    if not domain.finite:  # −½ λ (x − η/λ)² + ½ log(λ / 2π)
        eta, precision = log_probs[:, 0], log_probs[:, 1]
        z = x.reshape(-1) - eta / precision
        return jnp.sum(-0.5 * precision * z * z + 0.5 * jnp.log(precision / (2 * np.pi)))
    if domain.event_shape:
        return jnp.sum(x.reshape((domain.num_variables, domain.num_values)) * log_probs)
    low, high = domain.values
    one = (x.reshape(-1) - low) / (high - low)
    return jnp.sum(log_probs[:, 0]) + one @ (log_probs[:, 1] - log_probs[:, 0])


def base_rate_log_probs(m: Any, data: dict | None = None, smoothing: float = 1.0) -> dict:
    """Per site, the base of independent variables fitted to ``data``: for a finite
    site, log-probabilities (num_variables, K), the data marginals with ``smoothing``
    (> 0) pseudo-counts per value (Salakhutdinov & Murray's base rate), uniform without
    data; for a real site, the natural parameters (η, λ) (num_variables, 2) of a Normal
    with the data's per-variable mean and variance
    (:meth:`~numpyro_ugm.domains.Real.fitted`), the domain's base Normal without data.

    ``m`` is a :class:`~numpyro_ugm.model.UGM` or its target; ``data`` (data
    representation, leading example axis) is checked against the domains."""
    if not float(smoothing) > 0 or not np.isfinite(float(smoothing)):
        raise ValueError(f"ais.base_rate_log_probs: smoothing must be a finite number > 0 "
                         f"(pseudo-counts per value), got {smoothing!r}")
    domains = (m.target() if isinstance(m, UGM) else m).state_sites
    x = {} if data is None else validate_data(domains, data)
    out = {}
    for s, d in domains.items():
        if not d.finite:
            out[s] = (d.fitted(x[s]) if s in x else d).base_natural()
        elif s in x:
            labels = np.asarray(d.labels(x[s])).reshape(len(x[s]), d.num_variables)
            counts = np.stack([(labels == k).sum(0) for k in range(d.num_values)], -1)
            probs = (counts + smoothing) / (len(labels) + smoothing * d.num_values)
            out[s] = jnp.asarray(np.log(probs), jnp.result_type(float))
        else:
            out[s] = jnp.full((d.num_variables, d.num_values), -np.log(d.num_values),
                              jnp.result_type(float))
    return out


def _check_base(target, base_log_probs, summed):
    """The user's base log-probabilities, checked: a dict with an entry of shape
    (num_variables, K) (K = 2 for a real site: (η, λ), with λ > 0) and finite values for
    each state site not summed out (the summed sites' base is uniform)."""
    if not isinstance(base_log_probs, Mapping):
        raise TypeError(f"ais: base_log_probs must be a dict of site -> (num_variables, K) "
                        f"log-probabilities, got {type(base_log_probs).__name__}")
    unknown = [s for s in base_log_probs if s not in target.state_sites]
    if unknown:
        raise KeyError(f"ais: base_log_probs has site(s) {unknown} that are not state sites "
                       f"of the model ({list(target.state_sites)})")
    out = dict(base_log_probs)
    for s, d in target.state_sites.items():
        if s in summed:
            continue
        if s not in out:
            raise KeyError(f"ais: base_log_probs lacks the site {s!r} (give every site not "
                           "summed out, e.g. from ais.base_rate_log_probs)")
        value = jnp.asarray(out[s])
        if value.shape != (d.num_variables, d.logit_width):
            raise ValueError(f"ais: base_log_probs[{s!r}] has shape {value.shape}; expected "
                             f"({d.num_variables}, {d.logit_width}) for {d!r}")
        if not bool(jnp.all(jnp.isfinite(value))):
            raise ValueError(f"ais: base_log_probs[{s!r}] holds non-finite values: the base "
                             "must give every value a positive probability")
        if not d.finite and not bool(jnp.all(value[:, 1] > 0)):
            raise ValueError(f"ais: base_log_probs[{s!r}] of a real site holds natural "
                             "parameters (eta, lam) with a precision lam <= 0: the base "
                             "Normal must be proper")
        out[s] = value
    return out


class Setup(NamedTuple):
    """What both directions share: summed sites, base, its log-normalizer, kernel."""

    summed: tuple
    logq: dict
    log_z_base: float
    spec: Any


def setup(target: Target, data: dict | None, base_log_probs: dict | None,
          sum_out_sites: Sequence[str] | None, kernel: KernelSpec | None) -> Setup:
    """The sites summed out in closed form (default: the latent sites when that is
    possible), the base (fitted to ``data``'s marginals unless ``base_log_probs`` is
    given), its log-normalizer and the kernel spec of the forward run."""
    domains = target.state_sites
    summed = tuple(target.latent_sites) if sum_out_sites is None else tuple(sum_out_sites)
    if summed and not _summable(target, summed):
        if sum_out_sites is not None:
            raise ValueError(f"ais: sites {list(summed)} cannot be summed out in closed "
                             "form (they interact, or the potential is not multilinear)")
        summed = ()
    logq = (base_rate_log_probs(target, data) if base_log_probs is None
            else _check_base(target, base_log_probs, summed))
    for s in summed:  # summed sites are uniform at β = 0
        d = domains[s]
        zeros = (jnp.zeros_like(logq[s]) if s in logq
                 else jnp.zeros((d.num_variables, d.num_values), jnp.result_type(float)))
        logq = {**logq, s: zeros - np.log(d.num_values)}
    # a real site's base is a normalized Normal (base_log_prob)
    log_z_base = sum(float(jnp.sum(jax.nn.logsumexp(logq[s], -1)))
                     for s, d in domains.items() if d.finite)
    return Setup(summed, logq, log_z_base, as_spec(kernel, _default_kernel(target, summed)))


def _summable(target, sites):
    structure = target.structure
    unknown = [s for s in sites if s not in target.state_sites]
    if unknown:
        raise KeyError(f"ais: sum_out_sites {unknown} are not state sites of the model "
                       f"({list(target.state_sites)})")
    if any(not target.state_sites[s].finite for s in sites):
        return False  # sum_out sums finite variables only
    return bool(sites) and structure.multilinear and structure.independent(sites)


def _default_kernel(target, summed):
    """Systematic-scan block Gibbs, visiting the summed sites first when they make the
    last block (an RBM's hidden units): the draw of the summed sites that starts each
    move is then the sweep's own first block (see :func:`refreshes`)."""
    blocks = target.structure.blocks
    last = {s: None for s in summed}
    return gibbs(backward=bool(summed) and len(blocks) > 1 and dict(blocks[-1]) == last)


def base_draws(domains: Mapping, logq: dict, rng_key: jax.Array, num_chains: int,
               dtype: Any) -> dict:
    """``num_chains`` independent draws of the base ``logq`` (model representation, leading
    chain axis): labels from a finite site's log-probabilities, Normal values from a real
    site's natural parameters."""
    x = {}
    for k, (s, d) in zip(jax.random.split(rng_key, len(domains)), domains.items()):
        shape = (num_chains,) + d.batch_shape + d.event_shape
        if d.finite:
            labels = jax.random.categorical(k, logq[s], shape=(num_chains, d.num_variables))
            x[s] = d.label_to_model(labels, dtype).reshape(shape)
        else:
            uniforms = jax.random.uniform(k, (num_chains, d.num_variables), dtype)
            x[s] = gaussian_from_uniforms(uniforms, logq[s].astype(dtype)).reshape(shape)
    return x


def refreshes(target: Target, spec: KernelSpec, summed: tuple) -> bool:
    """Whether a move must draw the summed sites before the kernel's step: not when the
    kernel's step starts by drawing exactly them (systematic block scan)."""
    if not summed:
        return False
    if isinstance(spec, BlockKernelSpec) and spec.backward and target.structure.moved:
        return True  # the reversed step starts with the gradient move (BlockKernelSpec.build)
    if isinstance(spec, BlockKernelSpec) and spec.scan == "systematic":
        blocks = target.structure.blocks
        first = blocks[-1] if spec.backward else blocks[0]
        return dict(first) != {s: None for s in summed}
    return True


def reverse_kernel(target: Target, spec: KernelSpec, summed: tuple) -> KernelSpec:
    """The kernel of the reverse run: the reverse operator of the forward move on the
    visible marginal. With two blocks, one of them the summed sites, the move draws the
    summed sites given the rest and then the rest given them (data augmentation), which is
    reversible: the same kernel."""
    blocks = target.structure.blocks
    augmentation = (summed and len(blocks) == 2 and not refreshes(target, spec, summed)
                    and {s: None for s in summed} in [dict(b) for b in blocks])
    return spec if augmentation else spec.reverse()


def start_states(target: Target, summed: tuple, states: Any, name: str | None) -> dict:
    """Model-representation starting states of the reverse chains: ``states`` (data
    representation when ``name`` is given, else already the model's), with every site
    not summed out, the summed sites at their reference values (each move draws them)."""
    domains = target.state_sites
    needed = [s for s in domains if s not in summed]
    if name is not None:
        if not isinstance(states, Mapping):
            raise TypeError(f"ais: {name} must be a dict of site -> draws")
        missing = [s for s in needed if s not in states]
        if missing:
            raise KeyError(f"ais: {name} lacks the site(s) {missing}, which are not summed "
                           "out: the reverse chains start from complete draws")
        states = validate_data(domains, {s: states[s] for s in needed})
    num = jax.tree.leaves(states)[0].shape[0]
    reference = target.reference_state()
    return {s: jnp.asarray(states[s]) if s in needed else
            jnp.broadcast_to(reference[s], (num,) + reference[s].shape) for s in domains}


def log_mean_exp(log_w):
    """log of the mean of exp(log_w), and its delta-method standard error."""
    log_mean = jax.nn.logsumexp(log_w) - jnp.log(log_w.shape[0])
    w = jnp.exp(log_w - jnp.max(log_w))
    return log_mean, jnp.std(w) / (jnp.mean(w) * jnp.sqrt(log_w.shape[0]))


def check_tolerance(tolerance):
    """The bracket's tolerance as a float >= 0 (``inf``: never warn)."""
    if not float(tolerance) >= 0:
        raise ValueError(f"ais: tolerance must be >= 0 (nats), got {tolerance}")
    return float(tolerance)


def warn_if_degenerate(owner, log_w):
    """Warn when one chain carries the forward weights (an effective number of chains
    below 2; per example with inputs): the standard error, computed from those same
    weights, then means nothing either."""
    w = np.exp(np.asarray(log_w, np.float64) - np.max(log_w, axis=-1, keepdims=True))
    ess = np.sum(w, -1) ** 2 / np.sum(w ** 2, -1)
    num_chains = w.shape[-1]
    if np.min(ess) < 2.0:
        distributed.warn(
            f"{owner}: the AIS weights are degenerate (effective number of chains "
            f"{np.min(ess):.3g} of {num_chains}): the estimate and its standard error are "
            "unreliable (log Z is likely too low); use more betas, or bracket it with the "
            "reverse direction", RuntimeWarning, stacklevel=3)


def bracket(forward, forward_stderr, reverse, reverse_stderr, expected_lower):
    """The bracket's fields, its ends sorted: a dict of ``lower``, ``lower_stderr``,
    ``lower_from``, ``upper``, ``upper_stderr``, ``upper_from`` (``"forward"`` or
    ``"reverse"``, the direction each end came from), ``expected_lower`` naming the
    direction that bounds from below when both are right."""
    ends = {"forward": (forward, forward_stderr), "reverse": (reverse, reverse_stderr)}
    low, high = sorted(ends, key=lambda d: (float(ends[d][0]), d != expected_lower))
    return {"lower": ends[low][0], "lower_stderr": ends[low][1], "lower_from": low,
            "upper": ends[high][0], "upper_stderr": ends[high][1], "upper_from": high}


#: An inverted bracket warns beyond this many combined standard errors of its ends.
INVERSION_ERRORS = 2.0


def warn_if_wide(owner, result, tolerance, what, expected_lower="forward"):
    """Warn when the bracket is wider than ``tolerance``, or inverted (the direction
    that should bound from below, ``expected_lower``, above the other) by more than
    :data:`INVERSION_ERRORS` combined standard errors or than ``tolerance``: at least
    one direction is then biased. Without ``lower_from`` (a result built by hand) the
    ``lower`` field is taken as the expected lower end."""
    lower_from = getattr(result, "lower_from", None)
    width = float(result.upper) - float(result.lower)
    if lower_from is not None and lower_from != expected_lower:
        width = -width
    errors = float(np.hypot(float(result.lower_stderr), float(result.upper_stderr)))
    ends = (f"(lower {float(result.lower):.6g} ± {float(result.lower_stderr):.2g}"
            f"{'' if lower_from is None else ' from ' + lower_from}, "
            f"upper {float(result.upper):.6g} ± {float(result.upper_stderr):.2g}"
            f"{'' if lower_from is None else ' from ' + result.upper_from})")
    if not width <= tolerance:
        distributed.warn(
            f"{owner}: the forward and reverse estimates of {what} disagree by {width:.3g} "
            f"nats {ends}, more than the tolerance {tolerance:g}: the schedule is too "
            "short for this model; use more betas (the true value may lie anywhere in the "
            "bracket)", RuntimeWarning, stacklevel=3)
    elif width < -min(tolerance, INVERSION_ERRORS * errors):
        distributed.warn(
            f"{owner}: the bracket of {what} is inverted by {-width:.3g} nats {ends}, "
            f"{-width / max(errors, 1e-300):.3g} combined standard errors: the {expected_lower} "
            "estimate should be the lower one, so at least one direction is biased (reverse "
            "AIS from real data bounds the annealing chain's likelihood, which a short "
            "schedule can put above the model's; reverse AIS from draws that are not exact "
            "is no upper bound); use more betas", RuntimeWarning,
            stacklevel=3)
