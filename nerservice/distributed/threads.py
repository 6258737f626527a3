"""Match TensorFlow's thread pools to the cores Spark gave the task.

Every executor Python worker runs its own TensorFlow; left alone each sizes its pools to *all* host
cores, so two 1-core tasks on a 2-core host run 4+ busy threads and slow each other down.  Must run
before TensorFlow executes its first op (afterwards the pools are fixed and this is a no-op).
"""
from __future__ import annotations


def task_cpus(default: int = 1) -> int:
    """Cores of the current Spark task (``spark.task.cpus``), or ``default`` outside a task."""
    try:
        from pyspark import TaskContext
    except ImportError:
        return default
    ctx = TaskContext.get()
    if ctx is None:
        return default
    try:
        return max(int(ctx.cpus()), 1)
    except Exception:  # older pyspark without TaskContext.cpus()
        return default


def limit_tensorflow_threads(cpus: int) -> bool:
    """Set TF intra-/inter-op pools to ``cpus`` threads; False if TF was already initialised."""
    from nerservice import backend

    if backend.current() != "tensorflow":
        return False
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(cpus)
        tf.config.threading.set_inter_op_parallelism_threads(max(1, min(cpus, 2)))
    except RuntimeError:  # "cannot be modified after initialization"
        return False
    return True
