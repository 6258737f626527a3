from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nerservice.text import tokenizer
from nerservice.text.tokenizer import Token, tokenize


def texts(s: str) -> list[str]:
    return [t.text for t in tokenize(s)]


# Expected splits are the ones the NCBI-disease / BC5CDR files use (letters+digits stay together, every
# other non-space character is a token of its own, decimals are split).
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Identification of APC2, a homologue", ["Identification", "of", "APC2", ",", "a", "homologue"]),
        ("5-fluorouracil", ["5", "-", "fluorouracil"]),
        ("(GSK-3beta)", ["(", "GSK", "-", "3beta", ")"]),
        ("2.5 mg", ["2", ".", "5", "mg"]),
        ("P<0.05", ["P", "<", "0", ".", "05"]),
        ("15q11-q13", ["15q11", "-", "q13"]),
        ("C282Y/H63D", ["C282Y", "/", "H63D"]),
        ("Crohn's", ["Crohn", "'", "s"]),
        ("100%", ["100", "%"]),
        ("+/-", ["+", "/", "-"]),
        ("n=5; [3]: \"x\"", ["n", "=", "5", ";", "[", "3", "]", ":", '"', "x", '"']),
        ("--..", ["-", "-", ".", "."]),
        ("a_b", ["a", "_", "b"]),
        ("tumour-suppressor.", ["tumour", "-", "suppressor", "."]),
    ],
)
def test_corpus_style_splits(text: str, expected: list[str]) -> None:
    assert texts(text) == expected


def test_offsets_and_shift() -> None:
    assert tokenize("of APC2,") == [Token("of", 0, 2), Token("APC2", 3, 7), Token(",", 7, 8)]
    assert tokenize("of APC2,", offset=100) == [Token("of", 100, 102), Token("APC2", 103, 107), Token(",", 107, 108)]


@pytest.mark.parametrize("text", ["", " ", "\n\t \xa0\u3000\u2028", "\u200b\ufeff"])
def test_nothing_to_tokenize(text: str) -> None:
    assert tokenize(text) == []


def test_unicode() -> None:
    nfd = unicodedata.normalize("NFD", "café")
    assert texts(f"{nfd} x") == [nfd, "x"]  # the combining accent stays on its word
    assert texts("a\xa0b\u3000c\u2009d") == ["a", "b", "c", "d"]  # Unicode spaces separate
    assert texts("a\u200bb") == ["a", "b"]  # zero-width space separates, and is not a token
    assert texts("中文 हिन्दी") == ["中文", "हिन्दी"]  # Devanagari vowel signs (marks) stay in the word
    assert texts("ok😀!") == ["ok", "😀", "!"]
    assert texts("x\x00y") == ["x", "\x00", "y"]


def test_mark_scan_misses_no_plane() -> None:
    # The tokenizer scans only MARK_PLANES for combining marks, to import fast; no mark may live elsewhere.
    covered = {cp for lo, hi in tokenizer.MARK_PLANES for cp in range(lo, hi)}
    outside = [cp for cp in range(0x110000) if cp not in covered and unicodedata.category(chr(cp))[0] == "M"]
    assert outside == []


SPECIAL = st.sampled_from(
    list(" \t\n\r\xa0\u2009\u3000\u2028\u200b\u200c\u200d\ufeff\x00\x1c\u0301\u0903_-.,'😀👍🏽中é1aZ")
    + ["\ud800", "e\u0301", "👨\u200d👩"]
)
ANY_TEXT = st.lists(st.one_of(st.characters(), SPECIAL), max_size=60).map("".join)


@settings(max_examples=400, deadline=None)
@given(ANY_TEXT, st.integers(0, 1000))
def test_offsets_always_match(text: str, offset: int) -> None:
    tokens = tokenize(text, offset=offset)
    prev_end = offset
    for t in tokens:
        assert text[t.start - offset : t.end - offset] == t.text
        assert t.text and t.start >= prev_end  # ordered, non-empty, non-overlapping
        assert not any(c.isspace() for c in t.text)
        prev_end = t.end
    covered = {i for t in tokens for i in range(t.start - offset, t.end - offset)}
    for i, ch in enumerate(text):  # every visible character belongs to a token
        assert i in covered or ch.isspace() or ch in "\u200b\u2060\ufeff"


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_tokens_are_stable_units(text: str) -> None:
    # A token re-tokenises to itself, so space-joined tokens reproduce the token list (corpus round trip).
    tokens = texts(text)
    for t in tokens:
        assert texts(t) == [t]
    assert texts(" ".join(tokens)) == tokens


def test_whitespace_tokens_keep_a_corpus_own_multi_character_tokens() -> None:
    from nerservice.text.tokenizer import tokenize_whitespace

    text = "dose +/- 5 >= 2 (R) <FFFD>"
    assert [t.text for t in tokenize_whitespace(text, offset=10)] == ["dose", "+/-", "5", ">=", "2", "(R)", "<FFFD>"]
    assert tokenize_whitespace("a\u00a0b\u3000c")[2] == Token("c", 4, 5)  # NBSP, ideographic space separate
    assert [t.text for t in tokenize(text)][:4] == ["dose", "+", "/", "-"]  # the tokenizer itself is unchanged


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.integers(0, 50))
def test_whitespace_tokens_are_str_split_with_offsets(text: str, offset: int) -> None:
    """Exactly what ``str.split()`` calls tokens (so ``\\s`` is ``str.isspace``), offsets into the text."""
    from nerservice.text.tokenizer import tokenize_whitespace

    toks = tokenize_whitespace(text, offset=offset)
    assert [t.text for t in toks] == text.split()
    assert all(text[t.start - offset : t.end - offset] == t.text for t in toks)
