"""The ONNX Runtime path against the Keras path, side by side in one process on the same sentences:
sameness (emissions, tags, entity spans and scores, entity F1) and tokens/s (alternating passes).

    python bench/runtime_compare.py --model DIR [--export DIR] --corpus TEST.tsv [--repeats 3] [--threads N]
    taskset -c 0 python bench/runtime_compare.py ...   # one core

Without --export the Keras model is converted in memory (what ``Extractor.load`` does by default).
Speed is Predictor.tag (encode + forward + Viterbi + marginals), pre-tokenised sentences, batch 256.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--export")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, help="ONNX Runtime intra-op threads (default: one per core)")
    ap.add_argument("--word-cache", type=int, help="word-feature cache rows (0 = off)")
    ap.add_argument("--batch-size", type=int, default=256)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from nerservice.data import read_corpus
    from nerservice.data.schemes import spans
    from nerservice.metrics import entity_scores
    from nerservice.runtime.select import load_for_inference

    corpus = read_corpus(args.corpus).sentences
    sents, gold = [s.tokens for s in corpus], [s.tags for s in corpus]
    n_tok = sum(map(len, sents))
    from nerservice.artifacts.resolve import resolve_dir as resolve_model_dir

    args.model = str(resolve_model_dir(args.model))
    keras = load_for_inference(args.model, runtime="keras").predictor(batch_size=args.batch_size)
    onnx = load_for_inference(args.export or args.model, runtime="onnx", threads=args.threads,
                              word_cache=args.word_cache).predictor(batch_size=args.batch_size)
    em_k, em_o = keras.emissions(sents), onnx.emissions(sents)
    tag_k, tag_o = keras.tag(sents), onnx.tag(sents)
    ent_k = [[(s, e, lab) for s, e, lab in spans(t.tags)] for t in tag_k]
    ent_o = [[(s, e, lab) for s, e, lab in spans(t.tags)] for t in tag_o]
    score_diff = max((abs(a - b) for x, y in zip(tag_k, tag_o) for a, b in zip(x.scores, y.scores)), default=0.0)
    f1_k = entity_scores(gold, [t.tags for t in tag_k])["micro"]["f1"]
    f1_o = entity_scores(gold, [t.tags for t in tag_o])["micro"]["f1"]
    speed: dict[str, list[float]] = {"keras": [], "onnx": []}
    cpu: dict[str, list[float]] = {"keras": [], "onnx": []}
    for _ in range(args.repeats):
        for name, pred in (("keras", keras), ("onnx", onnx)):
            t0, c0 = time.perf_counter(), time.process_time()
            pred.tag(sents)
            speed[name].append(n_tok / (time.perf_counter() - t0))
            cpu[name].append(n_tok / (time.process_time() - c0))
    out = {
        "corpus": args.corpus, "sentences": len(sents), "tokens": n_tok,
        "source": "export" if args.export else "in-memory conversion",
        "cores_allowed": len(os.sched_getaffinity(0)), "load_avg_1min": round(os.getloadavg()[0], 2),
        "max_abs_emission_diff": float(max(np.abs(a - b).max() for a, b in zip(em_k, em_o) if len(a))),
        "sentences_same_tags": sum(a.tags == b.tags for a, b in zip(tag_k, tag_o)),
        "entities_keras": sum(map(len, ent_k)), "entities_identical": ent_k == ent_o,
        "max_abs_score_diff": score_diff, "entity_f1_keras": round(f1_k, 6), "entity_f1_onnx": round(f1_o, 6),
        "tokens_per_s_keras": [round(x) for x in speed["keras"]],
        "tokens_per_s_onnx": [round(x) for x in speed["onnx"]],
        "median_keras": round(statistics.median(speed["keras"])), "median_onnx": round(statistics.median(speed["onnx"])),
        # Tokens per CPU-second of this process: on a shared machine, what one core would do if it were ours
        # (with more than one core allowed it is per core used, not per wall second).
        "tokens_per_cpu_s_keras": round(statistics.median(cpu["keras"])),
        "tokens_per_cpu_s_onnx": round(statistics.median(cpu["onnx"])),
    }
    out["speedup_median"] = round(out["median_onnx"] / out["median_keras"], 2)
    out["speedup_cpu"] = round(out["tokens_per_cpu_s_onnx"] / out["tokens_per_cpu_s_keras"], 2)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
