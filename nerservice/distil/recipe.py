"""``nerservice train --final --seeds N --distil``: the final ensemble and its cross-fitted one-model student in
one command — the recipe behind our best one-model figure (BC5CDR 87.86, BENCHMARKS.md session 20), which
took a dozen commands by hand.

1. The final recipe (``training/recipes.run_recipe``): phase 1 on train with early stopping on dev gives the
   epoch count E; N models (seeds S..S+N-1) train on train + dev for E epochs -> the main teacher
   (``OUT/ensemble``; with N = 1 the one model).
2. Cross-fitting teachers: train + dev (in corpus order) is cut into K contiguous blocks (``folds.py``); for
   each block N models train for E epochs on every *other* block and are scored on theirs, which they never
   saw (``OUT/fold-IofK/``, an ensemble when N > 1).  Their figure on the held-out block is the one honest
   accuracy figure of the run before test: every other model has trained on dev.
3. The student (``OUT/student``, model-last): one model of the same config, E epochs on train + dev, trained
   by ``distil()`` on the CRF distributions of the teachers — each labelled sentence's from the fold teacher
   that never saw it, mixed with its gold path (``distil.gold_weight``, 0.5 here), plus ``distil.augment``
   synthetic variants of each sentence (1 here) labelled by the same fold teacher, plus any unlabelled text,
   labelled by the main teacher.  These two settings are session 20's recipe; ``--set distil.KEY=VALUE``
   changes them.  ``--student-set KEY=VALUE`` changes the student's own config (not the teachers'): e.g.
   teachers with a pretrained encoder and a student without one, deployed at the encoder-free model's speed.

``--teacher REF [--teacher-head NAME]`` (``unlabelled_teacher`` here) replaces the main teacher *in the
student's stage*: the K blocks cover every labelled row, so every labelled sentence and every variant takes its
fold teacher's targets and what ``plan_distillation`` leaves to the main teacher is the unlabelled text alone.
Its tags are the student's columns (``DistilPlan.tags``) and its test figure is ``DistilOutcome.teacher_test``.
Stages 1 and 2 are unchanged: the N final models still train and OUT/ensemble is still saved and scored (the
recipe's deliverable besides the student).  It must be one corpus's teacher (a multi-corpus one through one
head, ``distil/head.py``) with exactly the tags of train + dev — the fold teachers' columns, which the labelled
targets take — checked before anything trains (``check_unlabelled_teacher``); the student's lineage records it
as ``recipe.unlabelled_teacher`` (and ``distillation.teacher``).  Session 26's best NCBI-disease students
(86.47, BENCHMARKS.md) had a four-corpus ensemble's ``ncbi`` head in this role.

Cost: 1 + N(K + 1) trainings (the K fold ones on (K-1)/K of the text each) and the student's (its epochs see
the labelled text twice with one variant, plus the unlabelled text).  Every stage resumes: a rerun with the
same OUT skips finished trainings, rebuilds the ensembles, recomputes the (deterministic) targets and resumes
the student from its checkpoint.  The student's lineage.json has ``recipe`` (phase 1, phase 2, every fold: its
rows, teacher and held-out F1) besides ``distillation`` (the teachers and targets).

The recipe chooses the runs and their data (``training.run_pool.RunSpec``); ``runs`` trains them — one after
another, or ``--jobs J`` at a time in worker processes (``training.run_pool.run_specs``): after phase 1 the
N main models and the N x K fold teachers are independent, and go to ``runs`` as one batch.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from nerservice.config import NerConfig
from nerservice.data import Sentence
from nerservice.data.unlabelled import UnlabelledText
from nerservice.distil.config import DistilConfig
from nerservice.distil.folds import fold_name, held_out_blocks
from nerservice.distil.run import DistilOutcome, FoldTeacher, Teacher, check_tags, distil, folder_teacher
from nerservice.errors import ConfigError
from nerservice.text.vocab import TagVocabulary
from nerservice.training.recipes import (
    ENSEMBLE_DIR,
    RecipeResult,
    RunRequest,
    RunSummary,
    final_record,
    phase1_request,
    phase2_config,
    phase2_request,
    save_evaluated_ensemble,
)
from nerservice.training.run_pool import RunSpec
from nerservice.training.trainer import TrainCallback

# The student's distillation settings unless --set distil.KEY says otherwise: session 20's BC5CDR recipe
# (cross-fitted targets mixed with gold at 0.5: +0.26 over gold 0 in session 19; one cross-fitted variant of
# each sentence: +0.27 in session 20), fixed before those runs in the final protocol, where nothing is held out.
RECIPE_DISTIL: Final[dict[str, Any]] = {"gold_weight": 0.5, "augment": 1}
DEFAULT_FOLDS: Final = 2
STUDENT_DIR: Final = "student"
RECIPE_NAME: Final = "final-distil"

# Trains the runs (in any order or at once) and returns their summaries in the order given.
RunMany = Callable[[Sequence[RunSpec]], list[RunSummary]]


@dataclass
class FoldResult:
    name: str  # "1of2"
    rows: range  # the rows of train + dev its teachers never saw, and label
    teacher_dir: Path  # ensemble folder (N > 1) or model folder
    held_out: dict[str, Any]  # the teacher's metrics on those rows
    runs: list[RunSummary] = field(default_factory=list)


@dataclass
class CrossFitTeachers:
    """Stages 1 and 2: what the student needs (and its recipe record), whoever trains it."""

    teachers: RecipeResult  # phase 1 and the main teacher's runs
    teacher_dir: Path
    teacher_metrics: dict[str, Any]  # the main teacher on dev (training data) and test
    folds: list[FoldResult]
    student_config: NerConfig  # phase 1's epoch count, the first seed, model-last
    record: dict[str, Any]  # the recipe as the student's lineage records it
    seconds: float
    unlabelled_teacher: Teacher | None  # --teacher (checked); None: the main teacher labels the unlabelled text

    def fold_teachers(self) -> list[FoldTeacher]:
        return [FoldTeacher(folder_teacher(f.teacher_dir), f.rows) for f in self.folds]


@dataclass
class FinalDistilResult(CrossFitTeachers):
    """The teachers' stages and the student; ``seconds`` then counts every stage."""

    student: DistilOutcome


