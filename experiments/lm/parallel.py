"""Data parallelism over all devices with ``jax.sharding``, single- or multi-host.

Parameters and optimiser state are replicated; batches are sharded over the
leading (row) axis on a one-axis mesh named ``"data"``. XLA inserts the gradient
all-reduce. Every process builds the same global batch from the same seed, and
``put_global`` hands each device its slice, so the code is identical on one CPU, a
GPU or a multi-host TPU slice (after ``jax.distributed.initialize()``).
"""

from __future__ import annotations

from typing import Any

import jax
from jax.experimental import multihost_utils
from jax.sharding import Mesh
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec
import numpy as np


def make_mesh(num_devices: int = 0) -> Mesh:
  """A ``("data",)`` mesh over the first ``num_devices`` devices (0: all)."""
  devices = jax.devices()
  if num_devices:
    if num_devices > len(devices):
      raise ValueError(f"num_devices={num_devices} exceeds the {len(devices)} available.")
    devices = devices[:num_devices]
  return Mesh(np.array(devices), ("data",))


def replicated(mesh: Mesh) -> NamedSharding:
  return NamedSharding(mesh, PartitionSpec())


def row_sharded(mesh: Mesh) -> NamedSharding:
  return NamedSharding(mesh, PartitionSpec("data"))


def put_global(x: np.ndarray, sharding: NamedSharding) -> jax.Array:
  """A global array from a host array that every process holds in full."""
  x = np.asarray(x)
  return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])


def put_rows(x: np.ndarray, mesh: Mesh) -> jax.Array:
  """Shards ``x`` over its leading axis, which must divide by the mesh size."""
  if x.shape[0] % mesh.size:
    raise ValueError(f"Batch of {x.shape[0]} rows does not divide over {mesh.size} devices.")
  return put_global(x, row_sharded(mesh))


def replicate(tree: Any, mesh: Mesh) -> Any:
  """Replicates every array of ``tree`` over the mesh."""
  sharding = replicated(mesh)
  return jax.tree.map(lambda x: jax.device_put(x, sharding), tree)


def to_host(x: jax.Array) -> np.ndarray:
  """The full value of a (possibly multi-host sharded) array on every process."""
  if jax.process_count() > 1 and not x.is_fully_addressable:
    return np.asarray(multihost_utils.process_allgather(x, tiled=True))
  return np.asarray(jax.device_get(x))
