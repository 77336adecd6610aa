"""Finite domains of the discrete state: ``Spin``, ``Binary`` and ``Categorical``.

Each domain is a numpyro ``Distribution`` with counting measure as base measure: its
``log_prob`` is 0 on the domain (and ``-inf`` off it), so the model's ``numpyro.factor``
terms alone define the potential. A site's value has two representations:

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

from ._checks import check_count


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
    def num_variables(self) -> int:
        """Number of discrete variables in the site."""
        return int(np.prod(self.shape_, dtype=np.int64))

    @property
    def log_num_states(self) -> float:
        """log of the number of configurations of the whole site."""
        return self.num_variables * float(np.log(self.num_values))

    def _model_event_shape(self) -> tuple:
        return ()

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
