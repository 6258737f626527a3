"""How soft a teacher's targets are: what a student can learn beyond the gold tags, per kind of text.

A student learns from the teacher's *distribution*; where that distribution is one-hot at the gold tag the
student is trained on gold and nothing more.  On BC5CDR (BENCHMARKS.md, session 14) a 3-model ensemble's
targets on its members' own training text disagreed with gold on 0.10 % of tokens and were below 0.9
confidence on 0.35 % — against 3.2 % on unlabelled text of other corpora — so what the ensemble knows beyond
the labels reaches the student almost only through unlabelled text.  ``distil`` records these figures in the
student's lineage and prints them, so a user sees how much the unlabelled text carries.

Every head's block of columns is a distribution of its own (multi-corpus teachers): figures pool tokens x
heads.  ``entity_share`` — tokens whose most likely tag is not "O" (a block's first column, ``TagVocabulary``)
— says how much of a text the teacher calls an entity, which softness alone does not: two teachers of equal
softness on the unlabelled text can tag different tokens there (BENCHMARKS.md, sessions 31-32).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

SOFT_BELOW = 0.9  # a token whose largest marginal is below this counts as "soft"


def confidence(node: np.ndarray, blocks: Sequence[slice], gold: np.ndarray | None = None) -> dict[str, Any]:
    """``node``: (tokens, K) marginals, each block of columns summing to 1 per token (or all-zero: a head
    without targets there is skipped); ``gold``: (tokens,) tag ids, the share whose block's argmax differs."""
    tops, entropies, wrong, tagged = [], [], [], []
    for cols in blocks:
        q = node[:, cols]
        live = q.sum(axis=1) > 0.5
        q = q[live]
        tops.append(q.max(axis=1))
        entropies.append(-(q * np.log(np.clip(q, 1e-12, 1.0))).sum(axis=1))
        tagged.append(q.argmax(axis=1) != 0)  # column 0 of every block is its "O"
        if gold is not None:
            g = gold[live]
            mine = (g >= cols.start) & (g < cols.stop)  # a gold tag belongs to one head's block
            wrong.append(q[mine].argmax(axis=1) + cols.start != g[mine])
    top, entropy, entity = np.concatenate(tops), np.concatenate(entropies), np.concatenate(tagged)
    out: dict[str, Any] = {"tokens": int(node.shape[0]),
                           "mean_max": round(float(top.mean()), 6) if top.size else None,
                           "mean_entropy": round(float(entropy.mean()), 6) if entropy.size else None,
                           "soft_share": round(float((top < SOFT_BELOW).mean()), 6) if top.size else None,
                           "entity_share": round(float(entity.mean()), 6) if entity.size else None}
    if gold is not None:
        flags = np.concatenate(wrong)
        out["argmax_vs_gold"] = round(float(flags.mean()), 6) if flags.size else None
    return out


def split_confidence(unary: np.ndarray, offsets: np.ndarray, groups: Sequence[tuple[str, int]],
                     blocks: Sequence[slice]) -> dict[str, Any]:
    """The targets of consecutive groups of sentences (name, how many), e.g. labelled then unlabelled text;
    empty groups are left out."""
    out: dict[str, Any] = {"soft_below": SOFT_BELOW}
    first = 0
    for name, count in groups:
        if count:
            a, b = int(offsets[first]), int(offsets[first + count])
            out[name] = confidence(unary[a:b], blocks)
        first += count
    return out


def by_source(unary: np.ndarray, offsets: np.ndarray, first: int, sources: Sequence[str],
              blocks: Sequence[slice]) -> dict[str, Any]:
    """``confidence`` per source file of sentences ``first``, ``first + 1``, ... (``sources[k]`` names
    sentence ``first + k``'s file): unlabelled text from several corpora is where teachers differ (what each
    tags in a gene corpus' text is not what it tags in a disease corpus'), and one pooled figure hides that."""
    spans: dict[str, list[np.ndarray]] = {}
    for k, source in enumerate(sources):
        a, b = int(offsets[first + k]), int(offsets[first + k + 1])
        spans.setdefault(source, []).append(unary[a:b])
    return {source: confidence(np.concatenate(rows), blocks) for source, rows in spans.items()}


def describe_confidence(soft: dict[str, Any]) -> str:
    """One line for the console: where the targets carry more than the gold tags."""
    def part(name: str) -> str:
        c = soft[name]
        return (f"{name} text {100 * c['soft_share']:.2f} % (mean max {c['mean_max']:.4f}; "
                f"{100 * c['entity_share']:.2f} % of tokens tagged as entities)")
    parts = [part(n) for n in soft if n != "soft_below" and soft[n]["soft_share"] is not None]
    alone = set(soft) <= {"soft_below", "labelled"}
    return (f"soft targets (largest marginal < {soft['soft_below']:g}): " + "; ".join(parts)
            + (" — no other text: on its own training text a teacher's targets are close to the gold tags; "
               "--unlabelled text (real, not yet seen by the teacher) is where a student learns more" if alone else ""))
