"""Domains of the state: the finite ``Spin``, ``Binary`` and ``Categorical``, and the
real-valued ``Real``.

Each domain is a numpyro ``Distribution`` whose ``log_prob`` is 0 on the domain (and
``-inf`` off it) — counting measure on a finite domain, Lebesgue measure on ``Real`` — so
the model's ``numpyro.factor`` terms alone define the potential. A real site also has a
**base distribution** (a Normal, :meth:`Real.base_log_prob`): the start of tempering
paths (SMC, PSMC, AIS, tempered kernels), where a finite site's base is uniform. A finite
site's value has two representations (a real site's are the same floats):

* the **data** representation, used in data sets, samples and user-facing results:
  ``Spin`` values in {-1, +1}, ``Binary`` values in {0, 1}, ``Categorical`` integer labels
  in {0, ..., K-1} (``int32``);
* the **model** representation, which the model function receives and which particles and
  kernel positions hold: floats for ``Spin`` and ``Binary``, one-hot float vectors (an
  extra trailing axis of size K) for ``Categorical``, so that factors written as products
  of variables are multilinear.
"""

from collections.abc import Sequence
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike, DTypeLike
from numpyro.distributions import Distribution, constraints

from .runtime.checks import check_count


class _FiniteSet(constraints.Constraint):
    """Membership in a finite set of scalar values."""

    is_discrete = True

    def __init__(self, values: Sequence[float]):
        self.values = tuple(float(v) for v in values)

    def __call__(self, x):
        x = jnp.asarray(x)
        return jnp.any(jnp.stack([x == v for v in self.values]), axis=0)

    def feasible_like(self, prototype):
        return jnp.full(jnp.shape(prototype), self.values[0])

    def tree_flatten(self):
        return (), ((), {"values": self.values})

    def __eq__(self, other):
        return isinstance(other, _FiniteSet) and self.values == other.values

    def __repr__(self) -> str:
        return f"FiniteSet{self.values}"


class _OneHot(constraints.Constraint):
    """One-hot vectors along the last axis."""

    is_discrete = True
    event_dim = 1

    def __call__(self, x):
        x = jnp.asarray(x)
        binary = jnp.all((x == 0) | (x == 1), axis=-1)
        return binary & (jnp.sum(x, axis=-1) == 1)

    def feasible_like(self, prototype):
        return jax.nn.one_hot(jnp.zeros(jnp.shape(prototype)[:-1], jnp.int32),
                              jnp.shape(prototype)[-1])

    def tree_flatten(self):
        return (), ((), {})

    def __eq__(self, other):
        return isinstance(other, _OneHot)


