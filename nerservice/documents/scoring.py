"""Document-level evaluation: strict character-offset P/R/F1 per type, what the BioCreative and PubTator
evaluation tools report.  A predicted mention counts only when document id, label and every offset
equal a gold mention's; identifiers are not compared (that is normalisation, not NER)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from nerservice.documents.model import Document

Key = tuple[str, str, tuple[tuple[int, int], ...]]  # (document, label, spans)


def _keys(docs: Sequence[Document]) -> set[Key]:
    return {(d.id, a.label, a.spans) for d in docs for a in d.annotations}


def _prf(tp: int, n_pred: int, n_gold: int) -> dict[str, Any]:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0, "support": n_gold,
            "predicted": n_pred, "tp": tp}


def score_documents(gold: Sequence[Document], pred: Sequence[Document]) -> dict[str, Any]:
    g_ids, p_ids = [d.id for d in gold], [d.id for d in pred]
    if sorted(g_ids) != sorted(p_ids):
        missing = sorted(set(g_ids) ^ set(p_ids))[:5]
        raise ValueError(f"gold and predicted documents differ (e.g. {missing})")
    g, p = _keys(gold), _keys(pred)
    tp = g & p
    labels = sorted({k[1] for k in g | p})
    def count(keys: set[Any]) -> Counter[Any]:
        return Counter(k[1] for k in keys)

    cg, cp, ct = count(g), count(p), count(tp)
    return {"micro": _prf(len(tp), len(p), len(g)),
            "per_type": {lab: _prf(ct[lab], cp[lab], cg[lab]) for lab in labels},
            "documents": len(gold)}
