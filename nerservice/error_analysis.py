"""Where a model's entity errors are (``nerservice evaluate --errors``): recall split by whether a mention's
string was annotated in the training text and by its surface shape, and the strings missed or falsely
found most often.

Why: one F1 figure hides what a biomedical team needs to decide next. On linnaeus, a default model recalls
99.9 % of test mentions whose exact string is annotated in train and 10-59 % of those it never saw, and five
unseen names (each repeated through one or two documents) are 181 of its 284 misses (BENCHMARKS.md,
session 21) — more data or a dictionary for those names moves the figure; a new optimiser setting does not.

Shapes, on the corpus's own tokens: "abbreviated binomial" (``L . whitmani``), "binomial" (``Lutzomyia
whitmani``: a capitalised word, then a lower-case one), "capitalised" (every word with letters starts with a
capital), "lower-case" (no capital letter), "other". A mention is "seen" when its exact token string is
annotated (any type) in the training sentences given; without them every group is "unknown". Pure functions
over tags: no model, no I/O.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from nerservice.metrics import strict_entities

DEFAULT_TOP = 20
MAX_TOP = 1000  # strings listed per kind: a bound on the report, whatever the corpus


class Labelled(Protocol):
    @property
    def tokens(self) -> Sequence[str]: ...

    @property
    def tags(self) -> Sequence[str]: ...


def shape(tokens: Sequence[str]) -> str:
    if len(tokens) >= 3 and re.fullmatch(r"[A-Z]", tokens[0]) and tokens[1] == "." and tokens[2][:1].islower():
        return "abbreviated binomial"
    if len(tokens) >= 2 and tokens[0][:1].isupper() and tokens[0][1:].islower() and tokens[1][:1].islower():
        return "binomial"
    words = [t for t in tokens if any(c.isalpha() for c in t)]  # punctuation and numbers do not decide
    if words and all(w[:1].isupper() for w in words):
        return "capitalised"
    if words and not any(c.isupper() for w in words for c in w):
        return "lower-case"
    return "other"


def annotated_strings(sentences: Iterable[Labelled]) -> set[str]:
    """Every annotated mention's token string (space-joined), any type."""
    sentences = list(sentences)
    return {" ".join(s.tokens[a:b]) for s, ents in zip(sentences, strict_entities([s.tags for s in sentences]))
            for a, b, _ in ents}


def error_analysis(corpus: Sequence[Labelled], predicted: Sequence[Sequence[str]], *,
                   seen: set[str] | None = None, top: int = DEFAULT_TOP) -> dict[str, Any]:
    """``predicted``: IOB2 tags per sentence of ``corpus``. Returns ``groups`` (per "shape, seen" group:
    gold, found, missed, recall, false_positives), and the ``top`` strings ``missed`` (string, times missed,
    times found, shape, seen) and ``false_positives`` (string, count, shape, seen)."""
    if len(predicted) != len(corpus):
        raise ValueError(f"{len(predicted)} predicted sentences for {len(corpus)} labelled ones")
    top = max(0, min(top, MAX_TOP))
    found: Counter[str] = Counter()
    missed: Counter[str] = Counter()
    false: Counter[str] = Counter()
    shape_of: dict[str, str] = {}
    gold_of, pred_of = strict_entities([s.tags for s in corpus]), strict_entities(predicted)
    for sentence, gold, pred in zip(corpus, gold_of, pred_of):
        for a, b, label in gold | pred:
            text = " ".join(sentence.tokens[a:b])
            shape_of.setdefault(text, shape(sentence.tokens[a:b]))
            if (a, b, label) not in gold:
                false[text] += 1
            elif (a, b, label) in pred:
                found[text] += 1
            else:
                missed[text] += 1

    def seen_as(text: str) -> str:
        return "unknown" if seen is None else ("seen" if text in seen else "unseen")

    groups: dict[str, dict[str, Any]] = {}
    for kind, counts in (("found", found), ("missed", missed), ("false_positives", false)):
        for text, n in counts.items():
            row = groups.setdefault(f"{shape_of[text]}, {seen_as(text)}",
                                    {"gold": 0, "found": 0, "missed": 0, "false_positives": 0})
            row[kind] += n
    for row in groups.values():
        row["gold"] = row["found"] + row["missed"]
        row["recall"] = row["found"] / row["gold"] if row["gold"] else None
    order = sorted(groups, key=lambda k: (-groups[k]["gold"], -groups[k]["false_positives"], k))
    return {
        "seen_known": seen is not None,
        "groups": {k: groups[k] for k in order},
        "missed": [[t, n, found[t], shape_of[t], seen_as(t)] for t, n in sorted(missed.items(), key=_most)[:top]],
        "false_positives": [[t, n, shape_of[t], seen_as(t)] for t, n in sorted(false.items(), key=_most)[:top]],
    }


def _most(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]  # most frequent first, ties by string: the same report every run
