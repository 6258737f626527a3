"""Issues 19/20 on the lent H200: the Spark training task body on JAX, and the accuracy of growing batches.

    python bench/gpu/scaling_gpu.py task-body --world W --corpus DIR [--embeddings F] [--set k=v ...] --json-out F
        The barrier task body (``nerservice.distributed.worker.run_worker``) as W local processes with a real
        rendezvous (``FolderBarrier``), backend jax, all on the visible GPU(s); prints tokens/s and test F1.
    python bench/gpu/scaling_gpu.py sweep --corpus DIR --workers 1 2 4 8 --rules sqrt linear --seeds 42 1 2 ...
        One process per (N, rule, seed) in parallel, each training the single-process equivalent of N
        synchronous workers in --scaling grow (global batch N x 32, learning rate by the rule, warm-up):
        synchronous data parallelism over N workers computes exactly this, so the accuracy of N workers is
        measured without N GPUs. Writes one JSON line per run.

Throughput of ``nerservice train`` itself on the same GPU: ``python3 -m nerservice.cli.main train ... --json``
(the device command in BENCHMARKS.md runs both back to back).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("KERAS_BACKEND", "jax")


def corpus_rows(folder: str) -> dict[str, list[Any]]:
    from nerservice.data import read_corpus

    out = {}
    for split, name in (("train", "train.tsv"), ("dev", "devel.tsv"), ("test", "test.tsv")):
        path = os.path.join(folder, name)
        out[split] = [[list(s.tokens), list(s.tags), s.file, s.line] for s in read_corpus(path).sentences]
    return out


def steady_tokens_per_s(history: list[dict[str, Any]]) -> float:
    tps = [h["train_tokens_per_s"] for h in history]
    return statistics.median(tps[1:]) if len(tps) > 1 else tps[0]  # epoch 1 includes the compiles


def task_body(args: argparse.Namespace) -> dict[str, Any]:
    from nerservice.config import NerConfig
    from nerservice.distributed.local_barrier import run_local
    from nerservice.distributed.worker import TrainSpec

    config = NerConfig().with_overrides(args.set)
    spec = TrainSpec(config=config.model_dump(mode="json"), out_dir=args.out, world=args.world,
                     embeddings=list(args.embeddings or []), embeddings_shipped=[False] * len(args.embeddings or []),
                     backend="jax", resume=False, collective_timeout_s=args.timeout)
    t0 = time.perf_counter()
    gpus = [[g] for g in args.gpus] if args.gpus else None
    results = run_local(spec, corpus_rows(args.corpus), gpus_per_rank=gpus, timeout_s=args.timeout)
    chief = results[0]
    return {"what": "task-body", "world": args.world, "wall_s": time.perf_counter() - t0,
            "weights_identical": len({r["weights_digest"] for r in results}) == 1,
            "train_tokens_per_s_steady": steady_tokens_per_s(chief["history"]),
            "train_tokens_per_s_by_epoch": [h["train_tokens_per_s"] for h in chief["history"]],
            "epochs": len(chief["history"]), "best_epoch": chief["best_epoch"],
            "dev_f1": chief["dev"]["micro"]["f1"], "test_f1": chief["test"]["micro"]["f1"],
            "cuda_visible_devices": [r["cuda_visible_devices"] for r in results]}


def sweep(args: argparse.Namespace) -> None:
    from nerservice.config import NerConfig
    from nerservice.training.scaling import scale_config

    base = NerConfig().with_overrides(args.set)
    procs = []
    for n in args.workers:
        for rule in (args.rules if n > 1 else args.rules[:1]):
            for seed in args.seeds:
                cfg = scale_config(base.with_overrides({"training.seed": seed}), n, "grow", rule)
                t = cfg.training
                name = f"n{n}-{rule}-s{seed}"
                sets = [f"training.{k}={getattr(t, k)}" for k in
                        ("batch_size", "learning_rate", "warmup_epochs", "warmup_start_factor", "seed")]
                cmd = [sys.executable, str(Path(__file__).with_name("train_gpu.py")), "--corpus", args.corpus,
                       "--out", f"{args.out}/{name}", "--no-ceiling", "--no-inference",
                       "--json-out", f"{args.out}/{name}.json"]
                for e in args.embeddings or []:
                    cmd += ["--embeddings", e]
                for s in list(args.set) + sets:
                    cmd += ["--set", s]
                log = open(f"{args.out}/{name}.log", "w")  # noqa: SIM115 — closed with the process
                procs.append((name, n, rule, seed, t.batch_size,
                              subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log))
    while procs:  # report each run as it ends (a timeout then loses only the unfinished ones)
        for item in [x for x in procs if x[5].poll() is not None]:
            procs.remove(item)
            name, n, rule, seed, batch, p, log = item
            log.close()
            row: dict[str, Any] = {"run": name, "workers": n, "rule": rule if n > 1 else None, "seed": seed,
                                   "global_batch": batch, "rc": p.returncode}
            try:
                r = json.loads(Path(f"{args.out}/{name}.json").read_text())
                row.update(dev_f1=r["dev_f1"], test_f1=r["test_f1"], epochs=r["epochs_run"],
                           best_epoch=r["best_epoch"], tokens_per_s=r["train_tokens_per_s_steady"], wall_s=r["wall_s"])
            except (OSError, KeyError, ValueError) as exc:
                row["error"] = repr(exc)
            print(json.dumps(row), flush=True)
        time.sleep(0.5)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    tb = sub.add_parser("task-body")
    tb.add_argument("--world", type=int, default=1)
    tb.add_argument("--gpus", nargs="*", help="CUDA device per rank (Spark's GPU resource); default: all visible")
    sw = sub.add_parser("sweep")
    sw.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    sw.add_argument("--rules", nargs="+", default=["sqrt", "linear"])
    sw.add_argument("--seeds", type=int, nargs="+", default=[42, 1, 2])
    for p in (tb, sw):
        p.add_argument("--corpus", required=True)
        p.add_argument("--embeddings", action="append")
        p.add_argument("--set", action="append", default=[])
        p.add_argument("--out", default="/tmp/scaling-gpu")
        p.add_argument("--timeout", type=float, default=600)
        p.add_argument("--json-out")
    args = ap.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.cmd == "sweep":
        sweep(args)
        return
    result = task_body(args)
    print(json.dumps(result), flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
