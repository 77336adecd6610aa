"""Conditionals of a log-density over domain-valued sites, in closed form.

For a log-potential f that is multilinear in each variable, the conditional log-odds of
every variable of a block follow from one gradient (:func:`conditional_logits`);
:func:`exact_conditional_logits` evaluates f at each value instead (any f). A block of
variables that do not interact can be summed out in closed form (:func:`sum_out`), which
gives the free energy of a model with latent sites
(:func:`numpyro_ugm.model.target.free_energy`, from :func:`block_gradients` and
:func:`mean_and_entropy`). A
log-density may know its own conditionals (:class:`LogDensity`, e.g. an ERGM's change
statistics); :func:`block_logits` is where every sampler gets a block's conditionals, and
:func:`linear_combination` / :func:`scaled` keep them through tempering and bridges.

Everything here works on a log-density function and the domains; this module imports
only :mod:`numpyro_ugm.domains`.
"""

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .domains import Domain

# --- variables of a site --------------------------------------------------------------


def site_variables(x: jax.Array, domain: Domain) -> jax.Array:
    """View a site value as ``(num_variables, *event)``."""
    return x.reshape((domain.num_variables,) + domain.event_shape)


def gather(x: jax.Array, domain: Domain, idx: ArrayLike | None) -> jax.Array:
    """Model values of variables ``idx`` (flat indices; ``None`` = all) of a site."""
    flat = site_variables(x, domain)
    return flat if idx is None else flat[idx]


def scatter(x: jax.Array, domain: Domain, idx: ArrayLike | None,
            values: jax.Array) -> jax.Array:
    """Set variables ``idx`` (``None`` = all) of a site to ``values``."""
    if idx is None:
        return values.reshape(x.shape).astype(x.dtype)
    flat = site_variables(x, domain).at[idx].set(values.astype(x.dtype), mode="drop")
    return flat.reshape(x.shape)


def batch_aligned_zero(tree) -> jax.Array:
    """An int32 zero that depends on the first leaf of ``tree``, to add to static gather
    indices.

    Under ``vmap`` over chains, a gather whose indices are not batched is laid out by XLA
    with the index dimension first and the chain dimension last, and transposing back
    costs more than the gather itself; indices that are batched (this zero is, whenever
    the leaf is) give a chain-major gather. ``where(v == v, 0, 0)`` is 0 for any v
    (NaN included) and XLA folds it away.
    """
    v = jax.tree.leaves(tree)[0].reshape(-1)[0]
    return jnp.where(v == v, 0, 0).astype(jnp.int32)


# --- conditionals ---------------------------------------------------------------------


def conditional_logits(logdensity_fn: Callable[[dict], jax.Array], state: dict,
                       domains: Mapping[str, Domain], block: Mapping) -> dict:
    """Conditional log-odds of the variables of a block, from one gradient.

    Valid for a log-density multilinear in each finite variable and quadratic in each
    real one (``Real`` sites get :func:`gaussian_logits`, from the same pass).

    Parameters
    ----------
    logdensity_fn : callable
        state dict -> scalar.
    state : dict
        Current state, model representation.
    domains : dict of str -> Domain
    block : dict of str -> ndarray or None
        Flat variable indices per site (``None``: the whole site).

    Returns
    -------
    dict of str -> array (num_block_variables, K)
        (K = 2 for a real site: its natural parameters, see :func:`gaussian_logits`.)
    """
    if any(not domains[s].finite for s in block):
        return gaussian_logits(logdensity_fn, state, domains, block)
    grads = block_gradients(logdensity_fn, state, block)
    return {s: domains[s].conditional_logits(gather(grads[s], domains[s], idx))
            for s, idx in block.items()}


