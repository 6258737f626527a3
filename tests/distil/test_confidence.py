"""How soft a teacher's targets are (``nerservice/distil/confidence.py``): figures checked by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from nerservice.distil.confidence import by_source, confidence, describe_confidence, split_confidence


def test_one_hot_and_uniform_targets() -> None:
    one_hot = np.eye(3, dtype=np.float32)[[0, 1, 2, 0]]
    c = confidence(one_hot, [slice(0, 3)], gold=np.array([0, 1, 2, 1]))
    assert c == {"tokens": 4, "mean_max": 1.0, "mean_entropy": 0.0, "soft_share": 0.0, "entity_share": 0.5,
                 "argmax_vs_gold": 0.25}  # tags 1 and 2 of four tokens are entity tags ("O" is column 0)
    uniform = np.full((5, 3), 1 / 3, np.float32)
    c = confidence(uniform, [slice(0, 3)])
    assert c["mean_entropy"] == pytest.approx(math.log(3), abs=1e-5)
    assert c["mean_max"] == pytest.approx(1 / 3, abs=1e-6) and c["soft_share"] == 1.0 and "argmax_vs_gold" not in c
    assert c["entity_share"] == 0.0  # a tie goes to the first column, "O"


def test_each_head_block_is_its_own_distribution() -> None:
    # two heads (columns 0-2 and 3-4): token 0 sure on both, token 1 sure on head 0 and 50/50 on head 1
    node = np.array([[1, 0, 0, 0, 1], [0, 1, 0, 0.5, 0.5]], np.float32)
    c = confidence(node, [slice(0, 3), slice(3, 5)], gold=np.array([0, 4]))
    assert c["mean_max"] == pytest.approx((1 + 1 + 1 + 0.5) / 4)
    assert c["soft_share"] == 0.25 and c["mean_entropy"] == pytest.approx(math.log(2) / 4, abs=1e-6)
    # gold 0 is head 0's (argmax 0: right), gold 4 head 1's (argmax of [0.5, 0.5] is column 3: wrong)
    assert c["argmax_vs_gold"] == 0.5
    # block argmaxes: head 0 O, B; head 1 its column 1 (an entity tag), its O (the tie): 2 of 4
    assert c["entity_share"] == 0.5


def test_split_between_labelled_and_unlabelled_sentences() -> None:
    sure = np.eye(3, dtype=np.float32)[[0, 1, 0]]
    soft = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1]], np.float32)
    offsets = np.array([0, 2, 3, 5])  # sentences of 2, 1 and 2 tokens; the first two labelled
    groups = [("labelled", 2), ("augmented", 0), ("unlabelled", 1)]
    s = split_confidence(np.concatenate([sure, soft]), offsets, groups, [slice(0, 3)])
    assert "augmented" not in s  # an empty group is left out
    assert s["labelled"]["tokens"] == 3 and s["labelled"]["soft_share"] == 0.0
    assert s["unlabelled"]["tokens"] == 2 and s["unlabelled"]["soft_share"] == 1.0
    assert s["unlabelled"]["mean_max"] == pytest.approx(0.65)
    assert s["labelled"]["entity_share"] == pytest.approx(1 / 3) and s["unlabelled"]["entity_share"] == 0.5
    line = describe_confidence(s)
    assert "labelled text 0.00 %" in line and "unlabelled text 100.00 %" in line
    assert "unlabelled text 100.00 % (mean max 0.6500; 50.00 % of tokens tagged as entities)" in line
    only = split_confidence(sure, np.array([0, 2, 3]), [("labelled", 2), ("unlabelled", 0)], [slice(0, 3)])
    assert "unlabelled" not in only and "--unlabelled text (real, not yet seen by the teacher) is where" in describe_confidence(only)


def test_by_source_pools_each_files_sentences() -> None:
    # sentences: a labelled one (not counted), then a.tsv, b.tsv, a.tsv again (pooled with the first a.tsv)
    o, b_ = [1, 0, 0], [0, 1, 0]
    unary = np.array([o, b_, o, o, b_, b_, o], np.float32)
    offsets = np.array([0, 2, 3, 5, 7])
    per = by_source(unary, offsets, 1, ["a.tsv", "b.tsv", "a.tsv"], [slice(0, 3)])
    assert list(per) == ["a.tsv", "b.tsv"]
    assert per["a.tsv"]["tokens"] == 3 and per["a.tsv"]["entity_share"] == pytest.approx(1 / 3)  # O; B, O
    assert per["b.tsv"]["tokens"] == 2 and per["b.tsv"]["entity_share"] == 0.5  # O, B
