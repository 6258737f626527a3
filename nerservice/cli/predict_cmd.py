"""nerservice predict"""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

OUTPUT_FORMATS = ("jsonl", "pubtator", "bioc-xml", "bioc-json", "brat")


if TYPE_CHECKING:
    from nerservice.inference import Extractor


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predict", help="extract entities from raw text lines or from documents",
                       description="Raw text lines from FILE (or stdin with '-'): print, per line, "
                       '{"line": n, "entities": [{"start", "end", "label", "text", "score"}]}. Documents '
                       "(PubTator, BioC XML/JSON, BRAT folder, JSON lines; --input-format, detected by default): "
                       "write them back in --format with the model's entities (label, score, document offsets) "
                       "in place of their annotations; ids, passages and offsets unchanged.")
    p.add_argument("model", help="model folder or store reference")
    p.add_argument("file", nargs="?", default="-", help="text file, one text per line ('-' = stdin), or a "
                   "document file / BRAT folder")
    p.add_argument("--input-format", default="auto",
                   choices=["auto", "text", "pubtator", "bioc-xml", "bioc-json", "brat", "jsonl"],
                   help="auto: a document format when the file is one, else text lines")
    p.add_argument("--format", dest="out_format", default="jsonl", choices=OUTPUT_FORMATS,
                   help="output format for documents (text lines always give JSON lines)")
    p.add_argument("--out", help="output file (a folder for brat); default stdout")
    p.add_argument("--head", metavar="NAME", help="a multi-corpus model's head NAME (its corpus name) alone: only "
                   "that corpus's types, decoded as that head decodes them (no other head's spans, no overlap rule)")
    p.add_argument("--batch-lines", type=int, default=256, help="lines (or documents) tagged together")
    p.add_argument("--batch-size", type=int, default=256, help="sentences per model call (on a GPU: 2048-4096)")
    p.add_argument("--token-budget", type=int, default=8192,
                   help="padded tokens per model call at most (on a GPU: 64 x the batch size)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nerservice.artifacts.resolve import resolve_dir
    from nerservice.errors import ConfigError
    from nerservice.inference import Extractor

    for name in ("batch_lines", "batch_size", "token_budget"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 1")
    options = {"batch_size": args.batch_size, "token_budget": args.token_budget, "head": args.head}
    fmt = args.input_format
    if fmt == "auto" and args.file != "-":
        from nerservice.documents import detect_path

        fmt = detect_path(args.file) or "text"
    if fmt in ("auto", "text"):
        if args.out_format != "jsonl":
            raise ConfigError(f"--format {args.out_format} needs document input",
                              hint="pass a document file (or --input-format); text lines give JSON lines")
        return _predict_lines(Extractor.load(resolve_dir(args.model), **options), args)
    if args.out_format == "brat" and not args.out:
        raise ConfigError("--format brat writes a folder", hint="pass --out FOLDER")
    from nerservice.documents import format_documents, read_documents, write_documents
    from nerservice.documents.annotate import annotate

    docs = read_documents(args.file, fmt=fmt, need_ann=False)
    extractor = Extractor.load(resolve_dir(args.model), **options)
    predicted = []
    for i in range(0, len(docs), args.batch_lines):
        predicted.extend(annotate(extractor, docs[i : i + args.batch_lines]))
    if args.out:
        written = write_documents(predicted, args.out, args.out_format)
        n = sum(len(d.annotations) for d in predicted)
        print(f"{len(predicted)} documents, {n} entities → {args.out} ({args.out_format}, {len(written)} file(s))",
              file=sys.stderr)
    else:
        sys.stdout.write(format_documents(predicted, args.out_format))
    return 0


def _predict_lines(extractor: Extractor, args: argparse.Namespace) -> int:
    stream = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
    try:
        buf: list[str] = []
        n = 0

        def flush() -> None:
            nonlocal n
            for text, ents in zip(buf, extractor.extract(buf)):
                n += 1
                sys.stdout.write(json.dumps({"line": n, "entities": [e.to_dict() for e in ents]},
                                            ensure_ascii=False) + "\n")
            buf.clear()

        for line in stream:
            buf.append(line.rstrip("\r\n"))
            if len(buf) >= args.batch_lines:
                flush()
        flush()
    finally:
        if stream is not sys.stdin:
            stream.close()
    return 0