class Domain(Distribution):
    """Base class of the finite domains: counting measure over a product of finite sets.

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the site (number of variables along each axis).
    """

    is_discrete = True
    has_enumerate_support = True
    #: whether the domain is finite (``Real`` is not: no enumeration, no conditional
    #: logits; its variables move by exact Gaussian draws or gradient kernels)
    finite = True
    #: scalar values of one variable in the model representation (Spin, Binary)
    values = ()
    #: dtype of the data representation
    data_dtype = jnp.int8

    def __init__(self, shape: int | tuple = (), *, validate_args: Optional[bool] = None):
        dims = (shape,) if np.ndim(shape) == 0 else tuple(shape)
        self.shape_ = tuple(check_count(type(self).__name__, "shape", d, minimum=0)
                            for d in dims)
        super().__init__(batch_shape=self.shape_, event_shape=self._model_event_shape(),
                         validate_args=validate_args)

    # --- numbers of the domain ------------------------------------------------------
    @property
    def num_values(self) -> int:
        """Number of values one variable can take."""
        return len(self.values)

    @property
    def logit_width(self) -> int:
        """Width of a variable's conditional parameters in samplers: K logits for a
        finite domain, the 2 Gaussian natural parameters (η, λ) for ``Real``."""
        return self.num_values

    @property
    def num_variables(self) -> int:
        """Number of discrete variables in the site."""
        return int(np.prod(self.shape_, dtype=np.int64))

    @property
    def log_num_states(self) -> float:
        """log of the number of configurations of the whole site."""
        return self.num_variables * float(np.log(self.num_values))

    def _model_event_shape(self) -> tuple:
        return ()

    def describe(self) -> str:
        """The domain's values, for error messages."""
        return f"{type(self).__name__} {{{', '.join(f'{v:g}' for v in self.values)}}}"

    def with_shape(self, shape: int | tuple) -> "Domain":
        """The same domain over a site of shape ``shape`` (e.g. the shape a
        ``numpyro.plate`` gives the site)."""
        return type(self)(shape)

    # --- representations ------------------------------------------------------------
    def to_model(self, value: ArrayLike, dtype: Optional[DTypeLike] = None) -> jax.Array:
        """Data representation -> model representation (float)."""
        dtype = dtype or jnp.result_type(float)
        return jnp.asarray(value).astype(dtype)

    def from_model(self, x: ArrayLike) -> jax.Array:
        """Model representation -> data representation."""
        return jnp.asarray(x).astype(self.data_dtype)

    def model_values(self, dtype: Optional[DTypeLike] = None) -> jax.Array:
        """The values of one variable in the model representation, stacked: ``(K, *event)``."""
        return jnp.asarray(self.values, dtype or jnp.result_type(float))

    def labels(self, x: ArrayLike) -> jax.Array:
        """Model representation -> integer labels 0..K-1 (index into ``values``)."""
        return (jnp.asarray(x) > self.values[0]).astype(jnp.int32)

    def in_domain(self, value: ArrayLike) -> jax.Array:
        """Elementwise membership of data-representation values in the domain."""
        value = jnp.asarray(value)
        return jnp.any(jnp.stack([value == v for v in self.values]), axis=0)

    def conditional_logits(self, grad: jax.Array) -> jax.Array:
        """Log-odds of each value of a variable from the gradient of a multilinear
        log-potential with respect to that variable's model value.

        ``grad`` has shape ``(..., *event)``; the result has shape (..., K) and is defined up
        to an additive constant per variable.
        """
        return grad[..., None] * self.model_values(grad.dtype)

    @property
    def two_valued(self) -> bool:
        """Whether a variable is one scalar with two values (Spin, Binary): its
        conditional is then one log-odds, :meth:`log_odds`."""
        return self.num_values == 2 and not self.event_shape

    def log_odds(self, grad: jax.Array) -> jax.Array:
        """For a two-valued domain, f(x_i = high) − f(x_i = low) from the gradient of a
        multilinear log-potential: ``grad · (high − low)``. Computing it directly, not as
        a difference of :meth:`conditional_logits`, keeps the elementwise work after it
        vectorized on the CPU (slices of a product with the values (0, 1), which XLA
        turns into an iota, are not: a 6x slower softplus over an RBM's hidden units)."""
        low, high = self.values
        return grad * (high - low)

    def reference(self, shape: tuple = (), dtype: Optional[DTypeLike] = None) -> jax.Array:
        """A fixed point of the domain in the model representation (first value)."""
        return jnp.broadcast_to(self.model_values(dtype)[0], tuple(shape) + self.event_shape)

    # --- numpyro Distribution API -------------------------------------------------------
    @property
    def support(self):
        return _FiniteSet(self.values)

    def sample(self, key: jax.Array, sample_shape: tuple = ()) -> jax.Array:
        """Uniform draw from the domain, in the model representation."""
        labels = jax.random.randint(key, tuple(sample_shape) + self.batch_shape, 0,
                                    self.num_values)
        return self.label_to_model(labels)

    def label_to_model(self, labels: ArrayLike, dtype: Optional[DTypeLike] = None
                       ) -> jax.Array:
        """Integer labels 0..K-1 -> model representation."""
        dtype = dtype or jnp.result_type(float)
        low, high = self.values[0], self.values[-1]
        return jnp.where(labels > 0, jnp.asarray(high, dtype), jnp.asarray(low, dtype))

    def log_prob(self, value: ArrayLike) -> jax.Array:
        inside = self._inside_model(value)
        return jnp.where(inside, 0.0, -jnp.inf)

    def _inside_model(self, value):
        return self.support(value)

    def enumerate_support(self, expand: bool = True) -> jax.Array:
        values = self.model_values()
        values = values.reshape((self.num_values,) + (1,) * len(self.batch_shape)
                                + self.event_shape)
        if expand:
            values = jnp.broadcast_to(values, (self.num_values,) + self.batch_shape
                                      + self.event_shape)
        return values

    def tree_flatten(self):
        return (), (self.shape_,)

    @classmethod
    def tree_unflatten(cls, aux, params):
        return cls(*aux)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.shape_})"


class Spin(Domain):
    """Spins in {-1, +1} (Ising models, the PF paper's VBM).

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the site.
    """

    values = (-1.0, 1.0)


class Binary(Domain):
    """Binary variables in {0, 1} (Boltzmann machines, RBMs, ERGM edges).

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the site.
    """

    values = (0.0, 1.0)

    def conditional_logits(self, grad: jax.Array) -> jax.Array:
        # (0, grad): the product with the values (0, 1) would become an iota in XLA,
        # whose slices (a sampler's log-odds) keep the elementwise work after them from
        # vectorizing on the CPU (RBM AIS 784x500: 1.25x slower)
        return jnp.stack([jnp.zeros_like(grad), grad], axis=-1)


