"""Cross-fitting folds: K contiguous blocks of the labelled text (train + dev, in corpus order).

A fold's teachers train on every other block and label their own, which they never saw.  Blocks are
contiguous, not shuffled, so the sentences of one abstract stay together (the corpora mark no abstract
boundaries: each of the K-1 block edges may cut one abstract).  Sizes differ by at most one sentence.
"""
from __future__ import annotations

from nerservice.errors import ConfigError

MAX_FOLDS = 10  # each fold costs a teacher ensemble on (K-1)/K of the text


def held_out_blocks(n: int, k: int) -> list[range]:
    """The K blocks of rows 0..n-1 (block i: rows i*n//k .. (i+1)*n//k - 1); together they cover every row once."""
    if not 2 <= k <= MAX_FOLDS:
        raise ConfigError(f"cross-fitting folds: {k}; need 2 to {MAX_FOLDS}",
                          hint="2 = two halves (each fold's teachers train on half the labelled text)")
    if n < k:
        raise ConfigError(f"{n} labelled sentences cannot make {k} cross-fitting folds")
    return [range(i * n // k, (i + 1) * n // k) for i in range(k)]


def fold_name(i: int, k: int) -> str:
    """Fold i (0-based) of k as written in folder names and lineage: '1of2'."""
    return f"{i + 1}of{k}"
