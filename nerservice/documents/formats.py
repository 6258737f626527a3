"""Which document format a path holds, and reading/writing any of them from paths or bytes.

Formats: ``pubtator``, ``bioc-xml``, ``bioc-json``, ``brat`` (a folder of NAME.txt + NAME.ann, or the
files themselves), ``jsonl``.  Detection (``auto``) looks at the content, which is unambiguous for the
line formats: a first line ``ID|t|...`` is PubTator, ``<`` BioC XML, a JSON object holding ``documents``
BioC JSON, one holding ``passages`` JSON lines; a folder or a ``.ann`` file is BRAT.  Anything else is
not a document format (the token-per-line readers in ``nerservice.data`` take it).
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from nerservice.data.utf8_lines import decode_lines
from nerservice.documents.bioc_read import parse_bioc_json, parse_bioc_xml
from nerservice.documents.bioc_write import format_bioc_json, format_bioc_xml
from nerservice.documents.brat import format_brat, parse_brat
from nerservice.documents.jsonl import format_jsonl, parse_jsonl
from nerservice.documents.model import Document
from nerservice.documents.pubtator import format_pubtator, parse_pubtator
from nerservice.errors import ConfigError, CorpusError, DocumentFormatError

DOCUMENT_FORMATS = ("pubtator", "bioc-xml", "bioc-json", "brat", "jsonl")


def check_format(fmt: str, allowed: Sequence[str] = DOCUMENT_FORMATS) -> None:
    if fmt not in allowed:
        raise ConfigError(f"unknown document format {fmt!r}", hint=f"use one of {', '.join(allowed)}", fmt=fmt)


def decode(data: bytes, *, source: str) -> str:
    """UTF-8 (BOM tolerated) or a coded error with line and byte offset; offsets count decoded characters."""
    lines, _ = decode_lines(bytes(data), source=source, lenient=False)
    return "\n".join(lines)


def sniff(data: bytes) -> str | None:
    """The document format of a file's first bytes, or None (token-per-line or unknown)."""
    head = data[:4096].lstrip(b"\xef\xbb\xbf").lstrip()
    if head.startswith(b"<"):
        return "bioc-xml"
    if head.startswith(b"{"):
        first = head.split(b"\n", 1)[0]
        try:
            obj = json.loads(first)
        except ValueError:
            return "bioc-json"  # a pretty-printed object spans lines: a collection
        return "jsonl" if isinstance(obj, dict) and "documents" not in obj else "bioc-json"
    first = head.split(b"\n", 1)[0]
    bar = first.find(b"|")
    if bar > 0 and b"\t" not in first[:bar] and first[bar + 1 : bar + 3] in (b"t|", b"a|"):
        return "pubtator"
    return None


def detect_path(path: str | Path) -> str | None:
    p = Path(path)
    if p.is_dir() or p.suffix == ".ann":
        return "brat"
    if p.suffix == ".txt" and p.with_suffix(".ann").exists():
        return "brat"
    try:
        with open(p, "rb") as fh:
            return sniff(fh.read(4096))
    except OSError:
        return None


def parse_bytes(data: bytes, *, source: str, fmt: str) -> list[Document]:
    """One whole file of a non-BRAT format (BRAT needs two files: :func:`parse_brat_files`)."""
    if fmt == "bioc-xml":
        return parse_bioc_xml(bytes(data), source=source)
    text = decode(data, source=source)
    if fmt == "pubtator":
        return parse_pubtator(text, source=source)
    if fmt == "bioc-json":
        return parse_bioc_json(text, source=source)
    if fmt == "jsonl":
        return parse_jsonl(text, source=source)
    check_format(fmt, ("pubtator", "bioc-xml", "bioc-json", "jsonl"))
    raise AssertionError(fmt)


def parse_brat_files(txt: bytes | None, ann: bytes | None, *, name: str, need_ann: bool = True) -> Document:
    """``name`` is NAME (path without extension): the document id is its last component."""
    doc_id = Path(name).name
    if txt is None:
        raise DocumentFormatError(".ann file without its .txt", file=f"{name}.ann", document=doc_id,
                                  hint="BRAT keeps the text in NAME.txt beside NAME.ann")
    if ann is None and need_ann:
        raise DocumentFormatError(".txt file without its .ann", file=f"{name}.txt", document=doc_id,
                                  hint="create an empty NAME.ann for a document without annotations")
    text = decode(txt, source=f"{name}.txt")
    ann_text = decode(ann, source=f"{name}.ann") if ann is not None else ""
    return parse_brat(doc_id, text, ann_text, source=f"{name}.ann")


