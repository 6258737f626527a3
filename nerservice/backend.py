"""The Keras backend, chosen in one place.

Keras reads ``KERAS_BACKEND`` when it is first imported; TensorFlow is the CPU default, JAX the GPU one.
Everything that behaves differently per backend (compiled forward pass, training step, batch shape policy,
thread pools) asks ``current()`` here rather than Keras, so an unsupported backend fails with one message
and a new one has one place to start from.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, cast

if TYPE_CHECKING:
    import tensorflow as tf

Backend = Literal["tensorflow", "jax"]
SUPPORTED: tuple[Backend, ...] = ("tensorflow", "jax")


def current() -> Backend:
    """The active Keras backend; ``NotImplementedError`` for one this project does not support."""
    import keras

    name = keras.backend.backend()
    if name not in SUPPORTED:
        raise NotImplementedError(f"Keras backend {name!r} is not supported (use tensorflow or jax)")
    return cast(Backend, name)


def tf_signature(ranks: Mapping[str, int]) -> dict[str, tf.TensorSpec]:
    """A ``tf.function`` input signature of int32 arrays with every dimension dynamic, from name -> rank
    (``text/inputs.py``): dynamic shapes mean a TF graph never retraces."""
    import tensorflow as tf

    return {name: tf.TensorSpec((None,) * rank, tf.int32) for name, rank in ranks.items()}


def limit_tensorflow_threads(cpus: int) -> bool:
    """Set TF intra-/inter-op pools to ``cpus`` threads; False if the backend is not TensorFlow or TF was
    already initialised.  Several training processes on one host (Spark tasks, ``training.run_pool``
    workers) each size their pools to *all* cores when left alone, and slow each other down.  Must run before
    TensorFlow executes its first op (afterwards the pools are fixed and this is a no-op)."""
    if current() != "tensorflow":
        return False
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(cpus)
        tf.config.threading.set_inter_op_parallelism_threads(max(1, min(cpus, 2)))
    except RuntimeError:  # "cannot be modified after initialization"
        return False
    return True
