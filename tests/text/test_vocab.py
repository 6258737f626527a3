from __future__ import annotations

import json
import random
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nerservice.errors import CorpusError, ModelLoadError
from nerservice.text import vocab as vocab_module
from nerservice.text.vocab import PAD_ID, UNK_ID, TagVocabulary, Vocabularies, Vocabulary, normalize_word


@pytest.mark.parametrize(
    ("word", "expected"),
    [("BRCA1", "brca0"), ("The", "the"), ("15q11", "00q00"), ("٣٤", "00"), ("５mg", "0mg"), ("Ünï", "ünï"),
     ("ß", "ß"), ("", ""), (",", ",")],
)
def test_normalize_word(word: str, expected: str) -> None:
    assert normalize_word(word) == expected


@given(st.text(max_size=20))
def test_normalize_word_is_idempotent_and_digit_free(word: str) -> None:
    once = normalize_word(word)
    assert normalize_word(once) == once
    assert not any(c.isdecimal() and c != "0" for c in once)


def test_digit_scan_limit_misses_no_digit() -> None:
    beyond = [cp for cp in range(vocab_module.DIGIT_SCAN_LIMIT, sys.maxunicode + 1) if chr(cp).isdecimal()]
    assert beyond == []


def test_build_order_counts_then_lexical() -> None:
    items = ["b", "a", "c", "a", "b", "d", "a"]
    v = Vocabulary.build(items)
    assert v.items == ["a", "b", "c", "d"]  # a:3, b:2, then c, d tied at 1 -> lexical
    assert v.id("a") == 2 and v.id("d") == 5 and len(v) == 6


def test_build_is_independent_of_input_order() -> None:
    items = [f"w{i % 17}" for i in range(200)] + ["x", "y", "y"]
    shuffled = items[:]
    random.Random(0).shuffle(shuffled)
    assert Vocabulary.build(items).items == Vocabulary.build(shuffled).items


def test_build_min_count_max_size_extra() -> None:
    items = ["a", "a", "a", "b", "b", "c"]
    assert Vocabulary.build(items, min_count=2).items == ["a", "b"]
    assert Vocabulary.build(items, max_size=1).items == ["a"]
    v = Vocabulary.build(items, min_count=2, extra=["z", "b", "c", "z", "<unk>"])
    assert v.items == ["a", "b", "z", "c"]  # extras keep their order, skip present ones, ignore min_count


def test_build_drops_reserved_items() -> None:
    assert Vocabulary.build(["<pad>", "<unk>", "x"]).items == ["x"]


def test_lookup() -> None:
    v = Vocabulary(["the", "cancer"])
    assert v.item(PAD_ID) == "<pad>" and v.item(UNK_ID) == "<unk>"
    assert v.ids(["the", "nope", "cancer"]) == [2, UNK_ID, 3]
    assert v.id("nope") == UNK_ID and "nope" not in v and "the" in v and 5 not in v
    assert v.item(3) == "cancer"
    with pytest.raises(IndexError):
        v.item(4)


@pytest.mark.parametrize("items", [["a", "a"], ["<pad>"], ["x", "<unk>"]])
def test_constructor_rejects_duplicates_and_reserved(items: list[str]) -> None:
    with pytest.raises(ValueError):
        Vocabulary(items)


@given(st.lists(st.text(max_size=6), unique=True, max_size=40), st.integers(0, 45),
       st.lists(st.text(max_size=6), max_size=20))
def test_ids_past_the_dict_behave_like_the_dict(items: list[str], cut: int, probes: list[str]) -> None:
    """Ids from ``DICT_IDS`` on live in a PackedStrings; every lookup agrees with a plain dict."""
    items = [x for x in items if x not in ("<pad>", "<unk>")]
    reference = {"<pad>": PAD_ID, "<unk>": UNK_ID, **{x: i + 2 for i, x in enumerate(items)}}
    saved = vocab_module.DICT_IDS
    vocab_module.DICT_IDS = cut
    try:
        v = Vocabulary(items)
    finally:
        vocab_module.DICT_IDS = saved
    queries = items + probes
    assert v.ids(queries) == [reference.get(q, UNK_ID) for q in queries]
    assert [v.id(q) for q in queries] == [reference.get(q, UNK_ID) for q in queries]
    assert [q in v for q in probes] == [q in reference for q in probes]
    assert len(v) == len(items) + 2 and v.items == items
    assert [v.item(i + 2) for i in range(len(items))] == items
    assert v == Vocabulary(items) and Vocabulary.from_dict(json.loads(json.dumps(v.to_dict()))) == v


