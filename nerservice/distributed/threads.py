"""Match TensorFlow's thread pools to the cores Spark gave the task (``backend.limit_tensorflow_threads``).

Every executor Python worker runs its own TensorFlow; left alone each sizes its pools to *all* host
cores, so two 1-core tasks on a 2-core host run 4+ busy threads and slow each other down.  Must run
before TensorFlow executes its first op (afterwards the pools are fixed and this is a no-op).
"""
from __future__ import annotations

from nerservice.backend import limit_tensorflow_threads

__all__ = ["limit_tensorflow_threads", "task_cpus"]


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
