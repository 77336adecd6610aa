"""Placement of particles on a device mesh: the helpers that the estimators, AIS and
sampling share, below those layers.

The learner (``MLE(..., mesh=...)``), AIS and :func:`~numpyro_ugm.sample` (``mesh=``) set
a mesh around their compiled programs (:func:`use_mesh`); inside them,
:func:`shard_particles` asks XLA to split the leading (particle or chain) axis of an
array over the mesh's first axis. Without a mesh neither does anything, so the same code
runs on one device.
"""

import contextlib
from typing import Any, Optional

import jax
import jax.numpy as jnp

__all__ = ["shard_particles", "auto_axes", "use_mesh"]


def auto_axes(mesh: jax.sharding.Mesh) -> jax.sharding.Mesh:
    """``mesh`` with every axis left to XLA's automatic sharding propagation (what the
    compiled programs are written for)."""
    return jax.sharding.Mesh(mesh.devices, mesh.axis_names, axis_types=(
        jax.sharding.AxisType.Auto,) * len(mesh.axis_names))


def use_mesh(mesh: Optional[jax.sharding.Mesh]):
    """A context that sets ``mesh`` (its axes automatic) for the programs run in it; one
    that does nothing for ``None``."""
    return contextlib.nullcontext() if mesh is None else jax.set_mesh(auto_axes(mesh))


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