def test_packed_strings_survive_hash_collisions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Equal hashes for distinct strings (forced here: hash = length) still give exact answers; a repeated
    string is an error even past the dict."""
    from nerservice.text import packed_strings

    monkeypatch.setattr(packed_strings, "hash", len, raising=False)
    words = ["ab", "cd", "ef", "g", "hij", "ba"]
    packed = packed_strings.PackedStrings(words)
    assert packed.indices(["ef", "ba", "zz", "g", "hij", "xyz", ""]).tolist() == [2, 5, -1, 3, 4, -1, -1]
    assert [packed[i] for i in range(len(packed))] == words and list(packed) == words
    monkeypatch.setattr(vocab_module, "DICT_IDS", 3)
    with pytest.raises(ValueError, match="duplicate"):
        Vocabulary(["a", "b", "c", "b"])  # the repeat is past the dict
    with pytest.raises(ValueError, match="duplicate"):
        Vocabulary(["a", "b", "c", "d", "c"])  # a repeat inside the packed part
    with pytest.raises(ValueError, match="reserved"):
        Vocabulary(["a", "<unk>"])


def test_vocabulary_round_trip_and_corrupt_input() -> None:
    v = Vocabulary.build(["é", "β", "é", "x"])
    assert Vocabulary.from_dict(json.loads(json.dumps(v.to_dict()))) == v
    for bad in [{}, {"items": "abc"}, {"items": ["a", "a"]}, {"items": [1]}, []]:
        with pytest.raises(ModelLoadError):
            Vocabulary.from_dict(bad)  # type: ignore[arg-type]


def test_tag_vocabulary() -> None:
    tags = TagVocabulary(["I-Disease", "B-Chemical", "O", "B-Disease", "I-Chemical", "B-Disease"])
    assert tags.tags == ["O", "B-Chemical", "B-Disease", "I-Chemical", "I-Disease"]
    assert tags.id("O") == 0 and tags.id("B-Disease") == 2 and tags.tag(4) == "I-Disease"
    assert tags.labels == ["Chemical", "Disease"] and len(tags) == 5
    assert TagVocabulary(["B-X"]).tags == ["O", "B-X"]  # "O" is always there, always 0
    with pytest.raises(CorpusError, match="B-Gene"):
        tags.id("B-Gene")
    with pytest.raises(IndexError):
        tags.tag(5)
    assert TagVocabulary.from_dict(tags.to_dict()) == tags
    with pytest.raises(ModelLoadError):  # ids are positions: a reordered saved list must not load
        TagVocabulary.from_dict({"tags": ["O", "I-Disease", "B-Disease"]})


def _vocabs() -> Vocabularies:
    return Vocabularies(
        words=Vocabulary.build(["the", "maladie", "crohn", "the"]),
        chars=Vocabulary.build(list("thé maladie β")),
        tags=TagVocabulary(["O", "B-Disease", "I-Disease"]),
    )


def test_vocabularies_save_load(tmp_path) -> None:
    path = tmp_path / "sub" / "vocab.json"
    vocabs = _vocabs()
    vocabs.save(path)
    loaded = Vocabularies.load(path)
    assert loaded == vocabs
    assert loaded.words.id("crohn") == vocabs.words.id("crohn")
    raw = path.read_bytes().decode("utf-8")
    assert "é" in raw and "\\u" not in raw  # UTF-8, not ASCII escapes
    assert [p.name for p in path.parent.iterdir()] == ["vocab.json"]  # the temp file is gone
    vocabs.save(path)  # overwriting works
    assert Vocabularies.load(path) == vocabs


def test_vocabularies_load_errors(tmp_path) -> None:
    with pytest.raises(ModelLoadError, match="cannot read"):
        Vocabularies.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelLoadError):
        Vocabularies.load(bad)
    data = _vocabs().to_dict()
    data["version"] = "nerservice.vocab.v0"
    with pytest.raises(ModelLoadError, match="version"):
        Vocabularies.from_dict(data)