class Categorical(Domain):
    """K-valued labels (Potts models, multi-class CRFs).

    In data and samples a variable is an integer label in {0, ..., K-1}; inside the
    model it is a one-hot vector of length K, so factors such as ``x_i @ J @ x_j`` stay
    multilinear.

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the site (number of labelled variables along each axis).
    num_categories : int
        Number of labels K (at least 2). Required: ``Categorical(4, num_categories=3)``
        is 4 variables with 3 labels each; ``Categorical(4)`` is an error.
    """

    data_dtype = jnp.int32

    def __init__(self, shape: int | tuple = (), num_categories: Optional[int] = None, *,
                 validate_args: Optional[bool] = None):
        if num_categories is None:
            raise TypeError(
                f"Categorical needs num_categories, the number of labels K: write "
                f"Categorical(shape, num_categories=K) (e.g. Categorical({shape!r}, "
                f"num_categories=3) for a site of shape {shape!r} with 3 labels per "
                f"variable); the first argument is the site's shape, not K")
        self.num_categories = check_count("Categorical", "num_categories", num_categories,
                                          minimum=2)
        super().__init__(shape, validate_args=validate_args)

    @property
    def values(self) -> tuple:
        return tuple(range(self.num_categories))

    def _model_event_shape(self) -> tuple:
        return (self.num_categories,)

    def with_shape(self, shape: int | tuple) -> "Domain":
        return Categorical(shape, self.num_categories)

    def to_model(self, value: ArrayLike, dtype: Optional[DTypeLike] = None) -> jax.Array:
        return jax.nn.one_hot(jnp.asarray(value), self.num_categories,
                              dtype=dtype or jnp.result_type(float))

    def from_model(self, x: ArrayLike) -> jax.Array:
        return jnp.argmax(x, axis=-1).astype(self.data_dtype)

    def labels(self, x: ArrayLike) -> jax.Array:
        return jnp.argmax(x, axis=-1).astype(jnp.int32)

    def label_to_model(self, labels: ArrayLike, dtype: Optional[DTypeLike] = None
                       ) -> jax.Array:
        return jax.nn.one_hot(labels, self.num_categories, dtype=dtype or jnp.result_type(float))

    def model_values(self, dtype: Optional[DTypeLike] = None) -> jax.Array:
        return jnp.eye(self.num_categories, dtype=dtype or jnp.result_type(float))

    def conditional_logits(self, grad: jax.Array) -> jax.Array:
        return grad

    @property
    def support(self):
        return _OneHot()

    def tree_flatten(self):
        return (), (self.shape_, self.num_categories)

    def __repr__(self) -> str:
        return f"Categorical({self.shape_}, num_categories={self.num_categories})"


