"""Text for the character LM: tokens joined by one space, one sentence per line.

The tagger feeds each sentence the same way (a newline before and after it), so the LM sees at inference
the kind of text it was trained on.  Features are taken as Flair does: the forward LM's output at the
character just after a token (it has read the whole token), the backward LM's output at the character just
before it (read right to left, it has read the whole token too).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from nerservice.text.vocab import Vocabulary

BOUNDARY = "\n"


def sentence_text(tokens: Sequence[str]) -> str:
    return " ".join(tokens)


def build_vocab(sentences: Iterable[Sequence[str]], *, min_count: int) -> Vocabulary:
    chars = (ch for s in sentences for ch in BOUNDARY + sentence_text(s))
    return Vocabulary.build(chars, min_count=min_count, extra=[" ", BOUNDARY])


def encode_stream(sentences: Iterable[Sequence[str]], vocab: Vocabulary) -> np.ndarray:
    """Every sentence followed by the boundary character, as one int32 id array."""
    text = "".join(sentence_text(s) + BOUNDARY for s in sentences)
    return np.asarray(vocab.ids(text), dtype=np.int32)


def sentence_positions(tokens: Sequence[str]) -> tuple[str, np.ndarray, np.ndarray]:
    """(text, forward index, backward index) of one sentence as the tagger feeds it: text is the boundary,
    the tokens, the boundary; forward[i] is the text position just after token i; backward[i] the position,
    counted in the *reversed* text, just before token i."""
    text = BOUNDARY + sentence_text(tokens) + BOUNDARY
    n = len(text)
    forward = np.empty(len(tokens), dtype=np.int32)
    backward = np.empty(len(tokens), dtype=np.int32)
    start = 1
    for i, tok in enumerate(tokens):
        forward[i] = start + len(tok)
        backward[i] = n - start  # reversed position of text index start - 1
        start += len(tok) + 1
    return text, forward, backward
