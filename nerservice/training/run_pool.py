"""Independent training runs of a recipe (``training/recipes.py``, ``distil/recipe.py``), one after another in
this process or ``jobs`` at a time in worker processes (``nerservice train --jobs J``).

A recipe's runs after phase 1 do not depend on each other — the seeds of ``--seeds N``, phase 2's models,
the cross-fitting teachers of ``--distil`` — and one small tagger leaves most of a many-core machine or a GPU
idle: on one H200, nine trainings side by side took 6.8 min where one takes 4-5 (BENCHMARKS.md, session 20).

Each worker is a fresh interpreter (``spawn``: TensorFlow and JAX do not survive ``fork`` once initialised)
that gets the whole run — request and sentences — pickled, trains it through ``training.trainer.train`` like
the in-process path, and sends back its ``RunSummary``.  Its TensorFlow thread pools get this process's cores
divided by ``jobs`` (left alone each would size them to every core and the workers would slow each other
down); JAX workers do not preallocate the GPU's memory, so several share one GPU.  A worker's error is
raised here with its code and message, the runs not yet started are cancelled, and every run can resume:
rerunning the command skips what finished.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nerservice.data import Sentence
from nerservice.training.recipes import Runner, RunRequest, RunSummary

if TYPE_CHECKING:
    from nerservice.training.trainer import TrainCallback

MAX_JOBS = 64


@dataclass
class RunSpec:
    """One run and its data: everything a worker process needs (picklable)."""

    request: RunRequest
    train: Sequence[Sentence]
    dev: Sequence[Sentence]  # evaluated each epoch; with ``request.train_on_dev`` also trained on
    test: Sequence[Sentence] | None
    sources: dict[str, Any]  # the lineage's record of where the data came from


def run_spec(spec: RunSpec, *, resume: bool, progress: bool,
             callbacks: Sequence[TrainCallback] = ()) -> RunSummary:
    """One run in this process; with ``resume``, a run its folder holds finished is read back, not trained
    (``training/finished.py``) — unless ``callbacks`` (e.g. the model store's) are to see it run."""
    from nerservice.training.finished import finished_run
    from nerservice.training.trainer import train

    req = spec.request
    done = finished_run(req, spec.train, spec.dev, spec.test, progress=progress) if resume and not callbacks else None
    if done is not None:
        return done
    outcome = train(req.config, train_data=[*spec.train, *spec.dev] if req.train_on_dev else spec.train,
                    dev_data=spec.dev, test_data=spec.test, embeddings=req.config.model.embeddings,
                    out_dir=req.out_dir, sources=spec.sources, callbacks=callbacks, resume=resume,
                    progress=progress, keep=req.keep, recipe=req.recipe)
    return RunSummary.of(outcome)


def core_runner(train_data: Sequence[Sentence], dev_data: Sequence[Sentence], test_data: Sequence[Sentence] | None,
                *, sources: dict[str, Any], resume: bool, progress: bool,
                callbacks_for: Callable[[RunRequest], Sequence[TrainCallback]] = lambda _: ()) -> Runner:
    """The ``Runner`` of ``nerservice train``: each run in this process, on the given corpora."""

    def run(req: RunRequest) -> RunSummary:
        return run_spec(RunSpec(req, train_data, dev_data, test_data, sources), resume=resume, progress=progress,
                        callbacks=callbacks_for(req))

    return run


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def run_specs(specs: Sequence[RunSpec], *, jobs: int = 1, resume: bool, progress: bool) -> list[RunSummary]:
    """Every run, in the order given; ``jobs`` > 1 runs that many at once in worker processes."""
    from nerservice.errors import ConfigError

    if not 1 <= jobs <= MAX_JOBS:
        raise ConfigError(f"--jobs {jobs}: need 1 to {MAX_JOBS}")
    if jobs == 1 or len(specs) <= 1:
        return [run_spec(s, resume=resume, progress=progress) for s in specs]
    from nerservice.training.finished import finished_run

    # Finished runs are read back here, so that no worker process starts (and imports its framework) for them.
    finished = [finished_run(s.request, s.train, s.dev, s.test, progress=progress) if resume else None
                for s in specs]
    todo = [s for s, f in zip(specs, finished) if f is None]
    trained = iter(_pool(todo, jobs=jobs, resume=resume, progress=progress) if todo else [])
    return [f if f is not None else next(trained) for f in finished]


def _pool(specs: Sequence[RunSpec], *, jobs: int, resume: bool, progress: bool) -> list[RunSummary]:
    """``specs`` in worker processes, ``jobs`` at a time (``jobs`` > 1); their summaries in order."""
    import multiprocessing

    from nerservice import backend

    workers = min(jobs, len(specs))
    threads = max(1, available_cores() // workers)
    t0 = time.perf_counter()
    if progress:
        print(f"{len(specs)} runs, {workers} at a time in worker processes ({threads} TF thread(s) each)", flush=True)
    # The workers print where this process does: under --json (cli/common.py, json_stdout) this process's
    # stdout is stderr, and a worker's own fd 1, inherited, would put its lines ("resuming from ...") in the JSON.
    to_stderr = sys.stdout is sys.stderr
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(backend.current(), threads, to_stderr))
    try:
        futures = [pool.submit(run_spec, spec, resume=resume, progress=False) for spec in specs]
        pending: set[Future[Any]] = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for f in done:
                error = f.exception()
                if error is not None:
                    raise error
                if progress:
                    s = f.result()
                    print(f"  {s.model_dir}: {s.epochs_run} epochs, kept {s.best_epoch}, {s.seconds / 60:.1f} min "
                          f"(+{(time.perf_counter() - t0) / 60:.1f} min since the pool started)", flush=True)
        return [f.result() for f in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _init_worker(backend_name: str, threads: int, stdout_to_stderr: bool = False) -> None:
    """Before the worker's first import of a framework: the parent's backend, a share of the cores, and
    with ``stdout_to_stderr`` its fd 1 on its fd 2 (at the fd level: native code's writes follow too)."""
    if stdout_to_stderr:
        sys.stdout.flush()
        os.dup2(2, 1)
    os.environ["KERAS_BACKEND"] = backend_name
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # several JAX workers on one GPU
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if backend_name == "tensorflow":
        from nerservice.backend import limit_tensorflow_threads

        limit_tensorflow_threads(threads)
