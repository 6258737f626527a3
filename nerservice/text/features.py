"""Sentences → the named arrays the model consumes.

Arrays cross module boundaries as a dict (DESIGN convention 1):
  token_ids  (B, T) int32  word ids (normalised lookup form), 0 = padding
  lengths    (B,)   int32  real tokens per sentence
  word_chars (U, C) int32  char ids of the *distinct* words of the batch, row 0 = the empty padding word
  word_index (B, T) int32  row of ``word_chars`` for each token (0 at padding)
  tag_ids    (B, T) int32  gold tags (training only), 0 at padding

Why distinct words: the char encoders (CNN + BiLSTM over characters) dominate CPU time, and a batch of
biomedical text repeats words heavily ("the", "of", "cancer"), so encoding each distinct word once and
gathering is 2-4x cheaper than encoding every token — with identical results.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nerservice.text.vocab import Vocabularies, normalize_word


def clip_word(word: str, max_len: int) -> str:
    """Keep prefix and suffix of very long words: both carry the morphology (-itis, -ase, 5-...)."""
    if len(word) <= max_len:
        return word
    head = max_len // 2
    return word[:head] + word[len(word) - (max_len - head):]


def round_up(n: int, multiple: int) -> int:
    return max(multiple, -(-n // multiple) * multiple)


def encode_batch(
    sentences: Sequence[Sequence[str]],
    vocabs: Vocabularies,
    *,
    max_word_length: int,
    tags: Sequence[Sequence[str]] | None = None,
    pad_to: int | None = None,
    time_multiple: int = 1,
    char_multiple: int = 4,
) -> dict[str, np.ndarray]:
    """Encode tokenised sentences. ``pad_to`` fixes T; otherwise T = longest sentence rounded up to
    ``time_multiple`` (fewer distinct shapes → fewer retraces/compiles)."""
    n = len(sentences)
    lengths = np.fromiter((len(s) for s in sentences), dtype=np.int32, count=n)
    longest = int(lengths.max()) if n else 0
    t = pad_to if pad_to is not None else round_up(max(longest, 1), time_multiple)
    if longest > t:
        raise ValueError(f"sentence of {longest} tokens does not fit pad_to={t}")
    token_ids = np.zeros((n, t), dtype=np.int32)
    word_index = np.zeros((n, t), dtype=np.int32)
    rows: dict[str, int] = {"": 0}
    words_id = vocabs.words.id
    for i, sent in enumerate(sentences):
        for j, tok in enumerate(sent):
            token_ids[i, j] = words_id(normalize_word(tok))
            key = clip_word(tok, max_word_length)
            r = rows.get(key)
            if r is None:
                r = rows[key] = len(rows)
            word_index[i, j] = r
    c = round_up(max((len(w) for w in rows), default=1), char_multiple)
    c = min(max(c, 1), round_up(max_word_length, char_multiple))
    word_chars = np.zeros((len(rows), c), dtype=np.int32)
    chars_id = vocabs.chars.id
    for w, r in rows.items():
        if w:
            word_chars[r, : len(w)] = [chars_id(ch) for ch in w]
    out = {"token_ids": token_ids, "lengths": lengths, "word_chars": word_chars, "word_index": word_index}
    if tags is not None:
        tag_ids = np.zeros((n, t), dtype=np.int32)
        tag_id = vocabs.tags.id
        for i, ts in enumerate(tags):
            tag_ids[i, : len(ts)] = [tag_id(x) for x in ts]
        out["tag_ids"] = tag_ids
    return out
