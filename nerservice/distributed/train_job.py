"""Driver side of ``spark_jobs/train.py``: preprocessed Parquet → one barrier stage of N workers.

The driver reads the splits with Spark (any filesystem Spark reads), orders them by (file, line) so every
worker — and a single-process run on the same files — sees the same sentence order, and ships them to the
executors as a broadcast.  Training itself happens only on the executors.
"""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from nerservice.artifacts.layout import BEST, LAST, METRICS
from nerservice.config import NerConfig
from nerservice.data import Sentence
from nerservice.distributed import hadoopfs
from nerservice.distributed.faults import KillPlan
from nerservice.distributed.multi_corpora import CORPORA_FILE, corpora_from_rows, flat_splits
from nerservice.distributed.worker import BACKENDS, Row, TrainSpec, barrier_task, read_attempts, sentences_from_rows
from nerservice.embeddings import KUMO_ALIASES, vector_sources
from nerservice.errors import ConfigError, CorpusError, DistributedError, EmbeddingsError
from nerservice.multi.config import CorporaConfig
from nerservice.training.recipes import Runner, RunRequest, RunSummary
from nerservice.training.scaling import Mode, Rule, describe, scale_config

# Applied unless spark-submit sets them (session.get_session).
TRAIN_DEFAULTS = {
    # A fresh Python process per training task: TF's collective runtime is configured once per process,
    # and a retried stage must not land in a worker that still holds the dead attempt's strategy.
    "spark.python.worker.reuse": "false",
    # Barrier stages wait for N free slots; fail within ~2 min instead of Spark's default ~10 min. Checked
    # every second: the stage is submitted while the executors are still starting (the splits are read on
    # the driver), and a 5 s interval left them idle for up to 5 s.
    "spark.scheduler.barrier.maxConcurrentTasksCheck.interval": "1s",
    "spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures": "120",
}
SPLITS = ("train", "dev", "test")
ROW_COLUMNS = ("tokens", "tags", "file", "line")


def local_out_dir(out: str) -> Path:
    """The core trainer writes with ordinary file I/O: ``out`` must be a POSIX path all executors see
    (local disk on one machine, NFS/EFS/Lustre on a cluster), not an hdfs:// or s3a:// URI."""
    if out.startswith("file:"):
        out = out[len("file://"):] if out.startswith("file://") else out[len("file:"):]
    elif "://" in out:
        raise ConfigError(f"--out {out!r}: training output must be a shared POSIX path",
                          hint="mount the shared storage (NFS, EFS, ...) on every executor and pass its path")
    return Path(out).resolve()


def _parquet_rows(spark: Any, uri: str) -> list[Row]:
    """A split's rows. A local folder is read on the driver with pyarrow (~0.1 s): through Spark SQL the
    first query of a job waits for the executors to start and for the SQL engine's warm-up (measured 6.6 s
    for three small splits on a local session, 18.7 s on the test cluster), a fixed cost of every training
    job; any other filesystem is read through Spark."""
    local = hadoopfs.local_path(spark, uri)
    if local is not None:
        import pyarrow.parquet as pq

        table = pq.read_table(local, columns=list(ROW_COLUMNS))
        cols = [table.column(c).to_pylist() for c in ROW_COLUMNS]
        return [(list(tokens), list(tags), file, int(line)) for tokens, tags, file, line in zip(*cols)]
    rows = spark.read.parquet(uri).select(*ROW_COLUMNS).collect()
    return [(list(r["tokens"]), list(r["tags"]), r["file"], int(r["line"])) for r in rows]


def read_splits(spark: Any, data_dir: str) -> dict[str, list[Row]]:
    """Sentences per split, sorted by (file, line): the order ``read_corpus`` gives for the same files."""
    out: dict[str, list[Row]] = {}
    for name in SPLITS:
        uri = hadoopfs.join(data_dir, name)
        if not hadoopfs.exists(spark, uri):
            continue
        out[name] = sorted(_parquet_rows(spark, uri), key=lambda r: (r[2], r[3]))
    for name in ("train", "dev"):
        if not out.get(name):
            raise CorpusError(f"no {name} sentences under {data_dir}/{name}",
                              hint="run spark_jobs/preprocess.py first and pass its --out as --data")
    return out


