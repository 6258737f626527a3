"""Evaluation as plain functions returning dicts (spaCy's scorer habit).

Entity level: seqeval in strict IOB2 mode — an entity counts only if its type and both boundaries match. This
is what papers report. Tag level (``tag_level``): per-token precision/recall/F1 for every IOB tag (B-X and I-X
are separate labels), ``O`` excluded, micro- and macro-averaged over those tags -- exactly what Spark NLP's
NerDL logs during training ("Micro-average prec/rec/f1"), so users can compare with its numbers. Token level
(``token_level``): the same with the B-/I- prefixes stripped (a B-X predicted as I-X counts as right), plus
tag accuracy. Both are reported beside the entity figures and labelled so nobody compares them with entity F1
by accident: they are typically several points higher.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol


class TagsPredictor(Protocol):
    def predict_tags(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]: ...


class LabelledSentence(Protocol):
    @property
    def tokens(self) -> Sequence[str]: ...

    @property
    def tags(self) -> Sequence[str]: ...


def _prf(tp: int, n_pred: int, n_gold: int) -> dict[str, float]:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f}


# Every figure below is a function of per-sentence counts that add up over any split of a corpus, keyed
# (kind, label, stat): kind "entity" (strict IOB2 entities per type), "tag" (per IOB tag, "O" included),
# "token" (per prefix-free type); stat "tp" / "pred" / "gold"; plus ("corpus", "", "sentences" | "tokens" |
# "correct"). So the shards of a corpus can be counted apart and summed (``training/sharded_eval.py``).
Counts = Counter[tuple[str, str, str]]
STATS = ("tp", "pred", "gold")
CORPUS_STATS = ("sentences", "tokens", "correct")


def count_tags(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> Counts:
    """The counts every score of ``evaluate_tags`` is computed from."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold vs {len(pred)} predicted sentences")
    for i, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold vs {len(p)} predicted tags")
    c: Counts = Counter()
    c["corpus", "", "sentences"] += len(gold)
    for g_sent, p_sent in zip(gold, pred):
        for g, p in zip(g_sent, p_sent):
            c["corpus", "", "tokens"] += 1
            c["corpus", "", "correct"] += g == p
            c["tag", g, "gold"] += 1
            c["tag", p, "pred"] += 1
            c["tag", g, "tp"] += g == p
            gl, pl = (g[2:] if g != "O" else "O"), (p[2:] if p != "O" else "O")
            if gl != "O":
                c["token", gl, "gold"] += 1
                c["token", gl, "tp"] += gl == pl
            if pl != "O":
                c["token", pl, "pred"] += 1
    # Entities are per sentence, so their counts add up over sentences too.
    ents_g = {(i, *e) for i, sent in enumerate(strict_entities(gold)) for e in sent}
    ents_p = {(i, *e) for i, sent in enumerate(strict_entities(pred)) for e in sent}
    for ents, stat in ((ents_g, "gold"), (ents_p, "pred"), (ents_g & ents_p, "tp")):
        for _, _, _, label in ents:
            c["entity", label, stat] += 1
    return +c  # zero counts dropped: a label exists where something was counted for it


def strict_entities(tags: Sequence[Sequence[str]]) -> list[set[tuple[int, int, str]]]:
    """(start, end_exclusive, label) per sentence, by seqeval's own entity extraction in strict IOB2 (an entity
    starts with B-; an ``I-X`` that starts nothing is no entity): what every entity figure here counts."""
    from seqeval.scheme import IOB2, Entities

    out: list[set[tuple[int, int, str]]] = [set() for _ in tags]
    for sent in Entities([list(t) for t in tags], IOB2).entities:
        for e in sent:
            out[e.sent_id].add((e.start, e.end, e.tag))
    return out


def _labels(c: Counts, kind: str, stats: Sequence[str] = ("pred", "gold")) -> list[str]:
    return sorted({label for k, label, stat in c if k == kind and stat in stats and c[k, label, stat]})


def _prf_of(c: Counts, kind: str, labels: Sequence[str]) -> dict[str, float]:
    return _prf(*(sum(c[kind, lab, stat] for lab in labels) for stat in STATS))


def entity_scores_of(c: Counts) -> dict[str, Any]:
    """Strict IOB2 entity P/R/F1, micro and per type: what seqeval's ``precision_recall_fscore_support``
    (mode="strict", scheme=IOB2, zero_division=0) gives, from counts."""
    labels = _labels(c, "entity")
    per_type = {lab: {**_prf_of(c, "entity", [lab]), "support": c["entity", lab, "gold"]} for lab in labels}
    micro = {**_prf_of(c, "entity", labels), "support": sum(c["entity", lab, "gold"] for lab in labels)}
    return {"micro": micro, "per_type": per_type}


def token_scores_of(c: Counts) -> dict[str, Any]:
    labels = _labels(c, "token")
    per_type = {lab: {**_prf_of(c, "token", [lab]), "support": c["token", lab, "gold"]} for lab in labels}
    micro = {**_prf_of(c, "token", labels), "support": sum(c["token", lab, "gold"] for lab in labels)}
    total = c["corpus", "", "tokens"]
    return {"micro": micro, "per_type": per_type, "accuracy": c["corpus", "", "correct"] / total if total else 0.0}


def tag_scores_of(c: Counts) -> dict[str, Any]:
    labels = [lab for lab in _labels(c, "tag") if lab != "O"]
    per_tag = {lab: {**_prf_of(c, "tag", [lab]), "support": c["tag", lab, "gold"]} for lab in labels}
    micro = {**_prf_of(c, "tag", labels), "support": sum(c["tag", lab, "gold"] for lab in labels)}
    mp = sum(s["precision"] for s in per_tag.values()) / len(labels) if labels else 0.0
    mr = sum(s["recall"] for s in per_tag.values()) / len(labels) if labels else 0.0
    macro = {"precision": mp, "recall": mr, "f1": 2 * mp * mr / (mp + mr) if mp + mr else 0.0}
    return {"micro": micro, "macro": macro, "per_tag": per_tag}


def scores_of(c: Counts) -> dict[str, Any]:
    """``evaluate_tags``' dict from (summed) counts."""
    ent = entity_scores_of(c)
    return {
        "micro": ent["micro"],
        "per_type": ent["per_type"],
        "tokens": c["corpus", "", "tokens"],
        "sentences": c["corpus", "", "sentences"],
        "tag_level": tag_scores_of(c),
        "token_level": token_scores_of(c),
    }


def entity_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Strict IOB2 entity P/R/F1, micro and per type (seqeval's entities and formulas)."""
    return entity_scores_of(count_tags(gold, pred))


def token_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Token-level P/R/F1 over entity tokens (prefix-free labels), micro and per type, and tag accuracy."""
    return token_scores_of(count_tags(gold, pred))


def tag_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, Any]:
    """NerDL's logged figure: per IOB tag (B-X, I-X), ``O`` excluded; micro over those tags' counts and
    macro as NerDL computes it (F1 of the mean precision and mean recall over the tags)."""
    return tag_scores_of(count_tags(gold, pred))


def evaluate_tags(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Everything we report for one corpus: entity (strict, the headline), NerDL's tag level, token level."""
    return scores_of(count_tags(gold, pred))


def evaluate_predictor(predictor: TagsPredictor, corpus: Sequence[LabelledSentence]) -> dict[str, Any]:
    """``evaluate_tags`` of a predictor's tags for ``corpus`` against its gold tags."""
    pred = predictor.predict_tags([list(s.tokens) for s in corpus])
    return evaluate_tags([list(s.tags) for s in corpus], pred)
