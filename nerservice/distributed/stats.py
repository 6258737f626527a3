"""Corpus statistics that merge: computed per partition on the executors, combined on the way back.

A ``CorpusStats`` counts sentences, tokens, entities per type, characters and sentence lengths, and keeps
the distinct tokens / normalised words / characters as sets (NER corpora have 10^4-10^6 distinct words, a
few MB) so vocabulary sizes are exact after merging.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nerservice.data.schemes import spans
from nerservice.text.vocab import normalize_word

# Sentence-length histogram: bucket lower edges (tokens); the last bucket is open-ended.
LENGTH_EDGES = (1, 6, 11, 21, 31, 41, 51, 76, 101, 151, 201)


def length_bucket(n: int) -> str:
    if n < LENGTH_EDGES[0]:
        return "0"
    for lo, hi in zip(LENGTH_EDGES, LENGTH_EDGES[1:]):
        if n < hi:
            return f"{lo}-{hi - 1}"
    return f"{LENGTH_EDGES[-1]}+"


@dataclass
class CorpusStats:
    sentences: int = 0
    tokens: int = 0
    chars: int = 0
    max_length: int = 0
    entities: Counter = field(default_factory=Counter)
    lengths: Counter = field(default_factory=Counter)
    tags: Counter = field(default_factory=Counter)
    vocab: set = field(default_factory=set)
    words: set = field(default_factory=set)  # normalize_word() forms: the model's word vocabulary
    charset: set = field(default_factory=set)

    def add(self, tokens: Sequence[str], tags: Sequence[str]) -> "CorpusStats":
        self.sentences += 1
        self.tokens += len(tokens)
        self.max_length = max(self.max_length, len(tokens))
        self.lengths[length_bucket(len(tokens))] += 1
        for tok in tokens:
            self.chars += len(tok)
            self.vocab.add(tok)
            self.words.add(normalize_word(tok))
            self.charset.update(tok)
        self.tags.update(tags)
        for _, _, label in spans(tags):
            self.entities[label] += 1
        return self

    def merge(self, other: "CorpusStats") -> "CorpusStats":
        self.sentences += other.sentences
        self.tokens += other.tokens
        self.chars += other.chars
        self.max_length = max(self.max_length, other.max_length)
        self.entities.update(other.entities)
        self.lengths.update(other.lengths)
        self.tags.update(other.tags)
        self.vocab |= other.vocab
        self.words |= other.words
        self.charset |= other.charset
        return self

    def to_dict(self) -> dict[str, Any]:
        order = {length_bucket(lo): i for i, lo in enumerate((0,) + LENGTH_EDGES)}
        return {
            "sentences": self.sentences,
            "tokens": self.tokens,
            "entities": dict(sorted(self.entities.items())),
            "entity_total": sum(self.entities.values()),
            "tags": dict(sorted(self.tags.items())),
            "vocab_size": len(self.vocab),
            "word_vocab_size": len(self.words),
            "char_vocab_size": len(self.charset),
            "chars": self.chars,
            "mean_length": round(self.tokens / self.sentences, 3) if self.sentences else 0.0,
            "max_length": self.max_length,
            "length_histogram": dict(sorted(self.lengths.items(), key=lambda kv: order.get(kv[0], 99))),
        }


def add_row(stats: CorpusStats, row: dict[str, Any]) -> CorpusStats:
    """aggregateByKey seqOp: fold a sentence row (``tokens``, ``tags``) into the stats."""
    return stats.add(row["tokens"], row["tags"])


def merge(a: CorpusStats, b: CorpusStats) -> CorpusStats:
    return a.merge(b)
