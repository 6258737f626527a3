"""The document-level post-processes of ``bench/doc_postprocess.py`` (measured and not adopted: BENCHMARKS.md,
session 21): what label consistency adds and never touches, which abbreviation definitions are found and what
they change, so the measured figures mean what they say."""
from __future__ import annotations

import importlib.util
import sys

import pytest

from helpers import REPO

# loaded by path: bench is no package
_spec = importlib.util.spec_from_file_location("bench_doc_postprocess", REPO / "bench" / "doc_postprocess.py")
assert _spec is not None and _spec.loader is not None
post = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = post  # its dataclasses look their module up there
_spec.loader.exec_module(post)
Added, harmonize = post.Added, post.harmonize


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


def test_definitions_follow_schwartz_and_hearst() -> None:
    def pairs(text: str) -> list[tuple[str, str]]:
        t = text.split()
        return [(" ".join(t[a:b]), " ".join(t[c:d])) for a, b, c, d in post.definitions(t)]

    assert pairs("patients with spinocerebellar ataxia type 1 ( SCA1 ) were") == [
        ("spinocerebellar ataxia type 1", "SCA1")]
    assert pairs("the adenomatous polyposis coli ( APC ) gene") == [("adenomatous polyposis coli", "APC")]
    assert pairs("myotonic dystrophy ( DM ) is") == []  # D-M cannot be matched right to left in order
    assert pairs("a dose ( 10 mg ) of") == []  # no capital letter: not an abbreviation
    assert pairs("unclosed ( SCA1 and more words") == []


def test_a_defined_short_form_takes_its_long_forms_label_or_loses_one() -> None:
    tokens = [["spinocerebellar", "ataxia", "type", "1", "(", "SCA1", ")", "patients"], ["SCA1", "is", "rare"],
              ["the", "adenomatous", "polyposis", "coli", "(", "APC", ")", "gene"], ["APC", "mutations"]]
    tags = [["B-Disease", "I-Disease", "I-Disease", "I-Disease", "O", "O", "O", "O"], ["O", "O", "O"],
            ["O"] * 8, ["B-Disease", "O"]]
    out, added, removed = post.resolve(tokens, tags, remove=False)
    assert out[0][5] == "B-Disease" and out[1][0] == "B-Disease" and added == 2 and removed == 0
    assert out[3] == ["B-Disease", "O"]  # "add" never removes
    out, added, removed = post.resolve(tokens, tags, remove=True)
    assert out[3] == ["O", "O"] and removed == 1  # APC's long form is no entity here
