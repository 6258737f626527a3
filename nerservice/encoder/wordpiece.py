"""BERT's uncased WordPiece tokenizer, applied to text that is already split into tokens.

Each of our tokens is split as BERT's basic tokenizer would split it (lower case, accents stripped,
punctuation apart, control characters dropped), then into word pieces by greedy longest match.  The tagger
reads the encoder's state at the *first* piece of each token (Devlin et al. 2019, NER).  A token that
yields no piece (only control or format characters) gets ``[UNK]``, so every token has a position.
"""
from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

CLS, SEP, UNK, PAD = "[CLS]", "[SEP]", "[UNK]", "[PAD]"
# Bounds the work one token can cause: longer words are [UNK] (BERT's own limit is 100 characters), and a
# token keeps at most this many pieces (its first piece, where the tagger reads, is always kept).
MAX_WORD_CHARS = 100
MAX_PIECES_PER_TOKEN = 16


def is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def basic_split(token: str, *, lowercase: bool) -> list[str]:
    """BERT's BasicTokenizer on one token: clean, lower-case and strip accents, split at punctuation."""
    chars: list[str] = []
    for ch in token:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
            continue
        if ch in " \t\n\r" or unicodedata.category(ch) == "Zs":
            chars.append(" ")
        elif is_cjk(cp):
            chars.extend((" ", ch, " "))
        else:
            chars.append(ch)
    words: list[str] = []
    for word in "".join(chars).split():
        if lowercase:
            word = "".join(c for c in unicodedata.normalize("NFD", word.lower()) if unicodedata.category(c) != "Mn")
        current: list[str] = []
        for ch in word:
            if is_punctuation(ch):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(ch)
            else:
                current.append(ch)
        if current:
            words.append("".join(current))
    return words


@dataclass
class WordPiece:
    vocab: dict[str, int]
    lowercase: bool = True
    # A memo of pieces per token, not part of what the tokenizer is: equality ignores it.
    cache: dict[str, tuple[int, ...]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_lines(cls, lines: Sequence[str], *, lowercase: bool = True) -> WordPiece:
        vocab = {w: i for i, w in enumerate(lines)}
        missing = [t for t in (CLS, SEP, UNK, PAD) if t not in vocab]
        if missing:
            raise ValueError(f"word-piece vocabulary lacks {missing}")
        return cls(vocab, lowercase)

    def to_dict(self) -> dict[str, Any]:
        return {"pieces": list(self.vocab), "lowercase": self.lowercase}

    @classmethod
    def from_dict(cls, d: Any) -> WordPiece:
        if not isinstance(d, dict) or not isinstance(d.get("pieces"), list):
            raise ValueError("word pieces: expected {'pieces': [...], 'lowercase': bool}")
        return cls.from_lines([str(p) for p in d["pieces"]], lowercase=bool(d.get("lowercase", True)))

    def word_pieces(self, word: str) -> list[int]:
        if len(word) > MAX_WORD_CHARS:
            return [self.vocab[UNK]]
        pieces: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                sub = word[start:end] if start == 0 else "##" + word[start:end]
                if sub in self.vocab:
                    found = self.vocab[sub]
                    break
                end -= 1
            if found is None:
                return [self.vocab[UNK]]
            pieces.append(found)
            start = end
        return pieces

    def token_pieces(self, token: str) -> tuple[int, ...]:
        hit = self.cache.get(token)
        if hit is None:
            ids = [p for w in basic_split(token, lowercase=self.lowercase) for p in self.word_pieces(w)]
            hit = tuple(ids[:MAX_PIECES_PER_TOKEN]) or (self.vocab[UNK],)
            if len(self.cache) < 1_000_000:
                self.cache[token] = hit
        return hit

    def encode(self, tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(piece ids with [CLS] first and [SEP] last, the position of each token's first piece)."""
        ids = [self.vocab[CLS]]
        first = np.empty(len(tokens), dtype=np.int32)
        for i, tok in enumerate(tokens):
            first[i] = len(ids)
            ids.extend(self.token_pieces(tok))
        ids.append(self.vocab[SEP])
        return np.asarray(ids, dtype=np.int32), first
