"""``spark_jobs/train.py --final --distil --teacher REF --teacher-head NAME`` in-process (no Spark): the driver
refuses a teacher it cannot load before its session starts, and every worker builds that head's teacher from the
student's spec.  Random models (built in a second, never trained) are the teachers; nothing trains.  The whole
job on a real cluster: ``test_spark_jobs.py::test_final_distil_trains_every_model_on_the_executors...``; the
tag checks (shared with ``nerservice train``): ``tests/distil/test_recipe.py``."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from random_model import build_random_model, build_random_multi_model  # tests/random_model.py

# "both" has exactly the demo corpus's types (Chemical, Disease); "dis" lacks Chemical
HEADS = (("dis", ["O", "B-Disease", "I-Disease"]), ("both", ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]))


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_random_multi_model(tmp_path_factory.mktemp("multi") / "model", heads=HEADS)


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_random_model(tmp_path_factory.mktemp("single") / "model")


def test_a_students_spec_with_a_head_gives_every_worker_that_heads_teacher(multi: Path, single: Path) -> None:
    from nerservice.distil.run import folder_teacher
    from nerservice.distributed.worker import spec_teachers

    sentences = [["patients", "with", "asthma", "took", "aspirin", "."], ["cisplatin", "therapy"]]
    teacher, folds = spec_teachers({"teacher": str(multi), "head": "both", "folds": [[str(single), 0, 3]]})
    assert not teacher.multi and teacher.tags.tags == ["O", "B-Chemical", "B-Disease", "I-Chemical", "I-Disease"]
    assert (teacher.info["head"], teacher.info["teacher_heads"], teacher.info["path"]) == (
        "both", ["dis", "both"], str(multi.resolve()))
    # its predictor is the multi-corpus model's "both" columns, not the whole model
    whole = folder_teacher(multi)
    cols, _ = whole.tags.head("both")  # type: ignore[union-attr]
    got = teacher.loaded.predictor(batch_size=8).emissions(sentences)
    for mine, all_heads in zip(got, whole.loaded.predictor(batch_size=8).emissions(sentences)):
        np.testing.assert_allclose(mine, all_heads[:, cols], atol=1e-6)
    assert [(f.teacher.info["path"], list(f.rows)) for f in folds] == [(str(single.resolve()), [0, 1, 2])]
    # no head: the folder as it is (the recipe's own teachers)
    assert spec_teachers({"teacher": str(multi), "head": None, "folds": []})[0].multi


@pytest.mark.parametrize(("teacher", "head", "message"), [
    ("multi", "genes", "its heads are"), ("single", "both", "a single-corpus model has no heads"),
    ("/no/such/teacher", None, "no such model directory")])
def test_train_job_refuses_a_teacher_it_cannot_load_before_spark_starts(
        multi: Path, single: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, teacher: str, head: str | None,
        message: str) -> None:
    from nerservice.distributed import session
    from nerservice.errors import NerServiceError
    from spark_jobs.train import main

    def no_session(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a Spark session was started")

    monkeypatch.setattr(session, "get_session", no_session)
    text = tmp_path / "u.txt"
    text.write_text("severe\nataxia\n", encoding="utf-8")
    ref = {"multi": str(multi), "single": str(single)}.get(teacher, teacher)
    with pytest.raises(NerServiceError, match=message):
        main(["--data", "/nonexistent/prep", "--out", str(tmp_path / "out"), "--final", "--distil", "--unlabelled",
              str(text), "--teacher", ref, *(["--teacher-head", head] if head else [])])
    assert not (tmp_path / "out").exists()
