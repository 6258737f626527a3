"""The per-worker training task that runs inside one barrier-stage task.

Order matters: rendezvous → ``KERAS_BACKEND``, ``TF_CONFIG`` and ``CUDA_VISIBLE_DEVICES`` set → *then*
Keras imported → the multi-worker machinery created once per process → the core ``train(...)`` with this
worker's rank and the world size.
TensorFlow (``backend="tensorflow"``, the CPU default): thread pools sized to the task's cores, then
``MultiWorkerMirroredStrategy`` (RING, collective timeout); each worker feeds its slice of every batch.
JAX (``backend="jax"``, the proven GPU path): ``jax.distributed.initialize`` with rank 0's rendezvous
address as the coordinator, then one SPMD step over every process's devices (``ProcessPlacement``).
Every worker returns a JSON result with a digest of its final weights; rank 0 adds the summary.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from nerservice.data import Sentence
from nerservice.data.unlabelled import UnlabelledText
from nerservice.distributed.environ import scoped_environ
from nerservice.distributed.faults import KillPlan, arm
from nerservice.distributed.gpu import gpu_env
from nerservice.distributed.rendezvous import Peer, agree, rendezvous, tf_config
from nerservice.distributed.shards import shard_of_epoch
from nerservice.distributed.task_tempdir import task_tempdir
from nerservice.errors import DistributedError, PromotionRefusedError
from nerservice.training.resume import run_checkpoint_epoch

if TYPE_CHECKING:  # the distillation modules load in the student's stage only
    from nerservice.distil.run import FoldTeacher, Teacher

ATTEMPTS = "attempts.jsonl"
_STRATEGY_CREATED = False  # TF's collective runtime can be configured once per process
_JAX_JOB: tuple[str, int, int] | None = None  # jax.distributed can be initialised once per process
BACKENDS = ("tensorflow", "jax")


@dataclass(frozen=True)
class TrainSpec:
    """Everything a worker needs besides the data (plain values: it is pickled into the task)."""

    config: dict[str, Any]
    out_dir: str  # shared storage every executor sees (rank 0 writes, all read checkpoints)
    world: int
    embeddings: list[str] = field(default_factory=list)  # vectors sources, concatenated per word
    embeddings_shipped: list[bool] = field(default_factory=list)  # per source: added with SparkContext.addFile
    register: str | None = None
    promote: str | None = None
    resume: bool = True
    collective_timeout_s: float = 600.0
    sources: dict[str, Any] = field(default_factory=dict)
    kill: KillPlan | None = None
    backend: str = "tensorflow"  # Keras backend of the workers: "tensorflow" or "jax"
    scaling: dict[str, Any] = field(default_factory=dict)  # training.scaling.describe(): into the summary
    # A multi-corpus job (``preprocess.py --corpora``): the corpora config; the data is then
    # {corpus: {split: rows}} and the worker runs ``train_multi``.
    corpora: dict[str, Any] | None = None
    # The final-model recipe's phase 2 (training/recipes.py): train on train + dev, keep model-last.
    train_on_dev: bool = False
    keep: str = "best"
    recipe: dict[str, Any] | None = None
    # A distillation student (``spark_jobs/train.py --final --distil``): {"config": DistilConfig as JSON,
    # "teacher": the main teacher's folder, "head": its head NAME (--teacher-head) or None, "folds": [[fold
    # teacher folder, first row, end row], ...]} on shared storage; the data then may hold "unlabelled" rows
    # (no tags).  None = an ordinary run.
    distil: dict[str, Any] | None = None


Row = tuple[list[str], list[str], str, int]  # tokens, tags, file, line


def sentences_from_rows(rows: list[Row]) -> list[Sentence]:
    return [Sentence(tuple(tokens), tuple(tags), file, int(line)) for tokens, tags, file, line in rows]


def rows_from_sentences(sentences: Sequence[Sentence]) -> list[Row]:
    """The inverse of ``sentences_from_rows`` (file and line kept): a recipe's run shipped to the workers."""
    return [(list(s.tokens), list(s.tags), s.file, s.line) for s in sentences]


def unlabelled_rows(text: UnlabelledText) -> list[Row]:
    """Unlabelled text as rows with no tags, each with its file and line."""
    return [(list(tokens), [], file, line) for tokens, (file, line) in zip(text.sentences, text.where)]


