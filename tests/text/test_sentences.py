from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nerservice.text.sentences import split_sentences, tokenize_sentences
from nerservice.text.tokenizer import tokenize


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


@pytest.mark.parametrize(
    "text",
    [
        "Mutations occur in several genes, e.g. BRCA1 and BRCA2.",
        "Tumours, i.e. Carcinomas, were counted.",
        "Cisplatin was given i.v. Twice daily.",
        "As reported by Smith et al. Mutations are rare.",
        "See Fig. 1 and Figs. 2-3.",
        "Drug vs. Placebo was compared.",
        "The dose was approx. 5 mg.",
        "Dr. Jones examined the patients.",
        "Written by J. Smith in 2001.",
        "Patients received 2.5 mg of drug.",
        "Results (n = 5. P < 0.05) were significant.",
        "Described in No. 5 of the series.",
        "Deletions (cf. Table 2) were found.",
        "Mutations were seen. and then more text.",
    ],
)
def test_no_break(text: str) -> None:
    assert sentences(text) == [text]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("APC is mutated. The protein binds.", ["APC is mutated.", "The protein binds."]),
        ("Is it real? Yes! It is.", ["Is it real?", "Yes!", "It is."]),
        ("Five died. 3 survived.", ["Five died.", "3 survived."]),
        ('It ended. "Quoted" start.', ["It ended.", '"Quoted" start.']),
        ("It ended. (Parenthesised) start.", ["It ended.", "(Parenthesised) start."]),
        ('He said "stop." Then left.', ['He said "stop."', "Then left."]),
        ("Seen (see above.) Next one.", ["Seen (see above.)", "Next one."]),
        ("The answer is no. The end.", ["The answer is no.", "The end."]),
        ("Title without stop\n\nBody text here", ["Title without stop", "Body text here"]),
        ("One.\r\n\r\nTwo", ["One.", "Two"]),
        ("Para one\u2029para two", ["Para one", "para two"]),
        ("A (stray paren. Next sentence.", ["A (stray paren.", "Next sentence."]),
        ("  Leading and trailing.  \n", ["Leading and trailing."]),
    ],
)
def test_breaks(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_blank_line_after_rejected_terminator_still_breaks() -> None:
    assert sentences("Seen in 5 pts. e.g.\n\nnext part") == ["Seen in 5 pts. e.g.", "next part"]


def test_empty() -> None:
    assert split_sentences("") == []
    assert split_sentences(" \n\n\t") == []
    assert tokenize_sentences("   \u200b\ufeff") == []  # zero-width only: a span, but no tokens


def test_tokenize_sentences_offsets_and_chunks() -> None:
    text = "APC is mutated. The protein binds axin."
    sents = tokenize_sentences(text)
    assert [[t.text for t in s] for s in sents] == [
        ["APC", "is", "mutated", "."], ["The", "protein", "binds", "axin", "."]]
    assert all(text[t.start : t.end] == t.text for s in sents for t in s)
    chunks = tokenize_sentences(text, max_tokens=2)
    assert [len(c) for c in chunks] == [2, 2, 2, 2, 1]
    assert [t for c in chunks for t in c] == [t for s in sents for t in s]
    with pytest.raises(ValueError, match="max_tokens"):
        tokenize_sentences(text, max_tokens=0)


# An alphabet dense in the characters the splitter reacts to, plus arbitrary Unicode.
SENTENCE_CHARS = st.sampled_from(list("Aa1 .!?()[]\"'\n\n\r\t\u2029\xa0eEgil") + ["e.g.", "et al.", "Fig.", "J."])
TEXT = st.one_of(st.lists(SENTENCE_CHARS, max_size=40).map("".join), st.text(max_size=80))


@settings(max_examples=500, deadline=None)
@given(TEXT)
def test_spans_partition_the_visible_text(text: str) -> None:
    spans = split_sentences(text)
    prev_end = 0
    for start, end in spans:
        assert prev_end <= start < end <= len(text)  # ordered, non-empty, non-overlapping
        assert not text[start].isspace() and not text[end - 1].isspace()  # stripped
        prev_end = end
    inside = [False] * len(text)
    for start, end in spans:
        inside[start:end] = [True] * (end - start)
    assert all(inside[i] or ch.isspace() for i, ch in enumerate(text))  # no visible char dropped


@settings(max_examples=300, deadline=None)
@given(TEXT, st.none() | st.integers(1, 5))
def test_sentences_never_cut_a_token(text: str, max_tokens: int | None) -> None:
    chunks = tokenize_sentences(text, max_tokens=max_tokens)
    assert [t for c in chunks for t in c] == tokenize(text)
    assert all(c and (max_tokens is None or len(c) <= max_tokens) for c in chunks)


@pytest.mark.parametrize("run", ["!?", "!", "?!.", ".)"])
def test_splitting_is_linear_in_punctuation_runs(run: str) -> None:
    """A run of terminators with no whitespace after it was scanned from each of its characters: ~4 s for
    one 8,000-character text, enough for one request to hold the service. Now ~50 ms; 2,000 vs 16,000
    characters must scale like the length, not its square."""
    import time

    def cost(n: int) -> float:
        text = (run * n)[:n]
        t0 = time.perf_counter()
        split_sentences(text)
        return time.perf_counter() - t0

    cost(2000)  # warm
    small, big = min(cost(2000) for _ in range(3)), min(cost(16_000) for _ in range(3))
    assert big < 0.5 and big < 8 * 4 * max(small, 1e-4), (small, big)  # quadratic would be 64x
