"""Core single-process training benchmark (issue 2): test entity F1, wall time, training tokens/s and peak
memory for one corpus and configuration.  Reads the corpus in place; writes nothing into the repo unless
--json-out is given.

    python bench/train_bench.py --corpus ../shared/data/corpora/NCBI-disease [--embeddings glove-6b-50d] \
        [--set training.max_minutes=28 ...] [--json-out bench/results/core/ncbi-glove.json]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True, help="folder with train.tsv, devel.tsv, test.tsv")
    ap.add_argument("--embeddings", action="append", help="vectors source; repeat to concatenate sources")
    ap.add_argument("--out", default="/tmp/nerservice-bench")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--json-out")
    args = ap.parse_args()
    import keras

    from nerservice.config import NerConfig
    from nerservice.data import read_corpus
    from nerservice.training.trainer import train

    corpus = Path(args.corpus)
    config = NerConfig().with_overrides(args.set)
    tr = read_corpus(corpus / "train.tsv").sentences
    dv = read_corpus(corpus / "devel.tsv").sentences
    te = read_corpus(corpus / "test.tsv").sentences
    t0 = time.perf_counter()
    outcome = train(config, train_data=tr, dev_data=dv, test_data=te, embeddings=args.embeddings,
                    out_dir=Path(args.out) / corpus.name, resume=False, progress=False)
    wall = time.perf_counter() - t0
    tps = [h["train_tokens_per_s"] for h in outcome.history]
    result = {
        "corpus": corpus.name, "embeddings": args.embeddings, "overrides": args.set,
        "backend": keras.backend.backend(), "cpus": os.cpu_count(),
        "test_f1": outcome.test["micro"]["f1"], "test_precision": outcome.test["micro"]["precision"],
        "test_recall": outcome.test["micro"]["recall"],
        "test_per_type": {k: v["f1"] for k, v in outcome.test["per_type"].items()},
        "test_token_level_f1": outcome.test["token_level"]["micro"]["f1"],
        "dev_f1": outcome.dev["micro"]["f1"], "best_epoch": outcome.best_epoch, "epochs_run": len(outcome.history),
        "stopped": outcome.stopped_reason, "wall_minutes": wall / 60,
        "train_tokens_per_s_median": statistics.median(tps), "train_tokens_per_s_by_epoch": tps,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load_average_end": os.getloadavg(),
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
