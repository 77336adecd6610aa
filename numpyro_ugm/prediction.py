"""``predict``: labels of a (conditional) UGM for each example's inputs — exactly where
the model's graph is thin, by MCMC otherwise.

**Exactly** (``exact="auto"``, the default, whenever the model is finite, its
potential pairwise and its elimination tables within ``max_table_size``:
:mod:`~numpyro_ugm.evaluate.elimination`): ``"marginal"`` gives the exact marginals
(forward–backward on a chain) and their maximizers, ``"map"`` the exact MAP labeling
(max-product with back-pointers: Viterbi on a chain), vectorized over the examples.

**By MCMC** otherwise, two methods, both vectorized over the examples (``jax.vmap``) and
over chains, and jitted as one computation:

* ``"marginal"`` — posterior marginals p(x_i = k | u; θ) estimated from Gibbs (or any
  kernel's) chains, and the labels that maximize them (maximum posterior marginals, the
  labeling with the fewest expected errors per variable). For multilinear models the
  estimate is Rao-Blackwellized: each draw contributes the conditional probabilities
  p(x_i | x_−i) of every variable (read off one gradient of f), not an indicator, which
  has lower variance and the same expectation under the chain's stationary law.
  The chains are checked as ``ugm.sample`` checks them: the split R-hat of every
  variable's estimate over the chains (:attr:`Prediction.r_hat`), with a warning when
  it exceeds :data:`~numpyro_ugm.sampling.R_HAT_LIMIT` (chains stuck in different modes).
* ``"map"`` — simulated annealing towards the MAP labeling argmax_x f(x; θ, u): the kernel
  runs on β·f with β rising geometrically from ``beta_min`` to ``beta_max``; the best
  configuration visited by any chain (by f at β = 1) is returned. It is a heuristic:
  with enough steps and chains it finds the MAP of small or easy models, not always of
  hard ones.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .runtime.checks import as_key, check_count
from .runtime.compile_cache import cached
from .conditionals import block_logits, scaled, site_variables
from .model.diagnose import check_finite, non_finite_error, potential_is_finite
from .kernels import gibbs
from .kernels.base import as_spec, bound_kernel, init_chains, refresh_chains, step_chains
from .model.ugm import UGM
from .model.problem import build_problem
from .evaluate import elimination as eliminating
from .evaluate.elimination import MAX_TABLE_SIZE
from .runtime.distributed import warn
from .runtime.runloop import capacity
from .sampling import MIN_DRAWS_FOR_R_HAT, R_HAT_LIMIT

__all__ = ["predict", "Prediction"]

#: default settings per method: chains, draws per chain, warm-up steps
DEFAULTS = {"marginal": dict(num_chains=16, num_samples=500, num_warmup=100),
            "map": dict(num_chains=8, num_samples=500, num_warmup=0)}


class Prediction(NamedTuple):
    """What :func:`predict` returns. With ``inputs``, every array has a leading example
    axis (N, the examples of ``inputs``); without, none.

    Attributes
    ----------
    labels : dict of str -> array ``(N, *site_shape)``
        Predicted value of every variable of every state site, in the data
        representation (±1 for ``Spin``, 0/1 for ``Binary``, integer labels for
        ``Categorical``): the maximizers of the marginals (``"marginal"``) or the best
        configuration found by annealing (``"map"``).
    marginals : dict of str -> array ``(N, *site_shape, K)`` or None
        ``"marginal"``: estimated p(x_i = k | inputs; θ), values in the domain's order
        (Spin: −1, +1; Binary: 0, 1; Categorical: 0..K−1); rows sum to 1.
        ``"map"``: None.
    log_potential : array ``(N,)``
        f(labels; θ, inputs) — the unnormalized log-probability of the predicted labeling
        (for ``"map"``, the best value found).
    r_hat : dict of str -> array ``(N, *site_shape)`` or None
        ``"marginal"``: the split R-hat over the chains of each variable's estimate (the
        chains' halves as sequences; 1 for a variable every chain agrees on, ``inf``
        where chains that do not move disagree, NaN below
        :data:`~numpyro_ugm.sampling.MIN_DRAWS_FOR_R_HAT` draws per chain).
        ``"map"``: None.
    """

    labels: dict
    marginals: dict
    log_potential: jax.Array
    r_hat: dict | None = None


def _labels_to_model(domain, labels, dtype):
    return domain.label_to_model(labels, dtype).reshape(
        tuple(domain.shape_) + domain.event_shape)


def _probabilities(f, x, domains, rao_blackwell):
    """Per site (num_variables, K): conditional probabilities given the rest
    (Rao-Blackwellized) or the indicator of the current value."""
    if rao_blackwell:
        logits = block_logits(f, x, domains, {s: None for s in domains}, True)
        return {s: jax.nn.softmax(logits[s], axis=-1) for s in domains}
    return {s: jax.nn.one_hot(d.labels(site_variables(x[s], d)), d.num_values)
            for s, d in domains.items()}


def _checked(t, params, states, best, value, marginals):
    """The result, with what the host checks: whether the potential is finite at the
    chains' last states and at the prediction (``ok``), and those states."""
    ok = jax.vmap(lambda x: potential_is_finite(t, params, x))(states.position)
    ok_best = jnp.isfinite(value)
    for v in jax.tree.leaves(marginals):
        ok_best = ok_best & jnp.all(jnp.isfinite(v))
    positions = jax.tree.map(lambda a, b: jnp.concatenate([a, b[None]]),
                             states.position, best)
    return best, marginals, value, jnp.append(ok, ok_best), positions


