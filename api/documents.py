"""POST /v1/documents: whole documents in, entities at document offsets out.

A request holds ``documents`` (id + passages with offsets, the JSON-lines shape of nerservice/documents)
or one file's ``content`` in ``format`` pubtator / bioc-xml / bioc-json / jsonl (BRAT's text is a passage
at offset 0).  Every passage is one text of the request, so the limits, costing, batching and errors are
/v1/extract's: at most NERSERVICE_API_MAX_TEXTS passages and NERSERVICE_API_MAX_TEXT_CHARS characters per
passage, the same token budgets; a malformed file is a 400 with NER210 and its line.  ``output`` also
returns the documents, with the entities as their annotations, in one of the formats.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from api.errors import PayloadTooLargeError, validation_error
from api.limits import is_unicode, load_json_object
from api.schemas import DocumentsRequest
from api.settings import ApiSettings
from nerservice.documents.formats import format_documents, parse_bytes
from nerservice.documents.model import Annotation, Document, Passage
from nerservice.errors import RequestError


@dataclass(frozen=True)
class ParsedDocuments:
    documents: list[Document]
    texts: list[str]  # every passage's text, document by document
    model: str | None
    output: str | None


def parse_documents(body: bytes, settings: ApiSettings) -> ParsedDocuments:
    data = load_json_object(body, example='{"documents": [{"id": "1", "passages": [{"offset": 0, "text": "..."}]}]}')
    try:
        req = DocumentsRequest.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc.errors(), what="request body") from None
    if (req.documents is None) == (req.content is None):
        raise RequestError("send exactly one of 'documents' (a list) or 'content' with its 'format'")
    if req.content is not None:
        if req.format is None:
            raise RequestError("'content' needs 'format': pubtator, bioc-xml, bioc-json or jsonl", field="format")
        if not is_unicode(req.content):
            raise RequestError("'content' is not valid Unicode (it holds a lone surrogate)", field="content")
        docs = parse_bytes(req.content.encode("utf-8"), source="content", fmt=req.format)
    else:
        docs = [Document(d.id, tuple(Passage(p.offset, p.text, p.type or "") for p in d.passages))
                for d in req.documents or []]
    texts = check_documents(docs, settings)
    if req.model is not None and not is_unicode(req.model):
        raise RequestError("'model' is not valid Unicode (it holds a lone surrogate)", field="model")
    return ParsedDocuments(docs, texts, req.model, req.output)


def check_documents(docs: Sequence[Document], settings: ApiSettings) -> list[str]:
    """Passage texts, after the limits of /v1/extract (a passage counts as a text) and layout checks."""
    n = sum(len(d.passages) for d in docs)
    if not docs or n == 0:
        raise RequestError("no passages: send at least one document with a passage", limit="NERSERVICE_API_MAX_TEXTS")
    if n > settings.max_texts:
        raise PayloadTooLargeError(f"{n} passages in one request; the limit is {settings.max_texts}",
                                   limit="NERSERVICE_API_MAX_TEXTS", max=settings.max_texts,
                                   hint="send fewer documents per request")
    texts = []
    for i, d in enumerate(docs):
        end = -1
        for j, p in enumerate(d.passages):
            where = f"document {i} passage {j}"
            if len(p.text) > settings.max_text_chars:
                raise PayloadTooLargeError(f"{where} has {len(p.text)} characters; the limit is "
                                           f"{settings.max_text_chars}", limit="NERSERVICE_API_MAX_TEXT_CHARS",
                                           max=settings.max_text_chars, document=i, passage=j,
                                           hint="split long passages")
            if not (is_unicode(p.text) and is_unicode(d.id) and is_unicode(p.kind)):
                raise RequestError(f"{where} is not valid Unicode (it holds a lone surrogate)", document=i)
            if p.offset < end:
                raise RequestError(f"{where} starts at offset {p.offset}, inside the passage before it (ends at {end})",
                                   document=i, passage=j, hint="passages are in order and do not overlap")
            end = p.offset + len(p.text)
            texts.append(p.text)
    return texts


def document_results(docs: Sequence[Document], entities: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per document: its id and entities at document offsets (``passage`` = index of the passage)."""
    out: list[dict[str, Any]] = []
    it = iter(entities)
    for d in docs:
        ents = []
        for j, p in enumerate(d.passages):
            for e in next(it):
                ents.append({**e, "start": e["start"] + p.offset, "end": e["end"] + p.offset, "passage": j})
        out.append({"id": d.id, "entities": ents})
    return out


def format_output(docs: Sequence[Document], results: Sequence[dict[str, Any]], fmt: str) -> str:
    """The documents with the entities as their annotations, in ``fmt``."""
    annotated = [d.with_annotations([Annotation(f"T{k}", e["label"], ((e["start"], e["end"]),), e["text"],
                                                score=e["score"]) for k, e in enumerate(r["entities"], 1)])
                 for d, r in zip(docs, results)]
    return format_documents(annotated, fmt)