def recipe_distil_config(overrides: dict[str, Any]) -> DistilConfig:
    """The recipe's distillation settings: ``RECIPE_DISTIL`` under the user's ``--set distil.KEY=VALUE``."""
    return DistilConfig().with_overrides({**RECIPE_DISTIL, **overrides})


def check_unlabelled_teacher(teacher: Teacher, *, labelled: Sequence[Sentence],
                             test: Sequence[Sentence] | None) -> None:
    """``--teacher`` before anything trains: a single-corpus teacher (a multi-corpus one seen through a head)
    whose tags are exactly those of ``labelled`` (train + dev).  Covering the corpus's tags is not enough: the
    teacher's tags become the student's columns, and every labelled sentence takes its fold teacher's targets,
    in the columns of the corpus's own tags — ``check_cross_fit`` would find a mismatch only after every
    teacher has trained."""
    name = teacher.info["ref"] + (f" (head {teacher.info['head']})" if teacher.info.get("head") else "")
    if teacher.multi:
        heads = teacher.info.get("heads")
        raise ConfigError(f"--teacher {name} is a multi-corpus model (heads {heads}): one of its heads labels "
                          "this corpus's unlabelled text", hint=f"--teacher-head NAME, one of {heads}")
    tags = teacher.tags
    assert isinstance(tags, TagVocabulary)
    check_tags(tags, {"train + dev": labelled, **({"test": test} if test else {})})
    corpus = TagVocabulary({t for s in labelled for t in s.tags}).tags
    if tags.tags != corpus:
        raise ConfigError(f"--teacher {name} has tags {tags.tags}; the corpus's (train + dev) are {corpus}",
                          hint="the student's tags are the teacher's and its labelled targets come from fold "
                               "teachers of the corpus's tags: pick a teacher (head) of exactly these types")