def _build(target, method, kernel, num_chains, rao_blackwell, steps):
    """The jitted ``run(params, keys, inputs, num_samples, num_warmup, betas)``, vmapped
    over examples. The counts are traced (dynamic loop bounds); ``"map"`` draws the keys
    of ``steps`` (a power of two, at least ``num_samples``) annealing steps and reads its
    schedule ``betas`` (padded to ``steps``), so every count up to ``steps`` runs the same
    program (``"marginal"``: every count)."""
    domains = target.state_sites
    rao_blackwell = rao_blackwell and target.structure.multilinear

    def moved(states, key, logdensity_fn):
        return step_chains(kernel, key, states, logdensity_fn)[0]

    def marginal_one(t, params, key, num_samples, num_warmup, betas):
        f = t.logdensity_fn(params)
        init_key, warm_key, run_key = jax.random.split(key, 3)
        states = init_chains(kernel, target.random_state(init_key, (num_chains,)), f)
        states = jax.lax.fori_loop(
            0, num_warmup, lambda i, s: moved(s, jax.random.fold_in(warm_key, i), f), states)
        dtype = jnp.result_type(float)
        acc0 = {s: jnp.zeros((5, num_chains, d.num_variables, d.num_values), dtype)
                for s, d in domains.items()}

        def body(i, carry):
            states, acc = carry
            states = moved(states, jax.random.fold_in(run_key, i), f)
            probs = jax.vmap(lambda x: _probabilities(f, x, domains, rao_blackwell))(
                states.position)
            return states, {s: _accumulated(acc[s], probs[s].astype(dtype), i, num_samples)
                            for s in domains}

        states, acc = jax.lax.fori_loop(0, num_samples, body, (states, acc0))
        marginals = {s: (jnp.sum(acc[s][0], 0) / (num_chains * num_samples)).reshape(
            tuple(d.shape_) + (d.num_values,)) for s, d in domains.items()}
        r_hat = {s: _split_r_hat(acc[s], num_samples // 2).reshape(tuple(d.shape_))
                 for s, d in domains.items()}
        best = {s: _labels_to_model(d, jnp.argmax(marginals[s], -1), dtype)
                for s, d in domains.items()}
        return _checked(t, params, states, best, f(best), marginals) + (r_hat,)

    def map_one(t, params, key, num_samples, num_warmup, betas):
        f = t.logdensity_fn(params)
        init_key, run_key = jax.random.split(key)
        position = target.random_state(init_key, (num_chains,))
        values = jax.vmap(f)(position)
        keys = jax.random.split(run_key, steps)  # the first n are those of split(key, n)

        def body(i, carry):
            states, best, best_values = carry
            tempered = scaled(f, betas[i])
            states = moved(refresh_chains(kernel, states, tempered), keys[i], tempered)
            values = jax.vmap(f)(states.position)
            better = values > best_values
            best = jax.tree.map(
                lambda new, old: jnp.where(better.reshape((-1,) + (1,) * (new.ndim - 1)),
                                           new, old), states.position, best)
            return states, best, jnp.maximum(values, best_values)

        states = init_chains(kernel, position, f)
        states, best, best_values = jax.lax.fori_loop(0, num_samples, body,
                                                      (states, position, values))
        winner = jnp.argmax(best_values)
        best = jax.tree.map(lambda a: a[winner], best)
        return _checked(t, params, states, best, best_values[winner], None) + (None,)

    one = marginal_one if method == "marginal" else map_one

    def run(params, keys, inputs, *counts):
        if inputs is None:
            return one(target, params, keys, *counts)
        return jax.vmap(lambda k, inp: one(target.bind(**inp), params, k, *counts))(
            keys, inputs)

    return jax.jit(run)


def predict(m: UGM | Callable, params: dict, inputs: dict | None = None,
            method: str = "marginal", *, rng_key: jax.Array | None = None,
            num_chains: int | None = None, num_samples: int | None = None,
            num_warmup: int | None = None, kernel: Any = None, beta_min: float = 0.1,
            beta_max: float = 1000.0, rao_blackwell: bool = True, exact: bool | str = "auto",
            max_table_size: int | None = MAX_TABLE_SIZE) -> Prediction:
    """Predict the state of a UGM (a CRF's labels) for each example's inputs.

    Parameters
    ----------
    m : UGM or callable
        The model, traced with the keyword arguments of one example (e.g.
        ``ugm.UGM(ugm.models.grid_crf, **features_of_one_image)``); each example's
        ``inputs`` replace those arguments (:meth:`Target.bind
        <numpyro_ugm.model.target.Target.bind>`), with Gibbs blocks valid
        for every example (:meth:`UGM.for_inputs`: an input may change the interaction
        graph). A model function is traced with the first example's inputs (and the
        compiled sampler is rebuilt at each call: pass a ``UGM`` to reuse it; it is kept
        in :mod:`~numpyro_ugm.runtime.compile_cache` per method, kernel, number of chains and
        of examples, unless the inputs add interactions to its graph).
    params : dict
        Parameters (constrained space), e.g. ``result.params`` of :class:`~numpyro_ugm.MLE`.
    inputs : dict of str -> array, optional
        Per-example model keyword arguments with a leading example axis (as given to
        ``MLE.run(..., inputs=...)``). ``None``: predict for ``m`` itself (no example
        axis in the result).
    method : {"marginal", "map"}
        ``"marginal"``: Gibbs marginals and the labels maximizing them. ``"map"``:
        annealed MAP (simulated annealing; best configuration found over all chains).
    rng_key : jax PRNGKey, optional
        Keyword only. Default ``PRNGKey(0)``. Each example gets its own key.
    num_chains : int, optional
        Chains per example, run in parallel from uniform random states
        (default 16 for ``"marginal"``, 8 for ``"map"``).
    num_samples : int, optional
        Draws per chain after the warm-up, one kernel step (for Gibbs, one sweep) each
        (default 500): ``"marginal"`` averages over them; for ``"map"`` they are the
        steps of the annealing schedule, whose best draw is kept.
    num_warmup : int, optional
        ``"marginal"``: kernel steps discarded at the start of each chain (default 100).
    kernel : KernelSpec, optional
        Default: systematic-scan block Gibbs (``ugm.kernels.gibbs()``); any kernel spec
        works (for ``"map"`` it is run on β·f).
    beta_min, beta_max : float
        ``"map"``: the inverse temperatures at the start and the end of the geometric
        annealing schedule. β·Δf for the smallest log-potential differences that
        matter should be large at ``beta_max`` (the last sweeps are then greedy).
    rao_blackwell : bool
        ``"marginal"``, multilinear models: average the conditional probabilities
        p(x_i | x_−i) instead of indicators of the sampled values (lower variance).
    exact : {"auto", True, False}
        ``"auto"``: exact marginals / MAP by elimination where the model allows it (see
        the module docstring; the sampling settings are then unused), MCMC elsewhere;
        ``True``: exactly or an error saying why not; ``False``: always MCMC.
    max_table_size : int
        The largest elimination table, in entries per example (see
        :func:`ugm.exact.log_partition <numpyro_ugm.evaluate.exact.log_partition>`).

    Returns
    -------
    Prediction
        ``labels`` (data representation), ``marginals`` (``"marginal"`` only) and
        ``log_potential``; with ``inputs``, each with a leading example axis.

    Raises
    ------
    TypeError
        ``inputs`` not a non-empty dict, or naming arguments the model was not traced
        with.
    ValueError
        An input whose shape is not ``(num_examples, *traced_shape)``, inputs that disagree
        on the number of examples, non-finite inputs, an unknown method or bad settings.

    Notes
    -----
    The counts ``num_samples`` and ``num_warmup`` are not compiled in: calls that differ
    only in them (``"map"``: in ``num_samples`` up to the same power of two, or in
    ``beta_min`` / ``beta_max``) reuse the compiled sampler.

    Examples
    --------
    >>> node, edge = jax.vmap(ugm.models.image_features)(test_images)
    >>> inputs = {"node_features": node, "edge_features": edge}
    >>> pred = ugm.predict(ugm.models.grid_crf, result.params, inputs, method="map")
    >>> error_rate = np.mean(pred.labels["x"] != truth)
    """
    rng_key = as_key(jax.random.PRNGKey(0) if rng_key is None else rng_key, "predict")
    if method not in DEFAULTS:
        raise ValueError(f"predict: method must be 'marginal' or 'map', got {method!r}")
    settings = dict(DEFAULTS[method])
    for name, value in (("num_chains", num_chains), ("num_samples", num_samples),
                        ("num_warmup", num_warmup)):
        if value is not None:
            settings[name] = value
    for name, value in settings.items():
        settings[name] = check_count("predict", name, value,
                                     minimum=0 if name == "num_warmup" else 1)
    if method == "map" and not 0 < float(beta_min) <= float(beta_max):
        raise ValueError(f"predict: need 0 < beta_min <= beta_max, got {beta_min}, "
                         f"{beta_max}")
    problem = build_problem(m, inputs=inputs)  # blocks valid for every example
    problem.param_model.space.check(params)
    target, inputs, num_examples = problem.target, problem.inputs, problem.num_examples
    if target.real_sites:
        raise NotImplementedError(
            f"predict: the real site(s) {list(target.real_sites)} have no labels to "
            "predict (marginals and MAP labels are for finite sites); draw them with "
            "ugm.sample(ugm.UGM(model, **inputs_of_one_example), params, ...)")
    if exact not in ("auto", True, False):
        raise ValueError(f"predict: exact must be 'auto', True or False, got {exact!r}")
    if exact is not False:
        done = _exactly(problem, params, method, max_table_size, exact is True)
        if done is not None:
            return done
    spec = as_spec(kernel, gibbs())
    rao_blackwell = bool(rao_blackwell) and method == "marginal"
    num_chains, num_samples = settings["num_chains"], settings["num_samples"]
    steps = capacity(num_samples) if method == "map" else None
    static = (method, spec, num_chains, rao_blackwell, steps,
              None if inputs is None else tuple(sorted(inputs)))
    run = cached(target.cache_key, ("predict",) + static, lambda: _build(
        target, method, bound_kernel(spec, target), num_chains, rao_blackwell, steps))
    dtype = jnp.result_type(float)
    betas = (None if steps is None else np.concatenate([
        np.geomspace(beta_min, beta_max, num_samples),
        np.ones(steps - num_samples)]).astype(dtype))
    keys = rng_key if inputs is None else jax.random.split(rng_key, num_examples)
    best, marginals, values, ok, positions, r_hat = run(params, keys, inputs, num_samples,
                                                        settings["num_warmup"], betas)

    def where(index):
        what = ("the prediction" if index[-1] == num_chains
                else f"the last state of chain {index[-1]}")
        return what if inputs is None else f"{what} of example {index[0]}"

    check_finite(target, "predict", params, ok, positions, where, inputs)
    labels = {s: d.from_model(best[s]) for s, d in target.state_sites.items()}
    if r_hat is not None:
        r_hat = {s: np.asarray(v, np.float64) if num_samples >= MIN_DRAWS_FOR_R_HAT
                 else np.full(np.shape(v), np.nan) for s, v in r_hat.items()}
        _warn_if_chains_disagree(r_hat, inputs is not None)
    return Prediction(labels, marginals, values, r_hat)


def _exactly(problem, params, method, max_table_size, required):
    """The exact :class:`Prediction` by elimination, or None (``required``: an error)
    when the model does not allow it."""
    target, inputs = problem.target, problem.inputs
    one = None if inputs is None else jax.tree.map(lambda v: v[0], inputs)
    try:
        el = eliminating.prepare(problem.model, "predict", max_table_size, target)
        eliminating.check_decomposes(el, problem.model, params, "predict", one)
    except ValueError:
        if required:
            raise
        return None

    def run(p, u):
        if method == "map":
            value, labels = eliminating.map_labels(el, p, u)
            return labels, None, value
        _, probs, _ = eliminating.marginals(el, p, u)
        best = {s: jnp.argmax(probs[s], -1) for s in probs}
        labels = jnp.concatenate([best[s].reshape(-1) for s in el.domains])
        t = eliminating.tables(el, p, u)
        return labels, probs, eliminating.score(el, t, labels)

    keys = None if inputs is None else tuple(sorted(inputs))
    fn = cached(target.cache_key, ("predict.exact", method, keys), lambda: jax.jit(
        run if inputs is None else jax.vmap(run, in_axes=(None, 0))))
    labels, probs, values = fn(params, inputs)
    if not np.all(np.isfinite(np.asarray(values))):
        raise non_finite_error("predict", "the exact prediction's log-potential is not "
                               "finite", params)
    return Prediction(eliminating.to_state(el, labels), probs, values, None)


def _accumulated(acc, probs, i, num_samples):
    """``acc`` (5, chains, V, K) after draw ``i`` of the chains' probabilities ``probs``
    (chains, V, K): [0] their sum over all draws; [1], [2] the sums over the first and
    the second half of the draws (``num_samples // 2`` each; a last odd draw is left
    out) and [3], [4] the sums of their squares, for :func:`_split_r_hat`."""
    half = num_samples // 2
    second = (i >= half).astype(jnp.int32)
    kept = jnp.where(i < 2 * half, probs, 0)
    return (acc.at[0].add(probs).at[1 + second].add(kept)
            .at[3 + second].add(kept * kept))


def _split_r_hat(acc, half):
    """Split R-hat (V,) of the estimates accumulated by :func:`_accumulated`: the 2 ×
    chains half-chains as sequences of ``half`` draws, the largest over the values.
    Sequences that all stay constant give 1 if they agree, ``inf`` if they do not."""
    n = jnp.asarray(half, acc.dtype)
    means = acc[1:3] / n                                          # (2, chains, V, K)
    within = jnp.maximum(acc[3:5] / n - means ** 2, 0) * n / jnp.maximum(n - 1, 1)
    means = means.reshape((-1,) + means.shape[2:])
    within = jnp.mean(within.reshape(means.shape), 0)
    between = jnp.var(means, 0, ddof=1)                           # B / n
    tiny = 1e-10
    r = jnp.sqrt(((n - 1) / n * within + between) / jnp.maximum(within, tiny))
    r = jnp.where(within > tiny, r, jnp.where(between > tiny, jnp.inf, 1.0))
    return jnp.max(r, -1)


def _warn_if_chains_disagree(r_hat: dict, batched: bool):
    """The warning of :func:`predict` when a variable's split R-hat exceeds
    :data:`~numpyro_ugm.sampling.R_HAT_LIMIT`, naming the site and the example."""
    for site, r in r_hat.items():
        if not np.nanmax(r, initial=-np.inf) > R_HAT_LIMIT:
            continue
        where = ""
        if batched:
            per_example = np.nanmax(r.reshape(len(r), -1), 1)
            bad = np.flatnonzero(per_example > R_HAT_LIMIT)
            where = (f" (example {int(np.nanargmax(per_example))} of {len(r)}; "
                     f"{len(bad)} example(s) above the limit)")
        warn(f"predict: split R-hat {np.nanmax(r):.3g} > {R_HAT_LIMIT} at site {site!r}"
             f"{where}: the chains disagree, so the marginals (and the labels that maximize "
             "them) are not yet those of the model; use more draws (num_samples), a longer "
             "warm-up, more chains, or a kernel that moves between modes "
             "(ugm.kernels.parallel_tempering())", RuntimeWarning, stacklevel=3)
