"""Entity-level (seqeval strict IOB2), NerDL tag-level and token-level scores on hand-made examples."""
from __future__ import annotations

import pytest

from nerservice.metrics import entity_scores, evaluate_tags, tag_scores, token_scores

GOLD = [["B-D", "I-D", "O", "B-C"],
        ["O", "B-C", "I-C", "O", "B-D"]]


def test_perfect_prediction() -> None:
    s = entity_scores(GOLD, GOLD)
    assert s["micro"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 4}
    assert set(s["per_type"]) == {"C", "D"}
    assert s["per_type"]["D"]["support"] == 2


def test_boundary_errors_count_as_wrong() -> None:
    pred = [["B-D", "O", "O", "B-C"],  # D too short
            ["O", "B-C", "I-C", "I-C", "B-D"]]  # C too long
    s = entity_scores(GOLD, pred)
    # correct: C (sentence 1), D (sentence 2) → 2 of 4 predicted, 2 of 4 gold
    assert s["micro"]["precision"] == pytest.approx(0.5)
    assert s["micro"]["recall"] == pytest.approx(0.5)
    assert s["micro"]["f1"] == pytest.approx(0.5)
    assert s["per_type"]["D"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}
    assert s["per_type"]["C"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}


def test_type_errors_count_as_wrong_per_type() -> None:
    pred = [["B-C", "I-C", "O", "B-C"],  # right span, wrong type
            ["O", "B-C", "I-C", "O", "O"]]  # D missed
    s = entity_scores(GOLD, pred)
    assert s["micro"]["precision"] == pytest.approx(2 / 3)
    assert s["micro"]["recall"] == pytest.approx(2 / 4)
    assert s["per_type"]["D"]["recall"] == 0.0 and s["per_type"]["D"]["precision"] == 0.0
    assert s["per_type"]["C"]["precision"] == pytest.approx(2 / 3)
    assert s["per_type"]["C"]["recall"] == 1.0


def test_strict_mode_rejects_entities_that_start_with_i() -> None:
    """conlleval would accept I-D I-D as an entity; strict IOB2 (what we report) does not."""
    gold = [["B-D", "I-D", "O"]]
    pred = [["I-D", "I-D", "O"]]
    s = entity_scores(gold, pred)
    assert s["micro"]["f1"] == 0.0
    from seqeval.metrics import f1_score  # the lenient default, for contrast

    assert f1_score(gold, pred) == 1.0


def test_all_outside_gives_zero_without_crashing() -> None:
    s = entity_scores([["O", "O"]], [["O", "O"]])
    assert s["micro"]["f1"] == 0.0 and s["per_type"] == {}
    s = entity_scores([["O", "O"]], [["B-D", "O"]])  # only false positives
    assert s["micro"]["precision"] == 0.0 and s["per_type"]["D"]["support"] == 0


def test_mismatched_lengths_are_errors() -> None:
    with pytest.raises(ValueError, match="sentences"):
        entity_scores(GOLD, GOLD[:1])
    with pytest.raises(ValueError, match="sentence 1"):
        entity_scores(GOLD, [GOLD[0], GOLD[1][:-1]])


def test_token_level_scores() -> None:
    pred = [["B-D", "O", "O", "B-C"],
            ["O", "B-C", "B-C", "O", "B-C"]]
    t = token_scores(GOLD, pred)
    # entity tokens: gold D×3, C×3; pred D×1, C×4; prefixes are ignored, so B-C B-C on a C span is right
    assert t["per_type"]["D"]["support"] == 3
    assert t["per_type"]["D"]["precision"] == 1.0
    assert t["per_type"]["D"]["recall"] == pytest.approx(1 / 3)
    assert t["per_type"]["C"]["precision"] == pytest.approx(3 / 4)
    assert t["per_type"]["C"]["recall"] == 1.0
    assert t["micro"]["precision"] == pytest.approx(4 / 5)
    assert t["micro"]["recall"] == pytest.approx(4 / 6)
    assert t["accuracy"] == pytest.approx(6 / 9)  # exact tag matches, prefixes included
    # The same prediction is worse at entity level: the split C span counts as two wrong entities.
    assert entity_scores(GOLD, pred)["micro"]["f1"] < t["micro"]["f1"]