def read_multi(spark: Any, data_dir: str) -> tuple[CorporaConfig, dict[str, dict[str, list[Row]]]]:
    """A ``preprocess.py --corpora`` output: the corpora config and every corpus's rows, checked on the
    driver (label sets, label maps) before any worker starts."""
    uri = hadoopfs.join(data_dir, CORPORA_FILE)
    text = spark.sparkContext.wholeTextFiles(uri).collect()[0][1]
    try:
        corpora = CorporaConfig.from_dict(json.loads(text), where=uri, files=False)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{uri}: not JSON ({exc})") from None
    data = {spec.name: read_splits(spark, hadoopfs.join(data_dir, spec.name)) for spec in corpora.corpora}
    corpora_from_rows(corpora, data)
    return corpora, data


def run_training(spark: Any, *, data_dir: str, out_dir: str, world: int, config: NerConfig,
                 embeddings: str | list[str] | None = None, register: str | None = None, promote: str | None = None,
                 resume: bool = True, collective_timeout_s: float = 600.0, kill: KillPlan | None = None,
                 backend: str = "tensorflow", scaling: Mode = "fixed", rule: Rule = "linear",
                 train_on_dev: bool = False, keep: str = "best", recipe: dict[str, Any] | None = None,
                 rows: dict[str, list[Row]] | None = None, run_sources: dict[str, Any] | None = None,
                 distil: dict[str, Any] | None = None) -> dict[str, Any]:
    """``scaling``/``rule``: how the global batch and learning rate follow ``world``
    (``nerservice.training.scaling``); the config the workers train with is the scaled one.
    ``train_on_dev``/``keep``/``recipe``: a run of a multi-run recipe (``spark_runner``).  ``rows``: the
    splits the recipe chose (e.g. a cross-fitting fold's), read from ``data_dir`` by the caller; ``run_sources``
    go into the lineage beside ``data_dir``; ``distil``: the run is a distillation student (``TrainSpec``)."""
    if world < 1:
        raise ConfigError(f"--workers {world}: need at least 1")
    if backend not in BACKENDS:
        raise ConfigError(f"--backend {backend!r}: one of {', '.join(BACKENDS)}")
    base, config = config, scale_config(config, world, scaling, rule)
    if promote and not register:
        raise ConfigError("--promote needs --register NAME")
    if kill is not None and kill.rank >= world:
        raise ConfigError(f"fault rank {kill.rank} does not exist with {world} workers")
    started = time.perf_counter()
    sc = spark.sparkContext
    out = local_out_dir(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    corpora: CorporaConfig | None = None
    if rows is not None:
        data: Any = rows
    elif hadoopfs.exists(spark, hadoopfs.join(data_dir, CORPORA_FILE)):  # one model, one head per corpus
        corpora, per_corpus = read_multi(spark, data_dir)
        data = per_corpus
    else:
        data = read_splits(spark, data_dir)
    read_s = time.perf_counter() - started
    sources = vector_sources(embeddings)
    shipped: list[bool] = []
    for src in sources:
        if Path(src).is_file():
            sc.addFile(str(Path(src).resolve()))  # executors fetch it; no shared path needed
            shipped.append(True)
        elif src in KUMO_ALIASES:
            shipped.append(False)
        else:
            raise EmbeddingsError(f"vectors file {src} does not exist (on the driver, which ships it)", path=src)
    spec = TrainSpec(config=config.model_dump(mode="json"), out_dir=str(out), world=world, embeddings=sources,
                     embeddings_shipped=shipped, register=register, promote=promote, resume=resume,
                     collective_timeout_s=collective_timeout_s, kill=kill, backend=backend,
                     scaling=describe(base, config, world, scaling, rule),
                     corpora=corpora.model_dump(mode="json") if corpora else None,
                     sources={"data": data_dir, "embeddings": embeddings, "workers": world, "scaling": scaling,
                              "backend": backend, **(run_sources or {})},
                     train_on_dev=train_on_dev, keep=keep, recipe=recipe, distil=distil)
    broadcast = sc.broadcast(data)
    stage_clock = time.perf_counter()
    try:
        # The shuffle after the barrier stage is what makes it retryable: Spark reruns a failed barrier
        # *ShuffleMapStage* (up to spark.stage.maxConsecutiveAttempts), but aborts the job when a barrier
        # *ResultStage* fails ("Could not recover from a failed barrier ResultStage").
        stage = sc.parallelize(range(world), world).barrier().mapPartitions(barrier_task(spec, broadcast))
        results = [json.loads(r) for r in stage.repartition(1).collect()]
    finally:
        broadcast.destroy()
    stage_s = time.perf_counter() - stage_clock
    summary = summarize(results, data=flat_splits(data) if corpora else data, seconds=time.perf_counter() - started)
    summary["phases"] = job_phases(results, read_s=read_s, stage_s=stage_s, job_s=summary["seconds"])
    if corpora:
        summary["corpora"] = corpora.names
    # Every start of the stage in this output folder (earlier jobs included); a retry adds a line.
    summary["attempts"] = read_attempts(out)
    (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    if not summary["weights_identical"]:
        raise DistributedError(f"workers ended with different weights: {summary['weights_digests']}")
    return summary


def summarize(results: list[dict[str, Any]], *, data: dict[str, list[Row]], seconds: float) -> dict[str, Any]:
    results = sorted(results, key=lambda r: r["rank"])
    chief = results[0]
    digests = [r["weights_digest"] for r in results]
    workers = [{k: r[k] for k in ("rank", "host", "hostname", "port", "pid", "cuda_visible_devices", "weights_digest",
                                  "shard_epoch1", "loop_seconds", "stage_id", "task_attempt_id", "task_tempdir")}
               | {"timings": r.get("timings", {})} for r in results]
    summary = {k: v for k, v in chief.items() if k not in workers[0]}
    train_tokens = sum(len(r[0]) for r in data["train"])
    summary.update(
        workers=workers, world=len(results), weights_digests=digests,
        weights_identical=len(set(digests)) == 1, resumed_from_epoch=chief["resumed_from_epoch"],
        data={name: {"sentences": len(rows), "tokens": sum(len(r[0]) for r in rows)} for name, rows in data.items()},
        seconds=round(seconds, 3),
        # Whole-job throughput: training tokens × epochs run in this job / wall time including startup.
        job_tokens_per_s=round(train_tokens * max(chief["epochs_completed"] - chief["resumed_from_epoch"], 0)
                               / max(seconds, 1e-9), 1),
    )
    return summary


def job_phases(results: list[dict[str, Any]], *, read_s: float, stage_s: float, job_s: float) -> dict[str, Any]:
    """Where the job's time went (seconds; the driver's clocks, then rank 0's task), so fixed costs can be
    told from training: ``task_start_s`` is the barrier stage before rank 0's task body ran (Python worker
    start, broadcast); ``setup_s`` every rank's task time before its first timed epoch."""
    chief = min(results, key=lambda r: r["rank"])
    t = chief.get("timings", {})
    task = {k: round(float(v), 3) for k, v in t.items()}
    before = ("rendezvous_s", "import_s", "vectors_s", "build_s", "eval_warmup_s", "warmup_s")
    return {"read_splits_s": round(read_s, 3), "stage_s": round(stage_s, 3),
            "task_start_s": round(max(stage_s - float(t.get("task_s", stage_s)), 0.0), 3),
            "after_stage_s": round(max(job_s - read_s - stage_s, 0.0), 3), "rank0": task,
            "setup_s": [round(sum(float(r.get("timings", {}).get(k, 0.0)) for k in before), 3)
                        for r in sorted(results, key=lambda r: r["rank"])]}


def ensemble_on_driver(spark: Any, data_dir: str, out: Path, members: list[Path]) -> dict[str, Any]:
    """``train.py --seeds N``: the N kept models as one ensemble folder ``out``, evaluated on the driver on
    the dev and test rows the workers saw (a multi-corpus data folder: per corpus, on each head)."""
    from nerservice.training.recipes import save_evaluated_ensemble

    splits: dict[str, Any]
    if hadoopfs.exists(spark, hadoopfs.join(data_dir, CORPORA_FILE)):
        from nerservice.multi.corpora import evaluation_splits
        from nerservice.multi.evaluation import evaluate_heads

        corpora, per_corpus = read_multi(spark, data_dir)
        splits, evaluate = evaluation_splits(corpora_from_rows(corpora, per_corpus)), evaluate_heads
    else:
        rows = read_splits(spark, data_dir)
        splits, evaluate = {name: sentences_from_rows(rows[name]) for name in ("dev", "test") if rows.get(name)}, None
    _, metrics = save_evaluated_ensemble(out, members, splits, sources=[str(m) for m in members], evaluate=evaluate)
    return metrics


Lineage = Callable[[], tuple[Mapping[str, Sequence[Sentence]], bool]]


def read_back(req: RunRequest, *, world: int, lineage: Lineage, embeddings: str | Sequence[str] | None = None,
              resume: bool = True, scaling: Mode = "fixed", rule: Rule = "linear", kill: KillPlan | None = None,
              **_: Any) -> RunSummary | None:
    """A recipe's run that an earlier job finished, read back on the driver (``training/finished.py``) so that a
    rerun starts no barrier stage for it; None when it must run (the stage then resumes from the checkpoint).
    The request is compared as the workers trained it: its config scaled to ``world`` and naming the vectors
    the way the workers do.  ``lineage()`` — the run's splits as its lineage names them, and whether it scores
    test — is called only once the folder holds a kept model's metrics, so a first run reads no data here.
    Never read back: a run with a fault drill (``kill``), and one whose vectors were shipped as files (the
    saved config names each executor's local copy, which differs from job to job)."""
    from nerservice.training.finished import finished_from
    from nerservice.training.trainer import config_with_vectors

    sources = vector_sources(embeddings)
    if not resume or kill is not None or any(Path(src).is_file() for src in sources):
        return None
    out = local_out_dir(str(req.out_dir))
    if not (out / (LAST if req.keep == "last" else BEST) / METRICS).is_file():
        return None
    config = config_with_vectors(scale_config(req.config, world, scaling, rule), sources)
    corpora, has_test = lineage()
    done = finished_from(replace(req, config=config, out_dir=out), corpora, has_test=has_test)
    if done is not None:  # stderr: the job's stdout is its summary JSON
        print(f"{out}: finished earlier ({done.epochs_run} epochs, kept epoch {done.best_epoch}), read back from "
              f"its folder; no barrier stage", file=sys.stderr, flush=True)
    return done


def spark_runner(spark: Any, *, data_dir: str, world: int, register: str | None = None, final: bool = False,
                 **options: Any) -> Runner:
    """Each run of a recipe (``training/recipes.py``, e.g. ``--final``) as one barrier stage of ``world``
    workers; ``options`` are ``run_training``'s (embeddings, resume, backend, scaling, ...).  With ``final``
    only the kept model (phase 2) is registered.  A run an earlier job finished is read back instead
    (``read_back``), unless it is the one to register: the store sees it through its stage."""

    def lineage_of(req: RunRequest) -> Lineage:
        def read() -> tuple[Mapping[str, Sequence[Sentence]], bool]:
            from nerservice.training.finished import run_corpora

            if hadoopfs.exists(spark, hadoopfs.join(data_dir, CORPORA_FILE)):
                from nerservice.multi.corpora import with_dev_in_train
                from nerservice.multi.trainer import lineage_corpora

                corpora_config, per_corpus = read_multi(spark, data_dir)
                corpora = corpora_from_rows(corpora_config, per_corpus)
                corpora = with_dev_in_train(corpora) if req.train_on_dev else corpora
                return lineage_corpora(corpora), any(c.test for c in corpora)
            rows = read_splits(spark, data_dir)
            test = sentences_from_rows(rows["test"]) if rows.get("test") else None
            return run_corpora(req, sentences_from_rows(rows["train"]), sentences_from_rows(rows["dev"]),
                               test), bool(test)

        return read

    def run(req: RunRequest) -> RunSummary:
        name = register if not final or req.keep == "last" else None
        done = read_back(req, world=world, lineage=lineage_of(req), **options) if name is None else None
        if done is not None:
            return done
        return run_summary(run_training(spark, data_dir=data_dir, out_dir=str(req.out_dir), world=world,
                                        config=req.config, register=name, train_on_dev=req.train_on_dev,
                                        keep=req.keep, recipe=req.recipe, **options))

    return run


def run_summary(s: dict[str, Any]) -> RunSummary:
    """What a recipe needs from one job's summary."""
    return RunSummary(model_dir=Path(s["model_dir"]), best_epoch=int(s["best_epoch"]),
                      epochs_run=int(s["epochs_completed"]), stopped_reason=str(s["stopped_reason"]),
                      seconds=float(s["seconds"]), dev=s["dev"], test=s.get("test"))
