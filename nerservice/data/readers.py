"""Public entry points for reading corpora: from paths, from whole-file bytes (Spark), or from text.

Formats: ``tsv`` is exactly ``token<TAB>tag`` per line; ``conll`` is CoNLL-2003 style, blank-separated
columns with the tag last and the same column count on every line of a file.  Both: blank lines
separate sentences (several in a row are fine), ``-DOCSTART-`` lines are skipped, a UTF-8 BOM and CRLF
endings are accepted.  ``auto`` picks tsv when the first data line holds a tab.

Tags are read as ``scheme`` (``auto`` = :func:`~nerservice.data.schemes.detect_scheme`, per file) and
always returned as IOB2.  Strict mode raises the first problem in file order; ``lenient=True`` skips
each sentence that has one and records it in ``report.skipped`` (undecodable bytes included), so
``report.sentences + len(report.skipped)`` always equals the number of sentence blocks in the input.
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal, Sequence

from nerservice.data.parsing import check_args, parse_lines
from nerservice.data.report import Corpus, ReadReport, SkippedSentence
from nerservice.data.utf8_lines import decode_lines, split_text
from nerservice.errors import CorpusEncodingError, CorpusError, CorpusFormatError

__all__ = ["Corpus", "ReadReport", "SkippedSentence", "parse_bytes", "parse_text", "read_corpus"]

FormatArg = Literal["auto", "tsv", "conll"]
SchemeArg = Literal["auto", "iob1", "iob2", "iobes"]


def parse_bytes(data: bytes, *, source: str, fmt: FormatArg = "auto", scheme: SchemeArg = "auto",
                lenient: bool = False) -> Corpus:
    """Parse one whole file's bytes. ``source`` names it in sentences, reports and errors."""
    check_args(fmt, scheme)
    try:
        lines, bad = decode_lines(bytes(data), source=source, lenient=lenient)
    except CorpusEncodingError as undecodable:
        # Strict mode reports the first problem in file order: parse the whole file with the undecodable
        # lines marked (as lenient mode does, so the scheme is detected the same way); a format error on
        # an earlier line wins over the bad byte.
        lines, bad = decode_lines(bytes(data), source=source, lenient=True)
        try:
            parse_lines(lines, source=source, fmt=fmt, scheme=scheme, bad=bad)
        except CorpusFormatError as first:
            if first.line < undecodable.context["line"]:
                raise first from None
        raise undecodable from None
    return parse_lines(lines, source=source, fmt=fmt, scheme=scheme, lenient=lenient, bad=bad)


def parse_text(text: str, *, source: str, fmt: FormatArg = "auto", scheme: SchemeArg = "auto",
               lenient: bool = False) -> Corpus:
    """Parse one whole file's already-decoded text."""
    return parse_lines(split_text(text), source=source, fmt=fmt, scheme=scheme, lenient=lenient)


def read_corpus(paths: str | Path | Sequence[str | Path], *, fmt: FormatArg = "auto",
                scheme: SchemeArg = "auto", lenient: bool = False) -> Corpus:
    """Read one or more corpus files into one corpus; format and scheme are detected per file."""
    check_args(fmt, scheme)
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not items:
        raise CorpusError("no corpus files given", hint="pass a path or a list of paths")
    sentences = []
    report = ReadReport()
    for item in items:
        corpus = parse_bytes(_read(Path(item)), source=str(item), fmt=fmt, scheme=scheme, lenient=lenient)
        sentences.extend(corpus.sentences)
        report = report.merge(corpus.report)
    return Corpus(sentences=sentences, report=report)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise CorpusError(f"corpus file not found: {path}", hint="check the path (relative paths start at "
                          f"{Path.cwd()})", file=str(path)) from None
    except IsADirectoryError:
        raise CorpusError(f"{path} is a directory, expected a corpus file",
                          hint="pass the files inside it, e.g. sorted(Path(dir).glob('*.tsv'))",
                          file=str(path)) from None
    except OSError as exc:
        raise CorpusError(f"cannot read corpus file {path}: {exc.strerror or exc}", file=str(path)) from None
