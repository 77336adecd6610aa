"""The posterior of a model's parameters given observed state, as the samplers of
:mod:`numpyro_ugm.posterior` see it.

For N cases x_n drawn from p(x; θ) = exp F(x; θ) / Z(θ) (F: the log-potential with latent
sites summed out in closed form) and a prior p(θ),

    log p(θ | x_1..N) = log p(θ) + Σ_n F(x_n; θ) − N log Z(θ) + const.

Every term but N log Z(θ) is computable: :class:`Posterior` holds them, on the
unconstrained space of the parameters that have a prior (the sampled ones), with the
log-Jacobian of the map to θ. The samplers differ in how they deal with Z(θ): the exchange
algorithm cancels it with an auxiliary draw, SG-MCMC estimates its gradient with a
negative-phase estimator, the exact reference enumerates it.

A conditional model (CRF) takes per-example ``inputs`` (model keyword arguments with a
leading example axis, as the learner and evaluation take them): then F(x_n; θ, u_n) and
Z(θ, u_n) are each example's own. Given as plain model arguments instead, such arrays
would enter every example's potential whole; :class:`Posterior` refuses an argument
whose rows the potential visibly sums (see :func:`refuse_summed_examples`).
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..model.ugm import UGM
from ..model.problem import Problem, build_problem, check_free_energy

__all__ = ["Posterior", "refuse_summed_examples"]


class Posterior:
    """The computable part of log p(θ | data) for a model and its observed cases.

    Parameters
    ----------
    owner : str
        Name used in error messages.
    model : callable or UGM
    data : dict of str -> array
        Observed state sites with a leading example axis (data representation); state
        sites it lacks are latent and summed out in closed form.
    model_args, model_kwargs
        Arguments of the model function.
    params : dict, optional
        Fixed values (constrained) of parameter sites that are not sampled:
        ``numpyro.param`` sites (default: their init values) and sites with a prior that
        should be held fixed. Checked against each site's shape and support.
    inputs : dict of str -> array, optional
        A CRF's per-example inputs: model keyword arguments with a leading example axis
        (one row per case of ``data``).

    Attributes
    ----------
    target : Target
        What the samplers read of the model: the state sites, the structure and the
        free energy (:func:`~numpyro_ugm.model.problem.build_problem`, the data's sites
        observed).
    param_model : ParamModel
        The parameters' space, initial values and log prior (whose priors may depend on
        other parameters: the model is traced with them).
    param_space : ParamSpace
        ``param_model.space``: the parameter sites, their transforms and checks.
    model : UGM
        The traced model the target was built from, for the entry points of exact
        enumeration (:mod:`numpyro_ugm.evaluate.exact`), which take a model.
    data : dict of str -> jax.Array
        The cases, model representation.
    inputs : dict of str -> jax.Array or None
        The per-example inputs, checked.
    num_examples : int
    sites : tuple of str
        The sampled parameter sites (those with a prior not fixed by ``params``).
    fixed : dict
        Values of the other parameter sites.
    """

    def __init__(self, owner: str, model: Callable | UGM, data: dict, model_args: tuple = (),
                 model_kwargs: dict | None = None, params: dict | None = None,
                 inputs: dict | None = None):
        problem = build_problem(model, data, model_args, model_kwargs, inputs)
        self.data, self.inputs = problem.data, problem.inputs
        self.num_examples = problem.num_examples
        if inputs is None and not isinstance(model, UGM):
            refuse_summed_examples(owner, model, model_args, model_kwargs or {}, problem)
        self.model, self.target = problem.model, problem.target
        self.param_model, self.param_space = problem.param_model, problem.param_model.space
        sites = self.param_space.sites
        given = dict(params or {})
        unknown = [n for n in given if n not in sites]
        if unknown:
            raise KeyError(f"{owner}: params has site(s) {unknown} that are not parameter "
                           f"sites of the model ({list(sites)})")
        self.sites = tuple(n for n, s in sites.items() if s.prior is not None and n not in given)
        if not self.sites:
            raise ValueError(
                f"{owner}: no parameter to sample: declare each parameter θ of the "
                f"potential with a prior, numpyro.sample(name, prior) (the model's parameter "
                f"sites are {list(sites)}, and params fixes {list(given)})")
        init = problem.param_model.init(jax.random.PRNGKey(0))
        self.fixed = {n: jnp.asarray(given.get(n, init[n])) for n in sites
                      if n not in self.sites}
        self._initial = {n: init[n] for n in self.sites}
        try:
            self.param_space.check({**init, **self.fixed})
        except (KeyError, TypeError, ValueError, FloatingPointError) as error:
            raise type(error)(f"{owner}: params: {error.args[0]}") from error
        check_free_energy(problem, init)  # raises if the latent sites cannot be summed out

    def init_position(self) -> dict:
        """The sampled sites at the model's initial values (prior medians), unconstrained."""
        return self.param_space.to_unconstrained(self._initial)

    def params(self, position: dict) -> dict:
        """Every parameter site, constrained, for the sampled sites at ``position``."""
        return {**self.fixed, **self.param_space.to_constrained(position)}

    def log_prior(self, position: dict) -> jax.Array:
        """``log p(θ) + log |det ∂θ/∂u|``: the prior density at ``position`` in the
        unconstrained space (every prior evaluated at the current values of the
        parameters it depends on: the model is traced with them)."""
        return (self.param_model.log_prior(self.params(position))
                + self.param_space.log_abs_det_jacobian(position))

    def free_energy(self, params: dict, state: dict, example: dict | None = None
                    ) -> jax.Array:
        """F(x; θ) of one configuration (model representation; latent sites summed out),
        under one example's inputs ``example`` (a row of :attr:`inputs`) for a CRF."""
        target = self.target if example is None else self.target.bind(**example)
        return target.free_energy(params, {n: state[n] for n in self.data})

    def free_energy_sum(self, params: dict, states: dict) -> jax.Array:
        """Σ_n F(x_n; θ) over the rows of ``states``, one per case of the data (model
        representation; latent sites, if present, are ignored and summed out), row n
        under the inputs of case n for a CRF."""
        observed = {n: states[n] for n in self.data}
        return jnp.sum(self.target.free_energies(params, observed, self.inputs))

    def log_unnormalized(self, position: dict) -> jax.Array:
        """``log p(θ) + log |J| + Σ_n F(x_n; θ)``: the log posterior density at ``position``
        (unconstrained) but for −N log Z(θ) and a constant."""
        return self.log_prior(position) + self.free_energy_sum(self.params(position),
                                                               self.data)

    def __repr__(self) -> str:
        inputs = "" if self.inputs is None else f", inputs={sorted(self.inputs)}"
        return (f"Posterior(sites={list(self.sites)}, fixed={list(self.fixed)}, "
                f"num_examples={self.num_examples}{inputs})")


