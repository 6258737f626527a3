"""The final-distil recipe's ``--teacher`` / ``--teacher-head`` and ``--student-set`` options, declared and
checked once for the two shells that run the recipe (``nerservice train`` and ``spark_jobs/train.py``), so their
text, defaults and refusals cannot drift apart.  Argument parsing only: what the options do is
``distil/recipe.py``'s."""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nerservice.errors import ConfigError

if TYPE_CHECKING:
    from nerservice.config import NerConfig


def add_teacher_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--teacher", metavar="REF", help="with --distil and --unlabelled: the teacher of the unlabelled "
                   "text instead of the run's final model(s) — an ensemble or model folder, a run folder or a "
                   "store ref (pinned to one version before anything trains; on Spark, on storage every executor "
                   "sees), e.g. a four-corpus model's ensemble with --teacher-head. The labelled text and its "
                   "variants keep their cross-fitting fold teachers; the N final models still train and the "
                   "final ensemble is still written and scored. Its tags become the student's: they must be "
                   "exactly those of train + dev. Recorded in the student's lineage (recipe.unlabelled_teacher)")
    p.add_argument("--teacher-head", metavar="NAME", help="with --teacher: the head NAME (its corpus name) of a "
                   "multi-corpus --teacher as a single-corpus teacher (required for one), e.g. ncbi")


def check_teacher_options(*, distil: bool, teacher: str | None, head: str | None,
                          unlabelled: Sequence[str]) -> None:
    """The options' combinations, before any file is read: coded errors naming the missing option."""
    if (teacher or head) and not distil:
        raise ConfigError("--teacher and --teacher-head belong to --distil",
                          hint="--final --distil --unlabelled FILE ... --teacher REF")
    if head and not teacher:
        raise ConfigError(f"--teacher-head {head} picks a head of the --teacher model: it needs --teacher",
                          hint="--teacher OUT4/ensemble --teacher-head NAME")
    if teacher and not unlabelled:
        raise ConfigError("--teacher labels the --unlabelled text (the labelled text keeps its cross-fitting "
                          "teachers): without --unlabelled it would label nothing", hint="add --unlabelled FILE ...")


def add_student_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--student-set", action="append", default=[], metavar="KEY=VALUE",
                   help="with --distil: a config override for the student alone (repeatable), applied after the "
                   "recipe's own (phase 1's epoch count, the first seed), e.g. --student-set model.encoder=null: "
                   "teachers with --encoder label the text, and the deployed student runs without the encoder "
                   "(about 10x faster on CPU). Recorded in the student's lineage (recipe.student.overrides)")


def check_student_options(*, distil: bool, items: Sequence[str], config: "NerConfig") -> list[str]:
    """``--student-set`` items, refused unless ``--distil``, and applied to ``config`` once here so that an unknown
    key or a bad value fails before anything trains; returned as given for the recipe."""
    if items and not distil:
        raise ConfigError("--student-set configures the distilled student: it belongs to --distil",
                          hint="--final --seeds 3 --distil --student-set KEY=VALUE")
    if any(item.strip().startswith("distil.") for item in items):
        raise ConfigError("--student-set takes the student's config keys; distil.KEY settings go to --set",
                          hint="--set distil.gold_weight=0.5")
    if items:
        config.with_overrides(list(items))
    return list(items)
