"""One head of a multi-corpus teacher as a single-corpus teacher (``nerservice distil --teacher-head NAME``).

A multi-corpus model (or an ensemble of them) is often the better model of each of its corpora — the
four-corpus model scores +1.22 over single-corpus models on NCBI-disease and +2.19 on linnaeus (BENCHMARKS.md,
session 17) — but it carries every head's encoder load and returns every corpus's types.  Its head for one
corpus defines a CRF distribution over that corpus's tags alone: the head's emission columns and its block of
the transition matrix (``model.heads.head_crf``).  Seen through ``HeadArtifact``, that head is an ordinary
single-corpus teacher, so ``distil()`` trains a single-corpus student on it (its targets, cross-fitting,
unlabelled text) with no code of its own: one head's accuracy at one single-corpus model's cost.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from nerservice.distil.run import Teacher
from nerservice.errors import ConfigError
from nerservice.model.decode import CrfParams, Tagged, decode_emissions
from nerservice.model.heads import head_crf
from nerservice.text.vocab import MultiTagVocabulary, TagVocabulary


class HeadPredictor:
    """A multi-corpus predictor's head ``cols``: its emission columns, its CRF block, decoded with its tags
    (a ``TagPredictor``, as ``distil`` and ``evaluate_predictor`` use one)."""

    def __init__(self, inner: Any, cols: slice, tags: TagVocabulary) -> None:
        self._inner, self._cols, self._tags = inner, cols, tags

    @property
    def runtime(self) -> str:
        return str(self._inner.runtime)

    @property
    def background_xla(self) -> Any:
        return self._inner.background_xla

    @property
    def tag_labels(self) -> list[str]:
        return self._tags.tags

    def crf_params(self) -> CrfParams:
        return head_crf(self._inner.crf_params(), self._cols)

    def emissions(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        return [e[:, self._cols] for e in self._inner.emissions(sentences)]

    def tag(self, sentences: Sequence[Sequence[str]], *, with_scores: bool = True) -> list[Tagged]:
        return decode_emissions(self.emissions(sentences), self.crf_params(), self._tags.tag,
                                with_scores=with_scores, batch_size=self._inner.batch_size,
                                bucket_size=self._inner.bucket_size)

    def predict_tags(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        return [t.tags for t in self.tag(sentences, with_scores=False)]


class HeadArtifact:
    """A loaded multi-corpus model or ensemble, seen as its head ``name``: what ``distil.run.Teacher`` reads
    of a loaded artifact (``vocabs``, ``config``, ``members``, ``predictor()``)."""

    def __init__(self, loaded: Any, name: str) -> None:
        tags = loaded.vocabs.tags
        if not isinstance(tags, MultiTagVocabulary):
            raise ConfigError(f"--teacher-head {name}: the teacher is a single-corpus model (tags {tags.tags})",
                              hint="--teacher-head picks one head of a multi-corpus teacher; drop it")
        if name not in tags.names:
            raise ConfigError(f"--teacher-head {name}: the teacher has no such head; its heads are {tags.names}",
                              hint=f"one of {tags.names}")
        self.name = name
        self._loaded = loaded
        self._cols, self.head_tags = tags.head(name)
        self.vocabs = replace(loaded.vocabs, tags=self.head_tags)
        self.config = loaded.config
        self.members = getattr(loaded, "members", [])

    def predictor(self, **options: Any) -> HeadPredictor:
        return HeadPredictor(self._loaded.predictor(**options), self._cols, self.head_tags)


def head_teacher(teacher: Teacher, name: str) -> Teacher:
    """``teacher`` (a multi-corpus model or ensemble) as its head ``name``; its lineage record is the
    teacher's, with the head and the teacher's heads (``teacher_heads``) beside the head's tags."""
    artifact = HeadArtifact(teacher.loaded, name)
    info = {k: v for k, v in teacher.info.items() if k != "heads"}
    return Teacher(artifact, {**info, "tags": artifact.head_tags.tags, "head": name,
                              "teacher_heads": teacher.info.get("heads")})
