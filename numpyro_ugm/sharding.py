"""Placement of particles on a device mesh: the one helper that the estimators and AIS
share, below both layers.

The learner (``MLE(..., mesh=...)``) and AIS (``mesh=``) set a mesh around their
compiled programs; inside them, :func:`shard_particles` asks XLA to split the leading
(particle or chain) axis of an array over the mesh's first axis. Without a mesh it does
nothing, so the same code runs on one device.
"""

from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["shard_particles"]


def shard_particles(tree: Any) -> Any:
    """Split the leading (particle) axis over the first axis of the mesh set by the
    caller (the learner's ``MLE(..., mesh=...)``, AIS's ``mesh=``); a no-op without one.
    Arrays whose leading axis the mesh axis does not divide are left as they are."""
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty:
        return tree
    axis = mesh.axis_names[0]
    count = mesh.shape[axis]
    spec = jax.sharding.PartitionSpec(axis)
    return jax.tree.map(
        lambda a: jax.lax.with_sharding_constraint(a, spec)
        if jnp.ndim(a) and a.shape[0] % count == 0 else a, tree)
