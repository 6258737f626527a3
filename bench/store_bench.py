"""Model store benchmark: time to register and to resolve a model (cold cache and warm), embedded and
against a real ``mlflow server`` on 127.0.0.1, plus the model's size on disk.

    .venv/bin/python bench/store_bench.py                      # trains a default-size model (1 epoch)
    .venv/bin/python bench/store_bench.py --model OUT/model-best --repeat 5 --extra-mb 200

``--extra-mb`` adds a padding file (listed in the manifest) to show how the costs grow with bytes, e.g.
for a model carrying a large pretrained embedding matrix.  Prints a Markdown table; ``--out`` also
writes it to a file.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def make_model(workdir: Path) -> Path:
    """The default (NerDL-sized) architecture trained for one epoch on the demo corpus: realistic files."""
    from nerservice.config import NerConfig
    from nerservice.data import read_corpus
    from nerservice.demo_corpus import write_demo_corpus
    from nerservice.training.trainer import train

    corpus = write_demo_corpus(workdir / "corpus", sizes=(400, 80, 80), seed=11)
    outcome = train(NerConfig().with_overrides({"training.epochs": 1}),
                    train_data=read_corpus(corpus["train"]).sentences, dev_data=read_corpus(corpus["dev"]).sentences,
                    test_data=read_corpus(corpus["test"]).sentences, out_dir=workdir / "run", progress=False)
    return outcome.best_dir


def pad(model_dir: Path, workdir: Path, extra_mb: int) -> Path:
    import json

    from nerservice.artifacts.files import sha256_file
    from nerservice.artifacts.layout import MANIFEST

    d = workdir / f"model-plus-{extra_mb}mb"
    shutil.copytree(model_dir, d)
    block = os.urandom(1 << 20)
    with open(d / "padding.bin", "wb") as fh:
        for _ in range(extra_mb):
            fh.write(block)
    manifest = json.loads((d / MANIFEST).read_text())
    manifest["files"]["padding.bin"] = {"sha256": sha256_file(d / "padding.bin"), "bytes": (d / "padding.bin").stat().st_size}
    (d / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return d


def median_s(fn, repeat: int) -> tuple[float, list]:
    times, results = [], []
    for i in range(repeat):
        t0 = time.perf_counter()
        results.append(fn(i))
        times.append(time.perf_counter() - t0)
    return statistics.median(times), results


def bench_store(label: str, uri: str, model_dir: Path, workdir: Path, repeat: int,
                artifacts_dir: Path) -> dict:
    from nerservice.store import ModelStore

    name = f"bench-{label}"
    t0 = time.perf_counter()
    store = ModelStore(uri, cache_dir=workdir / f"cache-{label}-0")
    try:
        store.list(name)
    except Exception:  # noqa: BLE001 - no such model yet; we only want the connection opened
        pass
    open_s = time.perf_counter() - t0
    before = dir_bytes(artifacts_dir) if artifacts_dir.exists() else 0
    register_s, versions = median_s(lambda i: store.register(model_dir, name), repeat)
    stored_per_version = (dir_bytes(artifacts_dir) - before) / repeat

    def cold(i: int) -> Path:
        return ModelStore(uri, cache_dir=workdir / f"cache-{label}-{i + 1}").resolve(f"{name}/{versions[-1]}")

    store.resolve(f"{name}/{versions[-1]}")  # fill the first cache for the warm figure
    cold_s, paths = median_s(cold, repeat)
    warm_s, _ = median_s(lambda i: store.resolve(f"{name}/{versions[-1]}"), repeat)
    import_s, fresh_s = fresh_process_resolve(uri, workdir / f"cache-{label}-0", f"{name}/{versions[-1]}")
    return {"label": label, "open_s": open_s, "register_s": register_s, "cold_s": cold_s, "warm_s": warm_s,
            "stored": stored_per_version, "cached": dir_bytes(paths[0]), "import_s": import_s, "fresh_s": fresh_s}


FRESH = """
import sys, time
t0 = time.perf_counter()
from nerservice.store._mlflow import import_mlflow
import_mlflow()
t1 = time.perf_counter()
from nerservice.store import ModelStore
ModelStore(sys.argv[1], cache_dir=sys.argv[2]).resolve(sys.argv[3])
print(t1 - t0, time.perf_counter() - t1)
"""


def fresh_process_resolve(uri: str, cache: Path, ref: str) -> tuple[float, float]:
    """What a new process (a CLI call, an API worker starting) pays: import mlflow, open the store,
    resolve an already cached version."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", FRESH, uri, str(cache), ref], capture_output=True, text=True,
                         check=True)
    a, b = out.stdout.split()
    return float(a), float(b)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, help="saved model dir (default: train a default-size model 1 epoch)")
    ap.add_argument("--repeat", type=int, default=3, help="timed repetitions per figure (median reported)")
    ap.add_argument("--extra-mb", type=int, default=0, help="pad the model with this many MB")
    ap.add_argument("--skip-server", action="store_true", help="embedded store only")
    ap.add_argument("--out", type=Path, help="also write the Markdown table here")
    args = ap.parse_args(argv)

    from nerservice.store.local_server import LocalMlflowServer

    workdir = Path(tempfile.mkdtemp(prefix="store-bench-"))
    server = None
    try:
        t0 = time.perf_counter()
        model_dir = args.model or make_model(workdir)
        if args.model is None:
            print(f"trained the benchmark model in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        if args.extra_mb:
            model_dir = pad(model_dir, workdir, args.extra_mb)
        size = dir_bytes(model_dir)
        weights = (model_dir / "model.weights.h5").stat().st_size
        rows = [bench_store("embedded", f"sqlite:///{(workdir / 'embedded' / 'mlflow.db').as_posix()}",
                            model_dir, workdir, args.repeat, workdir / "embedded" / "artifacts")]
        server_start = None
        if not args.skip_server:
            server = LocalMlflowServer(workdir / "server")
            t0 = time.perf_counter()
            server.start()
            server_start = time.perf_counter() - t0
            rows.append(bench_store("server", server.uri, model_dir, workdir, args.repeat, server.artifacts))
        db = workdir / "embedded" / "mlflow.db"
        lines = [
            f"model: {model_dir.name} — {mb(size)} on disk ({mb(weights)} weights), "
            f"{len(list(model_dir.iterdir()))} files; median of {args.repeat}",
            "",
            "| store | open store (1st call, incl. schema creation) | register | resolve, cold cache | resolve, warm "
            "| new process: import mlflow + open + warm resolve | stored per version | cache copy |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            lines.append(f"| {r['label']} | {r['open_s']:.2f} s | {r['register_s']:.3f} s | {r['cold_s']:.3f} s | "
                         f"{r['warm_s'] * 1000:.1f} ms | {r['import_s']:.2f} s + {r['fresh_s']:.2f} s "
                         f"| {mb(int(r['stored']))} | {mb(r['cached'])} |")
        lines.append("")
        lines.append(f"embedded SQLite DB after {args.repeat} versions: {mb(db.stat().st_size)}"
                     + (f"; mlflow server start-up: {server_start:.1f} s" if server_start is not None else ""))
        text = "\n".join(lines)
        print(text)
        if args.out:
            args.out.write_text(text + "\n", encoding="utf-8")
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
