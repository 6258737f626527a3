"""Predictions onto documents: every passage's text through the one ``Extractor`` (the API's and Spark's),
entities shifted to document offsets.  The input documents keep their ids, passages, infons and
relations; their annotations are replaced by the predictions (id ``T1``, ``T2``, ... in text order)."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from nerservice.documents.model import Annotation, Document


def annotate(extractor: Any, docs: Sequence[Document]) -> list[Document]:
    """``extractor`` is a :class:`nerservice.inference.Extractor` (anything with its ``extract``)."""
    texts = [p.text for d in docs for p in d.passages]
    found = iter(extractor.extract(texts)) if texts else iter(())
    return [_apply(d, found) for d in docs]


def _apply(doc: Document, found: Iterator[Any]) -> Document:
    anns: list[Annotation] = []
    for p in doc.passages:
        for e in next(found):
            anns.append(Annotation(f"T{len(anns) + 1}", e.label, ((p.offset + e.start, p.offset + e.end),), e.text,
                                   score=float(e.score)))
    return doc.with_annotations(anns)