def cross_fit_teachers(runs: RunMany, config: NerConfig, out: str | Path, *, train: Sequence[Sentence],
                       dev: Sequence[Sentence], test: Sequence[Sentence] | None, seeds: int,
                       folds: int = DEFAULT_FOLDS, sources: dict[str, Any] | None = None,
                       unlabelled_teacher: Teacher | None = None, student_overrides: Sequence[str] = (),
                       progress: bool = True) -> CrossFitTeachers:
    """Stages 1 and 2 above, every training through ``runs`` (in this process, worker processes, or Spark
    barrier stages); the ensembles are saved and scored where this runs.  ``unlabelled_teacher``: ``--teacher``
    (see above), checked here first and recorded.  ``student_overrides`` (``--student-set``): config overrides
    for the student alone, over the recipe's own (e.g. ``model.encoder=null``: teachers with a pretrained
    encoder, a student without it); checked before anything trains."""
    t0 = time.perf_counter()
    out, sources = Path(out), dict(sources or {})
    labelled = [*train, *dev]
    blocks = held_out_blocks(len(labelled), folds)  # refused before anything trains
    if unlabelled_teacher is not None:
        check_unlabelled_teacher(unlabelled_teacher, labelled=labelled, test=test)
    seed_list = [config.training.seed + i for i in range(seeds)]
    student_overrides = list(student_overrides)
    if student_overrides:
        config.with_overrides(student_overrides)  # a bad key fails here, not after every teacher has trained

    def home(folder: Path, seed: int) -> Path:
        return folder if seeds == 1 else folder / f"seed-{seed}"

    # 1. phase 1 alone: its best epoch is every later run's epoch count
    p1 = runs([RunSpec(phase1_request(config, out), train, dev, test, sources)])[0]
    final = final_record(p1, seed_list)
    epochs = int(final["phase2"]["epochs"])
    specs = [RunSpec(phase2_request(config, home(out, seed), final, seed), train, dev, test, sources)
             for seed in seed_list]
    # 2. the fold teachers, in the same batch: E epochs on every block but one, scored on that one
    for i, rows in enumerate(blocks):
        name = fold_name(i, folds)
        recipe = {"name": RECIPE_NAME, "phase": "fold-teacher", "fold": name,
                  "held_out_rows": [rows.start, rows.stop], "epochs": epochs}
        rest, held = [*labelled[:rows.start], *labelled[rows.stop:]], labelled[rows.start:rows.stop]
        fold_sources = {**sources, "cross_fit_fold": name, "held_out_rows": [rows.start, rows.stop]}
        specs += [RunSpec(RunRequest(phase2_config(config, epochs, seed), home(out / f"fold-{name}", seed),
                                     keep="last", recipe=recipe), rest, held, None, fold_sources)
                  for seed in seed_list]
    done = runs(specs)
    main = RecipeResult(model_dir=out / ENSEMBLE_DIR if seeds > 1 else done[seeds - 1].model_dir,
                        runs=[p1, *done[:seeds]], members=[r.model_dir for r in done[:seeds]] if seeds > 1 else [],
                        record=final, seconds=p1.seconds + sum(r.seconds for r in done[:seeds]))
    teacher_dir, teacher_metrics = _teacher(out / ENSEMBLE_DIR, main.members, done[seeds - 1],
                                            {"dev": dev, **({"test": test} if test else {})})
    fold_results = []
    for i, rows in enumerate(blocks):
        name, fold_runs = fold_name(i, folds), done[seeds * (i + 1):seeds * (i + 2)]
        fold_dir, held_out = _teacher(out / f"fold-{name}" / ENSEMBLE_DIR,
                                      [r.model_dir for r in fold_runs] if seeds > 1 else [], fold_runs[-1],
                                      {"held_out": labelled[rows.start:rows.stop]})
        fold_results.append(FoldResult(name, rows, fold_dir, held_out["held_out"], fold_runs))
        if progress:
            print(f"fold {name}: teachers on {len(labelled) - len(rows)} sentences, F1 "
                  f"{held_out['held_out']['micro']['f1']:.4f} on the {len(rows)} they never saw", flush=True)
    own = {"path": str(teacher_dir), "members": seeds}
    record = {
        "name": RECIPE_NAME, "phase1": final["phase1"], "phase2": final["phase2"],
        "teacher": own,
        # who labelled the unlabelled text (the folds' teachers labelled the rest): --teacher's reference, folder,
        # version and head, or the recipe's own teacher
        "unlabelled_teacher": unlabelled_teacher.info if unlabelled_teacher is not None else own,
        "folds": [{"fold": f.name, "held_out_rows": [f.rows.start, f.rows.stop], "teacher": str(f.teacher_dir),
                   "members": len(f.runs), "held_out_f1": float(f.held_out["micro"]["f1"]),
                   "minutes": round(sum(r.seconds for r in f.runs) / 60, 2)} for f in fold_results],
        "student": {"epochs": epochs, "seed": seed_list[0], "train": "train + dev", "keep": "model-last",
                    **({"overrides": student_overrides} if student_overrides else {})},
    }
    student_config = phase2_config(config, epochs, seed_list[0])
    return CrossFitTeachers(teachers=main, teacher_dir=teacher_dir, teacher_metrics=teacher_metrics,
                            folds=fold_results, student_config=student_config.with_overrides(student_overrides)
                            if student_overrides else student_config,
                            record=record, seconds=time.perf_counter() - t0, unlabelled_teacher=unlabelled_teacher)


