"""Debris of crashes in the store: RUNNING runs whose process is gone are ended as KILLED (by the next
training's callback on the same host, or by cleanup), live ones are left alone; incomplete versions older
than the grace period are listed and deleted, complete ones are kept."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nerservice.store.cleanup import (
    TAG_ENDED_BY,
    TAG_PID,
    end_abandoned_runs,
    prune_incomplete,
)

DIE_WITH_A_RUN = """
import os, signal, sys
from nerservice.store import ModelStore
store = ModelStore(sys.argv[1], cache_dir=sys.argv[2])
print(store.start_run(run_name="train-crashed"), flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # no cleanup of any kind
"""


def _crashed_run(store_env, tmp_path: Path) -> str:
    out = subprocess.run([sys.executable, "-c", DIE_WITH_A_RUN, store_env.uri, str(tmp_path / "c")],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == -9, out.stderr
    return out.stdout.strip().splitlines()[-1]


def test_runs_of_dead_processes_are_ended_live_ones_kept(store_env, store, tmp_path) -> None:
    dead = _crashed_run(store_env, tmp_path)
    live = store.start_run(run_name="train-live")
    assert store.client.get_run(dead).info.status == "RUNNING"
    assert store.client.get_run(dead).data.tags[TAG_PID] != str(os.getpid())
    found = end_abandoned_runs(store, dry_run=True)
    assert dead in {r["run_id"] for r in found} and live not in {r["run_id"] for r in found}
    assert store.client.get_run(dead).info.status == "RUNNING"  # dry run
    end_abandoned_runs(store)
    run = store.client.get_run(dead)
    assert run.info.status == "KILLED" and run.data.tags[TAG_ENDED_BY] == "cleanup"
    assert store.client.get_run(live).info.status == "RUNNING"
    store.end_run(live)


def test_the_next_training_on_the_host_ends_its_killed_predecessors_run(store_env, store, tmp_path) -> None:
    from nerservice.config import NerConfig
    from nerservice.store.callback import StoreCallback

    dead = _crashed_run(store_env, tmp_path)
    callback = StoreCallback(store, name=None, config=NerConfig())
    callback.on_epoch({"epoch": 1, "loss": 1.0, "dev_f1": 0.5}, True)  # the resumed training's first epoch
    assert store.client.get_run(dead).info.status == "KILLED"
    assert store.client.get_run(callback.run_id).info.status == "RUNNING"
    store.end_run(callback.run_id)


def test_incomplete_versions_are_pruned_after_the_grace_period(store, model_name, tmp_path) -> None:
    from random_model import build_random_model

    model = build_random_model(tmp_path / "m")
    v1 = store.register(model, model_name)
    run = store.client.create_run(store.experiment_id())
    store.client.log_artifacts(run.info.run_id, str(model), "model")
    broken = int(store.client.create_model_version(model_name, f"{run.info.artifact_uri}/model",
                                                   run_id=run.info.run_id, await_creation_for=0).version)
    assert prune_incomplete(store, model_name) == []  # younger than the default hour: maybe still in flight
    gone = prune_incomplete(store, model_name, older_than_s=0, dry_run=True)
    assert [r["version"] for r in gone] == [broken]
    assert {r["version"] for r in store.list(model_name)} == {v1, broken}
    prune_incomplete(store, model_name, older_than_s=0)
    assert [(r["version"], r["status"]) for r in store.list(model_name)] == [(v1, "complete")]


def test_cleanup_never_ends_this_process_run(store) -> None:
    run_id = store.start_run(run_name="mine")
    assert run_id not in {r["run_id"] for r in end_abandoned_runs(store, stale_after_s=0, dry_run=True)}
    store.end_run(run_id)
