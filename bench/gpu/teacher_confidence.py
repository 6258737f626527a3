"""How much a teacher's targets say beyond the gold tags, per kind of text (``distil_gpu.py --target-stats``).

Why: a student distilled from an ensemble on the ensemble's own training text has so far landed at a member's
F1, not the ensemble's (BENCHMARKS.md, sessions 8 and 13).  One explanation: on text its members were trained
on, the ensemble's marginals are almost one-hot at the gold tags — the student is then trained on gold — and
only on other text (the unlabelled corpora) do they carry what the ensemble knows beyond the labels.  These
figures check that, for each group of sentences and each temperature:

- ``mean_max``: mean over tokens of the largest node marginal (1.0 = one-hot everywhere);
- ``mean_entropy``: mean node-marginal entropy in nats;
- ``share_max_below_0.9`` / ``_0.5``: tokens whose target is that soft;
- ``argmax_vs_gold``: share of tokens whose largest marginal is not the gold tag (labelled groups only).

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
    from nerservice.distil.targets import posteriors, scaled, teacher_emissions

    labels = list(predictor.tag_labels)
    index = {t: i for i, t in enumerate(labels)}
    crf = predictor.crf_params()
    out: dict[str, Any] = {}
    for name, (tokens, tags) in groups.items():
        emissions = teacher_emissions(predictor, tokens, chunk=chunk)
        gold = np.concatenate([np.array([index[t] for t in s], np.int64) for s in tags]) if tags else None
        per_t: dict[str, Any] = {}
        for temperature in temperatures:
            node, _ = posteriors([e / temperature for e in emissions], scaled(crf, temperature))
            q = np.concatenate(node)
            top = q.max(axis=1)
            entropy = -(q * np.log(np.clip(q, 1e-12, 1.0))).sum(axis=1)
            row: dict[str, Any] = {"mean_max": float(top.mean()), "mean_entropy": float(entropy.mean()),
                                   "share_max_below_0.9": float((top < 0.9).mean()),
                                   "share_max_below_0.5": float((top < 0.5).mean())}
            if gold is not None:
                row["argmax_vs_gold"] = float((q.argmax(axis=1) != gold).mean())
            per_t[f"T={temperature:g}"] = row
        out[name] = {"sentences": len(tokens), "tokens": int(sum(len(s) for s in tokens)), **per_t}
    return out
