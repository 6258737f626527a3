"""StoreCallback fed with a real training outcome: the run it logs, and how it behaves when the store is down."""
from __future__ import annotations

from pathlib import Path

import pytest

from nerservice.errors import ModelNotFoundError, StoreError

from .store_helpers import tree_digest


def _replay(callback, outcome) -> None:
    """Feed the callback exactly what train() would: every epoch record, then the outcome."""
    best = outcome.best_epoch
    for record in outcome.history:
        callback.on_epoch(record, record["epoch"] == best)
    callback.on_end(outcome)


def test_callback_logs_the_run_and_registers(store, model_name, tiny_training):
    from helpers import tiny_config
    from nerservice.store import StoreCallback

    cb = StoreCallback(store, name=model_name, config=tiny_config())
    _replay(cb, tiny_training)
    assert cb.version == 1 and cb.run_id
    info = store.describe(f"{model_name}@latest")
    assert info["run_id"] == cb.run_id  # the version points at the training run
    assert tree_digest(store.resolve(model_name)) == tree_digest(tiny_training.best_dir)

    run = store.client.get_run(cb.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params["training.seed"] == "3" and run.data.params["model.lstm_layers"] == "2"
    steps = [p.step for p in store.client.get_metric_history(cb.run_id, "dev_f1")]
    assert sorted(steps) == [h["epoch"] for h in tiny_training.history]
    assert run.data.metrics["test_f1"] == pytest.approx(tiny_training.test["micro"]["f1"])
    assert run.data.tags["nerservice.stopped_reason"] == tiny_training.stopped_reason


def test_callback_records_the_config_the_run_starts_with(store, model_name, tiny_training):
    """A recipe's run (phase 2, a student) trains another config than the command's: the run's own is logged."""
    from helpers import tiny_config
    from nerservice.store import StoreCallback

    given = tiny_config()
    run_config = given.with_overrides({"training.epochs": 13, "training.patience": 13})
    cb = StoreCallback(store, name=model_name, config=given)
    cb.on_start(run_config)
    _replay(cb, tiny_training)
    run = store.client.get_run(cb.run_id)
    assert (run.data.params["training.epochs"], run.data.params["training.patience"]) == ("13", "13")


def test_callback_without_a_name_only_tracks(store, tiny_training):
    from helpers import tiny_config
    from nerservice.store import StoreCallback

    cb = StoreCallback(store, name=None, config=tiny_config())
    _replay(cb, tiny_training)
    assert cb.version is None and cb.run_id
    uploaded = {Path(f.path).name for f in store.client.list_artifacts(cb.run_id, "model")}
    assert uploaded == {p.name for p in Path(tiny_training.best_dir).iterdir()}


def test_store_outage_does_not_kill_training_but_fails_registration(monkeypatch, tmp_path, tiny_training, capsys):
    from helpers import tiny_config
    from nerservice.store import ModelStore, StoreCallback
    from nerservice.store.local_server import free_port

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # a closed port fails at once
    dead = ModelStore(f"http://127.0.0.1:{free_port()}", cache_dir=tmp_path / "cache")
    cb = StoreCallback(dead, name="ner", config=tiny_config())
    for record in tiny_training.history:
        cb.on_epoch(record, False)  # must not raise: the training goes on
    err = capsys.readouterr().err
    assert err.count("warning: model store") == 1 and "cannot connect" in err
    with pytest.raises(StoreError, match="cannot connect"):
        cb.on_end(tiny_training)
    assert cb.version is None


def test_callback_refuses_a_bad_name_before_training(store):
    from helpers import tiny_config
    from nerservice.errors import InvalidModelRefError
    from nerservice.store import StoreCallback

    with pytest.raises(InvalidModelRefError):
        StoreCallback(store, name="../x", config=tiny_config())
    with pytest.raises(ModelNotFoundError):
        store.describe("x@production")
