"""Cross-fitting folds of a corpus's labelled text (train + devel, in that order) for the GPU benchmarks.

A fold's teachers train on part of that text and label the rest, which they never saw:

- ``train`` / ``devel``: the corpus's own halves (session 18): a ``train`` fold's teachers train on train only and
  label devel; a ``devel`` fold's the reverse.
- ``IofK`` (``1of4`` .. ``4of4``): K contiguous blocks of train + devel with about equal sentence counts; fold I's
  teachers train on every other block (a fraction (K-1)/K of the text) and label block I.  The corpora mark no
  abstract boundaries, so a block edge may cut one abstract: at most K-1 abstracts have sentences on both sides.

``bench/gpu/train_gpu.py --fold NAME`` trains such a teacher; ``bench/gpu/distil_gpu.py`` gives each fold's
ensemble the rows it labels (``nerservice.distil.run.FoldTeacher``).
"""
from __future__ import annotations

import re
from typing import Sequence, TypeVar

from nerservice.distil.folds import held_out_blocks  # the product's blocks (`nerservice train --distil`)

T = TypeVar("T")
HALVES = ("train", "devel")


def fold_names(k: int) -> tuple[str, ...]:
    """The folds that together cover train + devel: the corpus's halves (k = 0) or K blocks."""
    if k == 0:
        return HALVES
    if k < 2:
        raise ValueError(f"K-fold cross-fitting needs K >= 2, not {k}")
    return tuple(f"{i}of{k}" for i in range(1, k + 1))


def held_out_rows(fold: str, n_train: int, n_devel: int) -> range:
    """Rows of train + devel that the fold's teachers never see (and label)."""
    if fold == "train":
        return range(n_train, n_train + n_devel)
    if fold == "devel":
        return range(0, n_train)
    m = re.fullmatch(r"([1-9][0-9]*)of([1-9][0-9]*)", fold)
    if not m or not 1 <= int(m[1]) <= int(m[2]) or int(m[2]) < 2:
        raise ValueError(f"fold {fold!r}: train, devel or IofK with 1 <= I <= K, K >= 2")
    return held_out_blocks(n_train + n_devel, int(m[2]))[int(m[1]) - 1]


def split_fold(fold: str, train: Sequence[T], devel: Sequence[T]) -> tuple[list[T], list[T]]:
    """(what the fold's teachers train on, what they label: their held-out dev), each in corpus order."""
    rows = held_out_rows(fold, len(train), len(devel))
    labelled = [*train, *devel]
    return ([s for j, s in enumerate(labelled) if j not in rows], [labelled[j] for j in rows])