class Real(Domain):
    """Real-valued variables (Gaussian MRFs, Gaussian–Bernoulli RBMs, energy-based models).

    Inside the model a site is a float array of its shape, as in the data. The domain's
    measure is Lebesgue measure, so the factors alone define the density; the potential
    must be normalizable (e.g. a Gaussian MRF's precision positive definite), which the
    samplers check: a chain that diverges is an error naming the site.

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the site.
    loc, scale : float or array broadcastable to ``shape``, optional
        Mean and standard deviation of the site's base distribution, a Normal: where
        tempering starts (SMC, PSMC, AIS, tempered kernels) and where fresh chains are
        drawn. Not given (``None``): 0 and 1, which the learners and evaluations replace
        by the data's per-variable moments (:meth:`fitted`).
    """

    is_discrete = False
    has_enumerate_support = False
    finite = False
    data_dtype = None  # floats: the default float dtype

    def __init__(self, shape: int | tuple = (), *, loc: Optional[ArrayLike] = None,
                 scale: Optional[ArrayLike] = None, validate_args: Optional[bool] = None):
        super().__init__(shape, validate_args=validate_args)
        #: whether the base is to be fitted to data (neither loc nor scale given)
        self.unfitted = loc is None and scale is None
        loc = np.asarray(0.0 if loc is None else loc, float)
        scale = np.asarray(1.0 if scale is None else scale, float)
        for name, v in (("loc", loc), ("scale", scale)):
            try:
                np.broadcast_to(v, self.shape_)
            except ValueError:
                raise ValueError(f"Real: {name} of shape {v.shape} does not broadcast to "
                                 f"the site's shape {self.shape_}") from None
            if not np.all(np.isfinite(v)):
                raise ValueError(f"Real: {name} must be finite, got {v}")
        if np.any(scale <= 0):
            raise ValueError(f"Real: scale must be positive, got {scale}")
        self.loc, self.scale = loc, scale

    @property
    def values(self) -> tuple:
        raise TypeError("a Real site has no finite set of values")

    @property
    def num_values(self) -> int:
        raise TypeError("a Real site has no finite set of values")

    @property
    def log_num_states(self) -> float:
        """0: the base distribution is normalized (a finite site's base is counting
        measure, of mass the number of configurations)."""
        return 0.0

    @property
    def two_valued(self) -> bool:
        return False

    @property
    def logit_width(self) -> int:
        return 2

    def describe(self) -> str:
        return "Real (finite real numbers)"

    def with_shape(self, shape: int | tuple) -> "Real":
        if self.unfitted:
            return Real(shape)
        dims = (shape,) if np.ndim(shape) == 0 else tuple(shape)
        return Real(shape, loc=np.broadcast_to(self.loc, dims),
                    scale=np.broadcast_to(self.scale, dims))

    def fitted(self, values: ArrayLike) -> "Real":
        """The same site with the base Normal fitted to ``values`` (data, model
        representation, leading example axis): per-variable mean and standard deviation
        (floored at 1e-3 of the largest, and at 1e-6)."""
        values = np.asarray(values, float).reshape((-1,) + self.shape_)
        loc = values.mean(0)
        scale = values.std(0) if values.shape[0] > 1 else np.ones(self.shape_)
        scale = np.maximum(scale, max(1e-6, 1e-3 * float(np.max(scale, initial=0.0))))
        return Real(self.shape_, loc=loc, scale=scale)

    # --- representations ------------------------------------------------------------
    def from_model(self, x: ArrayLike) -> jax.Array:
        return jnp.asarray(x)

    def in_domain(self, value: ArrayLike) -> jax.Array:
        return jnp.isfinite(jnp.asarray(value, float))

    def reference(self, shape: tuple = (), dtype: Optional[DTypeLike] = None) -> jax.Array:
        """The base distribution's mean."""
        dtype = dtype or jnp.result_type(float)
        return jnp.broadcast_to(jnp.asarray(self.loc, dtype), tuple(shape))

    def _not_finite(self, *args, **kwargs):
        raise TypeError("a Real site has no finite set of values (labels, logits and "
                        "enumeration are for Spin, Binary and Categorical sites)")

    model_values = labels = label_to_model = conditional_logits = log_odds = _not_finite

    # --- numpyro Distribution API -------------------------------------------------------
    @property
    def support(self):
        return constraints.real

    def sample(self, key: jax.Array, sample_shape: tuple = ()) -> jax.Array:
        """A draw from the base Normal."""
        dtype = jnp.result_type(float)
        z = jax.random.normal(key, tuple(sample_shape) + self.batch_shape, dtype)
        return jnp.asarray(self.loc, dtype) + jnp.asarray(self.scale, dtype) * z

    def log_prob(self, value: ArrayLike) -> jax.Array:
        return jnp.where(jnp.isfinite(value), 0.0, -jnp.inf)

    def base_log_prob(self, x: ArrayLike) -> jax.Array:
        """log density of the base Normal at one site value ``x`` (summed)."""
        x = jnp.asarray(x)
        loc, scale = (jnp.asarray(v, x.dtype) for v in (self.loc, self.scale))
        z = (x - loc) / scale
        return jnp.sum(-0.5 * z * z - jnp.log(scale) - 0.5 * np.log(2 * np.pi))

    def base_natural(self, dtype: Optional[DTypeLike] = None) -> jax.Array:
        """The base Normal's natural parameters per variable, ``(num_variables, 2)``:
        (η, λ) = (loc / scale², 1 / scale²), the form of a real variable's conditional
        (:func:`~numpyro_ugm.conditionals.gaussian_logits`)."""
        dtype = dtype or jnp.result_type(float)
        precision = jnp.broadcast_to(jnp.asarray(self.scale, dtype) ** -2.0,
                                     self.shape_).reshape(-1)
        loc = jnp.broadcast_to(jnp.asarray(self.loc, dtype), self.shape_).reshape(-1)
        return jnp.stack([loc * precision, precision], -1)

    def enumerate_support(self, expand: bool = True):
        self._not_finite()

    def tree_flatten(self):
        if self.unfitted:
            return (), (self.shape_, None, None)
        return (), (self.shape_, _Frozen(self.loc), _Frozen(self.scale))

    @classmethod
    def tree_unflatten(cls, aux, params):
        shape, loc, scale = aux
        if loc is None:
            return cls(shape)
        return cls(shape, loc=loc.value, scale=scale.value)

    def __repr__(self) -> str:
        return f"Real({self.shape_})"


class _Frozen:
    """A numpy array as hashable static data (pytree aux data must be hashable)."""

    def __init__(self, value):
        self.value = np.asarray(value)

    def __hash__(self):
        return hash((self.value.shape, self.value.tobytes()))

    def __eq__(self, other):
        return (isinstance(other, _Frozen) and self.value.shape == other.value.shape
                and bool(np.all(self.value == other.value)))
