"""nerservice models list|show|register|promote|download|cleanup — the model store from the command line."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from nerservice.json_stdout import emit_json

STORE_HELP = ("model store: an MLflow server URL or sqlite:///path URI (default: $NERSERVICE_STORE_URI, else the "
              "embedded store under $NERSERVICE_STORE_DIR, default ./models)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list, inspect, register, promote and download models in the model store",
                       description="The model store: MLflow tracking + Model Registry (embedded SQLite under "
                       "./models by default). References: NAME (latest complete version), NAME@ALIAS, "
                       "NAME@latest, NAME/VERSION.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", metavar="URI", help=STORE_HELP)
    msub = p.add_subparsers(dest="models_command", metavar="SUBCOMMAND", required=True)

    q = msub.add_parser("list", parents=[common], help="versions with status, aliases and F1",
                        description="List every version (newest first) of NAME, or of all models.")
    q.add_argument("name", nargs="?", help="only this model")
    q.add_argument("--incomplete", action="store_true",
                   help="only versions whose registration never completed (never resolvable; see cleanup)")
    q.add_argument("--json", action="store_true", help="print a JSON list of version records")
    q.set_defaults(func=run_list)

    q = msub.add_parser("show", parents=[common], help="one version: metrics, lineage, aliases, run",
                        description="Describe the version a reference points at (no download).")
    q.add_argument("ref", help="NAME, NAME@ALIAS, NAME@latest or NAME/VERSION")
    q.add_argument("--json", action="store_true", help="print the record as JSON")
    q.set_defaults(func=run_show)

    q = msub.add_parser("register", parents=[common], help="register a saved model folder as a new version",
                        description="Upload a saved model folder (e.g. OUT/model-best) and register it as the "
                        "next version of NAME. The version becomes visible only once every file and its "
                        "checksum are stored.")
    q.add_argument("model_dir", help="saved model folder (with manifest.json)")
    q.add_argument("name", help="model name (letters, digits, '_', '-', '.')")
    q.add_argument("--tag", action="append", default=[], metavar="KEY=VALUE", help="version tag (repeatable)")
    q.add_argument("--promote", metavar="ALIAS", help="then point ALIAS at it if its dev F1 is not worse")
    q.add_argument("--json", action="store_true", help="print the new version's record as JSON")
    q.set_defaults(func=run_register)

    q = msub.add_parser("promote", parents=[common], help="point an alias (default: production) at a version",
                        description="Point ALIAS at NAME/VERSION. Refused (exit 2) when the version's metric is "
                        "worse than the current holder's, unless --force.")
    q.add_argument("name")
    q.add_argument("version", type=int)
    q.add_argument("--alias", default="production", help="alias to move (default: production)")
    q.add_argument("--if-better", default="dev_f1", metavar="METRIC",
                   help="metric compared with the current holder (default: dev_f1; *loss: lower is better)")
    q.add_argument("--force", action="store_true", help="move the alias without comparing")
    q.set_defaults(func=run_promote)

    q = msub.add_parser("download", parents=[common], help="copy a verified model out of the store",
                        description="Resolve REF (download once, verify checksums) and copy the model folder "
                        "to DIR, which must not exist or be empty.")
    q.add_argument("ref", help="NAME, NAME@ALIAS, NAME@latest or NAME/VERSION")
    q.add_argument("--to", required=True, metavar="DIR", help="destination folder")
    q.set_defaults(func=run_download)

    q = msub.add_parser("cleanup", parents=[common], help="end abandoned RUNNING runs, delete incomplete versions",
                        description="After a crash: end as KILLED the MLflow runs still RUNNING whose process "
                        "on this host is gone (and, with --stale-after, any RUNNING run older than that), and "
                        "delete the versions whose registration never completed (older than --older-than).")
    q.add_argument("name", nargs="?", help="only this model's versions (runs: all of the store's experiment)")
    q.add_argument("--older-than", type=float, default=60.0, metavar="MINUTES",
                   help="incomplete versions created at least this long ago (default 60: a registration in "
                   "flight is incomplete for seconds)")
    q.add_argument("--stale-after", type=float, default=None, metavar="HOURS",
                   help="also end RUNNING runs of other hosts (Spark executors) started this long ago "
                   "(default: only this host's runs whose process is gone)")
    q.add_argument("--dry-run", action="store_true", help="only say what would be done")
    q.add_argument("--json", action="store_true", help="print {runs: [...], versions: [...]} as JSON")
    q.set_defaults(func=run_cleanup)


def _store(args: argparse.Namespace) -> Any:
    from nerservice.store import ModelStore

    return ModelStore.from_env(uri=args.store)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def run_list(args: argparse.Namespace) -> int:
    rows = _store(args).list(args.name)
    if args.incomplete:
        rows = [r for r in rows if r["status"] != "complete"]
    if args.json:
        emit_json(rows)
        return 0
    if not rows:
        print("no models registered")
        return 0
    print(f"{'name':<24}{'version':>8}  {'status':<11}{'aliases':<20}{'dev_f1':>8}{'test_f1':>9}  {'created':<26}run")
    for r in rows:
        m = r["metrics"]
        print(f"{r['name']:<24}{r['version']:>8}  {r['status']:<11}{','.join(r['aliases']) or '-':<20}"
              f"{_fmt(m.get('dev_f1')):>8}{_fmt(m.get('test_f1')):>9}  {r['created']:<26}{r['run_id']}")
    return 0


def _print_record(r: dict[str, Any]) -> None:
    print(f"{r['name']}/{r['version']}  ({r['status']})")
    print(f"  aliases:  {', '.join(r['aliases']) or '-'}")
    print(f"  created:  {r['created']}")
    print(f"  run:      {r['run_id']}")
    print(f"  source:   {r['source']}")
    print(f"  manifest: sha256 {r['manifest_sha256'] or '- (registration did not complete)'}")
    if r["metrics"]:
        print("  metrics:")
        for k, v in r["metrics"].items():
            print(f"    {k:<24}{v:.4f}")
    if r["lineage"]:
        print("  lineage:")
        for k, v in r["lineage"].items():
            shown = ", ".join(f"{p}={ver}" for p, ver in v.items()) if isinstance(v, dict) else v
            print(f"    {k:<24}{shown}")
    for k, v in r["tags"].items():
        print(f"  tag {k} = {v}")


def run_show(args: argparse.Namespace) -> int:
    record = _store(args).describe(args.ref)
    if args.json:
        emit_json(record)
    else:
        _print_record(record)
    return 0


def run_register(args: argparse.Namespace) -> int:
    from nerservice.errors import ConfigError

    tags = {}
    for item in args.tag:
        if "=" not in item:
            raise ConfigError(f"--tag {item!r} is not KEY=VALUE")
        key, value = item.split("=", 1)
        tags[key.strip()] = value
    store = _store(args)
    version = store.register(args.model_dir, args.name, tags=tags)
    if args.promote:
        store.promote(args.name, version, alias=args.promote, if_better="dev_f1")
    record = store.describe(f"{args.name}/{version}")
    if args.json:
        emit_json(record)
    else:
        print(f"registered {args.name}/{version}" + (f" and pointed {args.promote!r} at it" if args.promote else ""))
    return 0


def run_promote(args: argparse.Namespace) -> int:
    moved = _store(args).promote(args.name, args.version, alias=args.alias,
                                 if_better=None if args.force else args.if_better)
    print(f"{args.name}@{args.alias} -> version {args.version}" + ("" if moved else " (already)"))
    return 0


def run_download(args: argparse.Namespace) -> int:
    from nerservice.artifacts.formats import verify_manifest
    from nerservice.artifacts.layout import MANIFEST
    from nerservice.errors import StoreError

    src = _store(args).resolve(args.ref)
    dest = Path(args.to)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise StoreError(f"{dest} exists and is not an empty folder", hint="choose a new folder for --to")
    dest.parent.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((src / MANIFEST).read_text(encoding="utf-8"))
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        for name in [*manifest["files"], MANIFEST]:
            shutil.copy2(src / name, tmp / name)
        verify_manifest(tmp)
        os.replace(tmp, dest)  # an empty destination folder is replaced atomically too
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(dest)
    return 0


def run_cleanup(args: argparse.Namespace) -> int:
    from nerservice.store.cleanup import end_abandoned_runs, prune_incomplete

    store = _store(args)
    stale = args.stale_after * 3600 if args.stale_after is not None else None
    ended = end_abandoned_runs(store, stale_after_s=stale, dry_run=args.dry_run)
    pruned = prune_incomplete(store, args.name, older_than_s=args.older_than * 60, dry_run=args.dry_run)
    if args.json:
        emit_json({"dry_run": args.dry_run, "runs": ended, "versions": pruned})
        return 0
    would = "would end" if args.dry_run else "ended"
    for r in ended:
        print(f"{would} run {r['run_id']} ({r['name'] or '-'}) as KILLED: {r['reason']}")
    for r in pruned:
        print(f"{'would delete' if args.dry_run else 'deleted'} incomplete version {r['name']}/{r['version']} "
              f"(created {r['created']})")
    if not ended and not pruned:
        print("nothing to clean up")
    return 0