def final_distil(runs: RunMany, config: NerConfig, distil_config: DistilConfig, out: str | Path, *,
                 train: Sequence[Sentence], dev: Sequence[Sentence], test: Sequence[Sentence] | None,
                 unlabelled: UnlabelledText | None = None, seeds: int, folds: int = DEFAULT_FOLDS,
                 sources: dict[str, Any] | None = None, callbacks: Sequence[TrainCallback] = (),
                 resume: bool = True, progress: bool = True, teacher: Teacher | None = None,
                 student_overrides: Sequence[str] = ()) -> FinalDistilResult:
    """The three stages above, the student in this process; ``callbacks`` (e.g. the model store's) see the
    student's run only.  ``teacher``: the unlabelled text's teacher instead of the recipe's own (``--teacher``);
    ``student_overrides``: the student's own config overrides (``--student-set``)."""
    t0 = time.perf_counter()
    t = cross_fit_teachers(runs, config, out, train=train, dev=dev, test=test, seeds=seeds, folds=folds,
                           sources=sources, unlabelled_teacher=teacher, student_overrides=student_overrides,
                           progress=progress)
    # 3. the student
    student = distil(t.student_config, distil_config, teacher=t.unlabelled_teacher or folder_teacher(t.teacher_dir),
                     train_data=[*train, *dev], dev_data=dev, test_data=test, unlabelled=unlabelled,
                     out_dir=Path(out) / STUDENT_DIR, sources=dict(sources or {}), callbacks=callbacks,
                     resume=resume, progress=progress, keep="last", recipe=t.record, cross_fit=t.fold_teachers())
    return FinalDistilResult(**{**vars(t), "seconds": time.perf_counter() - t0}, student=student)


def _teacher(ensemble_dir: Path, members: Sequence[Path], last: RunSummary,
             splits: dict[str, Sequence[Sentence]]) -> tuple[Path, dict[str, Any]]:
    """Several members -> an ensemble folder scored on ``splits``; one model -> its folder and the scores
    its run already has (its dev is the first split: the held-out block, or dev)."""
    if members:
        return save_evaluated_ensemble(ensemble_dir, members, splits, sources=[str(m) for m in members])
    first, *rest = splits
    return last.model_dir, {first: last.dev, **({"test": last.test} if rest and last.test else {})}
