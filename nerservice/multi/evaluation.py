"""Evaluating a multi-corpus model: each corpus against its own head, then the mean over corpora.

A corpus annotates only its own types, so it is scored on the head trained for it (what a single-corpus
model of that corpus would be compared with), not on the merged output of every head.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nerservice.data import Sentence
from nerservice.errors import ConfigError
from nerservice.metrics import evaluate_tags
from nerservice.model.heads import decode_head
from nerservice.text.vocab import MultiTagVocabulary

PER_TYPE_SEP = "/"  # per-type keys of the summary: "<corpus>/<type>"


def evaluate_heads(predictor: Any, corpora: Mapping[str, Sequence[Sentence]]) -> dict[str, Any]:
    """``corpora``: corpus (head) name -> labelled sentences (labels as the model names them)."""
    tags = predictor.vocabs.tags
    if not isinstance(tags, MultiTagVocabulary):
        raise ConfigError("per-corpus evaluation needs a multi-corpus model", hint="evaluate a single model on files")
    unknown = sorted(set(corpora) - set(tags.names))
    if unknown:
        raise ConfigError(f"the model has no head for corpora {unknown}", hint=f"its heads are {tags.names}")
    crf = predictor.crf_params()
    per: dict[str, Any] = {}
    for name, sentences in corpora.items():
        emissions = predictor.emissions([s.tokens for s in sentences])
        pred = decode_head(emissions, crf, tags, name, with_scores=False, batch_size=predictor.batch_size,
                           bucket_size=predictor.bucket_size)
        per[name] = evaluate_tags([list(s.tags) for s in sentences], [t.tags for t in pred])
    return summarize(per)


def summarize(per_corpus: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """``micro`` = the unweighted mean over corpora of each corpus's micro P/R/F1 (what early stopping and
    ``dev_f1`` use: a small corpus counts as much as a large one); per-type figures keyed "corpus/type"."""
    n = max(len(per_corpus), 1)

    def mean(key: str) -> float:
        return sum(float(m["micro"][key]) for m in per_corpus.values()) / n

    micro = {k: mean(k) for k in ("precision", "recall", "f1")}
    micro["support"] = sum(int(m["micro"].get("support", 0)) for m in per_corpus.values())
    token_f1 = sum(float(m["token_level"]["micro"]["f1"]) for m in per_corpus.values()) / n
    return {
        "micro": micro, "mean_over": "corpora",
        "per_type": {f"{c}{PER_TYPE_SEP}{t}": v for c, m in per_corpus.items() for t, v in m["per_type"].items()},
        "per_corpus": dict(per_corpus),
        "tokens": sum(int(m["tokens"]) for m in per_corpus.values()),
        "sentences": sum(int(m["sentences"]) for m in per_corpus.values()),
        "token_level": {"micro": {"f1": token_f1}, "accuracy": sum(
            float(m["token_level"]["accuracy"]) for m in per_corpus.values()) / n},
    }
