"""Where the ONNX runtime's time goes: host encoding, the word graph (char encoders + dense, per distinct
word), the context graph (BiLSTM stack + emissions), CRF decode (Viterbi + marginals). Best of N passes.

    taskset -c 0 python bench/profile_runtime.py --model EXPORT_OR_MODEL --corpus TEST.tsv [--repeats 3] [--word-cache 20000]

Batches are the predictor's own forward batches (``forward_batches``).
"""
from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--word-cache", type=int, default=0, help="word-feature cache rows (the default path: 20000)")
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np

    from nerservice.artifacts.resolve import resolve_dir as resolve_model_dir
    from nerservice.data import read_corpus
    from nerservice.model.predictor import decode_emissions
    from nerservice.runtime.forward import distinct_words
    from nerservice.runtime.select import load_for_inference
    from nerservice.text.features import EncodedCorpus

    sents = [s.tokens for s in read_corpus(args.corpus).sentences]
    n_tok = sum(map(len, sents))
    pred = load_for_inference(resolve_model_dir(args.model), runtime="onnx", threads=args.threads,
                              word_cache=args.word_cache).predictor(batch_size=args.batch_size)
    fwd = pred._forward
    best: dict[str, float] = defaultdict(lambda: float("inf"))
    for _ in range(args.repeats):
        t: dict[str, float] = defaultdict(float)
        t0 = time.perf_counter()
        enc = EncodedCorpus(sents, pred.vocabs, max_word_length=pred.max_word_length)
        batches = [enc.batch(idx, pred.policy, with_tags=False) for idx in pred.forward_batches([len(s) for s in sents])]
        t["encode"] += time.perf_counter() - t0
        ems = []
        rows = 0
        for b in batches:
            t1 = time.perf_counter()
            ids, chars, index = distinct_words(b)
            rows += len(ids)
            t2 = time.perf_counter()
            feats = fwd.word_features(ids, chars)  # through the cache when it is on
            t3 = time.perf_counter()
            em = fwd.context.run(None, fwd.context_inputs(b, feats, index))[0]
            t4 = time.perf_counter()
            t["distinct words (host)"] += t2 - t1
            t["word graph: char-CNN + char-BiLSTM + dense"] += t3 - t2
            t["context graph: 3 BiLSTM + emissions"] += t4 - t3
            ems.extend(em[r, :n].astype(np.float64) for r, n in enumerate(b["lengths"]))
        t5 = time.perf_counter()
        decode_emissions(ems, pred.crf_params(), pred.vocabs.tags.tag, with_scores=True,
                         batch_size=pred.batch_size, bucket_size=pred.bucket_size)
        t["CRF decode (Viterbi + marginals)"] += time.perf_counter() - t5
        t["total"] = sum(t.values())
        for k, v in t.items():
            best[k] = min(best[k], v)
    total = best["total"]
    print(json.dumps({"tokens": n_tok, "batches": len(batches), "word rows per pass": rows,
                      "cores_allowed": len(os.sched_getaffinity(0)), "load_avg_1min": round(os.getloadavg()[0], 2),
                      f"seconds (best of {args.repeats})": {k: round(v, 4) for k, v in best.items()},
                      "share": {k: f"{100 * v / total:.1f}%" for k, v in best.items() if k != "total"},
                      "tokens_per_s": round(n_tok / total)}, indent=1))


if __name__ == "__main__":
    main()
