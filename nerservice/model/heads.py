"""Decoding a multi-corpus model: each head on its own tag columns, then all heads' entities as one answer.

One forward pass gives emissions for every head's columns; each head is decoded exactly (Viterbi +
marginals) with its own block of the CRF. The heads' entities are then merged by one deterministic rule:

  1. every head proposes its spans, each with a score = the mean marginal probability of its tags;
  2. candidates are taken in order of score (highest first), then length (longest first), then the head's
     place in the corpora config, then start offset; a candidate that overlaps (shares a token with) a span
     already taken is dropped — so two heads finding the same span with the same (merged) label give one
     entity, and where heads disagree on boundaries or type the more confident reading wins;
  3. the result is written back as one IOB2 tag sequence; a token outside every kept span scores the least
     confident of the heads' ``O`` marginals there.

Marginals are always computed for a model with several heads (the rule needs them), whatever
``with_scores`` says.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nerservice.data.schemes import spans
from nerservice.model.decode import CrfParams, Tagged, decode_emissions
from nerservice.text.vocab import MultiTagVocabulary


def head_crf(crf: CrfParams, cols: slice) -> CrfParams:
    return CrfParams(transitions=crf.transitions[cols, cols], start=crf.start[cols], end=crf.end[cols])


def decode_head(emissions: Sequence[np.ndarray], crf: CrfParams, tags: MultiTagVocabulary, name: str, *,
                with_scores: bool, batch_size: int, bucket_size: int) -> list[Tagged]:
    """One head's tags (its own, renamed labels: ``B-Disease``), as a single-corpus model would give them."""
    cols, vocab = tags.head(name)
    return decode_emissions([e[:, cols] for e in emissions], head_crf(crf, cols), vocab.tag, with_scores=with_scores,
                            batch_size=batch_size, bucket_size=bucket_size)


def decode_merged(emissions: Sequence[np.ndarray], crf: CrfParams, tags: MultiTagVocabulary, *, with_scores: bool,
                  batch_size: int, bucket_size: int) -> list[Tagged]:
    scores = with_scores or len(tags.heads) > 1
    per_head = [decode_head(emissions, crf, tags, name, with_scores=scores, batch_size=batch_size,
                            bucket_size=bucket_size) for name in tags.names]
    return [merge_heads([h[i] for h in per_head]) for i in range(len(emissions))]


def merge_heads(tagged: Sequence[Tagged]) -> Tagged:
    """The rule of the module docstring, for one sentence decoded by every head (in head order)."""
    n = len(tagged[0].tags)
    candidates = []
    for h, t in enumerate(tagged):
        for s, e, label in spans(t.tags):
            score = float(sum(t.scores[s:e]) / (e - s))
            candidates.append((-score, -(e - s), h, s, e, label))
    candidates.sort()
    taken = np.zeros(n, dtype=bool)
    out_tags = ["O"] * n
    out_scores = [min((t.scores[i] for t in tagged if t.tags[i] == "O"), default=1.0) for i in range(n)]
    for _, _, h, s, e, label in candidates:
        if taken[s:e].any():
            continue
        taken[s:e] = True
        out_tags[s:e] = [f"B-{label}"] + [f"I-{label}"] * (e - s - 1)
        out_scores[s:e] = tagged[h].scores[s:e]
    return Tagged(out_tags, [float(x) for x in out_scores])
