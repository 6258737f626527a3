"""A training task's own temporary folder, emptied of TensorFlow's generated sources when the task ends.

TensorFlow's autograph writes the source of every function it converts to a ``__autograph_generated_file*.py``
in the temporary folder and deletes it at interpreter exit (``atexit``).  A Spark Python worker ends with
``os._exit``, which runs no ``atexit`` handler, so every training task left its files behind in the executor's
temporary folder: 18 for one two-worker job of the test suite, job after job on a long-lived cluster.  Inside
``task_tempdir()`` Python's default temporary folder (``tempfile.tempdir``, which TensorFlow's loader uses) is a
fresh folder of this task's; on the way out the generated sources are removed, and the folder too when nothing
else is left in it (a file some other library left there is not ours to delete).
"""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

GENERATED_PREFIX = "__autograph_generated_file"  # tensorflow/python/autograph/pyct/loader.py


@dataclass
class TaskTempdir:
    path: Path
    generated_removed: int = 0  # set on the way out

    def report(self) -> dict[str, object]:
        return {"path": str(self.path), "generated_removed": self.generated_removed, "left": self.path.exists()}


@contextmanager
def task_tempdir(prefix: str = "nerservice-task-") -> Iterator[TaskTempdir]:
    own = TaskTempdir(Path(tempfile.mkdtemp(prefix=prefix)))
    saved = tempfile.tempdir
    tempfile.tempdir = str(own.path)
    try:
        yield own
    finally:
        tempfile.tempdir = saved
        for f in own.path.glob(f"{GENERATED_PREFIX}*.py"):
            with suppress(OSError):
                f.unlink()
                own.generated_removed += 1
        with suppress(OSError):
            own.path.rmdir()  # fails, and keeps the folder, when something else is still in it
