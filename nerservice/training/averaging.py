"""Weight averaging over the last epochs (``training.average_epochs``), a tail form of stochastic weight
averaging: the model that is evaluated on dev and saved is the mean of the trainable weights at the ends
of the last k epochs, while training itself continues from the raw weights.

Why: on these small corpora dev/test F1 of single epoch-end weights moves by ±1 point from epoch to epoch
and from seed to seed (bench/results/gpu.md); the mean of nearby points on the trajectory is flatter and
selection on dev is less of a lottery.  Epoch-end snapshots (not a per-step EMA) keep it backend- and
distribution-neutral: every worker holds identical weights at an epoch end, so every worker averages the
same numbers on the host, and no optimizer internals are involved.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np


class WeightAverager:
    def __init__(self, epochs: int) -> None:
        self.epochs = epochs
        self._snapshots: deque[list[np.ndarray]] = deque(maxlen=max(epochs, 1))

    @property
    def enabled(self) -> bool:
        return self.epochs > 1

    def push(self, model: Any) -> None:
        if self.enabled:
            self._snapshots.append([np.array(v.numpy(), copy=True) for v in model.trainable_variables])

    def __len__(self) -> int:
        return len(self._snapshots)

    def mean(self) -> list[np.ndarray]:
        return [np.mean(np.stack(parts), axis=0) for parts in zip(*self._snapshots)]

    @contextmanager
    def applied(self, model: Any) -> Iterator[None]:
        """Inside: the model's trainable variables hold the average; after: the raw weights again."""
        if not self.enabled or len(self._snapshots) < 2:
            yield
            return
        variables = model.trainable_variables
        raw = [np.array(v.numpy(), copy=True) for v in variables]
        for v, value in zip(variables, self.mean()):
            v.assign(value)
        try:
            yield
        finally:
            for v, value in zip(variables, raw):
                v.assign(value)
