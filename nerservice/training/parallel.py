"""Single-node data parallelism for the JAX backend (several GPUs of one host).

``use_data_parallel(n)`` installs Keras' ``keras.distribution.DataParallel`` over the first ``n`` local
devices.  ``JaxStep`` then keeps the model and optimizer state replicated on every device and places each
global batch *sharded on its batch axis*; XLA's SPMD partitioner splits the compiled step and inserts the
gradient all-reduce, so one process drives all GPUs and the update is the same as on one device (the
gradient is a sum over sentences whichever device computed them).  Why not one process per GPU: the
Spark path already does that across hosts (TensorFlow collectives); inside one host, one jitted step over a
device mesh has no rendezvous, no extra processes and no host-side copies of the state.

The distinct-word char matrix (``word_chars``) is replicated, not sharded: the token → word index of every
sentence points into the whole batch's word list, so each device encodes the (small) word list itself.
"""
from __future__ import annotations

from typing import Any

from nerservice.errors import ConfigError

#: Batch arrays sharded along axis 0; everything else the step receives is replicated.
SHARDED_KEYS = frozenset({"token_ids", "lengths", "word_index", "tag_ids"})


def use_data_parallel(devices: int | None = None) -> Any:
    """Install ``keras.distribution.DataParallel`` over ``devices`` local devices (all when None).

    Call before the model is built. Returns the distribution; ``clear_data_parallel()`` undoes it."""
    import keras

    if keras.backend.backend() != "jax":
        raise ConfigError("data parallelism inside one process needs KERAS_BACKEND=jax",
                          hint="TensorFlow uses tf.distribute strategies (spark_jobs/train.py)")
    available = keras.distribution.list_devices()
    n = len(available) if devices is None else devices
    if n < 1 or n > len(available):
        raise ConfigError(f"asked for {n} devices, this process sees {len(available)}: {available}")
    dist = keras.distribution.DataParallel(devices=available[:n])
    keras.distribution.set_distribution(dist)
    return dist


def clear_data_parallel() -> None:
    import keras

    keras.distribution.set_distribution(None)


class Placement:
    """Where JaxStep puts state and batches: replicated / batch-sharded under DataParallel, else nowhere."""

    def __init__(self, dist: Any, batch_size: int) -> None:
        import jax
        from jax.sharding import NamedSharding, PartitionSpec

        mesh = dist.device_mesh.backend_mesh
        self.n_devices = int(mesh.devices.size)
        if batch_size % self.n_devices:
            raise ConfigError(f"training.batch_size={batch_size} is not a multiple of the {self.n_devices} "
                              "data-parallel devices", hint="every device takes an equal slice of each batch")
        self._jax = jax
        self.replicated = NamedSharding(mesh, PartitionSpec())
        self.sharded = NamedSharding(mesh, PartitionSpec(dist.batch_dim_name))

    @classmethod
    def current(cls, batch_size: int) -> "Placement | None":
        import keras

        dist = keras.distribution.distribution()
        if dist is None:
            return None
        if not isinstance(dist, keras.distribution.DataParallel):
            raise ConfigError(f"unsupported Keras distribution {type(dist).__name__}; use DataParallel")
        return cls(dist, batch_size)

    def state(self, arrays: list[Any]) -> list[Any]:
        return [self._jax.device_put(a, self.replicated) for a in arrays]

    def batch(self, batch: dict[str, Any]) -> dict[str, Any]:
        put = self._jax.device_put
        return {k: put(v, self.sharded if k in SHARDED_KEYS else self.replicated) for k, v in batch.items()}
