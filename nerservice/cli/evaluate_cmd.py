"""nerservice evaluate"""
from __future__ import annotations

import argparse
import json

from nerservice.cli.common import add_corpus_options, print_scores, read, resolve_model_dir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="entity-level P/R/F1 of a model on a labelled corpus",
                       description="Evaluate a saved model (folder, training output folder, or store reference "
                       "like name@production) on corpus file(s).")
    p.add_argument("model", help="model folder or store reference")
    p.add_argument("corpus", nargs="+", help="labelled corpus file(s)")
    p.add_argument("--json", action="store_true",
                   help='print {"micro": {...}, "per_type": {...}, "tokens": n, ...} as JSON')
    add_corpus_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nerservice.saved_model import load_model
    from nerservice.training.trainer import evaluator

    corpus = read(args.corpus, args)
    loaded = load_model(resolve_model_dir(args.model))
    metrics = evaluator(loaded.predictor(), corpus.sentences)
    if args.json:
        print(json.dumps(metrics, indent=2))
    else:
        print_scores(" ".join(args.corpus), metrics)
    return 0
