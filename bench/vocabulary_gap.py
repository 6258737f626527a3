"""What a saved model loses on text it was not built beside: words that are in no corpus file it saw are
<unk> unless its vocabulary keeps them (``model.vector_vocabulary``).

A benchmark run passes ``--test`` to ``nerservice train``, so the test file's words that have a pretrained
vector join the vocabulary — the test F1 it prints is what a user gets only on text whose word list was
given at training.  This script scores saved models on a test file as if their vocabulary had been built
from train + dev and the first N words of the vectors file (N = each ``--top``; 0 = the vocabulary of a
model trained with ``--train``/``--dev`` only, the pre-session-22 product).  Exact, not an approximation:
rows for words the training text never shows are frozen vectors that never reach a gradient, so the
network is the same whichever of them the vocabulary holds (session 22 checked it: a run with the
400k-word vocabulary reproduced the with-``--test`` run's losses and F1 bit for bit).

  python bench/vocabulary_gap.py --corpus C/linnaeus --model RUN1 RUN2 ... --top 0 50000 100000 200000
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from itertools import islice
from pathlib import Path
from typing import Any


def restricted(loaded: Any, keep: set[str]) -> Any:
    """``loaded`` with every vocabulary word outside ``keep`` mapped to <unk> (ids and weights unchanged:
    a word is renamed to a string no token normalises to, so its row is never looked up)."""
    from nerservice.text.vocab import Vocabulary

    items = [w if w in keep else f"\x00not-kept-{i}" for i, w in enumerate(loaded.vocabs.words.items)]
    vocabs = dataclasses.replace(loaded.vocabs, words=Vocabulary(items))
    return dataclasses.replace(loaded, vocabs=vocabs)


def corpus_words(paths: list[Path]) -> set[str]:
    from nerservice.data import read_corpus
    from nerservice.text.vocab import normalize_word

    return {normalize_word(t) for p in paths for s in read_corpus(p).sentences for t in s.tokens}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, type=Path, help="folder with train.tsv, devel.tsv (or dev.tsv), test.tsv")
    ap.add_argument("--model", nargs="+", required=True, help="training output folders or model folders")
    ap.add_argument("--top", nargs="+", type=int, default=[0, 50_000, 100_000, 200_000])
    ap.add_argument("--embeddings", default="glove-6b-50d")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()

    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.resolve import resolve_dir
    from nerservice.data import read_corpus
    from nerservice.embeddings import vector_words
    from nerservice.metrics import evaluate_predictor

    dev = next(p for p in (args.corpus / "devel.tsv", args.corpus / "dev.tsv") if p.exists())
    seen = corpus_words([args.corpus / "train.tsv", dev])
    test = read_corpus(args.corpus / "test.tsv").sentences
    head = list(islice(vector_words(args.embeddings), max(args.top)))
    rows: dict[str, list[float]] = {}
    for model in args.model:
        loaded = load_model(resolve_dir(model))
        for n in args.top:
            f1 = evaluate_predictor(restricted(loaded, seen | set(head[:n])).predictor(), test)["micro"]["f1"]
            rows.setdefault(f"train+dev words + top {n:,}", []).append(100 * f1)
        f1 = evaluate_predictor(loaded.predictor(), test)["micro"]["f1"]
        rows.setdefault("as saved (with --test at training)", []).append(100 * f1)
    print(f"{args.corpus.name} test, entity F1 per model ({len(args.model)}) and mean")
    for name, f1s in rows.items():
        print(f"  {name:<40} {' / '.join(f'{x:.2f}' for x in f1s)}   mean {statistics.mean(f1s):.2f}")
    if args.json:
        args.json.write_text(json.dumps({"corpus": str(args.corpus), "models": args.model, "f1": rows}, indent=2))


if __name__ == "__main__":
    main()
