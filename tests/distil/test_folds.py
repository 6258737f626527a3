"""The GPU benchmark's cross-fitting folds (bench/gpu/folds.py): every fold set covers train + devel exactly once,
each fold's teachers never train on the rows they label, and the halves are the corpus's own splits."""
from __future__ import annotations

import importlib.util

import pytest

from helpers import REPO

# loaded by path: bench/gpu is no package, and putting it on sys.path would shadow modules for the whole worker
_spec = importlib.util.spec_from_file_location("bench_gpu_folds", REPO / "bench" / "gpu" / "folds.py")
assert _spec is not None and _spec.loader is not None
folds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(folds)
fold_names, held_out_rows, split_fold = folds.fold_names, folds.held_out_rows, folds.split_fold


@pytest.mark.parametrize("k", [0, 2, 3, 4, 7])
def test_the_folds_partition_train_plus_devel(k: int) -> None:
    train, devel = [f"t{i}" for i in range(23)], [f"d{i}" for i in range(9)]
    labelled = [*train, *devel]
    labelled_by: dict[str, str] = {}
    for fold in fold_names(k):
        trains_on, labels = split_fold(fold, train, devel)
        assert not set(trains_on) & set(labels) and sorted(trains_on + labels) == sorted(labelled)
        assert labels == [labelled[j] for j in held_out_rows(fold, len(train), len(devel))]
        for s in labels:
            assert s not in labelled_by, (s, fold, labelled_by[s])
            labelled_by[s] = fold
    assert set(labelled_by) == set(labelled)  # every sentence gets targets from exactly one fold
    sizes = [len(held_out_rows(f, len(train), len(devel))) for f in fold_names(k)]
    assert (sizes == [9, 23]) if k == 0 else (max(sizes) - min(sizes) <= 1)  # halves: devel, train


def test_the_halves_are_the_corpus_splits_and_bad_names_are_refused() -> None:
    train, devel = list("abcde"), list("xyz")
    assert split_fold("train", train, devel) == (train, devel)
    assert split_fold("devel", train, devel) == (devel, train)
    for bad in ("0of4", "5of4", "1of1", "test", "2/4"):
        with pytest.raises(ValueError, match="IofK"):
            held_out_rows(bad, 5, 3)
    with pytest.raises(ValueError, match="K >= 2"):
        fold_names(1)
