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


def entity_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Strict IOB2 entity P/R/F1, micro and per type (seqeval)."""
    from seqeval.metrics.sequence_labeling import get_entities  # noqa: F401  (import check)
    from seqeval.metrics.v1 import precision_recall_fscore_support
    from seqeval.scheme import IOB2

    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold vs {len(pred)} predicted sentences")
    for i, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold vs {len(p)} predicted tags")
    gold_l, pred_l = [list(s) for s in gold], [list(s) for s in pred]
    per_type: dict[str, Any] = {}
    micro = {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    if any(t != "O" for s in gold_l for t in s) or any(t != "O" for s in pred_l for t in s):
        p, r, f, s = precision_recall_fscore_support(gold_l, pred_l, average=None, mode="strict", scheme=IOB2,
                                                     zero_division=0)
        labels = sorted({t[2:] for sent in gold_l + pred_l for t in sent if t != "O"})
        for label, pi, ri, fi, si in zip(labels, p, r, f, s):
            per_type[label] = {"precision": float(pi), "recall": float(ri), "f1": float(fi), "support": int(si)}
        mp, mr, mf, _ = precision_recall_fscore_support(gold_l, pred_l, average="micro", mode="strict",
                                                        scheme=IOB2, zero_division=0)
        micro = {"precision": float(mp), "recall": float(mr), "f1": float(mf), "support": int(sum(s))}
    return {"micro": micro, "per_type": per_type}


def token_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Token-level P/R/F1 over entity tokens (prefix-free labels), micro and per type, and tag accuracy."""
    tp: Counter[str] = Counter()
    n_pred: Counter[str] = Counter()
    n_gold: Counter[str] = Counter()
    correct = total = 0
    for g_sent, p_sent in zip(gold, pred):
        for g, p in zip(g_sent, p_sent):
            gl, pl = (g[2:] if g != "O" else "O"), (p[2:] if p != "O" else "O")
            total += 1
            correct += g == p
            if gl != "O":
                n_gold[gl] += 1
            if pl != "O":
                n_pred[pl] += 1
            if gl != "O" and gl == pl:
                tp[gl] += 1
    labels = sorted(set(n_gold) | set(n_pred))
    per_type = {lab: {**_prf(tp[lab], n_pred[lab], n_gold[lab]), "support": n_gold[lab]} for lab in labels}
    micro = {**_prf(sum(tp.values()), sum(n_pred.values()), sum(n_gold.values())), "support": sum(n_gold.values())}
    return {"micro": micro, "per_type": per_type, "accuracy": correct / total if total else 0.0}


def tag_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, Any]:
    """NerDL's logged figure: per IOB tag (B-X, I-X), ``O`` excluded; micro over those tags' counts and
    macro as NerDL computes it (F1 of the mean precision and mean recall over the tags)."""
    tp: Counter[str] = Counter()
    n_pred: Counter[str] = Counter()
    n_gold: Counter[str] = Counter()
    for g_sent, p_sent in zip(gold, pred):
        for g, p in zip(g_sent, p_sent):
            n_gold[g] += 1
            n_pred[p] += 1
            tp[g] += g == p
    labels = sorted((set(n_gold) | set(n_pred)) - {"O"})
    per_tag = {lab: {**_prf(tp[lab], n_pred[lab], n_gold[lab]), "support": n_gold[lab]} for lab in labels}
    micro = {**_prf(sum(tp[lab] for lab in labels), sum(n_pred[lab] for lab in labels),
                    sum(n_gold[lab] for lab in labels)), "support": sum(n_gold[lab] for lab in labels)}
    mp = sum(s["precision"] for s in per_tag.values()) / len(labels) if labels else 0.0
    mr = sum(s["recall"] for s in per_tag.values()) / len(labels) if labels else 0.0
    macro = {"precision": mp, "recall": mr, "f1": 2 * mp * mr / (mp + mr) if mp + mr else 0.0}
    return {"micro": micro, "macro": macro, "per_tag": per_tag}


def evaluate_tags(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Everything we report for one corpus: entity (strict, the headline), NerDL's tag level, token level."""
    ent = entity_scores(gold, pred)
    return {
        "micro": ent["micro"],
        "per_type": ent["per_type"],
        "tokens": sum(len(s) for s in gold),
        "sentences": len(gold),
        "tag_level": tag_scores(gold, pred),
        "token_level": token_scores(gold, pred),
    }


def evaluate_predictor(predictor: TagsPredictor, corpus: Sequence[LabelledSentence]) -> dict[str, Any]:
    """``evaluate_tags`` of a predictor's tags for ``corpus`` against its gold tags."""
    pred = predictor.predict_tags([list(s.tokens) for s in corpus])
    return evaluate_tags([list(s.tags) for s in corpus], pred)
