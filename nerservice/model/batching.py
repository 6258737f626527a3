"""Length-bucketed batching: sentences of similar length share a batch, so padding (wasted LSTM steps)
stays small, and the time axis is rounded up to ``bucket_size`` so few distinct shapes reach the compiler."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def bucketed_batches(lengths: Sequence[int], *, batch_size: int, bucket_size: int, seed: int | None,
                     token_budget: int | None = None) -> list[np.ndarray]:
    """Index arrays, one per batch. With a seed the order inside buckets and of batches is shuffled
    reproducibly (numpy PCG64 seeded from config — never Python's salted hash)."""
    lens = np.asarray(lengths, dtype=np.int64)
    if lens.size == 0:
        return []
    rng = np.random.default_rng(seed) if seed is not None else None
    order = np.arange(lens.size)
    if rng is not None:
        order = rng.permutation(lens.size)
    # Stable sort by rounded length keeps the shuffled order inside each bucket.
    keys = -(-lens[order] // bucket_size)
    order = order[np.argsort(keys, kind="stable")]
    batches: list[np.ndarray] = []
    start = 0
    while start < order.size:
        end = min(start + batch_size, order.size)
        if token_budget is not None:
            # Cap padded tokens per batch (inference on very long sentences).
            longest = 0
            for j in range(start, end):
                longest = max(longest, int(lens[order[j]]))
                if longest * (j - start + 1) > token_budget and j > start:
                    end = j
                    break
        batches.append(order[start:end])
        start = end
    if rng is not None:
        perm = rng.permutation(len(batches))
        batches = [batches[i] for i in perm]
    return batches
