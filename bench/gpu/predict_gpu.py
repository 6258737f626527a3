"""GPU batch inference (issue 15): the JAX Predictor with the CRF decode on the device, on a large job.

    KERAS_BACKEND=jax python bench/gpu/predict_gpu.py --model DIR --corpora DIR --cpu-ref JSON \
        [--batch-size 2048] [--repeat 100] [--budget-s 150] [--json-out FILE]

Stages (each skipped when the time budget would not cover it; the JSON is rewritten after each):
  1. NCBI-disease test alone: the fused path (forward + device decode) against the CPU path's tags and
     scores (``--cpu-ref``: TensorFlow on CPU with the NumPy decode, written by ``--write-cpu-ref``) and
     against the NumPy decode of this device's own emissions (the old JAX path, also timed); the forward
     pass alone vs forward + decode on one device-resident batch.
  2. The large job: NCBI test x ``--repeat`` through ``Predictor.tag`` end to end (encoding, host batch
     assembly, transfers, unpacking to per-sentence results) — pass 1 compiles, pass 2 is the figure — with
     the host stages timed apart and a device-resident ceiling (the same compiled calls on batches already
     on the device, no host work).
  3. Raw text through the Extractor (our tokenizer + sentence splitter + entity offsets).
  4. Distinct sentences: train+devel+test of NCBI-disease, BC5CDR, BC2GM and LINNAEUS (~1.65M tokens).
  5. Other batch sizes on the large job.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

T0 = time.perf_counter()
CORPORA = ("NCBI-disease", "BC5CDR", "BC2GM", "linnaeus")


def write_cpu_ref(model: str, corpus: str, out: str) -> None:
    """Run on the CPU (TensorFlow): the reference tags and scores the GPU path must reproduce."""
    from nerservice.artifacts.formats import load_model
    from nerservice.data import read_corpus

    sents = [s.tokens for s in read_corpus(corpus).sentences]
    tagged = load_model(model).predictor().tag(sents)
    Path(out).write_text(json.dumps({"tags": [t.tags for t in tagged], "scores": [t.scores for t in tagged]}))


def compare(got: list[Any], tags: list[list[str]], scores: list[list[float]]) -> dict[str, Any]:
    import numpy as np

    diff_sent = sum(g.tags != t for g, t in zip(got, tags))
    diff_tok = sum(a != b for g, t in zip(got, tags) for a, b in zip(g.tags, t))
    err = max((float(np.max(np.abs(np.array(g.scores) - np.array(s)))) for g, s in zip(got, scores) if s), default=0.0)
    return {"sentences_with_other_tags": diff_sent, "tokens_with_other_tags": diff_tok, "max_score_diff": err}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--corpora", help="folder holding NCBI-disease/, BC5CDR/, BC2GM/, linnaeus/ (IOB2 TSV)")
    ap.add_argument("--cpu-ref")
    ap.add_argument("--write-cpu-ref", metavar="OUT", help="CPU side: write the reference for --corpora's NCBI test")
    ap.add_argument("--batch-size", type=int, default=2048)
    ap.add_argument("--tokens-per-row", type=int, default=64, help="token budget = batch size x this")
    ap.add_argument("--other-batch-sizes", default="4096,1024")
    ap.add_argument("--repeat", type=int, default=100)
    ap.add_argument("--budget-s", type=float, default=150)
    ap.add_argument("--skip", default="", help="comma-separated stages to skip: raw,distinct")
    ap.add_argument("--matmul-precision", default="highest",
                    help="the Predictor's (and the forward-only reference's): highest = no TF32; default = TF32")
    ap.add_argument("--json-out", default=os.path.join(os.environ.get("OUT", "/tmp"), "predict_gpu.json"))
    args = ap.parse_args()
    test_path = os.path.join(args.corpora, "NCBI-disease", "test.tsv")
    if args.write_cpu_ref:  # under the default (TensorFlow) backend
        return write_cpu_ref(args.model, test_path, args.write_cpu_ref)
    os.environ.setdefault("KERAS_BACKEND", "jax")

    import jax

    jax.config.update("jax_compilation_cache_dir", "/tmp/jax-cache")  # same HLO from a new Predictor: no recompile
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_default_matmul_precision", args.matmul_precision)
    import keras
    import numpy as np

    from nerservice.artifacts.formats import load_model
    from nerservice.data import read_corpus
    from nerservice.inference import Extractor
    from nerservice.model.batching import bucketed_batches
    from nerservice.model.decode import decode_emissions
    from nerservice.model.jax_decode import crf_arrays
    from nerservice.text.features import EncodedCorpus
    from nerservice.text.inputs import model_inputs

    skip = set(args.skip.split(","))
    res: dict[str, Any] = {"device": str(jax.devices()[0]), "backend": keras.backend.backend(),
                           "matmul_precision": args.matmul_precision,
                           "NVIDIA_TF32_OVERRIDE": os.environ.get("NVIDIA_TF32_OVERRIDE"),
                           "batch_size": args.batch_size, "token_budget": args.batch_size * args.tokens_per_row}

    def save(stage: str) -> None:
        res.setdefault("stages_done", []).append(stage)
        res["elapsed_s"] = round(time.perf_counter() - T0, 1)
        Path(args.json_out).write_text(json.dumps(res, indent=1))
        print(f"[{res['elapsed_s']:.0f}s] {stage}: " + json.dumps({k: v for k, v in res.items() if k == stage}),
              flush=True)

    def left() -> float:
        return args.budget_s - (time.perf_counter() - T0)

    loaded = load_model(args.model)

    def predictor(batch_size: int) -> Any:
        return loaded.predictor(batch_size=batch_size, token_budget=batch_size * args.tokens_per_row,
                                matmul_precision=args.matmul_precision)

    pred = predictor(args.batch_size)
    dt = pred.device_tagger
    test = [s.tokens for s in read_corpus(test_path).sentences]
    n_test = sum(map(len, test))

    def timed(fn: Any, *a: Any, **kw: Any) -> tuple[Any, float]:
        t = time.perf_counter()
        out = fn(*a, **kw)
        return out, time.perf_counter() - t

    # 1. NCBI test alone: identical to the CPU path and to the NumPy decode of the same emissions.
    _, first = timed(pred.tag, test)
    fused, secs = timed(pred.tag, test)
    ref = json.loads(Path(args.cpu_ref).read_text())
    stage1: dict[str, Any] = {"tokens": n_test, "first_call_s": round(first, 2), "tokens_per_s": round(n_test / secs),
                              "vs_cpu_path": compare(fused, ref["tags"], ref["scores"])}
    em, _ = timed(pred.emissions, test)  # compiles the forward-only function
    (em, t_em) = timed(pred.emissions, test)
    host, t_dec = timed(decode_emissions, em, pred.crf_params(), pred.vocabs.tags.tag, with_scores=True,
                        batch_size=args.batch_size, bucket_size=pred.bucket_size)
    stage1["vs_numpy_decode_of_device_emissions"] = compare(fused, [h.tags for h in host], [h.scores for h in host])
    stage1["old_path_tokens_per_s"] = round(n_test / (t_em + t_dec))
    stage1["old_path_split_s"] = {"forward_and_copy": round(t_em, 4), "numpy_decode": round(t_dec, 4)}
    # Forward alone vs forward + decode, one device-resident batch (all of NCBI test in one call).
    model = loaded.model
    tv = [v.value for v in model.trainable_variables]
    ntv = [v.value for v in model.non_trainable_variables]
    crf = crf_arrays(pred.crf_params())
    enc = EncodedCorpus(test, pred.vocabs, max_word_length=pred.max_word_length)
    idx = np.arange(len(test))
    b = jax.device_put(model_inputs(enc.batch(idx, dt.policy_for(len(idx), int(enc.lengths.max())))))
    fwd = jax.jit(lambda tv, ntv, b: model.stateless_call(tv, ntv, b, training=False)[0])
    for name, call in (("forward_only", lambda: fwd(tv, ntv, b)), ("forward_and_decode", lambda: dt._fn(tv, ntv, crf, b, True))):
        jax.block_until_ready(call())
        t = time.perf_counter()
        for _ in range(10):
            out = call()
        jax.block_until_ready(out)
        stage1[f"{name}_device_resident_tokens_per_s"] = round(10 * n_test / (time.perf_counter() - t))
    stage1["batch_shape"] = list(b["token_ids"].shape) + list(b["word_chars"].shape)
    res["ncbi_test"] = stage1
    save("ncbi_test")

    # 2. The large job.
    job = test * args.repeat
    n_job = sum(map(len, job))

    def large_job(p: Any, name: str, sents: list[list[str]], n_tok: int, ceiling: bool) -> dict[str, Any]:
        out, first = timed(p.tag, sents)
        first_ok = compare(out[: len(test)], [t.tags for t in fused], [t.scores for t in fused]) if sents[0] == test[0] else None
        runs = [timed(p.tag, sents)[1] for _ in range(2)]
        r: dict[str, Any] = {"tokens": n_tok, "sentences": len(sents), "first_pass_s_with_compiles": round(first, 1),
                             "tokens_per_s_runs": [round(n_tok / s) for s in runs],
                             "tokens_per_s": round(n_tok / min(runs))}
        if first_ok is not None:
            r["first_copy_vs_ncbi_test_alone"] = first_ok
        e, t_enc = timed(EncodedCorpus, sents, p.vocabs, max_word_length=p.max_word_length)
        plan = bucketed_batches(e.lengths, batch_size=p.batch_size, bucket_size=p.bucket_size, seed=None,
                                token_budget=p.token_budget)
        t = time.perf_counter()
        batches = [e.batch(i, p.device_tagger.policy_for(len(i), int(e.lengths[i].max())), with_tags=False) for i in plan]
        t_batch = time.perf_counter() - t
        shapes = {(x["token_ids"].shape, x["word_chars"].shape) for x in batches}
        padded = sum(x["token_ids"].size for x in batches)
        r["host_s"] = {"encode_corpus": round(t_enc, 3), "assemble_batches": round(t_batch, 3)}
        r.update(batches=len(batches), shapes=len(shapes), padded_token_fraction=round(1 - n_tok / padded, 3))
        if ceiling:
            on_dev = [jax.device_put(model_inputs(x)) for x in batches]
            jax.block_until_ready(on_dev)
            t = time.perf_counter()
            outs = [p.device_tagger._fn(tv, ntv, crf, x, True) for x in on_dev]
            jax.block_until_ready(outs)
            r["device_resident_ceiling_tokens_per_s"] = round(n_tok / (time.perf_counter() - t))
        res[name] = r
        save(name)
        return r

    large_job(pred, "large_job", job, n_job, ceiling=True)

    # 3. Raw text through the Extractor (tokenizer + sentence splitter + offsets), same predictor.
    if left() > 25 and "raw" not in skip:
        texts = [" ".join(" ".join(s) for s in job[i:i + 10]) for i in range(0, len(job), 10)]
        ex = Extractor(loaded)
        ex.predictor = pred
        tokenized, t_tok = timed(ex.tokenize, texts)
        n_raw = sum(len(s) for ss in tokenized for s in ss)
        found, t_ex = timed(ex.extract, texts)
        res["raw_text_extractor"] = {"texts": len(texts), "tokens": n_raw, "tokens_per_s": round(n_raw / t_ex),
                                     "tokenize_only_s": round(t_tok, 2), "extract_s": round(t_ex, 2),
                                     "entities": sum(map(len, found))}
        save("raw_text_extractor")

    # 4. Distinct sentences (no repeats) from four corpora.
    if left() > 40 and "distinct" not in skip:
        mixed = [s.tokens for c in CORPORA for split in ("train", "devel", "test")
                 for s in read_corpus(os.path.join(args.corpora, c, f"{split}.tsv")).sentences]
        large_job(pred, "distinct_sentences", mixed, sum(map(len, mixed)), ceiling=True)

    # 5. Other batch sizes on the large job.
    for bs in [int(x) for x in args.other_batch_sizes.split(",") if x]:
        if left() < 35:
            break
        large_job(predictor(bs), f"large_job_batch_{bs}", job, n_job, ceiling=False)
    res["ran_out_of_budget"] = left() < 35
    save("done")


if __name__ == "__main__":
    main()
