"""Tag schemes (IOB1, IOB2, IOBES): validation, detection, conversion, and entity spans.

Everything inside nerservice works on IOB2; other schemes exist only at the file boundary, so readers
convert to IOB2 on the way in and writers convert from IOB2 on the way out.

Functions here take bare tag sequences, so their errors cannot name a file: a ``CorpusFormatError``
raised here has ``file="<tags>"`` and ``line`` = the 1-based position of the offending tag.  The corpus
parser uses the unchecked ``convert_to_iob2`` / ``TagSequenceError`` pair instead (not re-exported by
nerservice.data) and reports real file lines.
"""
from __future__ import annotations

import re
from typing import Iterable, Literal, Sequence

from nerservice.errors import ConfigError, CorpusFormatError

Scheme = Literal["iob1", "iob2", "iobes"]
SCHEMES: tuple[str, ...] = ("iob1", "iob2", "iobes")

# \S+ makes the label non-empty and whitespace-free (a label with a space could not be written to CoNLL).
_TAG_RE = re.compile(r"(?:O|[BIES]-\S+)\Z")
TAG_EXPECTED = "'O' or '<B|I|E|S>-<label>' with a non-empty label"
_BARE = "<tags>"  # the "file" named by errors about a bare tag sequence


def validate_tag(tag: str) -> bool:
    """True for ``O`` and ``<B|I|E|S>-<label>`` with a non-empty, whitespace-free label."""
    return isinstance(tag, str) and _TAG_RE.match(tag) is not None


class TagSequenceError(Exception):
    """Internal: a scheme violation at ``index`` of a tag sequence. Never escapes nerservice.data;
    callers turn it into a ``CorpusFormatError`` that names the real file and line."""

    def __init__(self, index: int, tag: str, reason: str, expected: str) -> None:
        super().__init__(reason)
        self.index, self.tag, self.reason, self.expected = index, tag, reason, expected

    def to_format_error(self, file: str, line: int) -> CorpusFormatError:
        return CorpusFormatError(file=file, line=line, text=self.tag, expected=self.expected, reason=self.reason)


def _check_scheme(scheme: str) -> None:
    if scheme not in SCHEMES:
        raise ConfigError(f"unknown tag scheme {scheme!r}", hint=f"use one of {', '.join(SCHEMES)}", scheme=scheme)


def _check_tags(tags: Sequence[str]) -> None:
    for i, tag in enumerate(tags):
        if not validate_tag(tag):
            raise CorpusFormatError(file=_BARE, line=i + 1, text=str(tag), expected=TAG_EXPECTED, reason="invalid tag")