def unlabelled_from_rows(rows: list[Row]) -> UnlabelledText:
    text = UnlabelledText()
    for tokens, _, file, line in rows:
        text.sentences.append(tuple(tokens))
        text.where.append((file, int(line)))
        counts = text.files.setdefault(file, {"sentences": 0, "tokens": 0})
        counts["sentences"] += 1
        counts["tokens"] += len(tokens)
    return text


def weights_digest(model: Any) -> str:
    """sha256 over every weight's shape, dtype and bytes, in model order."""
    h = hashlib.sha256()
    for w in model.get_weights():
        a = np.ascontiguousarray(np.asarray(w))
        h.update(f"{a.shape}{a.dtype}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def record_attempt(out: Path, record: dict[str, Any]) -> None:
    """Append one line per start of the barrier stage to OUT/attempts.jsonl: a retried stage shows up
    as a second line, with the epoch it resumed from."""
    import time

    out.mkdir(parents=True, exist_ok=True)
    with open(out / ATTEMPTS, "a", encoding="utf-8") as f:
        f.write(json.dumps({"time": round(time.time(), 3), **record}) + "\n")


def read_attempts(out: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(line) for line in (out / ATTEMPTS).read_text(encoding="utf-8").splitlines() if line]
    except OSError:
        return []


def barrier_task(spec: TrainSpec, data: Any) -> Any:
    """The function for ``rdd.barrier().mapPartitions``; ``data`` is a Broadcast of the splits."""

    def task(_: Any) -> Any:
        from pyspark import BarrierTaskContext

        yield json.dumps(run_worker(spec, data.value, BarrierTaskContext.get()))

    return task


def run_worker(spec: TrainSpec, data: dict[str, Any], context: Any) -> dict[str, Any]:
    started = time.perf_counter()
    rank, peers = rendezvous(context, world=spec.world)
    rendezvous_s = time.perf_counter() - started
    out = Path(spec.out_dir)
    resumed_from = agree(context, run_checkpoint_epoch(out) if spec.resume else 0,
                         what="the checkpoint epoch to resume from")
    if rank == 0:
        record_attempt(out, {"task_attempt_id": int(context.taskAttemptId()), "world": spec.world,
                             "resumed_from_epoch": resumed_from, "peers": [p.address for p in peers]})
    if spec.backend not in BACKENDS:
        raise DistributedError(f"unknown training backend {spec.backend!r}", hint=f"one of {', '.join(BACKENDS)}")
    multi_tf = spec.world > 1 and spec.backend == "tensorflow"
    env: dict[str, str | None] = {"KERAS_BACKEND": spec.backend,
                                  "TF_CONFIG": tf_config(peers, rank) if multi_tf else None}
    env.update(gpu_env(context.resources()))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
    with scoped_environ(env), task_tempdir() as scratch:  # the worker ends with os._exit: see task_tempdir.py
        result = _train(spec, data, rank=rank, peers=peers)
    result["task_tempdir"] = scratch.report()
    context.barrier()  # finish together: a rank that fails after training still fails the whole stage
    result["timings"] = {"rendezvous_s": rendezvous_s, **result.get("timings", {}),
                         "task_s": time.perf_counter() - started}
    result.update(rank=rank, world=spec.world, host=peers[rank].host, port=peers[rank].port, pid=os.getpid(),
                  hostname=socket.gethostname(), resumed_from_epoch=resumed_from,
                  cuda_visible_devices=env.get("CUDA_VISIBLE_DEVICES"),
                  stage_id=int(context.stageId()), task_attempt_id=int(context.taskAttemptId()))
    return result


def _strategy(spec: TrainSpec, peers: list[Peer], rank: int, batch_size: int) -> Any:
    from nerservice import backend

    if backend.current() != spec.backend:
        raise DistributedError(f"this Python worker already runs Keras on {backend.current()}, "
                               f"the job asked for {spec.backend}",
                               hint="set spark.python.worker.reuse=false for training jobs (train.py does)")
    if spec.world == 1:
        return None  # exactly the single-process path of the core
    if spec.backend == "jax":
        return _jax_job(spec, peers, rank, batch_size)
    return _tf_strategy(spec)


def _jax_job(spec: TrainSpec, peers: list[Peer], rank: int, batch_size: int) -> Any:
    """Join the JAX job of this stage: rank 0's rendezvous address is the coordinator (rank 0 binds it)."""
    global _JAX_JOB
    import jax

    from nerservice.training.parallel import ProcessPlacement

    job = (peers[0].address, spec.world, rank)
    if _JAX_JOB is not None:
        raise DistributedError(f"this Python worker already joined the JAX job {_JAX_JOB}",
                               hint="set spark.python.worker.reuse=false for training jobs (train.py does)")
    # CPU devices need a collectives implementation for cross-process all-reduce (GPUs use NCCL).
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=peers[0].address, num_processes=spec.world, process_id=rank,
                               initialization_timeout=int(spec.collective_timeout_s))
    _JAX_JOB = job
    return ProcessPlacement(batch_size)


