"""nerservice evaluate"""
from __future__ import annotations

import argparse
import json
from typing import Any

from nerservice.artifacts.resolve import resolve_dir
from nerservice.cli.common import add_corpus_options, print_corpus_scores, print_scores, read
from nerservice.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="entity-level P/R/F1 of a model on a labelled corpus",
                       description="Evaluate a saved model (folder, training output folder, or store reference "
                       "like name@production) on corpus file(s).")
    p.add_argument("model", help="model folder or store reference")
    p.add_argument("corpus", nargs="*", help="labelled corpus file(s) or folders (BRAT): token-per-line or documents")
    p.add_argument("--corpora", metavar="FILE", help="a multi-corpus model: the corpora config; reports each "
                   "corpus (on its own head) per type, and the mean over corpora")
    p.add_argument("--split", default="test", choices=["train", "dev", "test"], help="with --corpora: which split")
    p.add_argument("--head", help="a multi-corpus model on corpus file(s): score this corpus's head only")
    p.add_argument("--json", action="store_true",
                   help='print {"micro": {...}, "per_type": {...}, "tokens": n, ...} as JSON')
    add_corpus_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nerservice.artifacts.formats import load_model
    from nerservice.metrics import evaluate_predictor

    if bool(args.corpus) == bool(args.corpora):
        raise ConfigError("evaluate needs corpus file(s) or --corpora FILE (one of the two)")
    loaded = load_model(resolve_dir(args.model))
    if args.corpora or args.head:
        from nerservice.multi.evaluation import evaluate_heads

        if args.corpora:
            sets = split_sets(args.corpora, args.split, lenient=args.lenient)
        else:
            sets = {args.head: read(args.corpus, args).sentences}
        metrics = evaluate_heads(loaded.predictor(), sets)
        print(json.dumps(metrics, indent=2)) if args.json else print_corpus_scores(args.split, metrics)
        return 0
    corpus = read(args.corpus, args)
    metrics = evaluate_predictor(loaded.predictor(), corpus.sentences)
    documents = getattr(corpus, "documents", None)
    if documents:
        from nerservice.documents.annotate import annotate
        from nerservice.documents.scoring import score_documents
        from nerservice.inference import Extractor

        metrics["document_level"] = score_documents(documents, annotate(Extractor(loaded), documents))
    if args.json:
        print(json.dumps(metrics, indent=2))
    else:
        print_scores(" ".join(args.corpus), metrics)
        if documents:
            print_document_scores(metrics["document_level"])
    return 0


def print_document_scores(scores: dict) -> None:
    m = scores["micro"]
    print(f"\ndocument level: strict character offsets (BioCreative/PubTator style) over {scores['documents']} "
          "documents, predictions from the raw passage text")
    print(f"  {'type':<14}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>9}")
    for label, s in sorted(scores["per_type"].items()):
        print(f"  {label:<14}{s['precision']:>10.4f}{s['recall']:>10.4f}{s['f1']:>10.4f}{s['support']:>9}")
    print(f"  {'micro':<14}{m['precision']:>10.4f}{m['recall']:>10.4f}{m['f1']:>10.4f}{m['support']:>9}")


def split_sets(path: str, split: str, *, lenient: bool) -> dict[str, Any]:
    from nerservice.multi.config import CorporaConfig
    from nerservice.multi.corpora import read_corpora

    out = {c.name: getattr(c, split) for c in read_corpora(CorporaConfig.load(path), lenient=lenient)}
    missing = [n for n, s in out.items() if not s]
    if missing:
        raise ConfigError(f"corpora {missing} have no {split} split in {path}")
    return out
