"""Executor-side preprocessing: one whole corpus file's bytes → sentence rows, quarantine rows and a
per-file report.  Whole files (``sc.binaryFiles``) because format and tag-scheme detection and sentence
boundaries need the file, and the core's lenient parser then accounts for every sentence block:

    blocks in the file = kept sentences + quarantined sentences

A file that cannot be parsed at all (empty, only ``-DOCSTART-``) yields one quarantine row of kind
``file`` and no blocks, so the equation above still holds and nothing disappears without a record.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nerservice.data import parse_bytes
from nerservice.distributed.file_result import FileResult, display_path
from nerservice.distributed.splits import assign_split
from nerservice.documents.align import ConvertOptions
from nerservice.documents.formats import DOCUMENT_FORMATS, sniff
from nerservice.errors import NerServiceError

SENTENCE_SCHEMA = "split string, tokens array<string>, tags array<string>, file string, line int"
QUARANTINE_SCHEMA = "file string, line int, reason string, kind string, role string"


def parse_file(role: str, uri: str, data: bytes, *, fmt: str = "auto", scheme: str = "auto",
               ratios: Sequence[float] | None = None, seed: int = 42,
               options: ConvertOptions | None = None) -> FileResult:
    """Parse one file given as ``role`` (train/dev/test). With ``ratios`` (only for role ``train`` when no
    dev/test files were given) each sentence's split comes from :func:`assign_split`.  A document file
    (``fmt`` a document format, or ``auto`` and the content is one) goes to ``preprocess_docs``."""
    path = display_path(uri)
    doc_fmt = fmt if fmt in DOCUMENT_FORMATS else sniff(bytes(data[:4096])) if fmt == "auto" else None
    if doc_fmt is not None:
        from nerservice.distributed.preprocess_docs import parse_document_file

        return parse_document_file(role, uri, data, fmt=doc_fmt, options=options or ConvertOptions(),
                                   ratios=ratios, seed=seed)
    try:
        corpus = parse_bytes(bytes(data), source=path, fmt=fmt, scheme=scheme, lenient=True)  # type: ignore[arg-type]
    except NerServiceError as exc:
        line = int(exc.context.get("line", 0) or 0)
        reason = f"[{exc.code}] {exc.message}"
        return FileResult(rejected=[{"file": path, "line": line, "reason": reason, "kind": "file", "role": role}],
                          report={"file": path, "role": role, "blocks": 0, "sentences": 0, "rejected": 0,
                                  "file_error": reason, "repaired": 0, "warnings": [], "scheme": "", "format": ""})
    report = corpus.report
    rows = []
    for s in corpus.sentences:
        split = assign_split(s.tokens, s.tags, ratios=ratios, seed=seed) if ratios else role
        rows.append({"split": split, "tokens": list(s.tokens), "tags": list(s.tags), "file": s.file, "line": s.line})
    rejected = [{"file": k.file, "line": k.line, "reason": k.reason, "kind": "sentence", "role": role}
                for k in report.skipped]
    return FileResult(rows=rows, rejected=rejected, report={
        "file": path, "role": role, "blocks": report.total_sentences, "sentences": report.sentences,
        "rejected": len(report.skipped), "file_error": None, "repaired": report.repaired,
        "warnings": list(report.warnings), "scheme": report.scheme, "format": report.format,
    })


def account(reports: list[dict[str, Any]], split_counts: dict[str, int], quarantined: int) -> dict[str, Any]:
    """The bookkeeping section of stats.json, and a check that every count adds up."""
    blocks = sum(r["blocks"] for r in reports)
    kept = sum(r["sentences"] for r in reports)
    rejected = sum(r["rejected"] for r in reports)
    file_errors = [r for r in reports if r["file_error"]]
    written = sum(split_counts.values())
    cases = sum(r.get("cases", 0) for r in reports)
    annotations = sum(r.get("annotations", 0) for r in reports)
    accounted = sum(r.get("tagged", 0) + r.get("excluded", 0) + r.get("dropped", 0) for r in reports)
    return {
        "files": len(reports),
        "files_rejected": len(file_errors),
        "sentence_blocks": blocks,
        "sentences_kept": kept,
        "sentences_rejected": rejected,
        "sentences_written": written,
        "quarantine_rows": quarantined,
        "repaired_tags": sum(r["repaired"] for r in reports),
        # Document inputs: every annotation is tagged, excluded by the label map or dropped (a quarantine row).
        "documents": sum(r.get("documents", 0) for r in reports),
        "annotations": annotations,
        "annotations_tagged": sum(r.get("tagged", 0) for r in reports),
        "annotations_excluded": sum(r.get("excluded", 0) for r in reports),
        "annotations_dropped": sum(r.get("dropped", 0) for r in reports),
        "annotation_cases": cases,
        "adds_up": blocks == kept + rejected and kept == written and annotations == accounted
        and quarantined == rejected + len(file_errors) + cases,
    }