def _tf_strategy(spec: TrainSpec) -> Any:
    global _STRATEGY_CREATED
    if _STRATEGY_CREATED:
        raise DistributedError("this Python worker already created a multi-worker strategy",
                               hint="set spark.python.worker.reuse=false for training jobs (train.py does)")
    import tensorflow as tf

    comm = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING,
        timeout_seconds=spec.collective_timeout_s)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=comm)
    _STRATEGY_CREATED = True
    return strategy


def _train(spec: TrainSpec, data: dict[str, Any], *, rank: int, peers: list[Peer]) -> dict[str, Any]:
    """``data``: {split: rows}, or {corpus: {split: rows}} when ``spec.corpora`` is set."""
    if spec.world > 1 and spec.backend == "tensorflow" and "tensorflow" in sys.modules and not _STRATEGY_CREATED:
        print("warning: TensorFlow was imported before TF_CONFIG was set in this worker", file=sys.stderr)
    clock = time.perf_counter()
    from nerservice.config import NerConfig
    from nerservice.distributed.threads import limit_tensorflow_threads, task_cpus
    from nerservice.training.trainer import train

    limit_tensorflow_threads(task_cpus())
    config = NerConfig.from_dict(spec.config)
    strategy = _strategy(spec, peers, rank, config.training.batch_size)
    import_s = time.perf_counter() - clock  # Keras + its backend imported, the multi-worker runtime started
    embeddings: list[str] = []
    for src, shipped in zip(spec.embeddings, spec.embeddings_shipped):
        if shipped:  # resolve the executor's local copy
            from pyspark import SparkFiles

            src = SparkFiles.get(Path(src).name)
        embeddings.append(src)
    chief = rank == 0
    store_cb = None
    if chief and spec.register:
        from nerservice.store import ModelStore, StoreCallback

        store_cb = StoreCallback(ModelStore.from_env(), name=spec.register, config=config)
    armed = arm(spec.kill, rank=rank, out_dir=Path(spec.out_dir))
    common: dict[str, Any] = dict(
        embeddings=embeddings or None, out_dir=spec.out_dir, sources=spec.sources,
        callbacks=[store_cb] if store_cb else [], resume=spec.resume, progress=chief, strategy=strategy, rank=rank,
        world=spec.world)
    if spec.corpora is not None:
        from nerservice.distributed.multi_corpora import corpora_from_rows
        from nerservice.multi.config import CorporaConfig
        from nerservice.multi.corpora import with_dev_in_train
        from nerservice.multi.trainer import corpus_plan, train_multi

        corpora_config = CorporaConfig.from_dict(spec.corpora, files=False)
        corpora = corpora_from_rows(corpora_config, data)
        if spec.train_on_dev:  # the final-model recipe's phase 2: every corpus on its train + dev
            corpora = with_dev_in_train(corpora)
        outcome = train_multi(config, corpora_config, corpora, keep="last" if spec.keep == "last" else "best",
                              recipe=spec.recipe, **common)
        lengths = [len(s.tokens) for c in corpora for s in c.train]
        plan = None
        if corpora_config.batching == "per-corpus":
            bounds = np.cumsum([0] + [len(c.train) for c in corpora])
            plan = corpus_plan([np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:])], np.array(lengths),
                               config, 0, spec.world, corpora_config.weights)
    else:
        train_s, dev_s = sentences_from_rows(data["train"]), sentences_from_rows(data["dev"])
        # train_on_dev/keep/recipe: the final-model recipe's phase 2 (training/recipes.py)
        train_data = [*train_s, *dev_s] if spec.train_on_dev else train_s
        test_data = sentences_from_rows(data["test"]) if data.get("test") else None
        keep: Literal["best", "last"] = "last" if spec.keep == "last" else "best"
        if spec.distil is not None:
            outcome = _distil(spec.distil, config, train_data, dev_s, test_data, data.get("unlabelled"), keep=keep,
                              recipe=spec.recipe, **common)
        else:
            outcome = train(config, train_data=train_data, dev_data=dev_s, test_data=test_data, keep=keep,
                            recipe=spec.recipe, **common)
        lengths, plan = [len(s.tokens) for s in train_s], None
    result: dict[str, Any] = {
        "weights_digest": weights_digest(outcome.model),
        "shard_epoch1": shard_of_epoch(lengths, config, epoch=0, rank=rank, world=spec.world, plan=plan),
        "epochs_completed": len(outcome.history), "stopped_reason": outcome.stopped_reason,
        "loop_seconds": round(outcome.seconds, 3), "fault_armed": armed, "backend": spec.backend,
        "timings": {"import_s": import_s, **outcome.timings}, "step": outcome.step_stats,
        "dev_eval": outcome.dev_eval,
    }
    if chief:
        result.update(_chief_summary(spec, outcome, store_cb))
    return result


