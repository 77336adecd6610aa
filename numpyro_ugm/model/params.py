"""The parameters of a model: their sites, the map to the unconstrained space learning
runs in, and the one check of user-supplied parameter values.

:class:`ParamSpace` knows only the sites (name, shape, constraint, prior); tracing the
model (initial values, the prior density) is :class:`~numpyro_ugm.model.UGM`'s job.
"""

import difflib
from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.distributions import constraints
from numpyro.distributions.transforms import biject_to

__all__ = ["ParamSite", "ParamSpace", "TreeShape", "value_shape"]


class TreeShape(NamedTuple):
    """The shape of a pytree-valued parameter site: its tree structure and the shapes of
    its leaves."""

    structure: Any
    leaf_shapes: tuple


def value_shape(value) -> tuple:
    """The shape of a parameter site's value: the array's shape, or for a pytree of
    arrays (e.g. the parameters of a neural network that
    ``numpyro.contrib.module.eqx_module`` declares as one ``numpyro.param`` site) its
    :class:`TreeShape`."""
    leaves, tree = jax.tree.flatten(value)
    if tree.num_nodes == 1 and len(leaves) == 1:  # an array (or a scalar)
        return tuple(jnp.shape(value))
    return TreeShape(tree, tuple(tuple(jnp.shape(leaf)) for leaf in leaves))


class ParamSite:
    """A parameter of the model.

    Attributes
    ----------
    name : str
    shape : tuple or TreeShape
        Shape of the value (:func:`value_shape`; a :class:`TreeShape` for a pytree of
        arrays, such as a neural network's parameters).
    constraint : numpyro constraint
        Support of the parameter; learning runs in the unconstrained space.
    prior : numpyro Distribution or None
        The prior of a ``numpyro.sample`` parameter (MAP), ``None`` for a
        ``numpyro.param`` site (maximum likelihood).
    """

    def __init__(self, name, shape, constraint, prior):
        self.name, self.shape, self.constraint, self.prior = name, shape, constraint, prior

    def __repr__(self):
        kind = "prior " + type(self.prior).__name__ if self.prior is not None else "param"
        return f"ParamSite({self.name!r}, shape={self.shape}, {kind})"


class ParamSpace:
    """The parameter sites of a model and the maps between constrained values θ and the
    unconstrained values u that optimizers and posterior samplers move.

    Parameters
    ----------
    sites : dict of str -> ParamSite
    """

    def __init__(self, sites: Mapping[str, ParamSite]):
        self.sites = dict(sites)

    @property
    def has_prior(self) -> bool:
        """Whether any site has a prior (MAP or a posterior)."""
        return any(s.prior is not None for s in self.sites.values())

    def to_unconstrained(self, params: dict) -> dict:
        """Map constrained parameters to the unconstrained space learning runs in."""
        return {n: jax.tree.map(biject_to(self.sites[n].constraint).inv, v)
                for n, v in params.items()}

    def to_constrained(self, unconstrained: dict) -> dict:
        """Inverse of :meth:`to_unconstrained`."""
        return {n: jax.tree.map(biject_to(self.sites[n].constraint), v)
                for n, v in unconstrained.items()}

    def log_abs_det_jacobian(self, unconstrained: dict) -> jax.Array:
        """``log |det ∂θ/∂u|`` of :meth:`to_constrained` at ``unconstrained`` (the sites
        given): what a density over θ gains in the unconstrained space."""
        total = jnp.zeros(())
        for n, u in unconstrained.items():
            transform = biject_to(self.sites[n].constraint)
            for leaf in jax.tree.leaves(u):
                total = total + jnp.sum(transform.log_abs_det_jacobian(leaf,
                                                                       transform(leaf)))
        return total

    def check(self, params: dict) -> None:
        """Raise unless ``params`` hold exactly the parameter sites, each with the site's
        shape, a floating-point dtype and finite values inside the site's support.

        The one check of parameters: every entry point that takes them calls it, and
        none falls back to initial values for a missing site. Traced values (under
        ``jax.jit``, ``jax.grad``, ``jax.vmap``) are checked for names, shapes and dtypes
        only.

        Raises
        ------
        TypeError
            ``params`` not a dict, or a site with an integer or boolean dtype.
        KeyError
            A name that is not a parameter site (with the closest site names), or a
            missing site.
        ValueError
            A shape that is not the site's, or a value outside the site's support.
        FloatingPointError
            A non-finite value (the first, with its index).
        """
        if not isinstance(params, Mapping):
            raise TypeError(f"params must be a dict of parameter site -> array, got "
                            f"{type(params).__name__}")
        expected = list(self.sites)
        missing = [n for n in expected if n not in params]
        unknown = [n for n in params if n not in self.sites]
        if unknown:
            hints = ({unknown[0]: missing[0]} if len(unknown) == len(missing) == 1 else
                     {n: _closest(n, missing or expected) for n in unknown})
            hint = "; ".join(f"did you mean {h!r} for {n!r}?" for n, h in hints.items() if h)
            hint = f" ({hint})" if hint else ""
            raise KeyError(f"params has name(s) {unknown} that are not parameter sites of "
                           f"the model{hint}; its parameter sites are {expected}")
        if missing:
            what = (f"parameter site {missing[0]!r} is" if len(missing) == 1
                    else f"parameter sites {missing} are")
            raise KeyError(f"{what} missing from params (the model's parameter sites are "
                           f"{expected}); give every site, e.g. a learner's result.params "
                           "or m.init_params(rng_key)")
        for name, site in self.sites.items():
            _check_site(site, params[name])


