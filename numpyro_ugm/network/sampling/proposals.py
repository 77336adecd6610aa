"""The tie / no-tie (TNT) proposal and its Metropolis–Hastings ratio, for both sparse
samplers: the JAX one (:mod:`~numpyro_ugm.network.sampling.tnt`) and the compiled one
(:mod:`~numpyro_ugm.network.sampling.compiled`).

With m ties, N dyads and a share ``triadic`` = t of triadic proposals, a proposal picks
the dyad d with probability

    q(d | y) = (1 − t) q_TNT(d | y) + t · rate(d) / max(m, 1),
    q_TNT(d | y) = y_d / (2m) + 1 / (2N)  (m > 0),  1 / N  (m = 0),

where rate(d) = Σ_{k ∈ N(i)∩N(j)} 1 / d_k (directed: Σ_{k ∈ out(i)∩in(j)}
(1 / outdeg k + 1 / indeg k) / 2) is m times the probability that the triadic proposal
(a uniform tie k − i, then a uniform neighbour j of k) picks d; neither the two-paths
nor the degrees of their middle nodes change when d is toggled. The toggle of d is
accepted with probability

    min(1, exp(±θ·Δs) · (q(d | y') / q(d | y))^w),

y' the network after the toggle (m ± 1 ties) and w = 1 (``ratio_weight``: the tests
use other values to show that a missing or wrong ratio is seen).

Each formula is written twice, paired by name: :func:`proposal_probability` and
:func:`log_acceptance` in JAX, :func:`compiled_proposal_probability` and
:func:`compiled_acceptance` for numba (scalars); the tests check each pair on the same
inputs. rate(d) is :func:`triadic_rate` in JAX (on a chain's gathered rows) and is
written inline in the compiled kernel (:mod:`~numpyro_ugm.network.sampling.compiled`
says why), checked by the distribution tests of both samplers. :func:`check_triadic`
checks the share for both.
"""

import math

import jax.numpy as jnp

from ..terms.lists import inline, jit
from .views import has_bit, in_both

__all__ = ["check_triadic", "proposal_probability", "triadic_rate", "log_acceptance",
           "compiled_proposal_probability", "compiled_acceptance"]


def check_triadic(owner: str, triadic) -> float:
    """``triadic`` as a Python float in [0, 1), or an error naming ``owner``."""
    try:
        value = float(triadic)
    except (TypeError, ValueError):
        value = float("nan")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{owner}: triadic must be a probability in [0, 1), got {triadic!r}")
    return value


# --- JAX ---------------------------------------------------------------------------------


def proposal_probability(m, value, num_dyads: int, triadic: float, rate, dtype):
    """q(d | y) of a dyad (``value``: whether it is a tie) when the network has ``m``
    ties; ``triadic`` a static float, ``rate`` from :func:`triadic_rate`."""
    tie_part = 0.5 * value / jnp.maximum(m, 1).astype(dtype)
    tnt = jnp.where(m > 0, tie_part + 0.5 / num_dyads, 1.0 / num_dyads)
    if not triadic:
        return tnt
    return (1.0 - triadic) * tnt + triadic * rate / jnp.maximum(m, 1).astype(dtype)


def triadic_rate(state, rows, value):
    """rate(d) of the dyad (i, j) whose rows
    (:func:`~numpyro_ugm.network.sampling.views.gather_rows`) are ``rows`` (``value``:
    whether it is a tie; sets the dtype)."""
    if state.in_lists is None:
        row_i, row_j = rows["lists"][0, :, 0], rows["lists"][1, :, 0]
        weight = 1.0 / jnp.maximum(state.degree[jnp.maximum(row_i, 0)], 1)
    else:
        row_i, row_j = rows["lists"][0, :, 0], rows["in_lists"][1, :, 0]
        k = jnp.maximum(row_i, 0)
        weight = 0.5 * (1.0 / jnp.maximum(state.degree[k], 1)
                        + 1.0 / jnp.maximum(state.in_degree[k], 1))
    if state.bits is None:
        both = in_both(row_i, row_j)
    else:  # k of row_i in j's (in-)bit set
        both = has_bit(rows["bits" if state.in_bits is None else "in_bits"][1], row_i)
    return jnp.sum(jnp.where(both, weight.astype(value.dtype), 0.0))


def log_acceptance(sign, theta, delta, m, value, num_dyads: int, triadic: float, rate,
                   ratio_weight):
    """log of exp(±θ·Δs) (q(d | y') / q(d | y))^w: ``sign`` +1 to add the tie, −1 to
    remove it, ``delta`` its Δs (k,), ``m`` the ties now, ``value`` y_d (float)."""
    dtype = delta.dtype
    on = value > 0
    log_ratio = (jnp.log(proposal_probability(m + 1 - 2 * on, 1 - value, num_dyads, triadic,
                                              rate, dtype))
                 - jnp.log(proposal_probability(m, value, num_dyads, triadic, rate, dtype)))
    return sign * jnp.sum(theta * delta) + ratio_weight * log_ratio


# --- numba -------------------------------------------------------------------------------


@jit
def compiled_proposal_probability(m, value, num_dyads, triadic, rate):
    """q(d | y), as :func:`proposal_probability` (scalars)."""
    if m > 0:
        tnt = 0.5 * value / m + 0.5 / num_dyads
    else:
        tnt = 1.0 / num_dyads
    if triadic == 0.0:
        return tnt
    return (1.0 - triadic) * tnt + triadic * rate / max(m, 1)


@inline
def compiled_acceptance(log_target, m, value, num_dyads, triadic, rate, ratio_weight):
    """exp(±θ·Δs) (q(d | y') / q(d | y))^w, as exp of :func:`log_acceptance`:
    ``log_target`` ±θ·Δs, ``value`` 0 or 1, ``rate`` rate(d) (the kernel computes it
    inline, the pair of :func:`triadic_rate`); one exp per proposal, no logs."""
    q_now = compiled_proposal_probability(m, value, num_dyads, triadic, rate)
    q_after = compiled_proposal_probability(m + 1 - 2 * value, 1 - value, num_dyads,
                                            triadic, rate)
    ratio = q_after / q_now
    if ratio_weight != 1.0:
        ratio = ratio ** ratio_weight
    return math.exp(log_target) * ratio
