"""IOB2 sentences → documents → files → documents → IOB2 sentences gives the same sentences in every format,
when each format is written in the layout that keeps its sentence boundaries (``EXACT_LAYOUTS``: PubTator
one document per sentence, read with ``sentences="lines"``) and read with the file's own tokens
(``tokens="whitespace"``); the project's tokenizer gives the same back for tokens it would produce itself."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nerservice.data.sentence import Sentence
from nerservice.documents import ConvertOptions, documents_to_sentences, read_documents, write_documents
from nerservice.documents.from_sentences import EXACT_LAYOUTS, sentences_to_documents
from nerservice.text.tokenizer import tokenize

# corpus-style tokens the tokenizer keeps, and multi-character punctuation (linnaeus) it splits
STABLE = st.one_of(st.text(alphabet="abcXYZ019éα", min_size=1, max_size=6), st.sampled_from(list(".,-()/+<>=|'\"&%;")))
OWN = st.one_of(STABLE, st.sampled_from(["+/-", ">=", "<=", "-->", "--", "(R)", "(TM)", "<FFFD>", "not-in", "!="]),
                st.text(alphabet="abc.,-()/+<>=|&α", min_size=1, max_size=5))
TAGS = st.sampled_from(["O", "O", "B-Disease", "I-Disease", "B-Gene", "I-Gene"])


def _iob2(tags: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for t in tags:  # an I- not continuing its type becomes B-
        out.append(f"B-{t[2:]}" if t.startswith("I-") and (not out or out[-1][2:] != t[2:]) else t)
    return tuple(out)


def corpora(token: st.SearchStrategy[str]) -> st.SearchStrategy[list[Sentence]]:
    sentence = st.lists(st.tuples(token, TAGS), min_size=1, max_size=8).map(
        lambda pairs: Sentence(tuple(t for t, _ in pairs), _iob2([g for _, g in pairs])))
    return st.lists(sentence, min_size=1, max_size=23)


def roundtrip(sentences: list[Sentence], fmt: str, tokens: str) -> list[Sentence]:
    layout, mode = EXACT_LAYOUTS[fmt]
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / ("brat" if fmt == "brat" else f"c.{fmt}")
        write_documents(sentences_to_documents(sentences, layout=layout), target, fmt)
        docs = read_documents(target, fmt=fmt)
    corpus = documents_to_sentences(docs, options=ConvertOptions(sentences=mode, tokens=tokens))  # type: ignore[arg-type]
    assert corpus.documents_report.adds_up and not corpus.documents_report.cases
    return corpus.sentences


SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.sampled_from(sorted(EXACT_LAYOUTS)), corpora(OWN))
def test_any_corpus_comes_back_identical_with_its_own_tokens(fmt: str, sentences: list[Sentence]) -> None:
    assert roundtrip(sentences, fmt, "whitespace") == sentences


@SETTINGS
@given(st.sampled_from(sorted(EXACT_LAYOUTS)), corpora(STABLE))
def test_tokenizer_style_corpus_comes_back_identical_with_the_tokenizer(fmt: str, sentences: list[Sentence]) -> None:
    assert all(len(tokenize(t)) == 1 for s in sentences for t in s.tokens)
    assert roundtrip(sentences, fmt, "words") == sentences


def test_one_pubtator_document_per_sentence_keeps_what_the_splitter_would_cut() -> None:
    """A sentence the splitter cuts inside ("2 . 5"), and two it would not cut apart (no final stop)."""
    sents = [Sentence(("Dose", "2", ".", "5", "mg", ".", "Then", "+/-"), ("O",) * 8),
             Sentence(("Abstract",), ("O",)), Sentence(("the", "von", "Willebrand"), ("O", "B-Disease", "I-Disease"))]
    docs = sentences_to_documents(sents, layout="sentence")
    assert [d.id for d in docs] == ["doc000001", "doc000002", "doc000003"]
    assert [[p.kind for p in d.passages] for d in docs] == [["title"]] * 3
    assert roundtrip(sents, "pubtator", "whitespace") == sents
