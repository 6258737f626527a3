"""GPU training benchmark (issue 7): the project's own code paths, KERAS_BACKEND=jax, on the lent H200.

Reports, for the real model (char-CNN + char-BiLSTM + residual BiLSTMs + CRF) on a corpus:
  * training tokens/s of the project's loop (``nerservice.training.trainer.train``), time per epoch,
    time to best dev F1, test entity F1;
  * inference tokens/s of the project's ``Predictor`` (what the Extractor uses) on the test set;
  * a ceiling for *our shapes*: the same model and JaxStep, with every batch pre-encoded and resident on
    the device, stepping back to back (no host work at all) — our loop's ratio to it is the efficiency of
    everything around the compiled step.

    KERAS_BACKEND=jax python bench/gpu/train_gpu.py --corpus DIR [--embeddings FILE] [--set k=v ...]
        [--data-parallel N]   # N GPUs of this host, keras.distribution.DataParallel (one process)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("KERAS_BACKEND", "jax")


def pack_windows(sentences, max_tokens):  # noqa: ANN001, ANN201
    """Consecutive sentences (file order = document order in these corpora) packed greedily into sequences
    of at most ``max_tokens`` tokens; a longer sentence stays alone."""
    from nerservice.data.sentence import Sentence

    out, toks, tags = [], [], []
    for s in sentences:
        if toks and len(toks) + len(s.tokens) > max_tokens:
            out.append(Sentence(tuple(toks), tuple(tags)))
            toks, tags = [], []
        toks += s.tokens
        tags += s.tags
    if toks:
        out.append(Sentence(tuple(toks), tuple(tags)))
    return out


def measure_ceiling(config, tr, dv, te, n_train_tokens, args):  # noqa: ANN001, ANN201
    import jax
    import numpy as np

    from nerservice.model.tagger import build_tagger
    from nerservice.text.features import EncodedCorpus, ShapePolicy
    from nerservice.training.loop import epoch_plan
    from nerservice.training.steps import make_train_step
    from nerservice.training.trainer import vocabularies_with_vectors

    vocabs, matrix, _ = vocabularies_with_vectors(tr, dv + te, args.embeddings, progress=False,
                                                  vector_vocabulary=config.model.vector_vocabulary)
    model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                         n_tags=len(vocabs.tags), word_vectors=matrix, seed=config.training.seed)
    step = make_train_step(model, config.training)
    enc = EncodedCorpus([s.tokens for s in tr], vocabs, max_word_length=config.model.max_word_length,
                        tags=[s.tags for s in tr])
    policy = ShapePolicy.for_backend("jax", batch_size=config.training.batch_size,
                                     time_multiple=config.training.bucket_size)
    plan = epoch_plan([len(s.tokens) for s in tr], config, 0)
    batches = [jax.device_put(enc.batch(idx, policy)) for idx in plan]
    shapes = {tuple(b["token_ids"].shape) + tuple(b["word_chars"].shape) for b in batches}
    # Does the compiled step run the recurrent layers through cuDNN (a mask would prevent it: docs/ARCHITECTURE.md, platform facts)?
    b0 = batches[0]
    hlo = step._step.lower(step._tv, step._ntv, step._ov, {k: b0[k] for k in b0}, np.float32(1)).compile().as_text()
    cudnn = "cudnn" in hlo.lower()
    print(f"cuDNN RNN in the compiled training step: {cudnn}", flush=True)
    t0 = time.perf_counter()
    loss = None
    for b, idx in zip(batches, plan):  # pass 1 compiles every shape
        loss = step(b, len(idx))
    jax.block_until_ready(loss)
    compile_pass = time.perf_counter() - t0
    ceiling = []
    for _ in range(args.ceiling_passes):
        t0 = time.perf_counter()
        for b, idx in zip(batches, plan):
            loss = step(b, len(idx))
        jax.block_until_ready(loss)
        ceiling.append(n_train_tokens / (time.perf_counter() - t0))
    ceiling_tps = max(ceiling)
    print(f"ceiling: {len(shapes)} shapes, first pass (compiles) {compile_pass:.1f}s, "
          f"tokens/s {[round(x) for x in ceiling]}", flush=True)
    del batches
    return ceiling_tps, shapes, compile_pass, cudnn



class EpochLog:
    """One JSON line per epoch on stdout: a run killed at a device call's limit still shows its dev curve."""

    def on_start(self, config: object) -> None:
        return None

    def on_epoch(self, record: dict, is_best: bool) -> None:
        keys = ("epoch", "dev_f1", "loss", "train_seconds", "eval_seconds", "train_tokens_per_s")
        print(json.dumps({"epoch_log": {k: record.get(k) for k in keys}, "best": is_best}), flush=True)

    def on_end(self, outcome: object) -> None:
        return None


