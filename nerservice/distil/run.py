"""``distil()``: a teacher model (an ensemble, or any single-head model) + labelled corpora + unlabelled text
-> one student model folder, written by the ordinary trainer (``training.trainer.train``).

1. The teacher is resolved (folder, run folder or store reference) and loaded.  A multi-corpus teacher
   (a model or an ensemble of them, one CRF head per corpus) is distilled by ``distil_multi`` into a
   multi-corpus student with the same heads, on the teacher's corpora (a corpora config whose corpus names
   and tag sets are the teacher's heads): every sentence of every corpus, and the unlabelled text, gets
   every head's targets, so each head also learns from the other corpora's text.
2. Every training sentence — labelled first, then synthetic variants of them (``augment.py``, if
   ``distil.augment``), then unlabelled text in file order — gets the teacher's targets (``targets.py``);
   labelled ones and their variants may mix in their gold path (``DistilConfig.gold_weight``).  With
   cross-fitting (``FoldTeacher``) a part of the labelled text, and the variants made from it, gets its
   targets from a teacher that was *not* trained on it: on its own training text a teacher's targets are the
   gold tags again (BENCHMARKS.md, session 14), while on held-out text they carry where it doubts and errs.
3. The student is trained like any model (same vocabulary building from *all* its training text, same
   pretrained vectors, epochs, early stopping or fixed epochs, checkpoints and resume), with the teacher's
   tag set in the teacher's column order and the cross-entropy loss (``student.py``).
4. Its lineage.json has ``distillation``: the teacher (reference, folder, version, members), the labelled
   and unlabelled data (files, counts, fingerprints), the distillation settings and how soft the targets
   were on each kind of text (``confidence.py``).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from nerservice.config import NerConfig
from nerservice.data import Sentence
from nerservice.data.unlabelled import UnlabelledText
from nerservice.distil.augment import augment
from nerservice.distil.confidence import by_source, describe_confidence, split_confidence
from nerservice.distil.config import DistilConfig
from nerservice.distil.student import MultiStudentTagger, StudentTagger
from nerservice.distil.targets import TeacherTargets, build_targets
from nerservice.errors import ConfigError
from nerservice.multi.config import CorporaConfig
from nerservice.multi.corpora import CorpusSplits
from nerservice.text.vocab import MultiTagVocabulary, TagVocabulary
from nerservice.training.trainer import TrainCallback, TrainOutcome


@dataclass
class DistilPlan:
    """The ``training.trainer.Distillation`` that ``train()`` takes."""

    tags: TagVocabulary | MultiTagVocabulary
    targets: TeacherTargets
    record: dict[str, Any]
    labelled: int  # the first sentences of the student's training data are the labelled corpus
    tagger_cls: type[Any] = StudentTagger
    unlabelled: list[Sentence] = field(default_factory=list)  # after them: the unlabelled text, in this order

    def batch(self, rows: np.ndarray, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self.targets.batch(rows, batch)


@dataclass
class DistilOutcome:
    outcome: TrainOutcome  # the student's training run
    teacher: dict[str, Any]  # what the lineage records of the teacher
    teacher_test: dict[str, Any] | None  # the teacher's own test metrics, for comparison
    targets_seconds: float


@dataclass
class Teacher:
    loaded: Any  # a LoadedArtifact (LoadedModel, LoadedEnsemble, LoadedOnnx)
    info: dict[str, Any]

    @property
    def tags(self) -> TagVocabulary | MultiTagVocabulary:
        tags = self.loaded.vocabs.tags
        assert isinstance(tags, (TagVocabulary, MultiTagVocabulary))
        return tags

    @property
    def multi(self) -> bool:
        return isinstance(self.loaded.vocabs.tags, MultiTagVocabulary)


@dataclass
class FoldTeacher:
    """Cross-fitting: labelled sentences ``rows`` (indices into the labelled corpus) take their targets from
    ``teacher`` — a model or ensemble of the main teacher's tag set that was trained without them (e.g. the
    teachers of the other half of the data) — instead of from the main teacher."""

    teacher: Teacher
    rows: Sequence[int]


def teacher_from(loaded: Any, *, ref: str, path: str | Path, name: str, version: str) -> Teacher:
    """A loaded model folder (``artifacts.formats.load_model``) as a teacher; the shell resolved ``ref``
    to ``path``, ``name`` and ``version`` (``artifacts.resolve``: see ``distil/teacher_ref.load_teacher``)."""
    from nerservice.artifacts.ensemble_folder import is_ensemble_dir

    members = len(getattr(loaded, "members", [])) or 1
    tags = loaded.vocabs.tags
    info = {"ref": ref, "path": str(Path(path).resolve()), "name": name, "version": version,
            "kind": "ensemble" if is_ensemble_dir(path) else "model", "members": members, "tags": tags.tags,
            **({"heads": tags.names} if isinstance(tags, MultiTagVocabulary) else {})}
    return Teacher(loaded, info)


def folder_teacher(path: str | Path) -> Teacher:
    """A model or ensemble folder (the final-distil recipe's own teachers), named and versioned as
    ``artifacts.resolve`` names a folder; other references go through ``distil/teacher_ref.py``."""
    from nerservice.artifacts.files import manifest_fingerprint
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.layout import RUN_MODELS

    path = Path(path)
    name = path.parent.name if path.name in RUN_MODELS else path.name
    return teacher_from(load_model(path), ref=str(path), path=path, name=name,
                        version=manifest_fingerprint(path)[:12])


def check_tags(tags: TagVocabulary, corpora: dict[str, Sequence[Sentence]]) -> None:
    known = set(tags.tags)
    for name, sentences in corpora.items():
        extra = sorted({t for s in sentences for t in s.tags} - known)
        if extra:
            raise ConfigError(f"{name} has tags {extra} the teacher does not know; the teacher's are {tags.tags}",
                              hint="distil on corpora of the teacher's tag set")


def unlabelled_sentences(text: UnlabelledText) -> list[Sentence]:
    """Training sentences for the trainer: the tags are placeholders, never read (the targets replace them)."""
    return [Sentence(toks, ("O",) * len(toks), file=f, line=line)
            for toks, (f, line) in zip(text.sentences, text.where)]


def augmented_sentences(labelled: Sequence[Sentence], distil_config: DistilConfig, *,
                        seed: int) -> tuple[list[Sentence], list[int]]:
    """``augment.py``'s variants of the labelled sentences as training sentences, each with the tags its
    construction gives it and pointing at its source sentence's file and line; and each one's source row."""
    if not distil_config.augment:
        return [], []
    tokens = distil_config.augment * sum(len(s.tokens) for s in labelled)
    if tokens > distil_config.max_unlabelled_tokens:
        raise ConfigError(f"distil.augment={distil_config.augment} would make up to {tokens} tokens of synthetic "
                          f"text, over distil.max_unlabelled_tokens={distil_config.max_unlabelled_tokens}",
                          hint="lower distil.augment or raise distil.max_unlabelled_tokens")
    variants = augment(labelled, copies=distil_config.augment, mention_swap=distil_config.augment_mention_swap,
                       word_swap=distil_config.augment_word_swap, seed=seed)
    return ([Sentence(v.tokens, v.tags, file=labelled[v.source].file, line=labelled[v.source].line)
             for v in variants], [v.source for v in variants])


def fixed_epochs(config: NerConfig, keep: Literal["best", "last"]) -> NerConfig:
    """keep "last": exactly training.epochs epochs: dev F1 neither selects nor stops (a time budget still can)."""
    return config.with_overrides({"training.patience": config.training.epochs}) if keep == "last" else config


def check_cross_fit(teacher: Teacher, cross_fit: Sequence[FoldTeacher], labelled: int) -> set[int]:
    """Every fold teacher has the main teacher's tags in its column order; folds are disjoint rows of the
    labelled corpus.  The rows they cover."""
    covered: set[int] = set()
    for k, fold in enumerate(cross_fit):
        if fold.teacher.multi or fold.teacher.tags.tags != teacher.tags.tags:
            raise ConfigError(f"cross-fitting teacher {fold.teacher.info['ref']} has tags {fold.teacher.tags.tags}; "
                              f"the teacher's are {teacher.tags.tags}",
                              hint="every fold's teacher must be trained on the same tag set")
        rows = set(fold.rows)
        if not rows or min(rows) < 0 or max(rows) >= labelled:
            raise ConfigError(f"cross-fitting fold {k} names no rows, or rows outside the {labelled} labelled "
                              "sentences", hint="a fold is the labelled sentences its teacher was not trained on")
        if rows & covered:
            raise ConfigError(f"cross-fitting fold {k} overlaps an earlier fold ({len(rows & covered)} sentences)",
                              hint="each labelled sentence takes its targets from one fold's teacher")
        covered |= rows
    return covered


def plan_distillation(teacher: Teacher, predictor: Any, config: NerConfig, distil_config: DistilConfig, *,
                      labelled: Sequence[Sentence], unlabelled: UnlabelledText | None, loss: str, progress: bool,
                      tagger_cls: type[Any], labelled_extra: dict[str, Any] | None = None,
                      cross_fit: Sequence[FoldTeacher] = ()) -> DistilPlan:
    """The teacher's targets for ``labelled`` (tags in the teacher's columns; the rows of a ``cross_fit`` fold
    from that fold's teacher), the synthetic variants of ``distil.augment`` (a variant of a fold's row from
    that fold's teacher too: the text it was not trained on, recombined), then the unlabelled text; and the
    lineage record: what ``distil`` and ``distil_multi`` share.  The gold mix (``distil.gold_weight``) applies
    to the labelled sentences and to the variants (their tags by construction), never to unlabelled text."""
    from nerservice.lineage import corpus_fingerprint

    tags = teacher.tags
    check_cross_fit(teacher, cross_fit, len(labelled))
    synthetic, sources = augmented_sentences(labelled, distil_config, seed=config.training.seed)
    from_files = unlabelled_sentences(unlabelled) if unlabelled is not None else []
    extra = [*synthetic, *from_files]
    sentences = [*labelled, *extra]
    gold: list[np.ndarray | None] = [np.array([tags.id(t) for t in s.tags], dtype=np.int64)
                                     for s in [*labelled, *synthetic]]
    gold += [None] * len(from_files)
    heads = tags.slices if isinstance(tags, MultiTagVocabulary) else None

    def targets_of(pred: Any, rows: Sequence[int]) -> TeacherTargets:
        return build_targets(pred, [sentences[i].tokens for i in rows], temperature=distil_config.temperature,
                             gold=[gold[i] for i in rows], gold_weight=distil_config.gold_weight,
                             chunk=distil_config.teacher_chunk, batch_size=config.training.eval_batch_size,
                             heads=heads)[0]

    t0 = time.perf_counter()
    # a fold's rows: its labelled sentences, then the variants made from them
    fold_rows = []
    for fold in cross_fit:
        own = set(fold.rows)
        fold_rows.append(sorted([*own, *(len(labelled) + k for k, src in enumerate(sources) if src in own)]))
    taken: set[int] = set().union(*fold_rows)
    mine = [i for i in range(len(sentences)) if i not in taken]
    parts = [(mine, targets_of(predictor, mine))] if mine else []
    for fold, rows in zip(cross_fit, fold_rows):
        parts.append((rows, targets_of(fold.teacher.loaded.predictor(batch_size=config.training.eval_batch_size),
                                       rows)))
    targets = TeacherTargets.assemble(parts, len(sentences))
    seconds = time.perf_counter() - t0
    groups = [("labelled", len(labelled)), ("augmented", len(synthetic)), ("unlabelled", len(from_files))]
    blocks = heads or [slice(0, targets.n_tags)]
    soft = split_confidence(targets.unary, targets.offsets, groups, blocks)
    if from_files:
        soft["unlabelled"]["by_file"] = by_source(targets.unary, targets.offsets, len(labelled) + len(synthetic),
                                                  [s.file or "" for s in from_files], blocks)
    if progress:
        print(f"teacher targets{f' ({len(heads)} heads)' if heads else ''} for {len(sentences)} sentences "
              f"({targets.unary.shape[0]} tokens) in {seconds:.1f} s", flush=True)
        print(describe_confidence(soft), flush=True)
    record = {
        "teacher": teacher.info,
        "labelled": {"sentences": len(labelled), "tokens": sum(len(s.tokens) for s in labelled),
                     **(labelled_extra or {}), "fingerprint": corpus_fingerprint(labelled)},
        "augmented": ({"sentences": len(synthetic), "tokens": sum(len(s.tokens) for s in synthetic),
                       "fingerprint": corpus_fingerprint(synthetic)} if synthetic else None),
        "unlabelled": ({"files": unlabelled.files, "sentences": len(from_files), "tokens": unlabelled.tokens,
                        "fingerprint": corpus_fingerprint(from_files)} if unlabelled is not None else None),
        "cross_fit": [{"teacher": fold.teacher.info, "sentences": len(fold.rows),
                       "tokens": sum(len(labelled[i].tokens) for i in fold.rows),
                       "augmented_sentences": len(rows) - len(fold.rows)}
                      for fold, rows in zip(cross_fit, fold_rows)] or None,
        "settings": distil_config.model_dump(mode="json"),
        "loss": loss,
        "targets_seconds": round(seconds, 2),
        "target_confidence": soft,
    }
    return DistilPlan(tags=tags, targets=targets, record=record, labelled=len(labelled), tagger_cls=tagger_cls,
                      unlabelled=extra)


def distil(config: NerConfig, distil_config: DistilConfig, *, teacher: Teacher, train_data: Sequence[Sentence],
           dev_data: Sequence[Sentence], test_data: Sequence[Sentence] | None = None,
           unlabelled: UnlabelledText | None = None, out_dir: str | Path, sources: dict[str, Any] | None = None,
           callbacks: Sequence[TrainCallback] = (), resume: bool = True, progress: bool = True,
           keep: Literal["best", "last"] = "best", cross_fit: Sequence[FoldTeacher] = (),
           recipe: dict[str, Any] | None = None, **train_options: Any) -> DistilOutcome:
    """``cross_fit``: folds of ``train_data`` whose targets come from teachers not trained on them
    (``FoldTeacher``); the main teacher labels the rest and the unlabelled text.  ``recipe``: how the student
    fits a multi-run recipe (``distil/recipe.py``), recorded in its lineage.  ``train_options`` go to
    ``train()`` (a Spark worker's ``strategy``, ``rank``, ``world`` and its local ``embeddings`` files): every
    worker of a barrier stage computes the same (deterministic) targets and trains its slice of each batch."""
    from nerservice.metrics import evaluate_predictor
    from nerservice.training.trainer import train

    if teacher.multi:
        raise ConfigError(f"{teacher.info['ref']} is a multi-corpus model (heads {teacher.info['heads']}): its "
                          "student is distilled on its corpora", hint="nerservice distil --corpora CORPORA.json")
    config = fixed_epochs(config, keep)
    tags = teacher.tags
    assert isinstance(tags, TagVocabulary)
    check_tags(tags, {"train": train_data, "dev": dev_data, **({"test": test_data} if test_data else {})})
    predictor = teacher.loaded.predictor(batch_size=config.training.eval_batch_size)
    plan = plan_distillation(teacher, predictor, config, distil_config, labelled=train_data, unlabelled=unlabelled,
                             loss="cross-entropy of the student's CRF against the teacher's CRF distribution "
                                  "(exact marginals)", progress=progress, tagger_cls=StudentTagger,
                             cross_fit=cross_fit)
    options = {"embeddings": config.model.embeddings, **train_options}
    outcome = train(config, train_data=[*train_data, *plan.unlabelled], dev_data=dev_data, test_data=test_data,
                    out_dir=out_dir, sources=sources, callbacks=callbacks, resume=resume, progress=progress, keep=keep,
                    distillation=plan, recipe=recipe, **options)
    chief = int(train_options.get("rank", 0)) == 0
    teacher_test = evaluate_predictor(predictor, test_data) if test_data and chief else None
    return DistilOutcome(outcome=outcome, teacher=teacher.info, teacher_test=teacher_test,
                         targets_seconds=plan.record["targets_seconds"])


def check_heads(tags: MultiTagVocabulary, corpora: Sequence[CorpusSplits]) -> None:
    """The corpora must be the teacher's heads, in its order, each within its head's tag set."""
    names = [c.name for c in corpora]
    if names != tags.names:
        raise ConfigError(f"the corpora config names {names}; the teacher's heads are {tags.names}",
                          hint="distil on the teacher's corpora config (the corpora, in its order)")
    for c in corpora:
        _, head = tags.head(c.name)
        check_tags(head, {f"{c.name}/{split}": part for split, part in
                          (("train", c.train), ("dev", c.dev), ("test", c.test or [])) if part})


def distil_multi(config: NerConfig, distil_config: DistilConfig, *, teacher: Teacher, corpora_config: CorporaConfig,
                 corpora: Sequence[CorpusSplits], unlabelled: UnlabelledText | None = None, out_dir: str | Path,
                 sources: dict[str, Any] | None = None, callbacks: Sequence[TrainCallback] = (), resume: bool = True,
                 progress: bool = True, keep: Literal["best", "last"] = "best") -> DistilOutcome:
    """A multi-corpus teacher into a multi-corpus student (``train_multi`` with the teacher's targets).
    ``corpora``: as ``read_corpora`` gives them; for the final protocol the caller passes them
    ``with_dev_in_train`` and ``keep="last"``."""
    from nerservice.multi.corpora import namespaced
    from nerservice.multi.evaluation import evaluate_heads
    from nerservice.multi.trainer import train_multi

    tags = teacher.tags
    if not isinstance(tags, MultiTagVocabulary):
        raise ConfigError(f"{teacher.info['ref']} is a single-corpus model: --corpora is for a multi-corpus "
                          "teacher", hint="distil it with --train/--dev")
    check_heads(tags, corpora)
    config = fixed_epochs(config, keep)
    predictor = teacher.loaded.predictor(batch_size=config.training.eval_batch_size)
    plan = plan_distillation(teacher, predictor, config, distil_config,
                             labelled=[s for c in corpora for s in namespaced(c.name, c.train)],
                             unlabelled=unlabelled, progress=progress, tagger_cls=MultiStudentTagger,
                             loss="sum over heads of the cross-entropy of the student's head against the "
                                  "teacher's head (exact marginals), on every sentence",
                             labelled_extra={"per_corpus": {c.name: len(c.train) for c in corpora}})
    outcome = train_multi(config, corpora_config, corpora, embeddings=config.model.embeddings, out_dir=out_dir,
                          sources=sources, callbacks=callbacks, resume=resume, progress=progress, keep=keep,
                          distillation=plan, unlabelled=plan.unlabelled)
    tests = {c.name: c.test for c in corpora if c.test}
    teacher_test = evaluate_heads(predictor, tests) if tests else None
    return DistilOutcome(outcome=outcome, teacher=teacher.info, teacher_test=teacher_test,
                         targets_seconds=plan.record["targets_seconds"])
