"""The document model every format reader produces and every writer consumes.

A document is an id, passages (title, abstract, sections: each a text at a document-level character
offset) and annotations whose spans are document-level offsets, as in PubTator, BioC and BRAT.  Offsets
are Python string indices (Unicode code points), which is what PubTator and BRAT count and what BioC's
``offset`` means once the file is decoded.

Everything a format carries that NER does not use (identifiers, infons, notes, relations) is kept
verbatim so writing a document back loses nothing; ``source``/``line`` say where it was read and are
excluded from equality, like :class:`nerservice.data.Sentence`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

Pairs = tuple[tuple[str, str], ...]  # ordered key/value pairs (BioC infons, notes); keys may repeat
Span = tuple[int, int]


@dataclass(frozen=True)
class Annotation:
    """One entity mention. ``spans`` has one (start, end) pair, or several for a discontinuous BRAT/BioC
    mention; ``text`` is the mention as the file gives it (fragments joined by a space when
    discontinuous).  ``identifier`` is the normalisation (MeSH, NCBI Gene, ``OMIM:...``; several joined by
    ``|`` as PubTator writes them), untouched.  ``score`` is set on predictions."""

    id: str
    label: str
    spans: tuple[Span, ...]
    text: str
    identifier: str | None = None
    infons: Pairs = ()
    score: float | None = None
    line: int = field(default=0, compare=False)  # where the file gives it (PubTator/BRAT line, BioC XML element)

    @property
    def start(self) -> int:
        return self.spans[0][0]

    @property
    def end(self) -> int:
        return self.spans[-1][1]

    @property
    def discontinuous(self) -> bool:
        return len(self.spans) > 1


@dataclass(frozen=True)
class Relation:
    """A relation between annotations or concepts (PubTator ``CID`` lines, BRAT ``R`` lines, BioC
    relations): not used by NER, carried so a round trip keeps it."""

    id: str
    type: str
    nodes: tuple[tuple[str, str], ...]  # (refid, role)
    infons: Pairs = ()


@dataclass(frozen=True)
class Passage:
    """``kind`` is the passage type (``title``/``abstract`` in PubTator, BioC's ``type`` infon).
    ``sentences`` are document-level spans when the file gives sentence boundaries (BioC ``<sentence>``),
    else None and the project's sentence splitter decides."""

    offset: int
    text: str
    kind: str = ""
    infons: Pairs = ()
    sentences: tuple[Span, ...] | None = None

    @property
    def end(self) -> int:
        return self.offset + len(self.text)


@dataclass(frozen=True)
class Document:
    id: str
    passages: tuple[Passage, ...]
    annotations: tuple[Annotation, ...] = ()
    relations: tuple[Relation, ...] = ()
    infons: Pairs = ()
    extra: tuple[str, ...] = ()  # raw lines of a format we carry but do not interpret (BRAT events, attributes)
    source: str = field(default="", compare=False)
    line: int = field(default=0, compare=False)

    def passage_at(self, start: int, end: int) -> Passage | None:
        """The passage that holds [start, end) entirely, or None."""
        for p in self.passages:
            if p.offset <= start and end <= p.end:
                return p
        return None

    def text_at(self, start: int, end: int) -> str | None:
        """Document text at [start, end), or None when the span is not inside one passage."""
        p = self.passage_at(start, end)
        return None if p is None else p.text[start - p.offset : end - p.offset]

    def with_annotations(self, annotations: tuple[Annotation, ...] | list[Annotation]) -> Document:
        return replace(self, annotations=tuple(annotations))

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}" if self.line else self.source


def fragments_text(doc: Document, spans: tuple[Span, ...]) -> str | None:
    """The text a (possibly discontinuous) annotation should carry: its fragments joined by a space."""
    parts = [doc.text_at(s, e) for s, e in spans]
    if any(p is None for p in parts):
        return None
    return " ".join(p for p in parts if p is not None)