def test_evaluate_tags_labels_both_levels() -> None:
    out = evaluate_tags(GOLD, GOLD)
    assert set(out) == {"micro", "per_type", "tokens", "sentences", "tag_level", "token_level"}
    assert out["tokens"] == 9 and out["sentences"] == 2
    assert set(out["micro"]) == {"precision", "recall", "f1", "support"}
    assert set(out["token_level"]) == {"micro", "per_type", "accuracy"}
    assert set(out["tag_level"]) == {"micro", "macro", "per_tag"}
    assert out["tag_level"]["micro"]["f1"] == 1.0


def test_tag_scores_count_iob_tags_like_nerdl() -> None:
    """NerDL's logged figure: B-X and I-X are separate labels, O is excluded (hand-counted here)."""
    pred = [["B-D", "O", "O", "B-C"],
            ["O", "B-C", "B-C", "O", "B-C"]]
    t = tag_scores(GOLD, pred)
    assert set(t["per_tag"]) == {"B-C", "B-D", "I-C", "I-D"}
    # B-D: gold 2, pred 1, tp 1.  I-D: gold 1, pred 0.  B-C: gold 2, pred 4, tp 2.  I-C: gold 1, pred 0.
    assert t["per_tag"]["B-C"]["precision"] == pytest.approx(2 / 4) and t["per_tag"]["B-C"]["recall"] == 1.0
    assert t["per_tag"]["B-D"]["recall"] == pytest.approx(1 / 2) and t["per_tag"]["B-D"]["precision"] == 1.0
    assert t["per_tag"]["I-D"]["recall"] == 0.0 and t["per_tag"]["I-D"]["support"] == 1
    assert t["micro"]["precision"] == pytest.approx(3 / 5) and t["micro"]["recall"] == pytest.approx(3 / 6)
    assert t["micro"]["support"] == 6
    mp, mr = (1 + 0 + 0.5 + 0) / 4, (0.5 + 0 + 1 + 0) / 4
    assert t["macro"]["f1"] == pytest.approx(2 * mp * mr / (mp + mr))
    # A B-C tagged I-C is wrong here (unlike token_level), so this figure is stricter than token level.
    assert t["micro"]["f1"] < token_scores(GOLD, pred)["micro"]["f1"]


def test_entity_scores_equal_seqeval_strict_on_random_tags() -> None:
    """The entity figures are computed from counts (so dev shards can be summed, training/sharded_eval.py);
    seqeval's own strict-IOB2 scores are the reference, on tag soup with I- tags that start no entity."""
    import random

    from seqeval.metrics.v1 import precision_recall_fscore_support
    from seqeval.scheme import IOB2, Entities

    rng = random.Random(0)
    tags = ["O", "O", "B-A", "I-A", "B-B", "I-B", "B-C", "I-C"]
    for _ in range(300):
        gold = [[rng.choice(tags) for _ in range(rng.randint(1, 6))] for _ in range(rng.randint(1, 5))]
        pred = [[rng.choice(tags) if rng.random() < 0.5 else t for t in s] for s in gold]
        names = sorted(Entities(gold, IOB2).unique_tags | Entities(pred, IOB2).unique_tags)
        s = entity_scores(gold, pred)
        if not names:
            assert s["per_type"] == {} and s["micro"]["support"] == 0
            continue
        p, r, f, n = precision_recall_fscore_support(gold, pred, average=None, mode="strict", scheme=IOB2,
                                                     zero_division=0)
        assert s["per_type"] == {k: {"precision": float(a), "recall": float(b), "f1": float(c), "support": int(d)}
                                 for k, a, b, c, d in zip(names, p, r, f, n)}
        mp, mr, mf, _ = precision_recall_fscore_support(gold, pred, average="micro", mode="strict", scheme=IOB2,
                                                        zero_division=0)
        assert s["micro"] == {"precision": float(mp), "recall": float(mr), "f1": float(mf), "support": int(sum(n))}


def test_a_type_seen_only_in_orphan_i_tags_gets_no_entity_row() -> None:
    """Before session 6 the per-type rows were seqeval's scores zipped with the types of *all* tags, so an
    ``I-A`` that starts no entity shifted every row: C's miss was reported under A."""
    s = entity_scores([["O", "I-A", "O"]], [["B-C", "I-A", "O"]])
    assert s["per_type"] == {"C": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}}