def gaussian_logits(logdensity_fn: Callable[[dict], jax.Array], state: dict,
                    domains: Mapping[str, Domain], block: Mapping) -> dict:
    """Conditionals of a block holding real variables whose log-density is quadratic in
    each of them (and which do not interact): x_i | rest ~ N(η_i / λ_i, 1 / λ_i), from
    f = η_i x_i − ½ λ_i x_i² + const. A real site's result is ``(n, 2)``: the natural
    parameters (η, λ), linear in the log-density like logits (so tempering and sums keep
    them). One gradient and one Hessian-vector product (with the block's indicator: the
    Hessian is diagonal on a block) give both; finite sites of the block get their
    logits from the same gradient."""
    sub = {s: state[s] for s in block}
    tangent = {}
    for s, idx in block.items():
        d = domains[s]
        if d.finite:
            tangent[s] = jnp.zeros_like(state[s])
        else:
            ones = jnp.ones((d.num_variables if idx is None else jnp.shape(idx)[0],),
                            state[s].dtype)
            tangent[s] = scatter(jnp.zeros_like(state[s]), d, idx, ones)
    grad_fn = jax.grad(lambda v: logdensity_fn({**state, **v}))
    grads, curvature = jax.jvp(grad_fn, (sub,), (tangent,))
    out = {}
    for s, idx in block.items():
        d, g = domains[s], gather(grads[s], domains[s], idx)
        if d.finite:
            out[s] = d.conditional_logits(g)
        else:
            precision = -gather(curvature[s], d, idx)
            out[s] = jnp.stack([g + precision * gather(state[s], d, idx), precision], -1)
    return out


def block_gradients(logdensity_fn, state, sites):
    """The gradient of the log-density with respect to each of ``sites`` at ``state``."""
    sub = {s: state[s] for s in sites}
    return jax.grad(lambda v: logdensity_fn({**state, **v}))(sub)


def exact_conditional_logits(logdensity_fn: Callable[[dict], jax.Array], state: dict,
                             domains: Mapping[str, Domain], block: Mapping) -> dict:
    """Conditional log-probabilities (up to a constant) of the block's variables by
    evaluating the log-density at each of their values (any log-density)."""
    out = {}
    for s, idx in block.items():
        domain = domains[s]
        idx = jnp.arange(domain.num_variables) if idx is None else jnp.asarray(idx)
        values = domain.model_values(state[s].dtype)

        def at(i, value, s=s, domain=domain):
            x = scatter(state[s], domain, i[None], value[None])
            return logdensity_fn({**state, s: x})

        out[s] = jax.vmap(lambda i: jax.vmap(lambda v: at(i, v))(values))(idx)
    return out


def block_logits(logdensity_fn: Callable[[dict], jax.Array], state: dict,
                 domains: Mapping[str, Domain], block: Mapping, multilinear: bool) -> dict:
    """Conditional log-probabilities (up to a constant per variable) of a block's
    variables, as every sampler gets them (a real site's: its Gaussian natural
    parameters, :func:`gaussian_logits`).

    A log-density that knows its own conditionals (an attribute
    ``conditional_logits(state, domains, block)``, e.g. from change statistics) gives
    them; otherwise they come from one gradient (``multilinear``) or from evaluating the
    log-density at each value (:func:`exact_conditional_logits`).
    """
    own = getattr(logdensity_fn, "conditional_logits", None)
    if own is not None:
        return own(state, domains, block)
    if multilinear:
        return conditional_logits(logdensity_fn, state, domains, block)
    finite = {s: i for s, i in block.items() if domains[s].finite}
    real = {s: i for s, i in block.items() if s not in finite}
    out = exact_conditional_logits(logdensity_fn, state, domains, finite)
    if real:
        out.update(gaussian_logits(logdensity_fn, state, domains, real))
    return {s: out[s] for s in block}


# --- log-densities that know their conditionals ---------------------------------------


class LogDensity:
    """A log-density ``state -> scalar`` that also gives its variables' conditionals.

    It is called like the function it wraps, so every use of a log-density (blackjax
    kernels, ``jax.vmap``, gradients) keeps working; :func:`block_logits` takes the
    conditionals of a block from :meth:`conditional_logits` instead of a gradient of the
    whole log-density (e.g. a model's change statistics, at a cost proportional to the
    block). Conditionals are linear in the log-density, so sums and multiples keep them
    (:func:`linear_combination`, :func:`scaled`).

    Parameters
    ----------
    fn : callable
        state dict -> scalar.
    conditionals : callable
        ``(state, domains, block) -> {site: (num_block_variables, K)}``: conditional
        log-probabilities (up to a constant per variable) of the block's variables, as
        :func:`conditional_logits` returns them.
    """

    def __init__(self, fn: Callable[[dict], jax.Array], conditionals: Callable):
        self._fn, self._conditionals = fn, conditionals

    def __call__(self, state: dict) -> jax.Array:
        return self._fn(state)

    def conditional_logits(self, state: dict, domains: Mapping[str, Domain],
                           block: Mapping) -> dict:
        """Conditional log-probabilities of the block's variables (see the class)."""
        return self._conditionals(state, domains, block)


