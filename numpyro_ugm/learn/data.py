"""Where the learner's data goes: checks of per-example inputs, the minibatch order, and
placement of data and particles on a device mesh."""

from typing import Optional

import jax
import numpy as np

from ..runtime.checks import check_inputs as checked_inputs
from ..runtime.sharding import auto_axes


def check_inputs(inputs, data):
    """Per-example model inputs (CRFs) as arrays sharing the data's leading example axis
    (``None`` stays ``None``)."""
    if inputs is None:
        return None
    num = next(iter(np.shape(v)[0] if np.ndim(v) else None for v in data.values()))
    return checked_inputs(inputs, num_examples=num)[0]


class Minibatches:
    """The example order: a fresh permutation per epoch (drawn from the state's
    ``data_key``), read ``batch_size`` examples at a time."""

    def __init__(self, num_examples: int, batch_size: int):
        self.num_examples, self.batch_size = num_examples, batch_size
        self.per_epoch = num_examples // batch_size
        self.full = batch_size == num_examples

    def permutation(self, state):
        """The example order of ``state.step``'s epoch."""
        epoch = state.step // self.per_epoch
        return jax.random.permutation(jax.random.fold_in(state.data_key, epoch),
                                      self.num_examples)

    def indices(self, state, perm):
        """Examples of ``state.step``'s minibatch (None: the full batch)."""
        if self.full:
            return None
        position = state.step % self.per_epoch
        return jax.lax.dynamic_slice(perm, (position * self.batch_size,),
                                     (self.batch_size,))


class Placement:
    """Data and particles on a device mesh (or, without one, where JAX puts them)."""

    def __init__(self, mesh: Optional[jax.sharding.Mesh]):
        if mesh is not None and not isinstance(mesh, jax.sharding.Mesh):
            raise TypeError(f"mesh must be a jax.sharding.Mesh, got {mesh!r}")
        # XLA partitions the steps (automatic sharding propagation)
        self.mesh = None if mesh is None else auto_axes(mesh)

    def run(self, fn):
        """``fn`` run with the mesh set (estimators then split particles they create
        over it), or ``fn`` itself without a mesh."""
        if self.mesh is None:
            return fn

        def wrapped(*args):
            with jax.set_mesh(self.mesh):
                return fn(*args)

        return wrapped

    def shard(self, tree, *sizes):
        """With a mesh: split the leading axis of the leaves whose leading axis is one of
        ``sizes`` (particles, examples) over the mesh's first axis; the rest replicated.
        jit then partitions every vmap over particles or examples accordingly."""
        if self.mesh is None or tree is None:
            return tree
        axis = self.mesh.axis_names[0]
        count = self.mesh.shape[axis]
        P = jax.sharding.PartitionSpec

        def place(a):
            split = (np.ndim(a) > 0 and a.shape[0] in sizes and a.shape[0] % count == 0)
            spec = P(axis) if split else P()
            return jax.device_put(a, jax.sharding.NamedSharding(self.mesh, spec))

        return jax.tree.map(place, tree)
