"""BERT's uncased WordPiece on pre-split tokens (fast).  The expected pieces were produced by Hugging Face
``transformers`` 5.25 ``BertTokenizer`` (do_lower_case=True) with this vocabulary, once, when the tokenizer
was written; the tests pin our reimplementation to them."""
from __future__ import annotations

import numpy as np
import pytest

from nerservice.encoder.wordpiece import MAX_PIECES_PER_TOKEN, MAX_WORD_CHARS, UNK, WordPiece, basic_split

PIECES = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "brca", "##1", "##2", "is", "a", "gene", ".", ",", "-", "(",
          ")", "cancer", "##s", "ovarian", "tumor", "##igenic", "cafe", "de", "##ficiency", "il", "##6", "5", "fluoro",
          "##uracil", "/", "alpha", "β", "κ", "the", "##b"]

# token -> BertTokenizer.tokenize(token)
EXPECTED = {
    "BRCA1": ["brca", "##1"], "BRCA12": ["brca", "##1", "##2"], "is": ["is"], "Ovarian": ["ovarian"],
    "cancers": ["cancer", "##s"], "tumorigenic": ["tumor", "##igenic"], "Café": ["cafe"],
    "deficiency": ["de", "##ficiency"], "IL-6": ["il", "-", "[UNK]"], "5-fluorouracil": ["5", "-", "fluoro", "##uracil"],
    "(a)": ["(", "a", ")"], "alpha/β": ["alpha", "/", "β"], "κB": ["κ", "##b"], "xyz": ["[UNK]"],
    "a\u00adb": ["a", "##b"], "Déficiency": ["de", "##ficiency"], "BRCA1,2": ["brca", "##1", ",", "[UNK]"],
}
# BertTokenizer's ids for the whole list above, in order, with [CLS] and [SEP]
EXPECTED_IDS = [2, 5, 6, 5, 6, 7, 8, 18, 16, 17, 19, 20, 21, 22, 23, 24, 13, 1, 26, 13, 27, 28, 14, 9, 15, 30, 29, 31,
                32, 34, 1, 9, 34, 22, 23, 5, 6, 12, 1, 3]


@pytest.fixture(scope="module")
def wp() -> WordPiece:
    return WordPiece.from_lines(PIECES)


def test_pieces_match_bert_tokenizer(wp: WordPiece) -> None:
    for token, pieces in EXPECTED.items():
        assert [PIECES[i] for i in wp.token_pieces(token)] == pieces, token


def test_encode_frames_the_sentence_and_points_at_each_first_piece(wp: WordPiece) -> None:
    tokens = list(EXPECTED)
    ids, first = wp.encode(tokens)
    assert ids.tolist() == EXPECTED_IDS
    assert ids.dtype == np.int32 and first.dtype == np.int32
    for i, tok in enumerate(tokens):
        assert ids[first[i]] == wp.token_pieces(tok)[0]
    assert first.tolist() == sorted(first.tolist()) and first[0] == 1


def test_a_token_without_pieces_still_gets_a_position(wp: WordPiece) -> None:
    # BertTokenizer drops a zero-width space entirely; the tagger needs a state for every token, so it is [UNK].
    ids, first = wp.encode(["a", "\u200b", "gene"])
    assert [PIECES[i] for i in ids] == ["[CLS]", "a", UNK, "gene", "[SEP]"] and first.tolist() == [1, 2, 3]


def test_work_per_token_is_bounded(wp: WordPiece) -> None:
    assert wp.token_pieces("a" * (MAX_WORD_CHARS + 1)) == (wp.vocab[UNK],)
    many = "(" * 200
    assert len(wp.token_pieces(many)) == MAX_PIECES_PER_TOKEN


def test_basic_split_lowercases_strips_accents_and_splits_punctuation() -> None:
    assert basic_split("Déficiency-IL6.", lowercase=True) == ["deficiency", "-", "il6", "."]
    assert basic_split("Déficiency", lowercase=False) == ["Déficiency"]


def test_round_trip_and_bad_vocabularies(wp: WordPiece) -> None:
    wp.token_pieces("cancers")  # fills the memo; equality ignores it (vocabularies compare by content)
    again = WordPiece.from_dict(wp.to_dict())
    assert again == wp and again.vocab == wp.vocab and again.lowercase and not again.cache
    with pytest.raises(ValueError, match="lacks"):
        WordPiece.from_lines(["[PAD]", "a"])
    with pytest.raises(ValueError, match="pieces"):
        WordPiece.from_dict({"items": []})