def linear_combination(*terms: tuple) -> Callable[[dict], jax.Array]:
    """Σ_k c_k f_k(state) for ``(c_k, f_k)`` pairs (coefficients may be traced).

    A :class:`LogDensity` whose conditionals are Σ_k c_k times those of f_k when every
    f_k gives its own conditionals; otherwise a plain function (the samplers then take
    gradients of, or evaluate, the sum).
    """
    def value(state):
        total = 0.0
        for c, f in terms:
            total = total + c * f(state)
        return total

    if not all(callable(getattr(f, "conditional_logits", None)) for _, f in terms):
        return value

    def conditionals(state, domains, block):
        out = {}
        for c, f in terms:
            for s, logits in f.conditional_logits(state, domains, block).items():
                out[s] = c * logits if s not in out else out[s] + c * logits
        return out

    return LogDensity(value, conditionals)


def scaled(logdensity_fn: Callable[[dict], jax.Array], factor: Any
           ) -> Callable[[dict], jax.Array]:
    """``factor`` · logdensity_fn, keeping its own conditionals (tempering by β)."""
    return linear_combination((factor, logdensity_fn))


def constant_log_density(value: Any = 0.0) -> LogDensity:
    """The log-density equal to ``value`` everywhere (a uniform distribution), whose
    conditionals are zero."""
    dtype = jnp.result_type(value, float)
    return LogDensity(lambda state: jnp.asarray(value, dtype),
                      lambda state, domains, block: zero_logits(domains, block, dtype))


def zero_logits(domains: Mapping[str, Domain], block: Mapping, dtype: Any) -> dict:
    """Conditional log-probabilities of a block's variables under a log-density that does
    not depend on them: zeros ``(num_block_variables, K)`` per site."""
    return {s: jnp.zeros((domains[s].num_variables if idx is None else jnp.shape(idx)[0],
                          domains[s].logit_width), dtype)
            for s, idx in block.items()}


def sum_out(logdensity_fn: Callable[[dict], jax.Array], state: dict,
            domains: Mapping[str, Domain], summed: Mapping) -> jax.Array:
    """log Σ over the ``summed`` variables of exp(logdensity), in closed form.

    Valid when the log-density is multilinear and the summed variables do not interact
    with each other: it is then affine in them jointly, f(x) = f(r) + Σ_i g_i·(x_i − r_i)
    around a reference point r of the domain, and the sum factorizes.

    Parameters
    ----------
    summed : dict of str -> ndarray or None
        Flat variable indices per site (``None``: the whole site).
    """
    ref = dict(state)
    for s, idx in summed.items():
        domain = domains[s]
        count = domain.num_variables if idx is None else len(idx)
        ref[s] = scatter(state[s], domain, idx,
                         domain.reference((count,), state[s].dtype))
    sub = {s: ref[s] for s in summed}
    value, grads = jax.value_and_grad(lambda v: logdensity_fn({**ref, **v}))(sub)
    for s, idx in summed.items():
        domain, grad = domains[s], gather(grads[s], domains[s], idx)
        if domain.two_valued:  # log(e^{f(low)} + e^{f(high)}) − f(low)
            value = value + jnp.sum(jax.nn.softplus(domain.log_odds(grad)))
        else:
            logits = domain.conditional_logits(grad)
            value = value + jnp.sum(jax.nn.logsumexp(logits, axis=-1) - logits[..., 0])
    return value


# --- latent sites ----------------------------------------------------------------------


def mean_and_entropy(domain, grad):
    """Mean (model representation) and entropy of independent variables whose
    multilinear log-potential has gradient ``grad`` of shape ``(num_variables, *event)``; two-valued
    scalar domains (Spin, Binary) use one sigmoid of the log-odds per variable, one-hot
    domains (Categorical, any K) a softmax of the logits."""
    if domain.two_valued:
        low, high = domain.values
        diff = domain.log_odds(grad)
        p1 = jax.nn.sigmoid(diff)
        return low + (high - low) * p1, jax.nn.softplus(diff) - p1 * diff
    logits = domain.conditional_logits(grad)
    probs = jax.nn.softmax(logits, axis=-1)
    entropy = jax.nn.logsumexp(logits, axis=-1) - jnp.sum(probs * logits, -1)
    return probs, entropy
