"""``nerservice/error_analysis.py``: the error report adds up to the entity metric, groups by shape and by
seen/unseen, and lists the most missed and falsely found strings in a stable order."""
from __future__ import annotations

import pytest

from nerservice.data import Sentence
from nerservice.error_analysis import MAX_TOP, annotated_strings, error_analysis, shape
from nerservice.metrics import entity_scores


def S(text: str, tags: str) -> Sentence:
    return Sentence(tuple(text.split()), tuple(tags.split()))


@pytest.mark.parametrize("tokens, expected", [
    ("L . whitmani", "abbreviated binomial"), ("Lutzomyia whitmani", "binomial"),
    ("Pileated Woodpecker", "capitalised"), ("cows", "lower-case"), ("Ivory - billed Woodpecker", "other"),
    ("HIV-1", "capitalised"), ("E . coli K12", "abbreviated binomial")])
def test_shapes(tokens: str, expected: str) -> None:
    assert shape(tokens.split()) == expected


def test_the_report_adds_up_to_the_metric_and_splits_seen_from_unseen() -> None:
    train = [S("mice and L . whitmani", "B-Species O B-Species I-Species I-Species")]
    corpus = [S("mice and Pileated Woodpecker", "B-Species O B-Species I-Species"),
              S("the L . whitmani and cows", "O B-Species I-Species I-Species O B-Species"),
              S("Drosophila flies", "O O")]
    predicted = [["B-Species", "O", "O", "O"],
                 ["O", "B-Species", "I-Species", "I-Species", "O", "O"],
                 ["B-Species", "I-Species"]]  # a false positive; and an I- that starts nothing is no entity:
    predicted[0][3] = "I-Species"            # the metric (strict IOB2) does not count it, nor does the report
    report = error_analysis(corpus, predicted, seen=annotated_strings(train))
    groups = report["groups"]
    assert groups["lower-case, seen"] == {"gold": 1, "found": 1, "missed": 0, "false_positives": 0, "recall": 1.0}
    assert groups["capitalised, unseen"]["missed"] == 1 and groups["binomial, unseen"]["false_positives"] == 1
    assert groups["abbreviated binomial, seen"]["found"] == 1
    assert groups["lower-case, unseen"] == {"gold": 1, "found": 0, "missed": 1, "false_positives": 0,
                                            "recall": 0.0}
    metric = entity_scores([list(s.tags) for s in corpus], predicted)["micro"]
    found = sum(g["found"] for g in groups.values())
    assert found / sum(g["gold"] for g in groups.values()) == pytest.approx(metric["recall"])
    assert found / (found + sum(g["false_positives"] for g in groups.values())) == pytest.approx(metric["precision"])
    assert report["missed"] == [["Pileated Woodpecker", 1, 0, "capitalised", "unseen"],
                                ["cows", 1, 0, "lower-case", "unseen"]]  # ties by string: stable
    assert report["false_positives"] == [["Drosophila flies", 1, "binomial", "unseen"]]


def test_without_training_text_seen_is_unknown_and_top_is_bounded() -> None:
    corpus = [S(f"w{i}", "B-X") for i in range(5)]
    report = error_analysis(corpus, [["O"]] * 5, top=2)
    assert set(report["groups"]) == {"lower-case, unknown"} and not report["seen_known"]
    assert len(report["missed"]) == 2
    assert len(error_analysis(corpus, [["O"]] * 5, top=10 ** 9)["missed"]) == 5 and MAX_TOP == 1000
    with pytest.raises(ValueError, match="predicted sentences"):
        error_analysis(corpus, [["O"]] * 4)
