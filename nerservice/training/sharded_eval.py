"""Dev evaluation split over the data-parallel workers (issue 19: a fixed cost that did not shrink with N).

Every worker used to decode the whole dev set after every epoch, so N workers spent N times the work for one
answer, and at 8 workers that evaluation was a large share of the epoch (BENCHMARKS.md, "How training
scales"). Now worker ``rank`` decodes sentences ``rank::world``, the predicted tags are all-gathered (through
the barrier task's ``allGather``, passed in as ``gather``) and every worker scores the reassembled dev set:
the same metrics on every worker (so early stopping agrees) and the same metrics as one process computes.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from nerservice.data import Sentence
from nerservice.errors import DistributedError
from nerservice.metrics import evaluate_tags

Gather = Callable[[str], list[str]]  # every rank's message, in rank order


def sharded_predictions(tokens: Sequence[Sequence[str]], predict: Callable[[list[Sequence[str]]], list[list[str]]],
                        *, rank: int, world: int, gather: Gather) -> list[list[str]]:
    """Predicted tags for every sentence, each rank having decoded only ``tokens[rank::world]``."""
    mine = predict(list(tokens[rank::world])) if len(tokens) > rank else []
    parts = [json.loads(m) for m in gather(json.dumps(mine))]
    if len(parts) != world or any(len(p) != len(tokens[r::world]) for r, p in enumerate(parts)):
        raise DistributedError(f"sharded evaluation got {[len(p) for p in parts]} predictions from {world} ranks "
                               f"for {len(tokens)} sentences")
    out: list[list[str]] = []
    for i in range(len(tokens)):
        out.append(parts[i % world][i // world])
    return out


def sharded_evaluator(predictor: Any, corpus: Sequence[Sentence], *, rank: int, world: int,
                      gather: Gather) -> dict[str, Any]:
    pred = sharded_predictions([s.tokens for s in corpus], predictor.predict_tags, rank=rank, world=world,
                               gather=gather)
    return evaluate_tags([list(s.tags) for s in corpus], pred)
