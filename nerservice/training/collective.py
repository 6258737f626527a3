"""A small element-wise sum over the data-parallel workers, on the collective their gradients use.

The sharded dev evaluation (``training/sharded_eval.py``) sums a vector of a few hundred counts once per
epoch. Sent through Spark's barrier ``allGather`` that cost >= 1 s a call (the task side polls once a
second); on the workers' own collective it is one tiny all-reduce: TensorFlow's ring over gRPC
(``MultiWorkerMirroredStrategy``), or the JAX job's (Gloo on CPUs, NCCL on GPUs).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

AllSum = Callable[[np.ndarray], np.ndarray]


def make_all_sum(strategy: Any) -> AllSum | None:
    """The sum for ``strategy`` (a ``tf.distribute`` strategy or a JAX ``ProcessPlacement``); None without one."""
    if strategy is None:
        return None
    from nerservice.training.parallel import ProcessPlacement

    if isinstance(strategy, ProcessPlacement):
        return _jax_all_sum()
    return _tf_all_sum(strategy)


def _tf_all_sum(strategy: Any) -> AllSum:
    import tensorflow as tf

    traced: dict[int, Any] = {}  # one function per vector length (one length per run: traced once)

    def replica(v: Any) -> Any:  # identity: the tensor on the replica's device, as a gradient is
        return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, tf.identity(v))

    def summed(x: Any) -> Any:
        return strategy.experimental_local_results(strategy.run(replica, args=(x,)))[0]

    def fn_for(n: int) -> Any:
        return tf.function(summed, input_signature=[tf.TensorSpec((n,), tf.int64)])

    def all_sum(values: np.ndarray) -> np.ndarray:
        v = np.ascontiguousarray(values, dtype=np.int64)
        if v.shape[0] not in traced:
            traced[v.shape[0]] = fn_for(v.shape[0])
        return np.asarray(traced[v.shape[0]](v).numpy(), dtype=np.int64)

    return all_sum


def _jax_all_sum() -> AllSum:
    from jax.experimental import multihost_utils

    def all_sum(values: np.ndarray) -> np.ndarray:
        # int32: JAX keeps 32-bit types unless x64 is on; a count of one dev set stays far below 2**31.
        parts = multihost_utils.process_allgather(np.asarray(values, dtype=np.int32))  # (processes, n)
        summed: np.ndarray = np.asarray(parts, dtype=np.int64).sum(axis=0)
        return summed

    return all_sum
