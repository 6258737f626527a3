"""Core single-process training benchmark (issue 2): test entity F1, wall time, training tokens/s and peak
memory for one corpus and configuration.  Reads the corpus in place; writes nothing into the repo unless
--json-out is given.

    python bench/train_bench.py --corpus ../shared/data/corpora/NCBI-disease [--embeddings glove-6b-50d] \
        [--set training.max_minutes=28 ...] [--json-out bench/results/core/ncbi-glove.json]

--train-on-dev: the final-model protocol — train on train + devel for exactly ``training.epochs`` epochs
(no early stopping: patience is set to the epoch count) and report the test F1 of model-last, so nothing is
selected on data the model trained on.  The loop still evaluates devel each epoch (its F1 is then a
training-set figure, kept only for the history).  Choose the epoch count from train-only runs.
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
    ap.add_argument("--train-on-dev", action="store_true", help="train on train+devel, fixed epochs (see above)")
    args = ap.parse_args()
    import keras

    from nerservice.config import NerConfig
    from nerservice.data import read_corpus
    from nerservice.training.trainer import train

    corpus = Path(args.corpus)
    config = NerConfig().with_overrides(args.set)
    if args.train_on_dev:
        config = config.with_overrides([f"training.patience={config.training.epochs}"])
    tr = read_corpus(corpus / "train.tsv").sentences
    dv = read_corpus(corpus / "devel.tsv").sentences
    te = read_corpus(corpus / "test.tsv").sentences
    out = Path(args.out) / corpus.name
    t0 = time.perf_counter()
    outcome = train(config, train_data=[*tr, *dv] if args.train_on_dev else tr, dev_data=dv, test_data=te,
                    embeddings=args.embeddings, out_dir=out, resume=False, progress=False)
    wall = time.perf_counter() - t0
    test = outcome.test
    if args.train_on_dev:  # fixed epochs: the last model, not one picked on (training) devel F1
        from nerservice.artifacts.formats import load_model
        from nerservice.artifacts.layout import LAST
        from nerservice.metrics import evaluate_predictor

        test = evaluate_predictor(load_model(out / LAST).predictor(), te)
    tps = [h["train_tokens_per_s"] for h in outcome.history]
    result = {
        "corpus": corpus.name, "embeddings": args.embeddings, "overrides": args.set,
        "protocol": "train+devel, fixed epochs, model-last" if args.train_on_dev else "train, early stopping on devel",
        "backend": keras.backend.backend(), "cpus": os.cpu_count(),
        "test_f1": test["micro"]["f1"], "test_precision": test["micro"]["precision"],
        "test_recall": test["micro"]["recall"],
        "test_per_type": {k: v["f1"] for k, v in test["per_type"].items()},
        "test_token_level_f1": test["token_level"]["micro"]["f1"],
        "test_nerdl_tag_f1": test["tag_level"]["micro"]["f1"],  # NerDL's logged figure (per IOB tag, O excluded)
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
