"""nerservice predict"""
from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predict", help="extract entities from raw text, one JSON line per input line",
                       description="Read raw text lines from FILE (or stdin with '-') and print, per line, "
                       '{"line": n, "entities": [{"start", "end", "label", "text", "score"}]}.')
    p.add_argument("model", help="model folder or store reference")
    p.add_argument("file", nargs="?", default="-", help="text file, one document per line ('-' = stdin)")
    p.add_argument("--batch-lines", type=int, default=256, help="lines tagged together")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nerservice.cli.common import resolve_model_dir
    from nerservice.inference import Extractor

    extractor = Extractor.load(resolve_model_dir(args.model))
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