def seen_unseen_recall(predictor, train, sentences):  # noqa: ANN001, ANN201
    """Recall of gold mentions whose text (case-folded) is / is not annotated anywhere in the training split: a
    diagnostic for corpora whose held-out mentions are mostly new names (linnaeus), where overall dev F1 is
    near its ceiling and says little about them."""
    from nerservice.data.schemes import spans

    def mentions(s):  # noqa: ANN001, ANN202
        return [(a, b, lab, " ".join(s.tokens[a:b]).casefold()) for a, b, lab in spans(s.tags)]

    known = {m[3] for s in train for m in mentions(s)}
    pred = predictor.predict_tags([s.tokens for s in sentences])
    hit = {"seen": [0, 0], "unseen": [0, 0]}
    for s, tags in zip(sentences, pred):
        found = {(a, b, lab) for a, b, lab in spans(list(tags))}
        for a, b, lab, text in mentions(s):
            k = "seen" if text in known else "unseen"
            hit[k][1] += 1
            hit[k][0] += (a, b, lab) in found
    return {k: {"mentions": n, "recall": round(100.0 * h / n, 2) if n else None} for k, (h, n) in hit.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True, help="folder with train.tsv devel.tsv test.tsv")
    ap.add_argument("--embeddings", action="append", help="vectors source; repeat to concatenate sources")
    ap.add_argument("--out", default="/tmp/gpu-run")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--ceiling-passes", type=int, default=2)
    ap.add_argument("--json-out")
    ap.add_argument("--no-ceiling", action="store_true", help="skip the ceiling measurement (sweeps)")
    ap.add_argument("--data-parallel", type=int, metavar="N",
                    help="shard every batch over N local GPUs (keras.distribution.DataParallel)")
    ap.add_argument("--no-inference", action="store_true", help="skip the inference measurement")
    ap.add_argument("--window-tokens", type=int, default=0, metavar="W",
                    help="experiment (issue 14): pack consecutive sentences of every split into windows of <= W "
                    "tokens (document context for the BiLSTM; entities never cross a sentence end, so entity F1 "
                    "over windows counts the same entities); 0 = one sentence per sequence")
    ap.add_argument("--seen-unseen", action="store_true", help="also report the model's recall on dev and test "
                    "mentions seen / unseen as mentions in train (seen_unseen_recall)")
    ap.add_argument("--train-on-dev", action="store_true", help="final-model protocol (as bench/train_bench.py): "
                    "train on train+devel for exactly training.epochs, report model-last's test F1")
    ap.add_argument("--fold", help="cross-fitting teacher (bench/gpu/distil_gpu.py --cross-fit, bench/gpu/folds.py): "
                    "train, devel (train on that split only) or IofK (train on train + devel without its I-th of K "
                    "blocks) for exactly training.epochs, model-last, with the text left out as its dev (held out: "
                    "its F1 is an out-of-fold figure)")
    args = ap.parse_args()
    if args.fold and (args.train_on_dev or args.window_tokens):
        raise SystemExit("--fold trains on one split as it is: not with --train-on-dev or --window-tokens")

    import jax
    import keras
    from folds import split_fold  # bench/gpu/, the script's own folder
    from runtime import runtime

    from nerservice.config import NerConfig
    from nerservice.data import read_corpus
    from nerservice.training.trainer import train

    print("backend", keras.backend.backend(), "devices", jax.devices(), flush=True)
    if args.data_parallel:
        from nerservice.training.parallel import use_data_parallel

        use_data_parallel(args.data_parallel)
    config = NerConfig().with_overrides(args.set)
    fixed = args.train_on_dev or bool(args.fold)  # fixed epochs, model-last
    if fixed:
        config = config.with_overrides([f"training.patience={config.training.epochs}"])
    tr = read_corpus(os.path.join(args.corpus, "train.tsv")).sentences
    dv = read_corpus(os.path.join(args.corpus, "devel.tsv")).sentences
    if args.fold:
        tr, dv = split_fold(args.fold, tr, dv)
    te = read_corpus(os.path.join(args.corpus, "test.tsv")).sentences
    if args.window_tokens:
        tr, dv, te = (pack_windows(x, args.window_tokens) for x in (tr, dv, te))
        print(f"windows of <= {args.window_tokens} tokens: train {len(tr)} dev {len(dv)} test {len(te)}", flush=True)
    n_train_tokens = sum(len(s.tokens) for s in tr)

    # --- ceiling: same model + step, device-resident batches, no host work -----------------------------
    ceiling_tps, shapes, compile_pass, cudnn = float("nan"), set(), float("nan"), None
    if not args.no_ceiling:
        ceiling_tps, shapes, compile_pass, cudnn = measure_ceiling(config, tr, dv, te, n_train_tokens, args)
    # --- the project's training loop -------------------------------------------------------------------
    t0 = time.perf_counter()
    outcome = train(config, callbacks=[EpochLog()], train_data=[*tr, *dv] if args.train_on_dev else tr, dev_data=dv, test_data=te,
                    embeddings=args.embeddings, out_dir=args.out, resume=False, progress=False)
    wall = time.perf_counter() - t0
    test = outcome.test
    if fixed:  # fixed epochs: the last model, not one picked on (training) devel F1
        from nerservice.artifacts.formats import load_model as _load
        from nerservice.artifacts.layout import LAST
        from nerservice.metrics import evaluate_predictor as evaluator

        test = evaluator(_load(os.path.join(args.out, LAST)).predictor(), te)
    hist = outcome.history
    tps = [h["train_tokens_per_s"] for h in hist]
    steady = statistics.median(tps[1:]) if len(tps) > 1 else tps[0]
    elapsed = 0.0
    time_to_best = None
    for h in hist:
        elapsed += h["train_seconds"] + h["eval_seconds"]
        if h["epoch"] == outcome.best_epoch:
            time_to_best = elapsed

    # --- inference through the Predictor ---------------------------------------------------------------
    from nerservice.artifacts.formats import load_model

    infer_tps = None
    if not args.no_inference:
        pred = load_model(outcome.best_dir).predictor(batch_size=256)
        sents = [s.tokens for s in te]
        pred.predict_tags(sents)  # compile
        t0 = time.perf_counter()
        for _ in range(3):
            pred.predict_tags(sents)
        infer_tps = 3 * sum(len(s) for s in sents) / (time.perf_counter() - t0)

    recall_split = None
    if args.seen_unseen:
        from nerservice.artifacts.layout import LAST as _last

        best = load_model(os.path.join(args.out, _last) if fixed else outcome.best_dir)
        pred = best.predictor(batch_size=256)
        recall_split = {"dev": seen_unseen_recall(pred, tr, dv), "test": seen_unseen_recall(pred, tr, te)}

    result = {
        "seen_unseen_recall": recall_split,
        **runtime(), "data_parallel_devices": args.data_parallel or 1,
        "embeddings": args.embeddings, "window_tokens": args.window_tokens, "config": config.model_dump(mode="json"),
        "train_sentences": len(tr), "dev_sentences": len(dv), "epochs_run": len(hist), "best_epoch": outcome.best_epoch, "stopped": outcome.stopped_reason,
        "train_tokens_per_s_steady": steady, "train_tokens_per_s_by_epoch": tps,
        "epoch_seconds": [h["train_seconds"] for h in hist], "eval_seconds": [h["eval_seconds"] for h in hist],
        "time_to_best_s": time_to_best, "wall_s": wall,
        "protocol": ("train+devel, fixed epochs, model-last" if args.train_on_dev else
                     f"cross-fitting fold {args.fold}: fixed epochs, model-last, dev = the text left out" if args.fold else
                     "train, early stopping on devel"),
        "corpus": os.path.basename(os.path.normpath(args.corpus)), "dev_f1_by_epoch": [h["dev_f1"] for h in hist],
        "dev_f1": outcome.dev["micro"]["f1"], "test_f1": test["micro"]["f1"] if test else None,
        "test_per_type": {k: v["f1"] for k, v in test["per_type"].items()} if test else None,
        "dev_nerdl_tag_f1": outcome.dev["tag_level"]["micro"]["f1"],
        "test_nerdl_tag_f1": test["tag_level"]["micro"]["f1"] if test else None,
        "ceiling_tokens_per_s": ceiling_tps, "ratio_to_ceiling": steady / ceiling_tps,
        "ceiling_shapes": len(shapes), "ceiling_compile_pass_s": compile_pass,
        "inference_tokens_per_s": infer_tps, "cudnn_in_step": cudnn,
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(result, fh, indent=2)


if __name__ == "__main__":
    main()
