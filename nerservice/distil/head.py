"""One head of a multi-corpus teacher as a single-corpus teacher (``nerservice distil --teacher-head NAME``).

A multi-corpus model (or an ensemble of them) is often the better model of each of its corpora — the
four-corpus model scores +1.22 over single-corpus models on NCBI-disease and +2.19 on linnaeus (BENCHMARKS.md,
session 17) — but it carries every corpus's types.  Its head for one corpus defines a CRF distribution over that
corpus's tags alone (``multi/head_view.py``); seen through it, the head is an ordinary single-corpus teacher, so
``distil()`` trains a single-corpus student on it (targets, cross-fitting, unlabelled text) with no code of its
own.
"""
from __future__ import annotations

from nerservice.distil.run import Teacher
from nerservice.multi.head_view import HeadArtifact


def head_teacher(teacher: Teacher, name: str) -> Teacher:
    """``teacher`` (a multi-corpus model or ensemble) as its head ``name``; its lineage record is the
    teacher's, with the head and the teacher's heads (``teacher_heads``) beside the head's tags."""
    artifact = HeadArtifact(teacher.loaded, name)
    info = {k: v for k, v in teacher.info.items() if k != "heads"}
    return Teacher(artifact, {**info, "tags": artifact.head_tags.tags, "head": name,
                              "teacher_heads": teacher.info.get("heads")})
