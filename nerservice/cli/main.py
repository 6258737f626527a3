"""Entry point. Each subcommand lives in its own module exposing ``register(subparsers)``; heavy imports
happen inside the command functions so ``--help`` is instant."""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from nerservice import __version__
from nerservice.errors import NerServiceError
from nerservice.json_stdout import json_stdout

COMMAND_MODULES = (
    "nerservice.cli.train_cmd",
    "nerservice.cli.evaluate_cmd",
    "nerservice.cli.ensemble_cmd",
    "nerservice.cli.distil_cmd",
    "nerservice.cli.charlm_cmd",
    "nerservice.cli.predict_cmd",
    "nerservice.cli.export_cmd",
    "nerservice.cli.models_cmd",
    "nerservice.cli.serve_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nerservice", description="Biomedical named-entity recognition: "
                                     "train, evaluate, serve and manage Bi-LSTM-CNN-Char-CRF taggers.")
    parser.add_argument("--version", action="version", version=f"nerservice {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # a subcommand not shipped in this build
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's C++ banner is noise for CLI users
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        # --json: the command's stdout is its JSON document alone; what it prints for people goes to stderr
        with json_stdout(bool(getattr(args, "json", False))):
            return int(args.func(args) or 0)
    except NerServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
