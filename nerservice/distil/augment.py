"""Synthetic transfer text for distillation: variants of the labelled sentences with mentions and words swapped.

Why: on the text its members were trained on, a teacher's targets are the gold tags (``confidence.py``;
BC5CDR: they differ from gold on 0.10 % of tokens), so a student learns what the teacher knows beyond the
labels only from text the teacher has not seen.  Model compression (Bucilă, Caruana & Niculescu-Mizil 2006,
"MUNGE") made such text by perturbing the training examples.  Here each variant of a labelled sentence
(``distil.augment`` per sentence) swaps

- each gold mention, with probability ``distil.augment_mention_swap``, for a mention of the same type (the
  same tag label, per corpus for a multi-corpus teacher) drawn from all labelled mentions, and
- each word outside the mentions, with probability ``distil.augment_word_swap``, for a word drawn from all
  the labelled words outside mentions (both draws by frequency).

The teacher labels the variants like unlabelled text, and its doubt on them is what the student learns from.
Each variant also carries the tags its construction gives it (a swapped-in mention brings its own tags, a
swapped word outside mentions stays ``O``): its gold path where ``distil.gold_weight`` mixes one in.  A variant
equal to its source sentence is dropped (the teacher's targets there are the gold tags again).
Deterministic for a seed (the student's ``training.seed``), so a resumed run recomputes the same targets.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from nerservice.data import Sentence
from nerservice.data.schemes import spans
from nerservice.text.vocab import HEAD_SEP


def _spans(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """Mentions of IOB2 tags, also of a multi-corpus corpus's namespaced tags ("ncbi|B-Disease")."""
    first = tags[0] if tags else "O"  # a bare tag is "O", "B-..." or "I-..." (its label may hold the separator)
    prefix = "" if first == "O" or first[:2] in ("B-", "I-") else first.split(HEAD_SEP, 1)[0] + HEAD_SEP
    bare = [t[len(prefix):] if prefix and t.startswith(prefix) else t for t in tags]
    return [(a, b, prefix + label) for a, b, label in spans(bare)]


class Variant(NamedTuple):
    tokens: tuple[str, ...]
    tags: tuple[str, ...]  # by construction: the swapped-in mentions' own tags, the source's elsewhere
    source: int  # index of the sentence it was made from


def augment(sentences: Sequence[Sentence], *, copies: int, mention_swap: float, word_swap: float,
            seed: int) -> list[Variant]:
    """``copies`` variants of each sentence, in source order."""
    mentions: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    words: list[str] = []
    parsed = []
    for s in sentences:
        found = _spans(s.tags)
        inside = np.zeros(len(s.tokens), bool)
        for a, b, label in found:
            mentions.setdefault(label, []).append((s.tokens[a:b], s.tags[a:b]))
            inside[a:b] = True
        words.extend(t for t, m in zip(s.tokens, inside) if not m)
        parsed.append((found, inside))
    rng = np.random.default_rng(seed)
    out: list[Variant] = []
    for i, (s, (found, inside)) in enumerate(zip(sentences, parsed)):
        for _ in range(copies):
            tokens: list[str] = []
            tags: list[str] = []
            at = 0
            for a, b, label in [*found, (len(s.tokens), len(s.tokens), "")]:
                for j in range(at, a):  # words outside mentions
                    swap = bool(words) and rng.random() < word_swap
                    tokens.append(words[rng.integers(len(words))] if swap else s.tokens[j])
                    tags.append(s.tags[j])
                if label:
                    pool = mentions[label]
                    m_tokens, m_tags = (pool[rng.integers(len(pool))] if rng.random() < mention_swap
                                        else (s.tokens[a:b], s.tags[a:b]))
                    tokens.extend(m_tokens)
                    tags.extend(m_tags)
                at = b
            variant = tuple(tokens)
            if variant != s.tokens:
                out.append(Variant(variant, tuple(tags), i))
    return out