def _distil(spec: dict[str, Any], config: Any, train_data: list[Sentence], dev_data: list[Sentence],
            test_data: list[Sentence] | None, unlabelled: list[Row] | None, **options: Any) -> Any:
    """A distillation student's stage: every worker loads the teachers from shared storage and computes the
    same targets (deterministic: no exchange of the arrays), then trains its slice of every batch."""
    from nerservice.distil.config import DistilConfig
    from nerservice.distil.run import distil

    teacher, folds = spec_teachers(spec)
    return distil(config, DistilConfig.model_validate(spec["config"]), teacher=teacher,
                  train_data=train_data, dev_data=dev_data, test_data=test_data,
                  unlabelled=unlabelled_from_rows(unlabelled) if unlabelled else None, cross_fit=folds,
                  **options).outcome


def spec_teachers(spec: dict[str, Any]) -> tuple[Teacher, list[FoldTeacher]]:
    """A student spec's main teacher (seen as its "head", when the driver's --teacher-head named one) and fold
    teachers, loaded from their folders: the same on every worker (each named by its folder in the lineage)."""
    from nerservice.distil.head import head_teacher
    from nerservice.distil.run import FoldTeacher, folder_teacher

    teacher = folder_teacher(spec["teacher"])
    if spec.get("head"):
        teacher = head_teacher(teacher, spec["head"])
    return teacher, [FoldTeacher(folder_teacher(path), range(int(a), int(b))) for path, a, b in spec["folds"]]


def _chief_summary(spec: TrainSpec, outcome: Any, store_cb: Any) -> dict[str, Any]:
    history = outcome.history
    t = outcome.timings
    summary: dict[str, Any] = {
        "model_dir": str(outcome.best_dir), "best_epoch": outcome.best_epoch, "dev": outcome.dev,
        "test": outcome.test, "history": history, "vocab": outcome.vocab_stats, "scaling": spec.scaling,
        "train_tokens_per_s": (sum(h["train_tokens_per_s"] for h in history) / len(history)) if history else 0.0,
        # The training phase of this job: its epochs' timed steps only (not the one-time warm-up, reported
        # beside it, nor dev evaluation); tokens over seconds, not a mean of per-epoch rates.
        "training_phase": {"tokens": int(t.get("train_tokens", 0)), "seconds": round(t.get("train_s", 0.0), 3),
                           "tokens_per_s": round(t.get("train_tokens", 0) / max(t.get("train_s", 0.0), 1e-9), 1),
                           "warmup_s": round(t.get("warmup_s", 0.0), 3)},
    }
    if store_cb is not None:
        summary["registered"] = {"name": spec.register, "version": store_cb.version, "run_id": store_cb.run_id}
        if spec.promote and store_cb.version is not None:
            try:
                moved = store_cb.store.promote(spec.register, store_cb.version, alias=spec.promote, if_better="dev_f1")
                summary["promoted"] = {"alias": spec.promote, "done": True, "changed": moved}
            except PromotionRefusedError as exc:
                summary["promoted"] = {"alias": spec.promote, "done": False, "reason": exc.message}
    return summary
