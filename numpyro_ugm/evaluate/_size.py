"""The size guard of exact enumeration: what an enumeration costs, counted in
configurations (:func:`work`), and the check every public exact function makes on the
host before it starts one (:func:`check_work`, through
:func:`~numpyro_ugm.evaluate._engine.check_size`): an enumeration runs as one compiled
computation that Ctrl-C cannot interrupt (a GB-RBM 4 × 30, 2**30 configurations, ran
755 s), so a large one warns with its size and one past ``max_configurations`` is an
error naming its size, its sites and the alternatives."""

import math
import warnings

from ..runtime.checks import check_count

__all__ = ["MAX_CONFIGURATIONS", "WARN_CONFIGURATIONS", "INTEGRATED_SCALE", "work",
           "check_work"]

#: Default ``max_configurations`` of the exact functions: an enumeration of more (counted
#: by :func:`work`) is refused. It runs as one computation that Ctrl-C cannot interrupt;
#: a configuration of a small model (20-22 spins, an RBM 22 × 22, a GB-RBM 4 × 22) took
#: 60-130 ns on two idle CPU cores and 250-950 ns on busy ones (2**22 in 0.3-0.6 s,
#: resp. 1-3 s), so 2**26 take seconds to a minute and 2**30 minutes (755 s reported).
MAX_CONFIGURATIONS = 2 ** 26
#: An enumeration of more than this many configurations (from about a second), up to
#: the limit, warns with its size.
WARN_CONFIGURATIONS = 2 ** 24
#: A configuration whose real sites (n variables) are integrated out costs more, about
#: (n / INTEGRATED_SCALE)² times one without (its n × n Hessian and Cholesky factor:
#: measured 0.2 µs at n = 16, 0.6-20 µs at 64, 4-40 µs at 256, 1.3-8 ms at 784), so it
#: counts that often: a rough estimate, of the right order from n = 16 to 784.
INTEGRATED_SCALE = 16


def work(plan, repeats: int = 1) -> float:
    """The cost of enumerating ``plan`` ``repeats`` times, in configurations of a model
    without real sites: each configuration counts max(1, (n / :data:`INTEGRATED_SCALE`)²)
    times when n real variables are integrated out for it."""
    weight = max(1.0, (plan.num_integrated / INTEGRATED_SCALE) ** 2)
    if plan.num_configurations.bit_length() > 1000:  # past float's range (9**620)
        return math.inf
    return float(plan.num_configurations) * weight * repeats


def check_work(plan, what: str, max_configurations, repeats: int) -> None:
    """The limit on the :func:`work` of an enumeration: an error naming
    its size, sites and the alternatives beyond ``max_configurations``, a warning beyond
    :data:`WARN_CONFIGURATIONS`."""
    limit = check_count(what, "max_configurations", max_configurations)
    cost = work(plan, repeats)
    if cost <= min(limit, WARN_CONFIGURATIONS):
        return
    sites = ", ".join(f"{s!r} ({count} variables)" for s, _, count, _ in plan.segments)
    size = (f"{plan.num_configurations:.4g} configurations (2^"
            f"{math.log2(plan.num_configurations):.1f}) of {sites or 'no variable'}")
    if plan.summed:
        size += f", {list(plan.summed)} summed out in closed form"
    if plan.integrated:
        size += (f", the {plan.num_integrated} real variables of {list(plan.integrated)} "
                 f"integrated out for each (counted {work(plan) / plan.num_configurations:.4g}"
                 " times: their Hessian)")
    if repeats > 1:
        size += f", once per example ({repeats} examples)"
    size += f": {cost:.4g} in all (2^{math.log2(cost):.1f})"
    if cost > limit:
        raise ValueError(
            f"{what}: exact enumeration would take {size}, more than max_configurations="
            f"{limit} (2^{math.log2(limit):.1f}); it would run as one computation that "
            "Ctrl-C cannot interrupt (about 0.1-1 µs per configuration on a CPU). "
            "Estimate it instead with annealed importance sampling (ugm.ais.log_partition, "
            "ugm.ais.log_likelihood; with reverse_from=, a bracket), or pass "
            f"max_configurations={math.ceil(cost)} or more to enumerate anyway")
    warnings.warn(f"{what}: exact enumeration of {size}: one computation of seconds to "
                  "minutes that Ctrl-C cannot interrupt (the limit is max_configurations="
                  f"{limit})", RuntimeWarning, stacklevel=4)
