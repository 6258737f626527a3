"""JSON lines, one document per line: the shape the REST API takes and ``nerservice predict --format jsonl``
writes.

    {"id": "123", "passages": [{"offset": 0, "text": "...", "type": "title"}, ...],
     "entities": [{"id": "T1", "start": 0, "end": 5, "label": "Disease", "text": "...",
                   "identifier": "D003920", "score": 0.98}, ...]}

``type``, ``id``, ``identifier`` and ``score`` are optional; ``annotations`` is accepted for ``entities``
on input.  Discontinuous mentions carry ``spans`` ([[start, end], ...]) beside the covering start/end.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from nerservice.documents.model import Annotation, Document, Passage
from nerservice.errors import DocumentFormatError


def annotation_dict(a: Annotation) -> dict[str, Any]:
    out: dict[str, Any] = {"id": a.id, "start": a.start, "end": a.end, "label": a.label, "text": a.text}
    if a.discontinuous:
        out["spans"] = [list(s) for s in a.spans]
    if a.identifier is not None:
        out["identifier"] = a.identifier
    if a.score is not None:
        out["score"] = a.score
    if a.infons:
        out["infons"] = [list(p) for p in a.infons]
    return out


def document_dict(doc: Document) -> dict[str, Any]:
    passages = []
    for p in doc.passages:
        d: dict[str, Any] = {"offset": p.offset, "text": p.text}
        if p.kind:
            d["type"] = p.kind
        if p.infons:
            d["infons"] = [list(x) for x in p.infons]
        if p.sentences is not None:
            d["sentences"] = [list(s) for s in p.sentences]
        passages.append(d)
    out: dict[str, Any] = {"id": doc.id, "passages": passages,
                           "entities": [annotation_dict(a) for a in doc.annotations]}
    if doc.infons:
        out["infons"] = [list(x) for x in doc.infons]
    return out


def format_jsonl(docs: Iterable[Document]) -> str:
    return "".join(json.dumps(document_dict(d), ensure_ascii=False) + "\n" for d in docs)


def parse_jsonl(text: str, *, source: str) -> list[Document]:
    docs = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DocumentFormatError(f"broken JSON: {exc.msg} (column {exc.colno})", file=source, line=n) from None
        docs.append(document_from_dict(obj, source=source, line=n))
    return docs


def document_from_dict(obj: Any, *, source: str, line: int = 0) -> Document:
    """One JSON document (a JSONL line, an API request item) → Document; shape errors name the field."""
    try:
        return _document(obj, source=source, line=line)
    except (TypeError, ValueError, KeyError) as exc:  # a wrongly shaped optional field (spans, sentences, score)
        doc_id = obj.get("id") if isinstance(obj, dict) else None
        raise DocumentFormatError(f"badly shaped document field: {type(exc).__name__}", file=source, line=line,
                                  document=None if doc_id is None else str(doc_id),
                                  hint="spans/sentences are [[start, end], ...] of integers; score a number") from None


def _document(obj: Any, *, source: str, line: int) -> Document:
    doc_id = obj.get("id") if isinstance(obj, dict) else None

    def fail(reason: str) -> DocumentFormatError:
        return DocumentFormatError(reason, file=source, line=line, document=None if doc_id is None else str(doc_id))

    if not isinstance(obj, dict):
        raise fail("expected a JSON object per document")
    if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool) or str(doc_id) == "":
        raise fail("document needs an 'id' (string)")
    raw_passages = obj.get("passages")
    if not isinstance(raw_passages, list):
        raise fail("document needs 'passages': a list of {offset, text}")
    passages = []
    for i, p in enumerate(raw_passages):
        if not isinstance(p, dict) or not isinstance(p.get("text"), str) or not _nonneg(p.get("offset")):
            raise fail(f"passages[{i}] needs 'offset' (integer >= 0) and 'text' (string)")
        sentences = p.get("sentences")
        passages.append(Passage(p["offset"], p["text"], str(p.get("type") or ""), _pairs(p.get("infons")),
                                None if sentences is None else tuple((int(s), int(e)) for s, e in sentences)))
    anns = []
    raw = obj.get("entities", obj.get("annotations", []))
    if not isinstance(raw, list):
        raise fail("'entities' must be a list")
    for i, a in enumerate(raw):
        if not isinstance(a, dict) or not _nonneg(a.get("start")) or not _nonneg(a.get("end")) or \
                not isinstance(a.get("label"), str):
            raise fail(f"entities[{i}] needs 'start', 'end' (integers >= 0) and 'label'")
        spans = tuple((int(s), int(e)) for s, e in a["spans"]) if a.get("spans") else ((a["start"], a["end"]),)
        score = a.get("score")
        ident = a.get("identifier")
        if ident is not None and not isinstance(ident, str):
            raise fail(f"entities[{i}].identifier must be a string")
        anns.append(Annotation(str(a.get("id", i + 1)), a["label"], spans, str(a.get("text", "")),
                               ident, _pairs(a.get("infons")),
                               None if score is None else float(score), line))
    return Document(str(doc_id), tuple(passages), tuple(anns), infons=_pairs(obj.get("infons")), source=source,
                    line=line)


def _nonneg(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _pairs(v: Any) -> tuple[tuple[str, str], ...]:
    if not v:
        return ()
    items = v.items() if isinstance(v, dict) else v
    return tuple((str(k), str(x)) for k, x in items)  # a malformed pair raises ValueError: caught above
