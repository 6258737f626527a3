"""Lines -> IOB2 sentences plus a ReadReport. The one place that knows the file formats.

Two passes: (1) split lines into sentence blocks, checking every line and remembering the first bad
line of each block; (2) with the scheme known (detection needs the whole file), convert each block to
IOB2.  Errors are then reported in file order: strict mode raises the first, lenient mode skips each
bad block and records it.  A block is a maximal run of lines that are neither blank nor ``-DOCSTART-``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from nerservice.data.report import Corpus, ReadReport, SkippedSentence
from nerservice.data.schemes import (
    TAG_EXPECTED,
    TagSequenceError,
    convert_to_iob2,
    detect_scheme,
    spans,
    validate_tag,
)
from nerservice.data.sentence import Sentence
from nerservice.errors import ConfigError, CorpusFormatError, EmptyCorpusError

Format = Literal["tsv", "conll"]
FORMATS = ("auto", "tsv", "conll")
SCHEME_ARGS = ("auto", "iob1", "iob2", "iobes")
_PAD = " \t"  # what surrounds fields harmlessly; a line of only these is blank
_COLUMNS = re.compile(r"[ \t]+")  # CoNLL columns: ASCII blanks only, so tokens may hold U+00A0 etc.


@dataclass
class _Block:
    first: int  # line number of the first token
    tokens: list[str]
    tags: list[str]
    error: CorpusFormatError | None = None


def check_args(fmt: str, scheme: str) -> None:
    if fmt not in FORMATS:
        raise ConfigError(f"unknown corpus format {fmt!r}", hint=f"use one of {', '.join(FORMATS)}", fmt=fmt)
    if scheme not in SCHEME_ARGS:
        raise ConfigError(f"unknown tag scheme {scheme!r}", hint=f"use one of {', '.join(SCHEME_ARGS)}",
                          scheme=scheme)


def _is_docstart(stripped: str) -> bool:
    return stripped.startswith("-DOCSTART-") and (len(stripped) == 10 or stripped[10] in _PAD)


def detect_format(lines: list[str]) -> Format:
    """A tab in the first line that is neither blank nor ``-DOCSTART-`` means tsv, otherwise conll."""
    for line in lines:
        s = line.strip(_PAD + "\r")
        if s and not _is_docstart(s):
            return "tsv" if "\t" in s else "conll"
    return "tsv"


def _blocks(lines: list[str], *, source: str, fmt: Format, bad: dict[int, str]) -> list[_Block]:
    blocks: list[_Block] = []
    block: _Block | None = None
    valid: dict[str, bool] = {}  # few distinct tags per corpus: validate each once
    ncols, ncols_line = 0, 0  # conll: column count fixed by the first data line
    tsv = fmt == "tsv"

    def fail(line_no: int, text: str, expected: str, reason: str) -> CorpusFormatError:
        return CorpusFormatError(file=source, line=line_no, text=text, expected=expected, reason=reason)

    for number, line in enumerate(lines, 1):
        if line and line[-1] == "\r":
            line = line.rstrip("\r")
        stripped = line.strip(_PAD)
        if not stripped or _is_docstart(stripped):
            if block is not None:
                blocks.append(block)
                block = None
            continue
        if block is None:
            block = _Block(number, [], [])
        elif block.error is not None:
            continue  # the sentence is already lost; its other lines need no checking
        if bad and number in bad:
            block.error = fail(number, line, "UTF-8 text", bad[number])
            continue
        if tsv:
            parts = line.split("\t")
            if len(parts) != 2:
                block.error = fail(number, line, "2 tab-separated columns, token<TAB>tag (for multi-column "
                                   "files pass --format conll; fmt='conll' in Python)",
                                   f"{len(parts)} tab-separated column(s)")
                continue
            token, tag = parts[0].strip(" "), parts[1].strip(" ")
            if not token:
                block.error = fail(number, line, "a non-empty token before the tab", "empty token")
                continue
        else:
            parts = _COLUMNS.split(stripped)
            if ncols == 0:
                if len(parts) < 2:
                    block.error = fail(number, line, "at least 2 whitespace-separated columns, tag last",
                                       f"{len(parts)} column(s)")
                    continue
                ncols, ncols_line = len(parts), number
            elif len(parts) != ncols:
                block.error = fail(number, line, f"{ncols} columns like line {ncols_line}",
                                   f"column count changed to {len(parts)}")
                continue
            token, tag = parts[0], parts[-1]
        ok = valid.get(tag)
        if ok is None:
            ok = valid[tag] = validate_tag(tag)
        if not ok:
            block.error = fail(number, line, TAG_EXPECTED, f"invalid tag {tag!r}")
            continue
        block.tokens.append(token)
        block.tags.append(tag)
    if block is not None:
        blocks.append(block)
    return blocks


def _reason(err: CorpusFormatError) -> str:
    return f"{err.reason}: got {err.text!r}, expected {err.expected}"


def parse_lines(lines: list[str], *, source: str, fmt: str = "auto", scheme: str = "auto",
                lenient: bool = False, bad: dict[int, str] | None = None) -> Corpus:
    check_args(fmt, scheme)
    used_fmt: Format = detect_format(lines) if fmt == "auto" else fmt  # type: ignore[assignment]
    blocks = _blocks(lines, source=source, fmt=used_fmt, bad=bad or {})
    if not blocks:
        raise EmptyCorpusError(
            f"{source}: no sentences: the file is empty or holds only blank / -DOCSTART- lines",
            hint="check the path, or that the file is token<TAB>tag lines with blank lines between sentences",
            file=source,
        )
    used_scheme = detect_scheme(b.tags for b in blocks if b.error is None) if scheme == "auto" else scheme

    report = ReadReport(files=[source], scheme=used_scheme, format=used_fmt)
    sentences: list[Sentence] = []
    entities: dict[str, int] = {}
    first_repair = 0
    for block in blocks:
        err = block.error
        if err is None:
            try:
                tags, repairs = convert_to_iob2(block.tags, used_scheme)
            except TagSequenceError as exc:
                err = exc.to_format_error(source, block.first + exc.index)
        if err is not None:
            if not lenient:
                raise err
            report.skipped.append(SkippedSentence(source, err.line, _reason(err)))
            continue
        if repairs:
            report.repaired += repairs
            first_repair = first_repair or block.first
        for _, _, label in spans(tags):
            entities[label] = entities.get(label, 0) + 1
        sentences.append(Sentence(tuple(block.tokens), tuple(tags), source, block.first))
        report.tokens += len(tags)
    report.sentences = len(sentences)
    report.entities = dict(sorted(entities.items()))
    _add_warnings(report, source=source, detected=scheme == "auto", first_repair=first_repair)
    return Corpus(sentences=sentences, report=report)


def _add_warnings(report: ReadReport, *, source: str, detected: bool, first_repair: int) -> None:
    w = report.warnings
    if detected and report.scheme != "iob2":
        w.append(f"{source}: tags detected as {report.scheme.upper()}; converted to IOB2")
    if report.repaired:
        w.append(f"{source}: repaired {report.repaired} IOB1-style I- tag(s) that started an entity to B- "
                 f"(first in the sentence at line {first_repair})")
    if report.skipped:
        first = report.skipped[0]
        w.append(f"{source}: skipped {len(report.skipped)} of {report.total_sentences} sentence(s) with errors; "
                 f"first at line {first.line}: {first.reason}")
    if report.sentences and not report.entities:
        w.append(f"{source}: no entities in {report.sentences} sentence(s) (every tag is O); "
                 "is this the right file, or is the tag not the last column?")
