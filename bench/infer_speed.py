"""In-process inference throughput of the Predictor/Extractor on a corpus's sentences (tokens/s).

    python bench/infer_speed.py --model DIR --corpus FILE [--jit-compile] [--batch-size 256] [--repeats 3]
    python bench/infer_speed.py --random-model --corpus FILE   # untrained default-size model (speed only)
"""
from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--random-model", action="store_true")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--jit-compile", action="store_true", help="TF only: XLA-compile the forward function")
    ap.add_argument("--xla-background", action="store_true", help="TF only: bounded shapes, XLA compiled in "
                    "the background while the graph function answers (the Extractor's default); the first "
                    "pass is followed by waiting for its compiles, then the measured passes")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-scores", action="store_true", help="skip CRF marginals (Viterbi only)")
    args = ap.parse_args()
    if args.xla_background:
        args.jit_compile = "background"
    import keras

    from nerservice.data import read_corpus
    from nerservice.model.predictor import Predictor

    sents = [s.tokens for s in read_corpus(args.corpus).sentences]
    n_tok = sum(len(s) for s in sents)
    if args.random_model:
        from nerservice.config import NerConfig
        from nerservice.model.tagger import build_tagger
        from nerservice.training.trainer import build_vocabularies

        corpus = read_corpus(args.corpus).sentences
        vocabs = build_vocabularies(corpus)
        cfg = NerConfig()
        model = build_tagger(cfg.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                             n_tags=len(vocabs.tags), word_vectors=None)
        pred = Predictor(model, vocabs, max_word_length=cfg.model.max_word_length, batch_size=args.batch_size,
                         jit_compile=args.jit_compile)
    else:
        from nerservice.artifacts.formats import load_model

        pred = load_model(args.model).predictor(batch_size=args.batch_size, jit_compile=args.jit_compile)
    t0 = time.perf_counter()
    pred.tag(sents, with_scores=not args.no_scores)
    warm = time.perf_counter() - t0
    if pred.background_xla is not None:
        t1 = time.perf_counter()
        shapes = pred.background_xla.wait()
        print(f"background XLA: {shapes} shapes compiled, waited {time.perf_counter() - t1:.1f}s after the first pass")
    t0 = time.perf_counter()
    for _ in range(args.repeats):
        pred.tag(sents, with_scores=not args.no_scores)
    dt = (time.perf_counter() - t0) / args.repeats
    print(f"backend={keras.backend.backend()} jit_compile={args.jit_compile} batch={args.batch_size} "
          f"threads(TF intra/inter)={os.environ.get('TF_NUM_INTRAOP_THREADS', 'default')}: "
          f"{n_tok} tokens, first pass {warm:.1f}s, {n_tok / dt:,.0f} tokens/s")
    if pred.background_xla is not None:
        print(f"calls served by XLA {pred.background_xla.xla_calls}, by the graph function "
              f"{pred.background_xla.graph_calls} (first pass only, while compiling)")


if __name__ == "__main__":
    main()
