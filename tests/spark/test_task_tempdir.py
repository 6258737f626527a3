"""distributed/task_tempdir.py with TensorFlow's real autograph (in-process; no Spark: the barrier task's use of it
is checked in tests/spark/test_spark_jobs.py)."""
from __future__ import annotations

from pathlib import Path

import pytest


def test_a_task_tempdir_takes_tensorflows_generated_sources_and_removes_them(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """TensorFlow's autograph writes each converted function's source to the default temporary folder and deletes
    it only at exit, which a Spark Python worker (os._exit) never reaches: inside task_tempdir the files land in the
    task's own folder, and leave with it."""
    import tempfile

    import tensorflow as tf

    from nerservice.distributed.task_tempdir import GENERATED_PREFIX, task_tempdir

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = set(tmp_path.iterdir())

    def clipped(x: tf.Tensor) -> tf.Tensor:
        if tf.reduce_sum(x) > 0:  # a tensor condition: autograph converts this function to graph code
            x = x - 1
        return x

    with task_tempdir() as scratch:
        assert tempfile.gettempdir() == str(scratch.path) and scratch.path.parent == tmp_path
        assert float(tf.function(clipped)(tf.constant([2.0])).numpy()[0]) == 1.0
        generated = list(scratch.path.glob(f"{GENERATED_PREFIX}*.py"))
        assert generated  # the mechanism this relies on: autograph writes where tempfile points
    assert tempfile.gettempdir() == str(tmp_path)
    assert scratch.generated_removed == len(generated) and not scratch.path.exists()
    assert set(tmp_path.iterdir()) == before
    assert scratch.report() == {"path": str(scratch.path), "generated_removed": len(generated), "left": False}

    # A file another library left there is not ours: it stays, and so does the folder that holds it.
    with task_tempdir() as kept:
        (kept.path / "someone-elses.bin").write_bytes(b"x")
        tf.function(clipped)(tf.constant([1.0]))
    assert [p.name for p in kept.path.iterdir()] == ["someone-elses.bin"] and kept.report()["left"] is True
