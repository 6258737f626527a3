"""What turning documents into IOB2 sentences did: counts that add up, and every annotation case.

    annotations read == entities tagged + excluded by the label map + dropped (each drop is a case)

Cases (``kind`` → what lenient mode does, ``action``):
  * ``text-mismatch``   the file's mention text differs from the document text at its offsets → the text is
                        searched within ``realign_window`` characters and the span moved to the nearest
                        occurrence (``realigned``), else ``dropped``
  * ``empty-span``      start >= end → ``dropped``
  * ``outside-passage`` the span is not inside one passage (or past the text) → ``dropped``
  * ``bad-label``       the (mapped) label cannot be an IOB2 tag (blank, holds whitespace) → ``dropped``
  * ``discontinuous``   several fragments (BRAT ``0 5;9 12``, several BioC locations) → the covering span,
                        first start to last end (``covering-span``)
  * ``edge-space``      the span starts or ends with whitespace → ``trimmed``
  * ``overlap``         nested in, crossing or duplicating another kept mention → the longer (outer) one is
                        kept, the other ``dropped`` (equal length: the first in document order stays)
  * ``token-boundary``  a span edge falls inside a token (``APC`` in ``APC2``) → the token is split there
                        (``tokens-split``)
  * ``sentence-merge``  a mention crosses a sentence boundary the splitter chose → the sentences are
                        merged (``merged``; this one happens in strict mode too: the data is fine)
Strict mode raises :class:`~nerservice.errors.AnnotationError` on the first case other than
``sentence-merge``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from nerservice.data.report import ReadReport
from nerservice.data.sentence import Sentence


@dataclass(frozen=True)
class Case:
    kind: str
    action: str
    file: str
    line: int
    document: str
    annotation: str
    start: int
    end: int
    text: str
    detail: str

    def describe(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return (f"{where}: document {self.document!r}: annotation {self.annotation} [{self.start}, {self.end}) "
                f"{self.text!r}: {self.kind}: {self.detail} → {self.action}")


@dataclass
class DocumentReport:
    files: list[str] = field(default_factory=list)
    documents: int = 0
    passages: int = 0
    sentences: int = 0
    tokens: int = 0
    annotations: int = 0  # read, before anything
    entities: dict[str, int] = field(default_factory=dict)  # tagged, per (mapped) label
    excluded: dict[str, int] = field(default_factory=dict)  # label mapped to O, per original label
    relabelled: dict[str, int] = field(default_factory=dict)  # "SpecificDisease→Disease": n
    dropped: int = 0
    changed: int = 0  # kept, with their span changed (realigned, trimmed, covering span)
    merged_sentences: int = 0
    cases: list[Case] = field(default_factory=list)

    @property
    def adds_up(self) -> bool:
        return self.annotations == sum(self.entities.values()) + sum(self.excluded.values()) + self.dropped

    def add(self, case: Case) -> None:
        self.cases.append(case)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["adds_up"] = self.adds_up
        return out

    def read_report(self) -> ReadReport:
        """The token-corpus view (what ``nerservice train`` prints and Spark accounts)."""
        warnings = [c.describe() for c in self.cases]
        return ReadReport(files=list(self.files), sentences=self.sentences, tokens=self.tokens,
                          entities=dict(sorted(self.entities.items())), warnings=warnings, scheme="iob2",
                          format="documents")

    def summary(self) -> str:
        kinds: dict[str, int] = {}
        for c in self.cases:
            kinds[f"{c.kind}→{c.action}"] = kinds.get(f"{c.kind}→{c.action}", 0) + 1
        return (f"{self.documents} documents, {self.passages} passages, {self.sentences} sentences, "
                f"{self.tokens} tokens; {self.annotations} annotations = {sum(self.entities.values())} tagged "
                f"{dict(sorted(self.entities.items()))} + {sum(self.excluded.values())} excluded by the label map "
                f"+ {self.dropped} dropped; {self.changed} changed; {self.merged_sentences} sentence merges; "
                f"cases {dict(sorted(kinds.items()))}")


@dataclass
class DocumentCorpus:
    """Sentences for training/evaluation plus the accounting; ``report`` is the token-corpus view so the
    CLI treats it like :class:`nerservice.data.Corpus`."""

    sentences: list[Sentence]
    documents_report: DocumentReport
    documents: list[Any] = field(default_factory=list)  # the documents with their tagged (resolved) annotations
    per_document: list[int] = field(default_factory=list)  # sentences of each document, in order

    @property
    def report(self) -> ReadReport:
        return self.documents_report.read_report()
