"""``StoreCallback``: a training run in MLflow, and (with a name) the best model registered at the end.

Plugs into ``nerservice.training.trainer.train(callbacks=[...])``; the trainer calls it on rank 0 only.
Per epoch it logs the curves the MLflow UI plots (step = epoch).  At the end it logs the summary figures,
lineage tags and the history plot, then registers ``model-best`` into the run (or, without a name, just
uploads it there).

A store outage in the middle of a long training must not throw the training away: a failed per-epoch
log is reported once on stderr and retried at the end, where failures do raise (the user asked for a
registered model; the trained model stays on disk either way).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from nerservice.artifacts.layout import HISTORY, METRICS, PLOT
from nerservice.config import NerConfig
from nerservice.errors import StoreError
from nerservice.store import runs
from nerservice.store.model_store import ModelStore
from nerservice.store.refs import validate_name


class StoreCallback:
    def __init__(self, store: ModelStore, *, name: str | None, config: NerConfig) -> None:
        self.store = store
        self.name = validate_name(name) if name is not None else None  # fail before training, not after
        self.config = config
        self.run_id: str | None = None
        self.version: int | None = None
        self._logged: set[int] = set()
        self._warned = False
        self._cleanup_tried = False

    def _run(self) -> str:
        if self.run_id is None:
            from nerservice.store.cleanup import end_abandoned_runs

            # A training killed earlier on this host (the one this run resumes, typically) left its run
            # RUNNING: end it as KILLED now that nobody can still be writing to it. Tried once; its failure
            # is reported only if the store then answers (during an outage every epoch comes back here,
            # and on_epoch's one warning already says the store is down).
            cleanup_error: StoreError | None = None
            if not self._cleanup_tried:
                self._cleanup_tried = True
                try:
                    end_abandoned_runs(self.store, ended_by="a later training on this host")
                except StoreError as exc:
                    cleanup_error = exc
            tags = {runs.TAG_LINEAGE + "config_hash": self.config.fingerprint()}
            if self.name:
                tags[runs.TAG_MODEL_NAME] = self.name
            self.run_id = self.store.start_run(run_name=f"train-{self.name or 'model'}",
                                               params=runs.flatten(self.config.model_dump(mode="json")), tags=tags)
            if cleanup_error is not None:
                print(f"warning: model store: abandoned runs not ended ({cleanup_error})", file=sys.stderr,
                      flush=True)
        return self.run_id

    def _log_epoch(self, record: dict[str, Any]) -> None:
        from nerservice.store._mlflow import translated

        with translated("logging epoch metrics", uri=self.store.tracking_uri):
            runs.log_metrics(self.store.client, self._run(), runs.epoch_metrics(record), step=int(record["epoch"]))
        self._logged.add(int(record["epoch"]))

    def on_start(self, config: NerConfig) -> None:
        # The run's params and config hash are this run's (a recipe's phase 2 or student trains another
        # config than the command's); the run itself starts lazily, at the first epoch's metrics.
        self.config = config

    def on_epoch(self, record: dict[str, Any], is_best: bool) -> None:
        try:
            self._log_epoch(record)
        except StoreError as exc:
            if not self._warned:
                print(f"warning: model store: epoch metrics not logged ({exc}); retrying at the end",
                      file=sys.stderr, flush=True)
                self._warned = True

    def on_end(self, outcome: Any) -> None:
        from nerservice.store._mlflow import translated

        run_id = self._run()
        for record in outcome.history:  # epochs whose logging failed, or ran before a resume
            if int(record["epoch"]) not in self._logged:
                self._log_epoch(record)
        best = Path(outcome.best_dir)
        summary = runs.summary_metrics({"dev": outcome.dev, "test": outcome.test, "epoch": outcome.best_epoch})
        summary = {("best_" + k if k.startswith("dev_") else k): v for k, v in summary.items()}
        lineage = dict(outcome.lineage or {})
        tags = {**runs.lineage_tags(lineage), "nerservice.stopped_reason": str(outcome.stopped_reason)}
        if lineage.get("git_sha"):
            tags[runs.GIT_COMMIT_TAG] = str(lineage["git_sha"])
        client = self.store.client
        with translated("logging the training summary", uri=self.store.tracking_uri):
            runs.log_metrics(client, run_id, {**summary, "train_minutes": float(outcome.seconds) / 60},
                             step=int(outcome.best_epoch))
            runs.log_tags(client, run_id, tags)
            for name in (PLOT, HISTORY, METRICS):
                if (best / name).is_file():
                    client.log_artifact(run_id, str(best / name))
        if self.name:
            self.version = self.store.register(best, self.name, run_id=run_id)
            print(f"registered {self.name}/{self.version} in the model store: {self.store.run_url(run_id)}",
                  file=sys.stderr, flush=True)
        else:
            with translated("uploading the model", uri=self.store.tracking_uri):
                client.log_artifacts(run_id, str(best), "model")
        self.store.end_run(run_id)
