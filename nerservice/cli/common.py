"""Helpers shared by subcommands."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from nerservice.errors import InvalidModelRefError, ModelLoadError


def add_corpus_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", dest="fmt", default="auto", choices=["auto", "tsv", "conll"],
                   help="corpus file format (default: detect)")
    p.add_argument("--scheme", default="auto", choices=["auto", "iob1", "iob2", "iobes"],
                   help="tag scheme of the input (default: detect); everything is converted to IOB2")
    p.add_argument("--lenient", action="store_true",
                   help="skip malformed sentences (reported) instead of stopping at the first bad line")


def read(paths: list[str] | str, args: argparse.Namespace) -> Any:
    from nerservice.data import read_corpus

    corpus = read_corpus(paths, fmt=args.fmt, scheme=args.scheme, lenient=args.lenient)
    r = corpus.report
    for w in r.warnings:
        print(f"warning: {w}")
    for s in r.skipped:
        print(f"skipped: {s.file}:{s.line}: {s.reason}")
    return corpus


def resolve_model_dir(ref: str) -> Path:
    """A saved model folder, a training output folder (→ its model-best), or a model-store reference
    (``name@alias``, ``name/3``) when the store is installed."""
    p = Path(ref)
    if p.is_dir():
        if (p / "model-best").is_dir():
            return p / "model-best"
        return p
    if any(c in ref for c in "@/") or not p.exists():
        try:
            from nerservice.store import ModelStore
            from nerservice.store.refs import parse_ref
        except ImportError:
            raise ModelLoadError(f"{ref}: no such model directory") from None
        try:
            parse_ref(ref)
        except InvalidModelRefError:
            # Neither a folder nor a valid store reference: most likely a mistyped path ("/data/modle").
            raise ModelLoadError(f"{ref}: no such model directory", path=ref,
                                 hint="pass a folder written by `nerservice train --out` or a store reference "
                                 "like name@production") from None
        return ModelStore.from_env().resolve(ref)
    raise ModelLoadError(f"{ref}: no such model directory")


def print_scores(title: str, metrics: dict[str, Any]) -> None:
    m = metrics["micro"]
    print(f"\n{title}: entity-level (strict IOB2) over {metrics.get('sentences', '?')} sentences, "
          f"{metrics.get('tokens', '?')} tokens")
    print(f"  {'type':<14}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>9}")
    for label, s in sorted(metrics.get("per_type", {}).items()):
        print(f"  {label:<14}{s['precision']:>10.4f}{s['recall']:>10.4f}{s['f1']:>10.4f}{s['support']:>9}")
    print(f"  {'micro':<14}{m['precision']:>10.4f}{m['recall']:>10.4f}{m['f1']:>10.4f}{m.get('support', 0):>9}")
    tl = metrics.get("token_level")
    if tl:
        print(f"  token-level (NerDL's log figure, not comparable to the above): "
              f"f1 {tl['micro']['f1']:.4f}, accuracy {tl['accuracy']:.4f}")
