"""Spark jobs on NCBI-disease: preprocess → train with 1 and 2 workers (vs the core's single-process
trainer) → batch inference (vs the in-process Extractor).  Not a test; prints the figures and writes them
as JSON to WORK/results.json.

    .venv/bin/python bench/spark_bench.py --corpus /work/shared/data/corpora/NCBI-disease \\
        --work /tmp/nerservice-spark-bench --epochs 3

Scaling (issue 19): ``--scaling grow --skip core`` trains 1 and 2 workers x 1 core with a full batch each and
writes ``ratio_w2_vs_w1_grow``. Training throughput = training tokens of all epochs / the epochs' timed steps
(``training_phase``: without dev evaluation and without the one-time warm-up step, which is reported beside
it); whole-job wall time is reported too, with ``phases`` saying where it went.

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

from nerservice.artifacts.layout import BEST, HISTORY, LAST, WEIGHTS  # noqa: E402


def run(cluster: SparkCluster, script: str, *args: str, timeout: float = 1800,
        conf: dict[str, str] | None = None) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    proc = cluster.submit(script, *args, timeout=timeout, conf=conf)
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
    history = json.loads((out / BEST / HISTORY).read_text())
    result["train_tokens_per_s"] = sum(h["train_tokens_per_s"] for h in history) / len(history)
    result["history"] = history
    return result, wall


def in_process_inference(model_dir: Path, texts_file: Path, *, part: int, parts: int) -> dict[str, float]:
    """Extractor tokens/s in this process on every ``parts``-th text, with one TF thread (one core)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from nerservice.inference import Extractor

    texts = [json.loads(line)["text"] for line in texts_file.read_text().splitlines()][part::parts]
    ex = Extractor.load(model_dir)
    tokens = ex.count_tokens(texts)
    ex.extract(texts[:200])  # warm-up: trace the shapes once, as a long-running server would have
    t0 = time.perf_counter()
    for i in range(0, len(texts), 2048):  # the batch size predict.py hands the Extractor (--arrow-batch)
        ex.extract(texts[i:i + 2048])
    seconds = time.perf_counter() - t0
    return {"tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds}


def in_process_runs(model_dir: Path, texts_file: Path, parallel: int) -> list[dict[str, float]]:
    """``parallel`` single-thread processes at once, each on its share of the texts."""
    cmd = [sys.executable, __file__, "--inproc", str(model_dir), str(texts_file)]
    procs = [subprocess.Popen([*cmd, str(i), str(parallel)], stdout=subprocess.PIPE, text=True,
                              stderr=subprocess.DEVNULL) for i in range(parallel)]
    return [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]


def max_weight_difference(a: Path, b: Path) -> dict[str, float]:
    """Largest absolute difference between two saved models' weights (same architecture)."""
    import h5py
    import numpy as np

    arrays: list[dict[str, np.ndarray]] = []
    for d in (a, b):
        found: dict[str, np.ndarray] = {}
        with h5py.File(d / "model.weights.h5", "r") as f:
            f.visititems(lambda name, obj: found.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
        arrays.append(found)
    assert arrays[0].keys() == arrays[1].keys()
    diffs = [float(np.max(np.abs(arrays[0][k] - arrays[1][k]))) for k in arrays[0] if arrays[0][k].size]
    scale = max(float(np.max(np.abs(v))) for v in arrays[0].values() if v.size)
    return {"max_abs_weight_diff": max(diffs), "max_abs_weight": scale, "weight_arrays": len(diffs)}


def _preprocess(cluster: SparkCluster, c: Path, prep: Path, results: dict[str, Any], *extra: str) -> dict[str, Any]:
    stats, wall = run(cluster, "spark_jobs/preprocess.py", "--train", str(c / "train.tsv"), "--dev",
                      str(c / "devel.tsv"), "--test", str(c / "test.tsv"), "--out", str(prep), "--overwrite", *extra)
    key = "preprocess" if not extra else "preprocess_w2v"
    results[key] = {"wall_s": wall, "job_s": stats["seconds"], "tokens_per_s_job": stats["tokens_per_s"],
                    "tokens": sum(v["tokens"] for v in stats["splits"].values()), "accounting": stats["accounting"]}
    results[key]["tokens_per_s_wall"] = results[key]["tokens"] / wall
    return stats


def _train_record(summary: dict[str, Any], wall: float, load_before: tuple[float, ...]) -> dict[str, Any]:
    """One train.py job. Throughput is ``training_phase.tokens_per_s``: training tokens of every epoch over
    the epochs' timed steps (not dev evaluation, not the one-time warm-up, which is ``training_phase.warmup_s``);
    ``wall_s`` is the whole spark-submit, ``phases`` where the rest went."""
    return {"wall_s": wall, "job_s": summary["seconds"], "test_f1": summary["test"]["micro"]["f1"],
            "training_phase": summary["training_phase"], "phases": summary["phases"], "step": summary.get("step"),
            "loadavg_before": load_before,
            "dev_f1": summary["dev"]["micro"]["f1"], "best_epoch": summary["best_epoch"],
            "train_tokens_per_s": summary["train_tokens_per_s"], "job_tokens_per_s": summary["job_tokens_per_s"],
            "epoch_seconds": [h["train_seconds"] for h in summary["history"]],
            "eval_seconds": [h["eval_seconds"] for h in summary["history"]], "scaling": summary.get("scaling"),
            "loadavg_after": os.getloadavg(), "steps_epoch1": summary["workers"][0]["shard_epoch1"]["steps"],
            "train_tokens": summary["data"]["train"]["tokens"], "dev_tokens": summary["data"]["dev"]["tokens"],
            "weights_identical": summary["weights_identical"], "model_dir": summary["model_dir"]}


def ratios(w1: dict[str, Any], w2: dict[str, Any]) -> dict[str, float]:
    """2 workers vs 1: training-phase throughput (the target's measure), the same with the warm-up counted
    as training time, and whole-job wall time (w1 / w2: > 1 = the 2-worker job is faster)."""
    p1, p2 = w1["training_phase"], w2["training_phase"]
    with_warmup = [p["tokens"] / (p["seconds"] + p["warmup_s"]) for p in (p1, p2)]
    return {"training_phase_tokens_per_s": p2["tokens_per_s"] / p1["tokens_per_s"],
            "training_phase_with_warmup": with_warmup[1] / with_warmup[0],
            "job_wall": w1["wall_s"] / w2["wall_s"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=Path("/work/shared/data/corpora/NCBI-disease"))
    p.add_argument("--work", type=Path, default=Path("/tmp/nerservice-spark-bench"))
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--replicate", type=int, default=60, help="inference texts = test sentences x N")
    p.add_argument("--partitions", type=int, default=4, help="predict.py --partitions")
    p.add_argument("--equivalence-epochs", type=int, metavar="N", help="also: train 1 and 2 workers for N epochs "
                   "and compare their final weights")
    p.add_argument("--equivalence-dropout", type=float, default=0.5, help="model.dropout of the equivalence runs "
                   "(workers draw the single process's masks, so equality holds with dropout on)")
    p.add_argument("--skip", nargs="*", default=[], choices=["prep", "core", "w1", "w2", "predict", "predict1"])
    p.add_argument("--scaling", choices=["fixed", "grow"], default="fixed",
                   help="train.py --scaling of the w1/w2 runs (results keys get a _grow suffix for grow)")
    p.add_argument("--predict-model", type=Path, help="model folder for predict (default: the w2/w1 run's)")
    p.add_argument("--predict-runtime", default="auto", choices=["auto", "onnx", "keras"],
                   help="predict.py --runtime (the executors' inference runtime)")
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
            suffix = "_grow" if args.scaling == "grow" else ""
            load = os.getloadavg()
            summary, wall = run(cluster, "spark_jobs/train.py", "--data", str(prep), "--out",
                                str(work / f"train-w{world}{suffix}"), "--workers", str(world), "--no-resume",
                                "--scaling", args.scaling, *set_args)
            results[f"train_w{world}{suffix}"] = _train_record(summary, wall, load)
            save()
        suffix = "_grow" if args.scaling == "grow" else ""
        if all(f"train_w{w}{suffix}" in results for w in (1, 2)):
            results[f"ratio_w2_vs_w1{suffix}"] = ratios(results[f"train_w1{suffix}"], results[f"train_w2{suffix}"])
            save()
        if "core" not in args.skip:
            core, wall = core_train(c, work / "core", sets)
            results["core"] = {"wall_s": wall, "test_f1": core["test"]["micro"]["f1"], "dev_f1": core["dev"]["micro"]["f1"],
                               "best_epoch": core["best_epoch"], "train_tokens_per_s": core["train_tokens_per_s"],
                               "epoch_seconds": [h["train_seconds"] for h in core["history"]]}
            save()
        # Same model whatever the worker count: the final (model-last) weights of each pair of runs.
        pairs = {"w1_vs_w2": ("train-w1", "train-w2"), "core_vs_w1": ("core", "train-w1"),
                 "core_vs_w2": ("core", "train-w2")}
        for key, (a, b) in pairs.items():
            if all((work / d / LAST / WEIGHTS).exists() for d in (a, b)):
                results[key] = max_weight_difference(work / a / LAST, work / b / LAST)
        save()
        sfx = "_grow" if args.scaling == "grow" else ""
        trained = results.get(f"train_w2{sfx}", results.get(f"train_w1{sfx}", {}))
        model_dir = args.predict_model or Path(trained.get("model_dir", ""))
        if "predict" not in args.skip:
            from nerservice.data import read_corpus

            sentences = read_corpus(c / "test.tsv").sentences
            texts = [" ".join(s.tokens) for s in sentences] * args.replicate
            src = work / "texts.jsonl"
            src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))
            load = os.getloadavg()
            pred, wall = run(cluster, "spark_jobs/predict.py", "--model", str(model_dir), "--input", str(src),
                             "--output", str(work / "preds"), "--overwrite", "--partitions", str(args.partitions),
                             "--runtime", args.predict_runtime)
            alone = in_process_runs(model_dir, src, 1)[0]
            load_after = os.getloadavg()  # before the in-process runs below
            pair = in_process_runs(model_dir, src, 2)  # both cores busy, as during the Spark job
            cores = 2
            tokens = alone["tokens"]
            r = results["predict"] = {
                "texts": len(texts), "tokens": tokens, "partitions": pred["partitions"], "wall_s": wall,
                "infer_s": pred["infer_seconds"], "extract_s_all_tasks": pred["extract_seconds"],
                "extractor_loads": pred["extractor_loads"], "runtime": args.predict_runtime,
                "loadavg_before": load, "loadavg_after": load_after,
                "spark_tokens_per_s_per_core": tokens / pred["infer_seconds"] / cores,
                "spark_steady_tokens_per_s_per_core": tokens / pred["extract_seconds"],
                "in_process_1_thread_alone": alone["tokens_per_s"],
                "in_process_1_thread_2_concurrent": sum(x["tokens"] for x in pair) / sum(x["seconds"] for x in pair)}
            for base in ("in_process_1_thread_alone", "in_process_1_thread_2_concurrent"):
                r[f"ratio_vs_{base}"] = r["spark_tokens_per_s_per_core"] / r[base]
                r[f"ratio_steady_vs_{base}"] = r["spark_steady_tokens_per_s_per_core"] / r[base]
            save()
        if "predict1" not in args.skip:  # the same job on one executor of one core (spark.cores.max=1)
            src = work / "texts.jsonl"
            load = os.getloadavg()
            pred, wall = run(cluster, "spark_jobs/predict.py", "--model", str(model_dir),
                             "--input", str(src), "--output", str(work / "preds1"), "--overwrite", "--partitions",
                             str(args.partitions), "--runtime", args.predict_runtime, conf={"spark.cores.max": "1"})
            tokens = results["predict"]["tokens"]
            results["predict_1_executor"] = {
                "wall_s": wall, "infer_s": pred["infer_seconds"], "extract_s_all_tasks": pred["extract_seconds"],
                "spark_tokens_per_s_per_core": tokens / pred["infer_seconds"],
                "spark_steady_tokens_per_s_per_core": tokens / pred["extract_seconds"], "loadavg_before": load,
                "loadavg_after": os.getloadavg(), "runtime": args.predict_runtime}
            save()
        if args.equivalence_epochs:
            eq_sets = ["--set", f"training.epochs={args.equivalence_epochs}",
                       "--set", f"model.dropout={args.equivalence_dropout}"]
            runs = {}
            for world in (1, 2):
                summary, wall = run(cluster, "spark_jobs/train.py", "--data", str(prep), "--out",
                                    str(work / f"equiv-w{world}"), "--workers", str(world), "--no-resume", *eq_sets)
                runs[world] = {"wall_s": wall, "test_f1": summary["test"]["micro"]["f1"],
                               "loss": [h["loss"] for h in summary["history"]]}
            diff = max_weight_difference(work / "equiv-w1" / LAST, work / "equiv-w2" / LAST)
            results[f"equivalence_dropout_{args.equivalence_dropout}"] = {
                "epochs": args.equivalence_epochs, "dropout": args.equivalence_dropout, "w1": runs[1], "w2": runs[2],
                **diff}
            save()
        if args.w2v:
            prep_w2v = work / "prep-w2v"
            stats = _preprocess(cluster, c, prep_w2v, results, "--word2vec", str(args.w2v))
            summary, wall = run(cluster, "spark_jobs/train.py", "--data", str(prep_w2v), "--out",
                                str(work / "train-w1-w2v"), "--workers", "1", "--no-resume", "--embeddings",
                                str(prep_w2v / "word2vec.txt"), *set_args)
            results["train_w1_word2vec"] = {**_train_record(summary, wall, os.getloadavg()), "word2vec": stats["word2vec"],
                                            "vocab": summary["vocab"]}
            save()
    finally:
        cluster.stop()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--inproc":  # a worker process of in_process_runs
        print(json.dumps(in_process_inference(Path(sys.argv[2]), Path(sys.argv[3]), part=int(sys.argv[4]),
                                              parts=int(sys.argv[5]))))
    else:
        main()
