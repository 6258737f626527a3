"""How training scales (issue 19): the measurements behind the cost model in bench/scaling_model.py.

    .venv/bin/python bench/scaling_bench.py step --corpus DIR --batches 8 16 32 64 128 --json-out F
        Seconds per optimisation step of the real TensorFlow step (default NerConfig, one TF thread = one
        core, as a 1-core Spark task runs it) against the per-worker batch, on NCBI batches.
    .venv/bin/python bench/scaling_bench.py allreduce --sizes 4096 ... --json-out F
        Two TensorFlow processes (MultiWorkerMirroredStrategy, RING over gRPC on 127.0.0.1, one thread each):
        seconds per all-reduce of one float32 tensor of each byte size; also our model's gradient bytes.

Spark's fixed costs per job and per epoch come from the summaries of real `spark_jobs/train.py` runs
(bench/spark_bench.py --scaling grow); bench/scaling_model.py fits and predicts.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _one_thread() -> None:
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def _model(corpus: str | Path) -> tuple[Any, Any, Any]:
    from nerservice.config import NerConfig
    from nerservice.data import read_corpus
    from nerservice.model.tagger import build_tagger
    from nerservice.training.trainer import vocabularies_with_vectors

    config = NerConfig()
    train = read_corpus(os.path.join(corpus, "train.tsv")).sentences
    # The default model as the Spark job trains it: the config's pretrained vectors (frozen GloVe 50d), so the
    # step and the gradient bytes are those of the runs the cost model is checked against.
    vocabs, matrix, _ = vocabularies_with_vectors(train, [], config.model.embeddings, progress=False,
                                                  vector_vocabulary=config.model.vector_vocabulary)
    model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars), n_tags=len(vocabs.tags),
                         word_vectors=matrix, seed=config.training.seed)
    return model, vocabs, (config, train)


def step_times(args: argparse.Namespace) -> dict[str, Any]:
    _one_thread()
    from nerservice.data import read_corpus
    from nerservice.text.features import EncodedCorpus, ShapePolicy
    from nerservice.training.loop import epoch_plan
    from nerservice.training.steps import make_train_step

    model, vocabs, (config, train) = _model(args.corpus)
    enc = EncodedCorpus([s.tokens for s in train], vocabs, max_word_length=config.model.max_word_length,
                        tags=[s.tags for s in train])
    lengths = [len(s.tokens) for s in train]
    step = make_train_step(model, config.training)
    rows = []
    for b in args.batches:
        cfg = config.with_overrides({"training.batch_size": b})
        plan = [idx for idx in epoch_plan(lengths, cfg, 0) if len(idx) == b]
        policy = ShapePolicy.for_backend("tensorflow", batch_size=b, time_multiple=cfg.training.bucket_size)
        batches = [enc.batch(idx, policy) for idx in plan[:args.warmup + args.steps]]
        for batch in batches[:args.warmup]:
            float(step(batch, b))
        times, tokens, padded = [], [], []
        for batch in batches[args.warmup:]:
            t0 = time.perf_counter()
            float(step(batch, b))  # float() waits for the step
            times.append(time.perf_counter() - t0)
            tokens.append(int(batch["lengths"].sum()))
            padded.append(int(batch["token_ids"].size))  # rows x padded time steps: what the LSTMs run
        s = sum(times)
        rows.append({"batch": b, "steps": len(times), "step_s": times, "padded_tokens": padded,
                     "median_step_s": statistics.median(times),
                     "mean_step_s": s / len(times), "tokens_per_s": sum(tokens) / s,
                     "tokens_per_step": sum(tokens) / len(tokens), "padded_tokens_per_step": sum(padded) / len(padded)})
        print(json.dumps(rows[-1]), flush=True)
    return {"what": "step", "corpus": str(args.corpus), "threads": 1, "rows": rows,
            "plan": plan_stats(lengths, config, [1, 2, 4, 8, 16, 32, 64]),
            "steps_per_epoch_at_32": len(epoch_plan(lengths, config, 0)), "train_tokens": sum(lengths),
            "dev_tokens": sum(len(s.tokens) for s in read_corpus(os.path.join(args.corpus, "devel.tsv")).sentences),
            "train_sentences": len(lengths), **gradient_bytes_of(model), "loadavg": os.getloadavg()}


def plan_stats(lengths: list[int], config: Any, workers: list[int]) -> list[dict[str, Any]]:
    """The real epoch plan of ``--scaling grow`` for N workers (global batch 32 N, each worker rows
    rank::N, its time axis padded to its own longest sentence): steps per epoch and, per step, the padded
    tokens of the busiest worker (a synchronous step waits for it). No timing: the cost model turns these
    into seconds with the fitted step cost."""
    import numpy as np

    from nerservice.text.features import round_up
    from nerservice.training.loop import epoch_plan
    from nerservice.training.scaling import scale_config

    lens = np.asarray(lengths)
    out = []
    for n in workers:
        cfg = scale_config(config, n, "grow")
        plan = epoch_plan(lengths, cfg, 0, n)
        busiest = [max(len(idx[r::n]) * round_up(int(lens[idx[r::n]].max()), cfg.training.bucket_size)
                       for r in range(n) if len(idx[r::n])) for idx in plan]
        out.append({"workers": n, "steps": len(plan), "padded_tokens_busiest": float(np.mean(busiest)),
                    "tokens": int(sum(int(lens[idx].sum()) for idx in plan))})
    return out


def gradient_bytes_of(model: Any) -> dict[str, int]:
    n = sum(int(v.numpy().size) for v in model.trainable_variables)
    return {"trainable_params": n, "gradient_bytes": 4 * n}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def allreduce_worker(rank: int, ports: list[int], sizes: list[int], reps: int) -> dict[str, Any]:
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                                          "task": {"type": "worker", "index": rank}})
    _one_thread()
    import tensorflow as tf

    comm = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING, timeout_seconds=120)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=comm)
    rows = []
    for nbytes in sizes:
        n = max(nbytes // 4, 1)

        @tf.function
        def reduce(scale: Any) -> Any:
            def fn() -> Any:  # the tensor is made on the replica's device, like a gradient
                t = tf.ones((n,), tf.float32) * scale
                return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, t)
            return strategy.run(fn)

        reduce(tf.constant(1.0))  # trace + first exchange
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            out = reduce(tf.constant(1.0))
            float(strategy.experimental_local_results(out)[0][0])
            times.append(time.perf_counter() - t0)
        rows.append({"bytes": nbytes, "median_s": statistics.median(times), "min_s": min(times)})
    return {"rank": rank, "rows": rows}


def allreduce(args: argparse.Namespace) -> dict[str, Any]:
    ports = [_free_port(), _free_port()]
    cmd = [sys.executable, __file__, "_allreduce_worker", json.dumps(ports), json.dumps(args.sizes), str(args.reps)]
    procs = [subprocess.Popen([*cmd, str(r)], stdout=subprocess.PIPE, text=True) for r in range(2)]
    outs = [json.loads(p.communicate(timeout=900)[0].strip().splitlines()[-1]) for p in procs]
    rows = [{"bytes": a["bytes"], "median_s": max(a["median_s"], b["median_s"]), "min_s": max(a["min_s"], b["min_s"])}
            for a, b in zip(outs[0]["rows"], outs[1]["rows"])]
    for r in rows:
        print(json.dumps(r), flush=True)
    return {"what": "allreduce", "workers": 2, "transport": "TF RING (gRPC) on 127.0.0.1", "rows": rows,
            "loadavg": os.getloadavg()}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_allreduce_worker":
        ports, sizes, reps, rank = json.loads(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        print(json.dumps(allreduce_worker(rank, ports, sizes, reps)))
        return
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("step")
    st.add_argument("--corpus", type=Path, required=True, help="a corpus folder with train.tsv (e.g. NCBI-disease)")
    st.add_argument("--batches", type=int, nargs="+", default=[8, 16, 32, 64, 128])
    st.add_argument("--warmup", type=int, default=2)
    st.add_argument("--steps", type=int, default=8)
    ar = sub.add_parser("allreduce")
    ar.add_argument("--sizes", type=int, nargs="+", default=[4096, 65536, 1 << 20, 4 << 20, 8 << 20, 16 << 20])
    ar.add_argument("--reps", type=int, default=7)
    for p in (st, ar):
        p.add_argument("--json-out")
    args = ap.parse_args()
    result = step_times(args) if args.cmd == "step" else allreduce(args)
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
