"""Executor-side preprocessing of document files (PubTator, BioC XML/JSON, JSON lines: one whole file per
task; BRAT: the NAME.txt/NAME.ann pair grouped by NAME) → the same sentence rows, quarantine rows and
per-file report as token files (``preprocess.py``).

Annotations are converted leniently (``nerservice/documents/report.py`` lists the policy); every case
becomes a quarantine row of kind ``annotation`` with the document, offsets and text, so

    annotations read = entities tagged + excluded by the label map + dropped (each a quarantine row)

adds up per file and over the job.  With ``--split`` a whole document goes to one split (by a stable hash
of its id), so sentences of one abstract never straddle train and test.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from nerservice.distributed.file_result import FileResult, display_path
from nerservice.distributed.splits import assign_split
from nerservice.documents.align import ConvertOptions, documents_to_sentences
from nerservice.documents.formats import parse_brat_files, parse_bytes
from nerservice.documents.model import Document
from nerservice.errors import NerServiceError


def parse_document_file(role: str, uri: str, data: bytes, *, fmt: str, options: ConvertOptions,
                        ratios: Sequence[float] | None = None, seed: int = 42) -> FileResult:
    path = display_path(uri)
    try:
        docs = parse_bytes(bytes(data), source=path, fmt=fmt)
    except NerServiceError as exc:
        return _file_error(role, path, fmt, exc)
    return _convert(role, path, fmt, docs, options, ratios, seed)


def brat_key(uri: str) -> tuple[str, tuple[str, str]] | None:
    """(NAME, (extension, uri)) for a .txt/.ann file; other files are no part of a BRAT corpus (None)."""
    p = PurePosixPath(display_path(uri))
    if p.suffix not in (".txt", ".ann"):
        return None
    return str(p.with_suffix("")), (p.suffix, uri)


def parse_brat_group(role: str, name: str, files: dict[str, bytes], *, options: ConvertOptions,
                     ratios: Sequence[float] | None = None, seed: int = 42) -> FileResult:
    """``files``: extension (``.txt``/``.ann``) → bytes of one BRAT document."""
    try:
        doc = parse_brat_files(files.get(".txt"), files.get(".ann"), name=name)
    except NerServiceError as exc:
        return _file_error(role, name + (".ann" if ".txt" in files else ".txt"), "brat", exc)
    return _convert(role, name + ".ann", "brat", [doc], options, ratios, seed)


def _file_error(role: str, path: str, fmt: str, exc: NerServiceError) -> FileResult:
    line = int(exc.context.get("line", 0) or 0)
    reason = f"[{exc.code}] {exc.message}"
    return FileResult(rejected=[{"file": path, "line": line, "reason": reason, "kind": "file", "role": role}],
                      report={"file": path, "role": role, "blocks": 0, "sentences": 0, "rejected": 0,
                              "file_error": reason, "repaired": 0, "warnings": [], "scheme": "", "format": fmt,
                              "documents": 0, "annotations": 0, "tagged": 0, "excluded": 0, "dropped": 0,
                              "cases": 0})


def _convert(role: str, path: str, fmt: str, docs: list[Document], options: ConvertOptions,
             ratios: Sequence[float] | None, seed: int) -> FileResult:
    lenient = replace(options, lenient=True)  # every option but strictness, as given
    rows: list[dict[str, Any]] = []
    try:
        corpus = documents_to_sentences(docs, options=lenient, files=[path])
    except NerServiceError as exc:  # no text at all
        return _file_error(role, path, fmt, exc)
    r = corpus.documents_report
    if ratios:
        pos = 0
        for d, n in zip(docs, corpus.per_document):
            split = assign_split((d.id,), (), ratios=ratios, seed=seed)
            rows.extend(_row(split, s) for s in corpus.sentences[pos : pos + n])
            pos += n
    else:
        rows = [_row(role, s) for s in corpus.sentences]
    rejected = [{"file": c.file, "line": c.line, "reason": c.describe(), "kind": "annotation", "role": role}
                for c in r.cases]
    return FileResult(rows=rows, rejected=rejected, report={
        "file": path, "role": role, "blocks": r.sentences, "sentences": r.sentences, "rejected": 0,
        "file_error": None, "repaired": 0, "warnings": [r.summary()], "scheme": "iob2", "format": fmt,
        "documents": r.documents, "annotations": r.annotations, "tagged": sum(r.entities.values()),
        "excluded": sum(r.excluded.values()), "dropped": r.dropped, "cases": len(r.cases)})


def _row(split: str, s: Any) -> dict[str, Any]:
    return {"split": split, "tokens": list(s.tokens), "tags": list(s.tags), "file": s.file, "line": s.line}
