"""``spark_jobs/train.py --final --distil --teacher REF --teacher-head NAME`` in-process (no Spark): the driver
loads and checks the teacher before its session, checks its tags against the corpus before any stage, and puts
its folder and head into the student's spec; every worker builds that head's teacher from the spec.  Random
models (built in a second, never trained) stand in for the teachers; nothing trains."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from random_model import build_random_model, build_random_multi_model  # tests/random_model.py

from helpers import tiny_config
from nerservice.errors import ConfigError

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


class FakeJob:
    """``final_distil_job``'s Spark seams replaced: the splits are the demo corpus's rows, every training
    "stage" is recorded and returns a summary without training (one seed: no ensemble is built or scored)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        from nerservice.demo_corpus import generate
        from nerservice.distributed import distil_job
        from nerservice.distributed.worker import rows_from_sentences
        from nerservice.training.recipes import RunSummary

        self.stages: list[Any] = []
        self.student: dict[str, Any] = {}
        summary = {"best_epoch": 1, "epochs_completed": 1, "stopped_reason": "fake", "seconds": 0.0,
                   "dev": {"micro": {"f1": 1.0}}, "test": None}

        def runs(specs: Any) -> list[RunSummary]:
            self.stages += specs
            return [RunSummary(model_dir=tmp_path / f"run{len(self.stages)}-{i}", best_epoch=1, epochs_run=1,
                               stopped_reason="fake", seconds=0.0, dev=summary["dev"], test=None)
                    for i, _ in enumerate(specs)]

        def run_training(spark: Any, **kwargs: Any) -> dict[str, Any]:
            self.student.update(kwargs)
            return {"model_dir": kwargs["out_dir"], **summary}

        rows = {"train": rows_from_sentences(generate(20, seed=1)), "dev": rows_from_sentences(generate(8, seed=2))}
        monkeypatch.setattr(distil_job.hadoopfs, "exists", lambda spark, uri: False)
        monkeypatch.setattr(distil_job, "read_splits", lambda spark, data_dir: rows)
        monkeypatch.setattr(distil_job, "spark_runs", lambda spark, **options: runs)
        monkeypatch.setattr(distil_job, "run_training", run_training)

    def run(self, out: Path, teacher: Any) -> dict[str, Any]:
        from nerservice.distil.recipe import recipe_distil_config
        from nerservice.distributed.distil_job import final_distil_job

        return final_distil_job(None, data_dir="prep", out=str(out), world=1, config=tiny_config(),
                                distil_config=recipe_distil_config({}), seeds=1, folds=2, unlabelled=None,
                                teacher=teacher)


def test_the_driver_puts_the_teachers_folder_and_head_into_the_students_spec(
        multi: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from nerservice.distil.teacher_ref import load_teacher
    from nerservice.distributed.worker import spec_teachers

    job = FakeJob(monkeypatch, tmp_path)
    teacher = load_teacher(str(multi), head="both")
    job.run(tmp_path / "out", teacher)
    assert len(job.stages) == 1 + 1 + 2  # phase 1, the final model, two fold teachers: still trained
    spec = job.student["distil"]
    assert (spec["teacher"], spec["head"]) == (str(multi.resolve()), "both")
    assert job.student["recipe"]["unlabelled_teacher"] == teacher.info
    assert [rows for _, *rows in spec["folds"]] == [[0, 14], [14, 28]]  # the fake fold teachers (no folders)
    mine, _ = spec_teachers({**spec, "folds": []})
    assert mine.info == {**teacher.info, "ref": str(multi.resolve())}  # the workers name it by its folder


@pytest.mark.parametrize(("head", "message"), [(None, "is a multi-corpus model"), ("dis", "does not know")])
def test_the_driver_checks_the_teacher_against_the_corpus_before_any_stage(
        multi: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, head: str | None, message: str) -> None:
    from nerservice.distil.teacher_ref import load_teacher

    job = FakeJob(monkeypatch, tmp_path)
    with pytest.raises(ConfigError, match=message):
        job.run(tmp_path / "out", load_teacher(str(multi), head=head))
    assert job.stages == [] and job.student == {} and not (tmp_path / "out").exists()


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


def test_train_job_hands_the_loaded_head_to_the_recipe(multi: Path, monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    import spark_jobs.train as job
    from nerservice.distributed import session

    class Spark:
        def stop(self) -> None:
            pass

    seen: dict[str, Any] = {}
    monkeypatch.setattr(session, "get_session", lambda *args, **kwargs: Spark())
    monkeypatch.setattr(job, "distil_recipe", lambda spark, args, config, dconfig, unlabelled, teacher, *rest:
                        seen.update(teacher=teacher) or {})
    text = tmp_path / "u.txt"
    text.write_text("severe\nataxia\n", encoding="utf-8")
    job.main(["--data", "prep", "--out", str(tmp_path / "out"), "--final", "--distil", "--unlabelled", str(text),
              "--teacher", str(multi), "--teacher-head", "both"])
    assert seen["teacher"].info["head"] == "both" and seen["teacher"].info["ref"] == str(multi)
