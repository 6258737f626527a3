"""Document-level label consistency (``bench/consistency.py``, measured and not adopted: BENCHMARKS.md,
session 21): what the rule adds and what it never touches, so the measured figures mean what they say."""
from __future__ import annotations

import importlib.util
import sys

import pytest

from helpers import REPO

# loaded by path: bench is no package
_spec = importlib.util.spec_from_file_location("bench_consistency", REPO / "bench" / "consistency.py")
assert _spec is not None and _spec.loader is not None
consistency = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = consistency  # its dataclasses look their module up there
_spec.loader.exec_module(consistency)
Added, harmonize = consistency.Added, consistency.harmonize


def doc(*lines: str) -> tuple[list[list[str]], list[list[str]]]:
    """'token/TAG token ...' per sentence; a bare token is O."""
    tokens, tags = [], []
    for line in lines:
        pairs = [w.rsplit("/", 1) if "/" in w else (w, "O") for w in line.split()]
        tokens.append([t for t, _ in pairs])
        tags.append([g for _, g in pairs])
    return tokens, tags


def test_a_name_tagged_in_most_places_is_tagged_everywhere() -> None:
    tokens, tags = doc("the pileated/B-Species woodpecker/I-Species nests", "pileated/B-Species woodpecker/I-Species calls",
                       "we saw a pileated woodpecker .")
    out, added = harmonize(tokens, tags, min_share=0.5)
    assert out[2] == ["O", "O", "O", "B-Species", "I-Species", "O"]
    assert out[:2] == tags[:2]
    assert added == [Added(2, 3, 5, "Species", ((0, 1, 3), (1, 0, 2)))]


def test_below_the_share_nothing_is_added_and_nothing_is_ever_removed() -> None:
    tokens, tags = doc("mice/B-Species were used", "mice and rats", "the mice", "mice died")
    out, added = harmonize(tokens, tags, min_share=0.5)  # 1 of 4 occurrences tagged
    assert out == tags and added == []
    out, added = harmonize(tokens, tags, min_share=0.25)
    assert [row[0] if i != 2 else row[1] for i, row in enumerate(out)] == ["B-Species"] * 4
    assert len(added) == 3


def test_overlaps_and_nested_occurrences_are_left_alone() -> None:
    # "woodpecker" alone is tagged once; its occurrence inside the tagged "pileated woodpecker" is part of that
    # name (not counted, not relabelled), and an occurrence that a predicted entity overlaps stays as predicted.
    tokens, tags = doc("woodpecker/B-Species", "pileated/B-Species woodpecker/I-Species", "woodpecker",
                       "ivory/B-Chemical woodpecker/I-Chemical")
    out, added = harmonize(tokens, tags, min_share=0.5)
    assert out[1] == tags[1] and out[3] == tags[3]
    assert out[2] == ["B-Species"]
    assert [(a.sentence, a.label) for a in added] == [(2, "Species")]


def test_the_majority_label_wins_and_ties_are_deterministic() -> None:
    tokens, tags = doc("HIV/B-Species", "HIV/B-Disease", "HIV/B-Species", "HIV")
    out, _ = harmonize(tokens, tags, min_share=0.25)
    assert out[3] == ["B-Species"] and out[1] == ["B-Disease"]  # the disagreeing prediction is kept
    tokens, tags = doc("HIV/B-Species", "HIV/B-Disease", "HIV", "HIV")
    assert harmonize(tokens, tags, min_share=0.25)[0][2] == ["B-Disease"]  # 1:1, the label that sorts first


def test_longer_names_first_and_multi_token_boundaries() -> None:
    tokens, tags = doc("A./B-Species suum/I-Species eggs", "suum/B-Species", "A. suum larvae", "suum")
    out, _ = harmonize(tokens, tags, min_share=0.5)
    assert out[2] == ["B-Species", "I-Species", "O"]  # the two-token name, not "suum" alone inside it
    assert out[3] == ["B-Species"]


def test_long_entities_do_not_vote_and_bad_input_is_refused() -> None:
    tokens, tags = doc("a/B-X b/I-X c/I-X", "a b c")
    assert harmonize(tokens, tags, max_tokens=2)[0] == tags
    assert harmonize(tokens, tags, max_tokens=3)[0][1] == ["B-X", "I-X", "I-X"]
    with pytest.raises(ValueError, match="sentences"):
        harmonize(tokens, tags[:1])
    with pytest.raises(ValueError, match="tags"):
        harmonize([["a", "b"]], [["O"]])
    with pytest.raises(ValueError, match="min_share"):
        harmonize(tokens, tags, min_share=0.0)
    assert harmonize([], []) == ([], [])
