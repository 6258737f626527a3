"""nerservice ensemble"""
from __future__ import annotations

import argparse

from nerservice.artifacts.resolve import resolve_dir
from nerservice.cli.common import add_corpus_options, print_scores, read
from nerservice.json_stdout import emit_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ensemble", help="combine trained models into one (mean CRF scores), evaluate it, save it",
        description="Copy two or more trained models (folders, training output folders or store references) "
        "into one ensemble folder that evaluate, predict, serve and the model store use like a single model. "
        "Predictions take the mean of the members' CRF scores and decode it exactly (the path that maximises "
        "the geometric mean of the members' probabilities). Members must share the tag set. Inference costs "
        "one forward pass per member.")
    p.add_argument("members", nargs="+", help="member models (two or more)")
    p.add_argument("--out", required=True, help="folder to write (replaced atomically if it exists)")
    p.add_argument("--dev", nargs="+", help="labelled corpus file(s) to evaluate on as 'dev'")
    p.add_argument("--test", nargs="+", help="labelled corpus file(s) to evaluate on as 'test'")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    add_corpus_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nerservice.errors import ConfigError
    from nerservice.training.recipes import save_evaluated_ensemble

    if len(args.members) < 2:
        raise ConfigError("an ensemble needs two or more member models", members=args.members)
    dirs = [resolve_dir(m) for m in args.members]
    splits = {name: read(paths, args).sentences for name, paths in (("dev", args.dev), ("test", args.test)) if paths}
    out, metrics = save_evaluated_ensemble(args.out, dirs, splits, sources=args.members)
    if args.json:
        emit_json(metrics)
        return 0
    for name, m in metrics.items():
        print_scores(f"{name} ({len(dirs)}-model ensemble)", m)
    print(f"wrote {out}")
    return 0