def refuse_summed_examples(owner: str, model: Callable, model_args: tuple,
                           model_kwargs: dict, problem: Problem) -> None:
    """Raise when a model argument holds one row per example that the potential sums.

    A CRF's per-example inputs given as a model argument (``MCMC.run(key,
    features=X)``) are traced whole: a potential that broadcasts them against the state
    sums every example's term into each example's potential, a wrong posterior without
    an error. Such an argument is recognised by three signs: its leading axis has the
    ``num_examples`` rows of the data (at least two, not all equal), the model traces
    with one row of it to the same sites, and at a random state and random parameters
    the potential changes by f(x; u_i) − f(x; u_j) when its row i is replaced by row j
    (each row adds its own term). The error points to ``inputs=``.
    """
    num_examples = problem.num_examples
    if num_examples < 2:
        return
    named = [(f"positional argument {k}", k, v) for k, v in enumerate(model_args)]
    named += [(f"keyword argument {k!r}", k, v) for k, v in model_kwargs.items()]
    for label, key, value in named:
        if not (hasattr(value, "shape") and hasattr(value, "dtype")):
            continue
        rows = np.asarray(value)
        if rows.ndim == 0 or rows.shape[0] != num_examples \
                or not np.issubdtype(rows.dtype, np.number):
            continue
        differs = np.flatnonzero(np.any((rows != rows[:1]).reshape(num_examples, -1), 1))
        if differs.size and _sums_rows(model, model_args, model_kwargs, problem, key, rows,
                                       int(differs[0])):
            hint = key if isinstance(key, str) else "name"
            raise ValueError(
                f"{owner}: the model's {label} has shape {rows.shape}, one row per "
                f"example of the data ({num_examples}), and the potential sums its rows: "
                f"given as a model argument, every example's potential would hold every "
                f"example's row. Pass per-example inputs as inputs={{{hint!r}: ...}} (model "
                "keyword arguments with a leading example axis, as the learner and "
                "evaluation take them), and trace the model with one example's row")


def _sums_rows(model, model_args, model_kwargs, problem, key, rows, j):
    """Whether replacing row 0 of the argument ``key`` by row ``j`` changes the potential
    as replacing the whole argument by row 0, then by row ``j``, does (at two random
    states and parameters, the change not zero)."""
    def with_value(value):
        args, kwargs = list(model_args), dict(model_kwargs)
        if isinstance(key, str):
            kwargs[key] = value
        else:
            args[key] = value
        return build_problem(model, None, tuple(args), kwargs)

    def shapes(p):
        return ({n: s.shape for n, s in p.param_model.space.sites.items()},
                {n: d.batch_shape for n, d in p.target.state_sites.items()})

    try:
        one = [with_value(rows[0]), with_value(rows[j])]
    except Exception:  # noqa: BLE001 — the model does not take one row: not per example
        return False
    if any(shapes(p) != shapes(problem) for p in one):
        return False
    swapped = rows.copy()
    swapped[0] = rows[j]
    other = with_value(swapped)
    space, rng = problem.param_model.space, np.random.default_rng(0)
    changes = []
    for k in range(2):
        u = space.to_unconstrained(problem.param_model.init(jax.random.PRNGKey(k)))
        params = space.to_constrained({n: np.asarray(v) + rng.standard_normal(np.shape(v))
                                       .astype(np.asarray(v).dtype) for n, v in u.items()})
        x = problem.target.random_state(jax.random.PRNGKey(100 + k))
        whole = float(problem.target.log_potential(params, x)
                      - other.target.log_potential(params, x))
        rowwise = float(one[0].target.log_potential(params, x)
                        - one[1].target.log_potential(params, x))
        if not np.isclose(whole, rowwise, rtol=1e-4, atol=1e-5):
            return False
        changes.append(abs(whole))
    return max(changes) > 1e-5
