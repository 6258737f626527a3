"""Extractor: raw texts → entities whose offsets point into the original text, for any input."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow  # every test here uses the session's trained tiny model

SENTENCE = "Patients with breast cancer were treated with cisplatin."


@pytest.fixture(scope="module")
def extractor(tiny_model_dir):
    from nerservice.inference import Extractor

    return Extractor.load(tiny_model_dir)


def _check(text: str, entities, labels) -> None:
    prev_end = -1
    for e in entities:
        assert 0 <= e.start < e.end <= len(text)
        assert text[e.start:e.end] == e.text
        assert e.text == e.text.strip() and e.text
        assert e.label in labels
        assert 0.0 <= e.score <= 1.0
        assert e.start >= prev_end  # ordered, non-overlapping
        prev_end = e.end


def test_finds_the_entities_of_a_demo_sentence(extractor) -> None:
    ents = extractor.extract_one(SENTENCE)
    assert [(e.text, e.label) for e in ents] == [("breast cancer", "Disease"), ("cisplatin", "Chemical")]
    assert ents[0].start == SENTENCE.index("breast cancer")
    assert all(e.score > 0.5 for e in ents)
    assert ents[0].to_dict() == {"start": ents[0].start, "end": ents[0].end, "label": "Disease",
                                 "text": "breast cancer", "score": ents[0].score}
    _check(SENTENCE, ents, extractor.labels)


@pytest.mark.parametrize("text", ["", " ", "   \n\t  \u00a0\u3000", "\u200b\ufeff", ".", "\n\n\n"])
def test_empty_and_whitespace_only_texts_give_no_entities(extractor, text: str) -> None:
    assert extractor.extract([text]) == [[]]
    assert extractor.extract([]) == []


@pytest.mark.parametrize("text", [
    "😀 Patients with breast cancer were treated with cisplatin. 中文文本",
    "e\u0301te\u0301 Patients with breast cancer were treated with cisplatin.",  # combining accents (NFD)
    "مرضى Patients with breast cancer were treated with cisplatin. 👨‍👩‍👧",
    "\u00a0\u2028Patients\u2003with breast cancer were treated with cisplatin.\x00\x07",
])
def test_any_unicode_around_entities_keeps_offsets_right(extractor, text: str) -> None:
    ents = extractor.extract_one(text)
    _check(text, ents, extractor.labels)
    assert ("breast cancer", "Disease") in [(e.text, e.label) for e in ents]
    assert ("cisplatin", "Chemical") in [(e.text, e.label) for e in ents]


ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300)
WORDS = st.sampled_from(["cisplatin", "breast cancer", "asthma", "with", "treated", "Patients", ".", "(", ")",
                         "-", "5", "😀", "中", "é", "\u0301", " ", "\n", "\t", "e.g.", "Fig.", "induced"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.one_of(ANY_TEXT, st.lists(WORDS, max_size=40).map(" ".join)), min_size=1, max_size=4))
def test_offsets_always_point_into_the_original_text(extractor, texts) -> None:
    result = extractor.extract(texts)
    assert len(result) == len(texts)
    for text, ents in zip(texts, result):
        _check(text, ents, extractor.labels)


def test_batching_across_texts_equals_one_by_one(extractor) -> None:
    from nerservice.demo_corpus import generate

    texts = [" ".join(s.tokens) for s in generate(30, seed=123)]
    texts[3] = ""  # empty texts in the middle of a batch keep their place
    texts[7] = " ".join(texts[8:12])  # multi-sentence text
    batched = extractor.extract(texts)
    for text, ents in zip(texts, batched):
        alone = extractor.extract_one(text)
        assert [(e.start, e.end, e.label, e.text) for e in ents] == [(e.start, e.end, e.label, e.text) for e in alone]
        assert [e.score for e in ents] == pytest.approx([e.score for e in alone], abs=1e-5)
    assert sum(len(e) for e in batched) > 30


def test_a_very_long_document_is_split_and_fully_tagged(extractor) -> None:
    from nerservice.data import spans
    from nerservice.demo_corpus import generate

    sents = generate(800, seed=77)
    text = " ".join(" ".join(s.tokens) for s in sents)
    assert len(text) > 50_000
    ents = extractor.extract_one(text)
    _check(text, ents, extractor.labels)
    gold = sum(len(spans(s.tags)) for s in sents)
    assert len(ents) >= 0.9 * gold  # the tiny model is near-perfect on demo text


def test_one_huge_sentence_is_cut_by_max_sentence_tokens(tiny_model_dir) -> None:
    from nerservice.inference import Extractor
    from nerservice.text.sentences import tokenize_sentences

    text = "Patients with asthma were treated with cisplatin and " * 1000  # ~53k chars, no sentence end
    assert len(text) > 50_000
    small = Extractor.load(tiny_model_dir, max_sentence_tokens=64)
    chunks = tokenize_sentences(text, max_tokens=64)
    assert len(chunks) > 100 and max(len(c) for c in chunks) == 64
    assert small.count_tokens([text]) == sum(len(c) for c in chunks) == 8000
    ents = small.extract_one(text)
    _check(text, ents, small.labels)
    assert sum(e.text == "asthma" for e in ents) >= 900


def test_scores_can_be_switched_off(tiny_model_dir) -> None:
    from nerservice.inference import Extractor

    ents = Extractor.load(tiny_model_dir, with_scores=False).extract_one(SENTENCE)
    assert [e.text for e in ents] == ["breast cancer", "cisplatin"]
    assert all(e.score == 1.0 for e in ents)