def _check_site(site, value):
    """Shape, dtype, finiteness and support of one parameter site's value (each leaf of a
    pytree-valued site)."""
    shape = value_shape(value)
    if shape != site.shape:
        raise ValueError(_shape_mismatch(site.name, value, shape, site.shape))
    for value in jax.tree.leaves(value):
        _check_leaf(site, value)


def _shape_mismatch(name, value, shape, expected) -> str:
    """What differs between a site's value of ``shape`` and the site's shape: for two
    pytrees, the arrays (by path) of another shape, or missing, or not the site's."""
    if not (isinstance(shape, TreeShape) and isinstance(expected, TreeShape)):
        return f"parameter site {name!r} has shape {shape}, the model expects {expected}"
    given = {p: tuple(jnp.shape(leaf)) for p, leaf in _leaf_paths(value)}
    template = jax.tree.unflatten(expected.structure, [jax.ShapeDtypeStruct(s, jnp.float32)
                                                       for s in expected.leaf_shapes])
    wanted = {p: leaf.shape for p, leaf in _leaf_paths(template)}
    if given.keys() == wanted.keys():
        differ = [(p, s) for p, s in given.items() if s != wanted[p]]
        if not differ:  # e.g. another equinox module's static fields
            return (f"parameter site {name!r} holds arrays of the model's shapes in "
                    f"another pytree: {shape.structure}; the model's is "
                    f"{expected.structure}")
        (path, got), *more = differ
        others = f" (and {len(more)} other array(s) of another shape)" if more else ""
        return (f"parameter site {name!r} has shape {got} at {path}, the model expects "
                f"{wanted[path]}{others}")
    missing = [p for p in wanted if p not in given]
    extra = [p for p in given if p not in wanted]
    what = " and ".join(([f"lacks {_listed(missing)}"] if missing else [])
                        + ([f"holds {_listed(extra)}, not in the model's"] if extra else []))
    return (f"parameter site {name!r} {what} (the model's site holds {len(wanted)} "
            f"arrays: give the structure of m.init_params(rng_key)[{name!r}])")


def _leaf_paths(tree) -> list:
    """``(path, leaf)`` of each leaf of ``tree``, its path as ``jax.tree_util.keystr``
    writes it (e.g. ``['Dense_0']['kernel']``, ``.layers[0].weight``)."""
    return [(jax.tree_util.keystr(path), leaf)
            for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]]


def _listed(paths, limit=3) -> str:
    """Up to ``limit`` paths, and how many more."""
    more = f" and {len(paths) - limit} more" if len(paths) > limit else ""
    return ", ".join(paths[:limit]) + more


def _check_leaf(site, value):
    """Dtype, finiteness and support of one array of a parameter site's value."""
    name = site.name
    dtype = value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"parameter site {name!r} has dtype {dtype}; parameters are "
                        "real-valued: give floating-point values (jnp.asarray(value, "
                        "float); in a model, numpyro.param(name, 1.0), not 1)")
    if isinstance(value, jax.core.Tracer):
        return
    value = np.asarray(value)
    bad = ~np.isfinite(value)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise FloatingPointError(f"parameter site {name!r} holds a non-finite value "
                                 f"{value[where].item()} at index {where}")
    if _unbounded(site.constraint):  # finite is inside: no program to compile
        return
    with jax.ensure_compile_time_eval():
        inside = np.asarray(site.constraint.check(jnp.asarray(value)))
    if not inside.all():
        where = (tuple(int(i) for i in np.argwhere(~inside)[0])
                 if inside.shape == value.shape and value.ndim else ())
        shown = value[where].item() if inside.shape == value.shape else value
        raise ValueError(f"parameter site {name!r} holds {shown} at index {where}, "
                         f"outside its support {site.constraint}")


def _unbounded(constraint) -> bool:
    """Whether every finite value satisfies ``constraint`` (the reals, whatever their
    event dimensions)."""
    while isinstance(constraint, constraints.independent):
        constraint = constraint.base_constraint
    return type(constraint) in (type(constraints.real), type(constraints.real_vector),
                                type(constraints.real_matrix))


def _closest(name, candidates):
    """The candidate closest to ``name`` (ignoring case), or None if none is close."""
    lower = {c.lower(): c for c in candidates}
    match = difflib.get_close_matches(name.lower(), list(lower), n=1, cutoff=0.5)
    return lower[match[0]] if match else None
