"""Seeded train/dev/test assignment by a stable hash of the sentence's content.

The same sentence (tokens and tags) lands in the same split on every machine, in every run and
whatever the partitioning, because the hash is SHA-256 — never Python's per-process salted ``hash()``.
Exact duplicates therefore share a split, so they cannot leak from train into test.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

from nerservice.errors import ConfigError

SPLITS = ("train", "dev", "test")


def parse_ratios(spec: str | Sequence[float]) -> tuple[float, ...]:
    """``"0.8,0.1,0.1"`` → (0.8, 0.1, 0.1): 2 or 3 non-negative ratios (train, dev[, test]) summing to 1."""
    try:
        ratios = tuple(float(x) for x in (spec.split(",") if isinstance(spec, str) else spec))
    except ValueError:
        raise ConfigError(f"split ratios {spec!r} are not numbers", hint="e.g. --split 0.8,0.1,0.1") from None
    if len(ratios) not in (2, 3) or any(not math.isfinite(r) or r < 0 for r in ratios):
        raise ConfigError(f"split ratios {spec!r}: need 2 or 3 non-negative numbers (train,dev[,test])",
                          hint="e.g. --split 0.8,0.1,0.1")
    if abs(sum(ratios) - 1.0) > 1e-6 or ratios[0] <= 0 or ratios[1] <= 0:
        raise ConfigError(f"split ratios {spec!r} must sum to 1 with train and dev > 0", hint="e.g. 0.8,0.1,0.1")
    return ratios


def sentence_unit(tokens: Sequence[str], tags: Sequence[str], *, seed: int) -> float:
    """A number in [0, 1) fixed by the seed and the sentence's tokens and tags."""
    h = hashlib.sha256(f"{seed}\x1d".encode())
    h.update("\x1f".join(tokens).encode("utf-8"))
    h.update(b"\x1e")
    h.update("\x1f".join(tags).encode("utf-8"))
    return int.from_bytes(h.digest()[:8], "big") / 2.0**64


def assign_split(tokens: Sequence[str], tags: Sequence[str], *, ratios: Sequence[float], seed: int) -> str:
    u = sentence_unit(tokens, tags, seed=seed)
    edge = 0.0
    for name, ratio in zip(SPLITS, ratios):
        edge += ratio
        if u < edge:
            return name
    return SPLITS[len(ratios) - 1]  # float rounding at the top edge
