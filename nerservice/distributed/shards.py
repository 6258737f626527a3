"""What "each worker reads its own shard" means here, in numbers.

Every worker holds the same training sentences and builds the same seeded global batch plan
(``nerservice.training.loop.epoch_plan``); worker ``rank`` trains on ``global_batch[rank::world]`` of every
global batch and the gradients are summed across workers before clipping.  So the shards partition every
global batch, the union of the workers' updates is exactly the single-process update, and changing the
number of workers changes speed, not the model.  (Static per-worker file shards would change which
sentences meet in a batch, and so the result, with the worker count.)
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nerservice.config import NerConfig


def shard_of_epoch(lengths: Sequence[int], config: NerConfig, *, epoch: int, rank: int, world: int,
                   plan: list[Any] | None = None) -> dict[str, Any]:
    """Sentences, tokens and steps worker ``rank`` trains on in ``epoch`` (0-based); ``plan``: that epoch's
    global batches when they are not ``epoch_plan``'s (multi-corpus training)."""
    from nerservice.training.loop import epoch_plan

    plan = plan if plan is not None else epoch_plan(lengths, config, epoch, world)
    mine = [int(i) for batch in plan for i in batch[rank::world]]
    return {"steps": len(plan), "sentences": len(mine), "tokens": int(sum(lengths[i] for i in mine)),
            "global_sentences": int(sum(len(b) for b in plan))}

