"""What a read produced: the sentences, and an account of everything that was counted, skipped or fixed.

The report is the quarantine record Spark preprocessing writes next to the Parquet output, so it is
plain data with a JSON-able ``to_dict`` and a ``merge`` that makes per-file reports add up.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from nerservice.data.sentence import Sentence


@dataclass(frozen=True)
class SkippedSentence:
    """A sentence dropped in lenient mode. ``line`` is the offending line (not the sentence start)."""

    file: str
    line: int
    reason: str


def _join(a: str, b: str) -> str:
    """Merged scheme/format labels: equal stays as is, different becomes e.g. ``"iob1,iob2"``."""
    parts = {p for p in (a.split(",") + b.split(",")) if p}
    return ",".join(sorted(parts))


@dataclass
class ReadReport:
    """Counts describe the *kept* sentences; ``skipped`` the dropped ones, so
    ``sentences + len(skipped)`` equals the number of sentence blocks in the input."""

    files: list[str] = field(default_factory=list)
    sentences: int = 0
    tokens: int = 0
    entities: dict[str, int] = field(default_factory=dict)  # entity count per type
    skipped: list[SkippedSentence] = field(default_factory=list)
    repaired: int = 0  # IOB1-style I- starts rewritten to B- in IOB2 input
    warnings: list[str] = field(default_factory=list)
    scheme: str = ""  # scheme the input was read as ("iob1,iob2" after merging files that differ)
    format: str = ""  # "tsv" / "conll" (joined the same way)

    @property
    def total_sentences(self) -> int:
        return self.sentences + len(self.skipped)

    def merge(self, other: "ReadReport") -> "ReadReport":
        entities = dict(self.entities)
        for label, n in other.entities.items():
            entities[label] = entities.get(label, 0) + n
        return ReadReport(
            files=self.files + other.files,
            sentences=self.sentences + other.sentences,
            tokens=self.tokens + other.tokens,
            entities=dict(sorted(entities.items())),
            skipped=self.skipped + other.skipped,
            repaired=self.repaired + other.repaired,
            warnings=self.warnings + other.warnings,
            scheme=_join(self.scheme, other.scheme),
            format=_join(self.format, other.format),
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["total_sentences"] = self.total_sentences
        return out


@dataclass
class Corpus:
    sentences: list[Sentence]
    report: ReadReport
