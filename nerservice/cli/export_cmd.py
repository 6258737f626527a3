"""nerservice export"""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export a model for serving without TensorFlow (ONNX)",
                       description="Write a self-contained folder: the network as ONNX graphs, vocabularies, "
                       "CRF parameters, a README of inputs/outputs and the decode, and a manifest with checksums "
                       "and the source model's identity. `nerservice predict`, `serve` and Spark predict load it "
                       "with ONNX Runtime (pip install 'nerservice[serve]'), without TensorFlow or Keras.")
    p.add_argument("model", help="model folder (or ensemble folder) or store reference")
    p.add_argument("--format", dest="export_format", default="onnx", choices=["onnx"])
    p.add_argument("--out", required=True, help="output folder (replaced atomically if it exists)")
    p.add_argument("--register", metavar="NAME", help="also register the export in the model store under NAME")
    p.add_argument("--promote", metavar="ALIAS", help="with --register: point ALIAS at the export's version if its "
                   "dev F1 is not worse than the current holder's (an export carries its source's metrics)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nerservice.artifacts.resolve import resolve_dir as resolve_model_dir
    from nerservice.errors import ConfigError
    from nerservice.runtime.export import export_onnx

    if args.promote and not args.register:
        raise ConfigError("--promote needs --register NAME")
    src = resolve_model_dir(args.model)
    out = export_onnx(src, args.out, source_ref=args.model)
    print(f"exported {args.model} -> {out}")
    if args.register:
        from nerservice.store import ModelStore

        store = ModelStore.from_env()
        version = store.register(out, args.register)
        print(f"registered {args.register}/{version}")
        if args.promote:
            store.promote(args.register, version, alias=args.promote, if_better="dev_f1")
            print(f"{args.register}@{args.promote} -> {version}")
    return 0
