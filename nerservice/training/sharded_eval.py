"""Dev evaluation split over the data-parallel workers (issue 19: a fixed cost that did not shrink with N).

Worker ``rank`` decodes sentences ``rank::world`` and counts them (``metrics.count_tags``: every score we
report is a function of per-sentence counts that add up); the workers then *sum* one small vector of those
counts with the collective their gradients use (``training/collective.py``: one all-reduce of a few hundred
integers, milliseconds) and score the sum. So every worker gets the same metrics (early stopping agrees) and
they are the metrics one process computes on the whole dev set. The layout of the vector comes from the tags
that can occur (the model's tag set and dev's gold tags, the same on every worker), so it has one length
everywhere. Until session 6 the shards' predicted tags were all-gathered through Spark's barrier
``allGather`` instead, which polls once a second: >= 1 s per epoch that did not shrink with N.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from nerservice.data import Sentence
from nerservice.errors import DistributedError
from nerservice.metrics import CORPUS_STATS, STATS, Counts, count_tags, scores_of
from nerservice.training.collective import AllSum


def count_layout(labels: Iterable[str]) -> list[tuple[str, str, str]]:
    """Every key ``count_tags`` can produce when gold and predicted tags are among ``labels``, in one order."""
    tags = sorted(set(labels) | {"O"})
    # Entity types as seqeval's ``Token`` parses them (``tag[1:].strip("-") or "_"``: "B-X" -> "X", "B" -> "_"),
    # plus the prefix-free labels the token-level counts use ("B-X" -> "X").
    types = sorted({t[2:] for t in tags if t != "O"} | {t[1:].strip("-") or "_" for t in tags if t != "O"})
    keys = [("corpus", "", s) for s in CORPUS_STATS]
    keys += [("tag", t, s) for t in tags for s in STATS]
    keys += [(kind, t, s) for kind in ("entity", "token") for t in types for s in STATS]
    return keys


def to_vector(counts: Counts, layout: Sequence[tuple[str, str, str]]) -> np.ndarray:
    stray = set(counts) - set(layout)
    if stray:
        raise DistributedError(f"sharded evaluation counted labels outside the agreed tag set: {sorted(stray)[:5]}",
                               hint="gold and predicted tags must be among the model's tags and dev's gold tags")
    return np.array([counts[k] for k in layout], dtype=np.int64)


def from_vector(vector: np.ndarray, layout: Sequence[tuple[str, str, str]]) -> Counts:
    if vector.shape != (len(layout),):
        raise DistributedError(f"sharded evaluation summed a vector of shape {vector.shape}, expected "
                               f"({len(layout)},)")
    return Counts({k: int(v) for k, v in zip(layout, vector) if v})


def sharded_evaluator(predictor: Any, corpus: Sequence[Sentence], *, rank: int, world: int, all_sum: AllSum,
                      labels: Iterable[str]) -> dict[str, Any]:
    """``evaluate_predictor(predictor, corpus)``, each rank decoding only ``corpus[rank::world]``. Every rank
    must call it at the same point with the same ``labels`` (the tags that can occur)."""
    mine = list(corpus[rank::world])
    pred = predictor.predict_tags([s.tokens for s in mine]) if mine else []
    layout = count_layout([*labels, *(t for s in corpus for t in s.tags)])
    total = all_sum(to_vector(count_tags([list(s.tags) for s in mine], pred), layout))
    counts = from_vector(np.asarray(total), layout)
    if counts["corpus", "", "sentences"] != len(corpus):
        raise DistributedError(f"sharded evaluation counted {counts['corpus', '', 'sentences']} sentences from "
                               f"{world} ranks for a dev set of {len(corpus)}",
                               hint="every rank must hold the same dev set")
    return scores_of(counts)
