"""Helpers shared by subcommands."""
from __future__ import annotations

import argparse
import json
from typing import Any

TOKEN_FORMATS = ("tsv", "conll")
DOCUMENT_FORMATS = ("pubtator", "bioc-xml", "bioc-json", "brat", "jsonl")  # = nerservice.documents.DOCUMENT_FORMATS
# (repeated here so building the parser imports nothing heavy; tests/documents/test_formats.py checks they agree)


def add_corpus_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", dest="fmt", default="auto", choices=["auto", *TOKEN_FORMATS, *DOCUMENT_FORMATS],
                   help="corpus format (default: detect): token-per-line tsv/conll, or documents: PubTator, "
                   "BioC XML/JSON, BRAT (a folder of .txt+.ann), JSON lines")
    p.add_argument("--scheme", default="auto", choices=["auto", "iob1", "iob2", "iobes"],
                   help="tag scheme of token-per-line input (default: detect); everything becomes IOB2")
    p.add_argument("--lenient", action="store_true",
                   help="token files: skip malformed sentences (reported); documents: apply the documented "
                   "policy to each bad annotation (reported) instead of stopping at the first")
    p.add_argument("--label-map", action="append", default=[], metavar="FROM[,FROM...]=TO",
                   help="documents: rename labels at load, e.g. SpecificDisease,Modifier,DiseaseClass,"
                   "CompositeMention=Disease (TO=O leaves them out); repeatable")
    p.add_argument("--sentences", default="split", choices=["split", "lines"],
                   help="documents without sentence boundaries of their own: the project's sentence splitter "
                   "(default) or one sentence per line (pre-split BRAT text; PubTator: each title and abstract "
                   "line is one sentence)")
    p.add_argument("--tokens", default="words", choices=["words", "whitespace"],
                   help="documents: the project's tokenizer (default, what prediction uses) or whitespace: "
                   "the text is pre-tokenised and each whitespace-separated run is one token (keeps a "
                   "corpus's own tokens such as +/- or >=)")
    p.add_argument("--report", metavar="FILE", help="documents: write the full conversion report (counts and "
                   "every annotation case) as JSON to FILE instead of printing each case")


def read(paths: list[str] | str, args: argparse.Namespace) -> Any:
    from nerservice.documents import document_format

    items = [paths] if isinstance(paths, str) else list(paths)
    doc_fmt = document_format(items, args.fmt)
    if doc_fmt is not None:
        return read_documents_corpus(items, doc_fmt, args)
    if getattr(args, "label_map", None):
        from nerservice.errors import ConfigError

        raise ConfigError("--label-map applies to document formats", hint="token files carry their tags as written")
    from nerservice.data import read_corpus

    corpus = read_corpus(items, fmt=args.fmt, scheme=args.scheme, lenient=args.lenient)
    r = corpus.report
    for w in r.warnings:
        print(f"warning: {w}")
    for s in r.skipped:
        print(f"skipped: {s.file}:{s.line}: {s.reason}")
    return corpus


def reading_options(args: argparse.Namespace) -> dict[str, Any]:
    """The corpus options a model's lineage records: the same files read otherwise are other sentences."""
    return {"format": args.fmt, "scheme": args.scheme, "lenient": args.lenient, "label_map": list(args.label_map),
            "sentences": args.sentences, "tokens": args.tokens}


_REPORTS_STARTED: set[str] = set()


def read_documents_corpus(paths: list[str], fmt: str, args: argparse.Namespace) -> Any:
    from nerservice.documents import ConvertOptions, parse_label_map, read_document_corpus

    options = ConvertOptions(lenient=args.lenient, label_map=parse_label_map(args.label_map),
                             sentences=args.sentences, tokens=args.tokens)
    corpus = read_document_corpus(paths, fmt=fmt, options=options)
    r = corpus.documents_report
    print(f"{' '.join(paths)} ({fmt}): {r.summary()}")
    if getattr(args, "report", None):
        # One JSON line per corpus read (train, dev, test); the file starts fresh with this process's first.
        mode = "a" if args.report in _REPORTS_STARTED else "w"
        _REPORTS_STARTED.add(args.report)
        with open(args.report, mode, encoding="utf-8") as fh:
            fh.write(json.dumps(r.to_dict(), ensure_ascii=False) + "\n")
        print(f"report: {len(r.cases)} case(s) appended to {args.report}")
    else:
        for c in r.cases:
            print(f"case: {c.describe()}")
    return corpus


def print_scores(title: str, metrics: dict[str, Any]) -> None:
    m = metrics["micro"]
    print(f"\n{title}: entity-level (strict IOB2) over {metrics.get('sentences', '?')} sentences, "
          f"{metrics.get('tokens', '?')} tokens")
    print(f"  {'type':<14}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>9}")
    for label, s in sorted(metrics.get("per_type", {}).items()):
        print(f"  {label:<14}{s['precision']:>10.4f}{s['recall']:>10.4f}{s['f1']:>10.4f}{s['support']:>9}")
    print(f"  {'micro':<14}{m['precision']:>10.4f}{m['recall']:>10.4f}{m['f1']:>10.4f}{m.get('support', 0):>9}")
    # Not comparable with the entity figures above (token counts, typically several points higher).
    tag = metrics.get("tag_level")
    if tag:
        print(f"  NerDL's figure, per IOB tag micro (O excluded; token counts, not entities): "
              f"f1 {tag['micro']['f1']:.4f} (p {tag['micro']['precision']:.4f}, r {tag['micro']['recall']:.4f}; "
              f"macro f1 {tag['macro']['f1']:.4f})")
    tl = metrics.get("token_level")
    if tl:
        print(f"  token-level, B-/I- prefixes ignored: f1 {tl['micro']['f1']:.4f}, tag accuracy {tl['accuracy']:.4f}")


def print_corpus_scores(title: str, metrics: dict[str, Any]) -> None:
    """A multi-corpus evaluation: each corpus (on its own head) per type, then the mean over corpora."""
    for name, m in metrics.get("per_corpus", {}).items():
        print_scores(f"{title} / {name}", m)
    print(f"\n{title}: mean entity F1 over {len(metrics.get('per_corpus', {}))} corpora "
          f"{metrics['micro']['f1']:.4f}")