def spans(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """IOB2 tags -> ``(start, end_exclusive, label)`` entity spans, in order.

    Like conlleval (and seqeval's default mode), an ``I-X`` that follows ``O`` or another type starts a
    new entity rather than being dropped, so spans of slightly broken IOB2 are still meaningful.
    """
    out: list[tuple[int, int, str]] = []
    start, label = 0, None
    for i, tag in enumerate(tags):
        if tag == "O":
            if label is not None:
                out.append((start, i, label))
                label = None
            continue
        if not isinstance(tag, str) or len(tag) < 3 or tag[1] != "-" or tag[0] not in "BI":
            raise CorpusFormatError(
                file=_BARE, line=i + 1, text=str(tag), expected="'O', 'B-<label>' or 'I-<label>'",
                reason="not an IOB2 tag",
            )
        lab = tag[2:]
        if tag[0] == "B" or lab != label:
            if label is not None:
                out.append((start, i, label))
            start, label = i, lab
    if label is not None:
        out.append((start, len(tags), label))
    return out


def convert_to_iob2(tags: Sequence[str], scheme: str) -> tuple[list[str], int]:
    """For readers: convert already-validated tags to IOB2; raise TagSequenceError on a scheme violation.
    Returns the tags and the number of IOB1-style ``I-`` starts repaired to ``B-`` (counted only for IOB2
    input, where they are mistakes; in IOB1 they are the scheme)."""
    if scheme == "iobes":
        return _iobes_to_iob2(tags), 0
    out: list[str] = []
    repairs = 0
    prev: str | None = None  # label of the entity the previous token belongs to
    for i, tag in enumerate(tags):
        if tag == "O":
            out.append(tag)
            prev = None
            continue
        prefix, lab = tag[0], tag[2:]
        if prefix == "B":
            out.append(tag)
        elif prefix == "I":
            if prev == lab:
                out.append(tag)
            else:
                out.append("B-" + lab)
                repairs += scheme == "iob2"
        else:
            raise TagSequenceError(
                i, tag, f"{prefix}- tag in {scheme.upper()} input",
                "'O', 'B-<label>' or 'I-<label>' (or, if the file is IOBES, read it with --scheme iobes; "
                "scheme='iobes' in Python)",
            )
        prev = lab
    return out, repairs


def _iobes_to_iob2(tags: Sequence[str]) -> list[str]:
    out: list[str] = []
    open_label: str | None = None  # an entity opened by B- and not yet closed by E-
    for i, tag in enumerate(tags):
        prefix, lab = tag[0], tag[2:]
        if open_label is not None:
            if prefix in "IE" and lab == open_label:
                out.append("I-" + lab)
                if prefix == "E":
                    open_label = None
                continue
            raise TagSequenceError(
                i, tag, f"IOBES entity B-{open_label} is not closed with E-{open_label}",
                f"I-{open_label} or E-{open_label}",
            )
        if tag == "O":
            out.append(tag)
        elif prefix == "S":
            out.append("B-" + lab)
        elif prefix == "B":
            out.append(tag)
            open_label = lab
        else:
            raise TagSequenceError(
                i, tag, f"IOBES {prefix}-{lab} without a preceding B-{lab}",
                f"B-{lab} or S-{lab} to start an entity",
            )
    if open_label is not None:
        raise TagSequenceError(
            len(tags) - 1, tags[-1], f"IOBES entity B-{open_label} is not closed with E-{open_label} "
            "before the sentence ends", f"E-{open_label} as the entity's last tag",
        )
    return out


def to_iob2(tags: Sequence[str], scheme: Scheme) -> tuple[list[str], int]:
    """Convert ``tags`` from ``scheme`` to IOB2. Returns ``(converted, repairs)`` where ``repairs``
    counts IOB1-style ``I-X`` after ``O`` / another type in IOB2 input, rewritten to ``B-X``.
    Raises ``CorpusFormatError`` (file ``<tags>``, line = tag position) on invalid tags or an
    inconsistent IOBES sequence."""
    _check_scheme(scheme)
    _check_tags(tags)
    try:
        return convert_to_iob2(tags, scheme)
    except TagSequenceError as exc:
        raise exc.to_format_error(_BARE, exc.index + 1) from None


def from_iob2(tags: Sequence[str], scheme: Scheme) -> list[str]:
    """Render IOB2 ``tags`` in ``scheme``. Entities are taken from :func:`spans`, so the output is
    always consistent. In IOB1, ``B-X`` marks only an entity that directly follows another ``X``."""
    _check_scheme(scheme)
    out = ["O"] * len(tags)
    prev_end, prev_label = -1, None
    for start, end, lab in spans(tags):
        if scheme == "iobes" and end - start == 1:
            out[start] = "S-" + lab
        else:
            if scheme == "iob1" and not (prev_end == start and prev_label == lab):
                out[start] = "I-" + lab
            else:
                out[start] = "B-" + lab
            for k in range(start + 1, end):
                out[k] = "I-" + lab
            if scheme == "iobes":
                out[end - 1] = "E-" + lab
        prev_end, prev_label = end, lab
    return out


def detect_scheme(tag_sequences: Iterable[Sequence[str]]) -> Scheme:
    """Guess the scheme of a corpus (one sequence per sentence).

    Heuristic, in order:
      1. at least as many entities end the IOBES way (an ``S-`` tag, or ``E-`` last) as the IOB way
         (``B-`` alone, or ``I-`` last), and some do -> ``iobes``: one stray ``E-`` in an IOB2 file is
         then an error at its own line, not a reason to read every valid IOB2 entity as broken IOBES;
      2. some ``I-X`` starts an entity (follows ``O``, another type, or the sentence start) and no
         ``B-X`` ever starts one that way (in IOB1, ``B-X`` only separates two adjacent ``X``
         entities) -> ``iob1``;
      3. otherwise ``iob2`` (a few stray ``I-`` starts in mostly-IOB2 data are then repaired, not
         taken as a sign of IOB1).
    Invalid tags are ignored (treated as entity boundaries); all-``O`` input is ``iob2``.
    """
    i_starts = b_starts = 0
    iobes_ends = iob_ends = 0
    valid: dict[str, bool] = {}  # corpora have few distinct tags; skip re-validating each token's tag
    for seq in tag_sequences:
        prev: str | None = None  # label of the entity the previous token belongs to
        last = ""  # prefix of the previous tag
        for tag in seq:
            ok = valid.get(tag)
            if ok is None:
                ok = valid[tag] = validate_tag(tag)
            prefix, lab = (tag[0], tag[2:]) if tag != "O" and ok else ("O", None)
            continues = prev is not None and lab == prev and prefix in "IE" and last in "BI"
            if prev is not None and not continues:  # the previous entity ended at the previous token
                iobes_ends, iob_ends = iobes_ends + (last in "ES"), iob_ends + (last in "BI")
            if lab is None:
                prev, last = None, ""
                continue
            if prev != lab:
                if prefix == "I":
                    i_starts += 1
                elif prefix == "B":
                    b_starts += 1
            prev, last = lab, prefix
        if prev is not None:
            iobes_ends, iob_ends = iobes_ends + (last in "ES"), iob_ends + (last in "BI")
    if iobes_ends and iobes_ends >= iob_ends:
        return "iobes"
    return "iob1" if i_starts and not b_starts else "iob2"
