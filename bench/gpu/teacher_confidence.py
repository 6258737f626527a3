"""How much a teacher's targets say beyond the gold tags, per kind of text (``distil_gpu.py --target-stats``).

Why: a student distilled from an ensemble on the ensemble's own training text has so far landed at a member's
F1, not the ensemble's (BENCHMARKS.md, sessions 8 and 13).  One explanation: on text its members were trained
on, the ensemble's marginals are almost one-hot at the gold tags — the student is then trained on gold — and
only on other text (the unlabelled corpora) do they carry what the ensemble knows beyond the labels.  These
figures (``nerservice.distil.confidence``, which ``nerservice distil`` also records in a student's lineage) check
that, for each group of sentences and each temperature: ``mean_max`` (mean over tokens of the largest node
marginal; 1.0 = one-hot), ``mean_entropy`` (nats), ``soft_share`` (tokens whose largest marginal is below 0.9),
``entity_share`` (tokens whose most likely tag is not "O") and, for labelled groups, ``argmax_vs_gold`` (tokens whose largest marginal is not the gold tag).  (Session 14's
call AG ran this script's first version, same figures under the names ``share_max_below_0.9`` and
``share_max_below_0.5``.)

Test text is scored only as a reference for what held-out text looks like to the teacher; nothing is chosen
by it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def confidence_stats(predictor: Any, groups: Mapping[str, tuple[Sequence[Sequence[str]], Sequence[Sequence[str]] | None]],
                     temperatures: Sequence[float], *, chunk: int = 4096) -> dict[str, Any]:
    """``groups``: name -> (token lists, tag lists or None).  One forward pass per group; the CRF posteriors
    once per temperature."""
    from nerservice.distil.confidence import confidence
    from nerservice.distil.targets import posteriors, scaled, teacher_emissions

    index = {t: i for i, t in enumerate(predictor.tag_labels)}
    crf = predictor.crf_params()
    out: dict[str, Any] = {}
    for name, (tokens, tags) in groups.items():
        emissions = teacher_emissions(predictor, tokens, chunk=chunk)
        gold = np.concatenate([np.array([index[t] for t in s], np.int64) for s in tags]) if tags else None
        per_t = {}
        for temperature in temperatures:
            node, _ = posteriors([e / temperature for e in emissions], scaled(crf, temperature))
            q = np.concatenate(node)
            per_t[f"T={temperature:g}"] = confidence(q, [slice(0, q.shape[1])], gold)
        out[name] = {"sentences": len(tokens), **per_t}
    return out
