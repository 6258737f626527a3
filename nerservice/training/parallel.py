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
from nerservice.text.inputs import TAG_IDS, TEACHER_RANKS

#: Batch arrays sharded along axis 0; everything else the step receives is replicated (word_chars: rows of
#: distinct words).  A distillation student's teacher targets, the character LM's arrays and the gazetteer
#: feature and the encoder's word pieces are per sentence too.
SHARDED_KEYS = frozenset({"token_ids", "lengths", "word_index", "lm_chars", "lm_forward", "lm_backward", "gazetteer",
                          "wp_ids", "wp_index", TAG_IDS, *TEACHER_RANKS})


def use_data_parallel(devices: int | None = None) -> Any:
    """Install ``keras.distribution.DataParallel`` over ``devices`` local devices (all when None).

    Call before the model is built. Returns the distribution; ``clear_data_parallel()`` undoes it."""
    import keras

    from nerservice import backend

    if backend.current() != "jax":
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

    global_batch = False  # each batch is placed whole by this process

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

    def local(self, value: Any) -> Any:
        return value


class ProcessPlacement:
    """Placement for one JAX job of several processes (``jax.distributed``; the Spark JAX path).

    The mesh spans every process's devices. Each process builds the *whole* global batch on its host
    (every worker holds the data and the seeded batch plan) and hands JAX only the rows of its own devices
    (``make_array_from_callback``), so the jitted step is one SPMD program across processes and XLA inserts
    the cross-process all-reduce (NCCL on GPUs, Gloo on CPUs). Step state is replicated: rank 0's values are
    broadcast first, so workers that built different initial weights still start from one. The Keras
    variables stay process-local (``local`` copies a replica back), so evaluation, checkpoints and saved
    models work as in a single process.
    """

    global_batch = True

    def __init__(self, batch_size: int) -> None:
        import jax
        import numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        devices = jax.devices()
        self.n_devices, self.n_processes = len(devices), jax.process_count()
        if batch_size % self.n_devices:
            raise ConfigError(f"training.batch_size={batch_size} is not a multiple of the {self.n_devices} "
                              "devices of the JAX job", hint="every device takes an equal slice of each batch")
        mesh = Mesh(np.array(devices), ("batch",))
        self._jax, self._np = jax, np
        self.replicated = NamedSharding(mesh, PartitionSpec())
        self.sharded = NamedSharding(mesh, PartitionSpec("batch"))

    def scope(self) -> Any:  # the trainer enters ``strategy.scope()`` around model building
        import contextlib

        return contextlib.nullcontext()

    def _put(self, value: Any, sharding: Any) -> Any:
        host = self._np.asarray(value)
        return self._jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])

    def state(self, arrays: list[Any]) -> list[Any]:
        from jax.experimental import multihost_utils

        host = multihost_utils.broadcast_one_to_all([self._np.asarray(a) for a in arrays])
        return [self._put(a, self.replicated) for a in host]

    def batch(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {k: self._put(v, self.sharded if k in SHARDED_KEYS else self.replicated) for k, v in batch.items()}

    def local(self, value: Any) -> Any:
        """This process's replica of a replicated global array, as a NumPy array."""
        return self._np.asarray(value.addressable_data(0))