def brat_names(paths: Iterable[str | Path]) -> list[str]:
    """NAME (without extension) of every BRAT document in the given folders/files, sorted, unique."""
    names: set[str] = set()
    for item in paths:
        p = Path(item)
        files = sorted(p.rglob("*")) if p.is_dir() else [p]
        for f in files:
            if f.suffix in (".txt", ".ann"):
                names.add(str(f.with_suffix("")))
    return sorted(names)


def read_documents(paths: str | Path | Sequence[str | Path], *, fmt: str = "auto",
                   need_ann: bool = True) -> list[Document]:
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not items:
        raise CorpusError("no document files given", hint="pass a path or a list of paths")
    docs: list[Document] = []
    for item in items:
        used = detect_path(item) if fmt == "auto" else fmt
        if used is None:
            raise CorpusError(f"{item}: not a document format I can detect (PubTator, BioC XML/JSON, BRAT, "
                              "JSON lines)", hint="pass --format explicitly", file=str(item))
        check_format(used)
        if used == "brat":
            for name in brat_names([item]):
                txt, ann = Path(name + ".txt"), Path(name + ".ann")
                docs.append(parse_brat_files(_read(txt) if txt.exists() else None,
                                             _read(ann) if ann.exists() else None, name=name, need_ann=need_ann))
        else:
            docs.extend(parse_bytes(_read(Path(item)), source=str(item), fmt=used))
    _check_unique(docs)
    return docs


def document_format(paths: Sequence[str | Path], fmt: str = "auto") -> str | None:
    """The document format of ``paths`` (None: token-per-line files, for ``nerservice.data``); all of one
    format. ``fmt`` a token format (tsv, conll) means None; a document format is taken as given."""
    if fmt in DOCUMENT_FORMATS:
        return fmt
    if fmt != "auto":
        return None
    found = {str(p): detect_path(p) for p in paths}
    kinds = set(found.values())
    if len(kinds) > 1:
        raise ConfigError(f"mixed corpus formats {found}", hint="pass files of one format (or --format)")
    return kinds.pop() if kinds else None


def _check_unique(docs: list[Document]) -> None:
    seen: dict[str, Document] = {}
    for d in docs:
        if d.id in seen:
            raise DocumentFormatError(f"document id repeats (first at {seen[d.id].where})", file=d.source,
                                      line=d.line, document=d.id, hint="ids must be unique across the input")
        seen[d.id] = d


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CorpusError(f"cannot read {path}: {exc.strerror or exc}", file=str(path)) from None


def format_documents(docs: Iterable[Document], fmt: str) -> str:
    """One file's text for every format but BRAT (which writes two files per document: :func:`format_brat`)."""
    check_format(fmt, ("pubtator", "bioc-xml", "bioc-json", "jsonl"))
    writer = {"pubtator": format_pubtator, "bioc-xml": format_bioc_xml, "bioc-json": format_bioc_json,
              "jsonl": format_jsonl}[fmt]
    return writer(docs)


def write_documents(docs: Sequence[Document], path: str | Path, fmt: str) -> list[Path]:
    """Write to ``path`` (a folder for BRAT, a file otherwise); returns the files written."""
    check_format(fmt)
    out = Path(path)
    if fmt != "brat":
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(format_documents(docs, fmt), encoding="utf-8")
        return [out]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for d in docs:
        if "/" in d.id or d.id in ("", ".", "..") or "\\" in d.id:
            raise CorpusError(f"document id {d.id!r} cannot be a BRAT file name", hint="use ids without slashes")
        txt, ann = format_brat(d)
        for ext, body in ((".txt", txt), (".ann", ann)):
            f = out / f"{d.id}{ext}"
            with open(f, "w", encoding="utf-8", newline="") as fh:  # newline="": offsets count "\r" too
                fh.write(body)
            written.append(f)
    return written
