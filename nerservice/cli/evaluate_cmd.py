"""nerservice evaluate"""
from __future__ import annotations

import argparse
from typing import Any

from nerservice.artifacts.resolve import resolve_dir
from nerservice.cli.common import add_corpus_options, print_corpus_scores, print_scores, read
from nerservice.error_analysis import DEFAULT_TOP, MAX_TOP
from nerservice.errors import ConfigError
from nerservice.json_stdout import emit_json


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
    p.add_argument("--errors", action="store_true", help="also report where the errors are: recall by mention "
                   "shape and by whether the string was annotated in --seen-in, and the strings most often missed "
                   "and falsely found (nerservice/error_analysis.py)")
    p.add_argument("--seen-in", nargs="+", metavar="FILE", help="with --errors: the model's training file(s), "
                   "for the seen/unseen split")
    p.add_argument("--top", type=int, help=f"with --errors: strings listed per kind (default {DEFAULT_TOP}, at "
                   f"most {MAX_TOP})")
    p.add_argument("--json", action="store_true",
                   help='print {"micro": {...}, "per_type": {...}, "tokens": n, ...} as JSON')
    add_corpus_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nerservice.artifacts.formats import load_model
    from nerservice.metrics import evaluate_tags

    if bool(args.corpus) == bool(args.corpora):
        raise ConfigError("evaluate needs corpus file(s) or --corpora FILE (one of the two)")
    if args.errors and (args.corpora or args.head):
        raise ConfigError("--errors is for one corpus on a single-corpus model",
                          hint="evaluate each head on its file with its own model, or drop --errors")
    if (args.seen_in or args.top is not None) and not args.errors:
        raise ConfigError("--seen-in and --top belong to --errors")
    if args.top is not None and not 0 <= args.top <= MAX_TOP:
        raise ConfigError(f"--top {args.top}: between 0 and {MAX_TOP}")
    loaded = load_model(resolve_dir(args.model))
    if args.corpora or args.head:
        from nerservice.multi.evaluation import evaluate_heads

        if args.corpora:
            sets = split_sets(args.corpora, args.split, lenient=args.lenient)
        else:
            sets = {args.head: read(args.corpus, args).sentences}
        metrics = evaluate_heads(loaded.predictor(), sets)
        emit_json(metrics) if args.json else print_corpus_scores(args.split, metrics)
        return 0
    corpus = read(args.corpus, args)
    seen = None
    if args.seen_in:  # read before tagging: a bad file fails fast
        from nerservice.error_analysis import annotated_strings

        seen = annotated_strings(read(args.seen_in, args).sentences)
    pred = loaded.predictor().predict_tags([list(s.tokens) for s in corpus.sentences])
    metrics = evaluate_tags([list(s.tags) for s in corpus.sentences], pred)
    if args.errors:
        from nerservice.error_analysis import error_analysis

        metrics["errors"] = error_analysis(corpus.sentences, pred, seen=seen,
                                           top=DEFAULT_TOP if args.top is None else args.top)
    documents = getattr(corpus, "documents", None)
    if documents:
        from nerservice.documents.annotate import annotate
        from nerservice.documents.scoring import score_documents
        from nerservice.inference import Extractor

        metrics["document_level"] = score_documents(documents, annotate(Extractor(loaded), documents))
    if args.json:
        emit_json(metrics)
    else:
        print_scores(" ".join(args.corpus), metrics)
        if documents:
            print_document_scores(metrics["document_level"])
        if args.errors:
            print_errors(metrics["errors"])
    return 0


def print_errors(report: dict) -> None:
    split = ", and seen in --seen-in or not" if report["seen_known"] else ""
    print(f"\nwhere the errors are (mentions by shape{split})")
    print(f"  {'shape, seen':<34}{'gold':>7}{'missed':>8}{'recall':>8}{'false pos.':>11}")
    for key, g in report["groups"].items():
        recall = "" if g["recall"] is None else f"{g['recall']:.3f}"
        print(f"  {key:<34}{g['gold']:>7}{g['missed']:>8}{recall:>8}{g['false_positives']:>11}")
    if report["missed"]:
        print("  most missed (times missed / found):")
        for text, n, found, shape, seen in report["missed"]:
            print(f"    {n:5d} / {found:<5d} {text}   [{shape}, {seen}]")
    if report["false_positives"]:
        print("  most frequent false positives:")
        for text, n, shape, seen in report["false_positives"]:
            print(f"    {n:5d}  {text}   [{shape}, {seen}]")


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
