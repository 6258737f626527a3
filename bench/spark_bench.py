"""Spark jobs on NCBI-disease: preprocess → train with 1 and 2 workers (vs the core's single-process
trainer) → batch inference (vs the in-process Extractor).  Not a test; prints the figures and writes them
as JSON to WORK/results.json.

    .venv/bin/python bench/spark_bench.py --corpus /work/shared/data/corpora/NCBI-disease \\
        --work /tmp/nerservice-spark-bench --epochs 3

The corpus is read in place (never copied into the repo).  A standalone cluster of 2 workers x 1 core is
started on 127.0.0.1 with the test suite's launcher (tests/spark/cluster.py) and stopped at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "spark"))

from cluster import SparkCluster  # noqa: E402  (the tests' standalone-cluster launcher)


def run(cluster: SparkCluster, script: str, *args: str, timeout: float = 1800) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    proc = cluster.submit(script, *args, timeout=timeout)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{script} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    out = proc.stdout
    return json.loads(out[out.rfind("\n{") + 1:]), wall


def core_train(corpus: Path, out: Path, sets: list[str]) -> tuple[dict[str, Any], float]:
    """The core trainer in one process (the baseline): same files, same config."""
    cmd = [str(REPO / ".venv" / "bin" / "nerservice"), "train", "--train", str(corpus / "train.tsv"), "--dev",
           str(corpus / "devel.tsv"), "--test", str(corpus / "test.tsv"), "--out", str(out), "--no-resume",
           "--json", "--quiet"]
    for s in sets:
        cmd += ["--set", s]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"core train failed:\n{proc.stderr[-4000:]}")
    result = json.loads(proc.stdout[proc.stdout.rfind("\n{") + 1:])  # --json prints it last
    history = json.loads((out / "model-best" / "history.json").read_text())
    result["train_tokens_per_s"] = sum(h["train_tokens_per_s"] for h in history) / len(history)
    result["history"] = history
    return result, wall


def in_process_inference(model_dir: Path, texts: list[str], threads: int) -> dict[str, float]:
    """Extractor tokens/s in this process with ``threads`` TF threads (1 = per core)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from nerservice.inference import Extractor

    ex = Extractor.load(model_dir)
    tokens = ex.count_tokens(texts)
    ex.extract(texts[:200])  # warm-up: trace/compile the shapes once, as a long-running server would have
    t0 = time.perf_counter()
    ex.extract(texts)
    seconds = time.perf_counter() - t0
    return {"tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds}


def _preprocess(cluster: SparkCluster, c: Path, prep: Path, results: dict[str, Any], *extra: str) -> dict[str, Any]:
    stats, wall = run(cluster, "spark_jobs/preprocess.py", "--train", str(c / "train.tsv"), "--dev",
                      str(c / "devel.tsv"), "--test", str(c / "test.tsv"), "--out", str(prep), "--overwrite", *extra)
    key = "preprocess" if not extra else "preprocess_w2v"
    results[key] = {"wall_s": wall, "job_s": stats["seconds"], "tokens_per_s_job": stats["tokens_per_s"],
                    "tokens": sum(v["tokens"] for v in stats["splits"].values()), "accounting": stats["accounting"]}
    results[key]["tokens_per_s_wall"] = results[key]["tokens"] / wall
    return stats


def _train_record(summary: dict[str, Any], wall: float) -> dict[str, Any]:
    return {"wall_s": wall, "job_s": summary["seconds"], "test_f1": summary["test"]["micro"]["f1"],
            "dev_f1": summary["dev"]["micro"]["f1"], "best_epoch": summary["best_epoch"],
            "train_tokens_per_s": summary["train_tokens_per_s"], "job_tokens_per_s": summary["job_tokens_per_s"],
            "epoch_seconds": [h["train_seconds"] for h in summary["history"]],
            "weights_identical": summary["weights_identical"], "model_dir": summary["model_dir"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=Path("/work/shared/data/corpora/NCBI-disease"))
    p.add_argument("--work", type=Path, default=Path("/tmp/nerservice-spark-bench"))
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--replicate", type=int, default=20, help="inference texts = test sentences x N")
    p.add_argument("--skip", nargs="*", default=[], choices=["prep", "core", "w1", "w2", "predict"])
    p.add_argument("--w2v", type=int, metavar="DIM", help="also: preprocess with --word2vec DIM (MLlib, all "
                   "tokens) and train 1 worker with those vectors, to compare F1 with train_w1")
    args = p.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    results_path = work / "results.json"
    results: dict[str, Any] = json.loads(results_path.read_text()) if results_path.exists() else {}
    sets = [f"training.epochs={args.epochs}"]
    set_args = [a for s in sets for a in ("--set", s)]

    def save() -> None:
        results_path.write_text(json.dumps(results, indent=2))

    cluster = SparkCluster(work / "cluster", workers=2, cores=1, memory="2g").start()
    try:
        c = args.corpus
        prep = work / "prep"
        if "prep" not in args.skip:
            _preprocess(cluster, c, prep, results)
            save()
        for world in (1, 2):
            if f"w{world}" in args.skip:
                continue
            summary, wall = run(cluster, "spark_jobs/train.py", "--data", str(prep), "--out",
                                str(work / f"train-w{world}"), "--workers", str(world), "--no-resume", *set_args)
            results[f"train_w{world}"] = _train_record(summary, wall)
            save()
        if "core" not in args.skip:
            core, wall = core_train(c, work / "core", sets)
            results["core"] = {"wall_s": wall, "test_f1": core["test"]["micro"]["f1"], "dev_f1": core["dev"]["micro"]["f1"],
                               "best_epoch": core["best_epoch"], "train_tokens_per_s": core["train_tokens_per_s"],
                               "epoch_seconds": [h["train_seconds"] for h in core["history"]]}
            save()
        if "predict" not in args.skip:
            from nerservice.data import read_corpus

            model_dir = Path(results.get("train_w2", results.get("train_w1", {})).get("model_dir", ""))
            sentences = read_corpus(c / "test.tsv").sentences
            texts = [" ".join(s.tokens) for s in sentences] * args.replicate
            src = work / "texts.jsonl"
            src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))
            pred, wall = run(cluster, "spark_jobs/predict.py", "--model", str(model_dir), "--input", str(src),
                             "--output", str(work / "preds"), "--overwrite", "--partitions", "8")
            local = in_process_inference(model_dir, texts, threads=1)
            cores = 2
            results["predict"] = {
                "texts": len(texts), "tokens": local["tokens"], "wall_s": wall, "infer_s": pred["infer_seconds"],
                "extract_s_all_tasks": pred["extract_seconds"], "extractor_loads": pred["extractor_loads"],
                "spark_tokens_per_s": local["tokens"] / pred["infer_seconds"],
                "spark_tokens_per_s_per_core": local["tokens"] / pred["infer_seconds"] / cores,
                "spark_steady_tokens_per_s_per_core": local["tokens"] / pred["extract_seconds"],
                "in_process_tokens_per_s_1_thread": local["tokens_per_s"]}
            r = results["predict"]
            r["ratio_per_core"] = r["spark_tokens_per_s_per_core"] / r["in_process_tokens_per_s_1_thread"]
            r["ratio_steady"] = r["spark_steady_tokens_per_s_per_core"] / r["in_process_tokens_per_s_1_thread"]
            save()
        if args.w2v:
            prep_w2v = work / "prep-w2v"
            stats = _preprocess(cluster, c, prep_w2v, results, "--word2vec", str(args.w2v))
            summary, wall = run(cluster, "spark_jobs/train.py", "--data", str(prep_w2v), "--out",
                                str(work / "train-w1-w2v"), "--workers", "1", "--no-resume", "--embeddings",
                                str(prep_w2v / "word2vec.txt"), *set_args)
            results["train_w1_word2vec"] = {**_train_record(summary, wall), "word2vec": stats["word2vec"],
                                            "vocab": summary["vocab"]}
            save()
    finally:
        cluster.stop()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
