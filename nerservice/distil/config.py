"""Distillation settings (``nerservice distil --set distil.KEY=VALUE``), recorded in the student's lineage.

The student's network and training settings are an ordinary ``NerConfig`` (saved as its config.json); these
are the settings of the distillation itself.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nerservice.config import parse_value
from nerservice.errors import ConfigError

if TYPE_CHECKING:
    from nerservice.data.unlabelled import UnlabelledText

PREFIX = "distil."


class DistilConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # On labelled sentences the target is gold_weight x the gold path + (1 - gold_weight) x the teacher's
    # distribution (one loss: cross-entropy is linear in the target).  0 = the teacher alone, everywhere.
    # Not yet chosen on dev: bench/gpu/distil_gpu.py --gold-weights measures it (BENCHMARKS.md).
    gold_weight: float = Field(0.0, ge=0.0, le=1.0)
    # The teacher's scores are divided by this before its posteriors are taken: > 1 softens them.
    temperature: float = Field(1.0, gt=0.0)
    # Synthetic transfer text (augment.py): this many variants of each labelled sentence, each gold mention
    # swapped for one of the same type with probability augment_mention_swap and each other word for a corpus
    # word with probability augment_word_swap; the teacher labels them (a cross-fitted fold's variants: that
    # fold's teacher).  0 = off: labelled by the main teacher they carried nothing (BENCHMARKS.md, session 14);
    # with cross-fitting, 1 gave the best BC5CDR students (session 20), measured in the final protocol, where
    # no held-out dev exists to choose a default.
    augment: int = Field(0, ge=0, le=8)
    augment_mention_swap: float = Field(0.5, ge=0.0, le=1.0)
    augment_word_swap: float = Field(0.1, ge=0.0, le=1.0)
    # Bounds on unlabelled input (nerservice/data/unlabelled.py): tokens in all (synthetic text included),
    # tokens in one sentence.
    max_unlabelled_tokens: int = Field(5_000_000, ge=1)
    max_sentence_tokens: int = Field(1000, ge=1)
    # Teacher forward passes run over this many sentences at a time (bounds the memory of its emissions).
    teacher_chunk: int = Field(4096, ge=1)

    def read_unlabelled(self, paths: Sequence[str | Path]) -> "UnlabelledText | None":
        """``--unlabelled`` files under this config's bounds (errors name the ``distil.*`` setting), or None."""
        from nerservice.data.unlabelled import read_unlabelled

        if not paths:
            return None
        return read_unlabelled(paths, max_tokens=self.max_unlabelled_tokens,
                               max_sentence_tokens=self.max_sentence_tokens,
                               max_tokens_setting=f"{PREFIX}max_unlabelled_tokens",
                               max_sentence_setting=f"{PREFIX}max_sentence_tokens")

    def with_overrides(self, overrides: dict[str, Any]) -> "DistilConfig":
        unknown = sorted(set(overrides) - set(type(self).model_fields))
        if unknown:
            raise ConfigError(f"unknown distillation setting(s) {', '.join(PREFIX + k for k in unknown)}",
                              hint=f"known: {sorted(PREFIX + k for k in type(self).model_fields)}")
        try:
            return type(self).model_validate({**self.model_dump(), **overrides})
        except ValidationError as exc:
            raise ConfigError("invalid distillation setting: " + "; ".join(
                f"{PREFIX}{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())) from None


def split_overrides(items: list[str]) -> tuple[list[str], dict[str, Any]]:
    """``--set`` items -> (NerConfig overrides, DistilConfig overrides keyed without the prefix)."""
    rest, mine = [], {}
    for item in items:
        if item.startswith(PREFIX):
            if "=" not in item:
                raise ConfigError(f"override {item!r} is not KEY=VALUE", hint="e.g. distil.gold_weight=0.5")
            key, raw = item.split("=", 1)
            mine[key[len(PREFIX):].strip()] = parse_value(raw.strip())
        else:
            rest.append(item)
    return rest, mine
