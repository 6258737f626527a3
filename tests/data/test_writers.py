import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nerservice.data import Sentence, format_corpus, parse_text, read_corpus, to_iob2, write_corpus
from nerservice.errors import ConfigError, CorpusError

SCHEMES = ["iob1", "iob2", "iobes"]
FORMATS = ["tsv", "conll"]
SENTENCES = [
    Sentence(("Famil", "adenomatous", "polyposis", "coli", "."), ("O", "B-Disease", "I-Disease", "I-Disease", "O")),
    Sentence(("cisplatin", "nephrotoxicity", "and", "nephrotoxicity"), ("B-Chemical", "B-Disease", "O", "B-Disease")),
    Sentence(("a", "b", "c"), ("B-X", "B-X", "I-X")),  # adjacent same-type entities: IOB1 needs its B-
    Sentence(("none", "here"), ("O", "O")),
    Sentence(("naïve", "Ca²⁺", "a b"), ("B-Chemical", "I-Chemical", "O")),  # "a b" is tsv-only
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_round_trip_every_scheme_and_format(tmp_path, fmt, scheme):
    sentences = SENTENCES if fmt == "tsv" else SENTENCES[:-1]
    path = tmp_path / "out" / f"c.{fmt}"
    write_corpus(sentences, path, fmt=fmt, scheme=scheme)
    corpus = read_corpus(path)  # everything auto-detected
    assert corpus.sentences == sentences
    assert (corpus.report.scheme, corpus.report.format, corpus.report.repaired) == (scheme, fmt, 0)
    explicit = read_corpus(path, fmt=fmt, scheme=scheme)
    assert explicit.sentences == sentences


def test_exact_output_text():
    s = [Sentence(("a", "b", "c", "d"), ("B-X", "I-X", "B-X", "O"))]
    assert format_corpus(s) == "a\tB-X\nb\tI-X\nc\tB-X\nd\tO\n\n"
    assert format_corpus(s, fmt="conll", scheme="iob1") == "a I-X\nb I-X\nc B-X\nd O\n\n"
    assert format_corpus(s, fmt="tsv", scheme="iobes") == "a\tB-X\nb\tE-X\nc\tS-X\nd\tO\n\n"
    assert format_corpus([]) == ""


@pytest.mark.parametrize(
    "token, fmt",
    [("", "tsv"), ("a\tb", "tsv"), ("a\nb", "tsv"), (" a", "tsv"), ("a ", "conll"), ("a b", "conll"),
     ("-DOCSTART-", "tsv"), ("\ufeffa", "tsv")],
)
def test_tokens_that_would_not_round_trip_are_refused(token, fmt):
    with pytest.raises(CorpusError, match="cannot write token"):
        format_corpus([Sentence(("ok", token), ("O", "O"))], fmt=fmt)


def test_other_refusals():
    with pytest.raises(CorpusError, match="empty sentence"):
        format_corpus([Sentence((), ())])
    with pytest.raises(ConfigError):
        format_corpus(SENTENCES, fmt="csv")  # type: ignore[arg-type]
    with pytest.raises(CorpusError):
        format_corpus([Sentence(("a",), ("S-X",))])  # not IOB2


def test_write_is_atomic_and_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "c.tsv"
    write_corpus(SENTENCES, path)
    first = path.read_bytes()
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
    # a failing write (bad token found after formatting began) keeps the old file intact
    with pytest.raises(CorpusError):
        write_corpus(SENTENCES + [Sentence(("a\nb",), ("O",))], path)
    assert path.read_bytes() == first
    write_corpus(SENTENCES[:1], path, fmt="conll", scheme="iobes")
    assert read_corpus(path).sentences == SENTENCES[:1]
    assert os.listdir(tmp_path) == ["c.tsv"]


def test_write_accepts_a_generator(tmp_path):
    write_corpus((s for s in SENTENCES), tmp_path / "g.tsv")
    assert read_corpus(tmp_path / "g.tsv").sentences == SENTENCES


# Tokens: any text without the characters that separate lines/columns, not a DOCSTART marker or BOM-led.
TOKENS = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\t "), min_size=1,
                 max_size=8).filter(lambda t: not t.startswith(("-DOCSTART-", "\ufeff")))
RAW_TAGS = st.one_of(st.just("O"), st.sampled_from(["B-", "I-"]).flatmap(
    lambda p: st.sampled_from(["Disease", "Chemical", "X"]).map(lambda lab: p + lab)))


@st.composite
def sentences(draw):
    tokens = draw(st.lists(TOKENS, min_size=1, max_size=12))
    tags = to_iob2(draw(st.lists(RAW_TAGS, min_size=len(tokens), max_size=len(tokens))), "iob2")[0]
    return Sentence(tuple(tokens), tuple(tags))


@settings(max_examples=150, deadline=None)
@given(st.lists(sentences(), min_size=1, max_size=6), st.sampled_from(FORMATS), st.sampled_from(SCHEMES),
       st.booleans())
def test_round_trip_property(corpus, fmt, scheme, explicit):
    text = format_corpus(corpus, fmt=fmt, scheme=scheme)
    read = parse_text(text, source="rt", fmt=fmt if explicit else "auto", scheme=scheme if explicit else "auto")
    assert read.sentences == corpus
    assert read.report.repaired == 0
