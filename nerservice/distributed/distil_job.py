"""Driver side of ``spark_jobs/train.py --final --seeds N --distil``: the final-distil recipe
(``nerservice/distil/recipe.py``, what ``nerservice train --final --distil`` runs) with every training on the
executors.

Phase 1, the N final models and the N x K cross-fitting teachers are each one barrier stage of ``--workers``
tasks (``run_training`` with the rows the recipe chose: a fold teacher's are every other block of train + dev,
its dev the block it labels); the ensembles are saved and scored on the driver, as ``--seeds N`` does.  The
student is one more barrier stage: every worker loads the teachers from the shared output folder, computes the
same targets (``worker._distil``) and trains its slice of every batch; rank 0 writes ``OUT/student`` and, with
``--register``, registers it — the only model of the recipe that goes to the store.  With ``--teacher``
the driver has loaded that teacher (``distil/teacher_ref.py``: a store ref pinned to one folder, which every
executor must see) and ``cross_fit_teachers`` checks it against the corpus before the first stage; the student's
spec names its folder and head, and the workers load it there (``worker.spec_teachers``; the student's
``distillation.teacher`` then names it by that folder, its ``recipe.unlabelled_teacher`` by the reference).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from nerservice.config import NerConfig
from nerservice.data import Sentence
from nerservice.data.unlabelled import UnlabelledText
from nerservice.distil.config import DistilConfig
from nerservice.distil.recipe import STUDENT_DIR, RunMany, cross_fit_teachers
from nerservice.distil.run import Teacher
from nerservice.distributed import hadoopfs
from nerservice.distributed.multi_corpora import CORPORA_FILE
from nerservice.distributed.train_job import local_out_dir, read_back, read_splits, run_summary, run_training
from nerservice.distributed.worker import rows_from_sentences, sentences_from_rows, unlabelled_rows
from nerservice.errors import ConfigError
from nerservice.training.recipes import RunSummary
from nerservice.training.run_pool import RunSpec


def spark_runs(spark: Any, *, data_dir: str, world: int, **options: Any) -> RunMany:
    """The recipe's runs one after another, each a barrier stage on the rows of its ``RunSpec``."""

    def runs(specs: Sequence[RunSpec]) -> list[RunSummary]:
        done = []
        for spec in specs:
            req = spec.request
            finished = read_back(req, world=world, lineage=partial(spec_lineage, spec), **options)
            if finished is not None:  # an earlier job's: no barrier stage
                done.append(finished)
                continue
            rows = {"train": rows_from_sentences(spec.train), "dev": rows_from_sentences(spec.dev),
                    **({"test": rows_from_sentences(spec.test)} if spec.test else {})}
            done.append(run_summary(run_training(
                spark, data_dir=data_dir, out_dir=str(req.out_dir), world=world, config=req.config,
                train_on_dev=req.train_on_dev, keep=req.keep, recipe=req.recipe, rows=rows,
                run_sources=spec.sources, **options)))
        return done

    return runs


def spec_lineage(spec: RunSpec) -> tuple[Mapping[str, Sequence[Sentence]], bool]:
    """A recipe run's splits as its lineage names them, and whether it scores test (``train_job.read_back``)."""
    from nerservice.training.finished import run_corpora

    return run_corpora(spec.request, spec.train, spec.dev, spec.test), bool(spec.test)


def final_distil_job(spark: Any, *, data_dir: str, out: str, world: int, config: NerConfig,
                     distil_config: DistilConfig, seeds: int, folds: int, unlabelled: UnlabelledText | None,
                     unlabelled_files: Sequence[str] = (), teacher: Teacher | None = None,
                     register: str | None = None, student_overrides: Sequence[str] = (),
                     **options: Any) -> dict[str, Any]:
    """``teacher``: the unlabelled text's (``--teacher``), loaded on the driver.  ``student_overrides``:
    ``--student-set``.  ``options``: ``run_training``'s (embeddings, resume, backend, scaling, ...).  Returns the
    job summary."""
    if hadoopfs.exists(spark, hadoopfs.join(data_dir, CORPORA_FILE)):
        raise ConfigError("--distil cross-fits one corpus's train + dev; a multi-corpus model is distilled by "
                          "`nerservice distil --corpora`", hint="train.py --final --seeds N, then nerservice distil "
                          "--teacher OUT/ensemble --corpora C.json --dev-in-train --keep last")
    root = local_out_dir(out)
    rows = read_splits(spark, data_dir)
    train, dev = sentences_from_rows(rows["train"]), sentences_from_rows(rows["dev"])
    test = sentences_from_rows(rows["test"]) if rows.get("test") else None
    sources = {"recipe": "final-distil", "unlabelled": list(unlabelled_files)}
    teachers = cross_fit_teachers(spark_runs(spark, data_dir=data_dir, world=world, **options), config, root,
                                  train=train, dev=dev, test=test, seeds=seeds, folds=folds, sources=sources,
                                  unlabelled_teacher=teacher, student_overrides=student_overrides)
    student_rows = {**rows, **({"unlabelled": unlabelled_rows(unlabelled)} if unlabelled else {})}
    spec = {"config": distil_config.model_dump(mode="json"),
            "teacher": teacher.info["path"] if teacher else str(teachers.teacher_dir),
            "head": teacher.info.get("head") if teacher else None,
            "folds": [[str(f.teacher_dir), f.rows.start, f.rows.stop] for f in teachers.folds]}
    s = run_training(spark, data_dir=data_dir, out_dir=str(root / STUDENT_DIR), world=world,
                     config=teachers.student_config, register=register, train_on_dev=True, keep="last",
                     recipe=teachers.record, rows=student_rows, run_sources=sources, distil=spec, **options)
    student = run_summary(s)
    return {"recipe": teachers.record, "model_dir": str(student.model_dir), "dev": student.dev, "test": student.test,
            "teacher_dir": str(teachers.teacher_dir), "teacher_test": teachers.teacher_metrics.get("test"),
            "folds": {f.name: f.held_out for f in teachers.folds},
            **({"registered": s["registered"]} if "registered" in s else {}),
            "runs": [{"model_dir": str(r.model_dir), "epochs_run": r.epochs_run, "kept_epoch": r.best_epoch,
                      "stopped_reason": r.stopped_reason, "minutes": round(r.seconds / 60, 2)}
                     for r in [*teachers.teachers.runs, *(r for f in teachers.folds for r in f.runs), student]],
            "data": s.get("data"), "minutes": round((teachers.seconds + student.seconds) / 60, 2)}
