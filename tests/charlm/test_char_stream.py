"""The character LM's text and the positions the tagger reads its features from (fast)."""
from __future__ import annotations

import numpy as np

from nerservice.text.char_stream import BOUNDARY, build_vocab, encode_stream, sentence_positions


def test_forward_index_is_the_character_after_each_token_and_backward_the_one_before() -> None:
    tokens = ["BRCA1", "is", "a", "gene", "."]
    text, fwd, bwd = sentence_positions(tokens)
    assert text == "\nBRCA1 is a gene .\n"
    rev = text[::-1]
    start = 1
    for i, tok in enumerate(tokens):
        assert text[start: start + len(tok)] == tok
        assert fwd[i] == start + len(tok) and text[fwd[i]] in (" ", BOUNDARY)
        # Read right to left, the backward LM has consumed the whole token at this position.
        assert rev[bwd[i]] == text[start - 1] and rev[bwd[i] - len(tok): bwd[i]] == tok[::-1]
        start += len(tok) + 1


def test_stream_ends_every_sentence_with_the_boundary_and_rare_characters_are_unknown() -> None:
    sents = [["a", "b"], ["a", "ü"], ["a"]]
    vocab = build_vocab(sents, min_count=2)
    assert "ü" not in vocab and "a" in vocab and " " in vocab and BOUNDARY in vocab
    ids = encode_stream(sents, vocab)
    text = "a b\na ü\na\n"
    assert ids.dtype == np.int32 and ids.size == len(text)
    assert [vocab.item(i) for i in ids[:4]] == ["a", " ", "<unk>", BOUNDARY]  # "b" is seen once: <unk>
    assert ids[text.index("ü")] == 1  # <unk>
    assert (ids[[i for i, ch in enumerate(text) if ch == BOUNDARY]] == vocab.id(BOUNDARY)).all()
