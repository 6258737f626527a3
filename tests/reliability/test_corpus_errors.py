"""Corpus errors name the right line, in file order, with hints that name the CLI flags: one stray ``E-``
tag in an IOB2 file is an error at its own line (it used to make detection read the file as IOBES and blame
a valid line); strict mode reports an earlier column error before a later bad byte; hints say
``--format conll`` / ``--lenient`` / ``--scheme iobes``."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nerservice.data import parse_bytes
from nerservice.errors import CorpusEncodingError, CorpusFormatError

TAGS = st.lists(st.sampled_from(["O", "O", "B-D", "I-D", "B-C", "I-C"]), min_size=1, max_size=8)


def _tsv(sentences: list[list[str]]) -> tuple[bytes, list[int]]:
    """IOB2-ish TSV bytes and the line number of each sentence's first token."""
    lines, firsts = [], []
    for tags in sentences:
        firsts.append(len(lines) + 1)
        lines += [f"w{i}\t{t}" for i, t in enumerate(tags)] + [""]
    return "\n".join(lines).encode(), firsts


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(st.lists(TAGS, min_size=3, max_size=30), st.data())
def test_one_stray_e_tag_is_reported_at_its_own_line(sentences: list[list[str]], data: st.DataObject) -> None:
    which = data.draw(st.integers(0, len(sentences) - 1))
    at = data.draw(st.integers(0, len(sentences[which]) - 1))
    entities = sum(1 for s in sentences for i, t in enumerate(s) if t.startswith("B-") or
                   (t.startswith("I-") and (i == 0 or s[i - 1][2:] != t[2:])))
    sentences[which][at] = "E-D"
    body, firsts = _tsv(sentences)
    if entities < 3:  # with so few entities the file may really be IOBES: nothing to promise
        return
    with pytest.raises(CorpusFormatError) as err:
        parse_bytes(body, source="f.tsv")
    assert err.value.line == firsts[which] + at, (err.value, sentences)
    assert "--scheme iobes" in str(err.value)


@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(st.lists(TAGS, min_size=2, max_size=20), st.data())
def test_strict_mode_reports_the_first_problem_in_file_order(sentences: list[list[str]], data: st.DataObject) -> None:
    body, _ = _tsv(sentences)
    lines = body.split(b"\n")
    data_lines = [i for i, line in enumerate(lines) if line]
    col, byte = sorted(data.draw(st.lists(st.sampled_from(data_lines), min_size=2, max_size=2, unique=True)))
    if data.draw(st.booleans()):
        col, byte = byte, col
    lines[col] = lines[col] + b"\textra"
    lines[byte] = b"\xff" + lines[byte]
    with pytest.raises((CorpusFormatError, CorpusEncodingError)) as err:
        parse_bytes(b"\n".join(lines), source="f.tsv")
    first = min(col, byte) + 1
    assert err.value.context["line"] == first
    assert isinstance(err.value, CorpusFormatError if col < byte else CorpusEncodingError)
    assert ("--format conll" if col < byte else "--lenient") in str(err.value)
