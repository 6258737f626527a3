"""train() end to end: the tiny fixture learns the demo corpus; outputs are complete; a rerun resumes
exactly where the checkpoint left off; a seed reproduces a run bit for bit (TensorFlow, CPU)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers import tiny_model_config

pytestmark = pytest.mark.slow


def test_tiny_training_learns_the_demo_corpus(tiny_training) -> None:
    o = tiny_training
    assert o.test is not None
    assert o.test["micro"]["f1"] >= 0.9, o.test["micro"]
    assert o.dev["micro"]["f1"] >= 0.9
    assert set(o.test["per_type"]) == {"Chemical", "Disease"}
    assert all(v["f1"] >= 0.85 for v in o.test["per_type"].values())
    assert o.stopped_reason in {"epochs", "patience", "time budget"}
    assert 1 <= o.best_epoch <= len(o.history)
    assert o.history[o.best_epoch - 1]["dev_f1"] == max(h["dev_f1"] for h in o.history)
    assert o.history[-1]["loss"] < o.history[0]["loss"]


def test_training_writes_best_last_checkpoint_history_and_plot(tiny_training) -> None:
    from nerservice.artifacts.formats import verify_manifest
    from nerservice.training.checkpoint import has_checkpoint

    out = Path(tiny_training.out_dir)
    assert has_checkpoint(out / "checkpoint")
    for name in ("model-best", "model-last"):
        d = out / name
        verify_manifest(d)
        history = json.loads((d / "history.json").read_text())
        assert [h["epoch"] for h in history][0] == 1
        assert (d / "history.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    last_history = json.loads((out / "model-last" / "history.json").read_text())
    assert len(last_history) == len(tiny_training.history)
    metrics = json.loads((out / "model-best" / "metrics.json").read_text())
    assert metrics["epoch"] == tiny_training.best_epoch
    assert metrics["test"]["micro"]["f1"] == pytest.approx(tiny_training.test["micro"]["f1"])
    assert metrics["dev"]["micro"]["f1"] == pytest.approx(tiny_training.dev["micro"]["f1"])
    state = json.loads((out / "checkpoint" / "state.json").read_text())
    assert state["epoch"] == len(tiny_training.history)
    lineage = json.loads((out / "model-best" / "lineage.json").read_text())
    assert set(lineage["corpus_fingerprints"]) == {"train", "dev", "test"}
    assert lineage["keras_backend"] == "tensorflow" and lineage["config_hash"]
    assert "keras" in lineage["packages"] and "numpy" in lineage["packages"]


def _small_run(out: Path, epochs: int, capsys=None):
    from nerservice.config import NerConfig
    from nerservice.demo_corpus import generate
    from nerservice.training.trainer import train

    # One residual layer: tracing the train step is most of a run this small, two layers trace ~1.5x as long,
    # and nothing here depends on the depth.
    cfg = NerConfig(model=tiny_model_config(dropout=0.3, lstm_layers=1),
                    training={"epochs": epochs, "batch_size": 8, "learning_rate": 0.01, "seed": 5, "patience": 10})
    return train(cfg, train_data=generate(48, seed=1), dev_data=generate(12, seed=2), out_dir=out, progress=False)


def _checkpoint_weights(out: Path) -> list[np.ndarray]:
    with np.load(out / "checkpoint" / "model_vars.npz", allow_pickle=False) as z:
        return [z[k] for k in sorted(z.files)]


def test_rerun_resumes_after_the_saved_epoch_and_matches_an_uninterrupted_run(tmp_path, capsys) -> None:
    straight = _small_run(tmp_path / "straight", epochs=3)
    first = _small_run(tmp_path / "resumed", epochs=2)
    capsys.readouterr()
    resumed = _small_run(tmp_path / "resumed", epochs=3)
    assert "after epoch 2" in capsys.readouterr().out
    # Only epoch 3 ran in the rerun: epochs 1-2 are the first run's records, untouched.
    assert [h["epoch"] for h in resumed.history] == [1, 2, 3]
    assert resumed.history[:2] == first.history
    assert json.loads((tmp_path / "resumed" / "checkpoint" / "state.json").read_text())["epoch"] == 3
    assert len(json.loads((tmp_path / "resumed" / "model-last" / "history.json").read_text())) == 3
    # Same seed → the same run (reproducibility), and 2 + 1 resumed epochs == 3 uninterrupted ones: the
    # checkpoint carries everything (weights, Adam moments, step count, dropout RNG state, schedule).
    assert [h["loss"] for h in straight.history[:2]] == [h["loss"] for h in first.history]
    assert [h["dev_f1"] for h in straight.history] == [h["dev_f1"] for h in resumed.history]
    for a, b in zip(_checkpoint_weights(tmp_path / "straight"), _checkpoint_weights(tmp_path / "resumed")):
        np.testing.assert_array_equal(a, b)


def test_no_resume_starts_over(tmp_path, capsys) -> None:
    from nerservice.config import NerConfig
    from nerservice.demo_corpus import generate
    from nerservice.training.trainer import train

    cfg = NerConfig(model=tiny_model_config(lstm_layers=1), training={"epochs": 1, "batch_size": 8, "seed": 1})
    data = dict(train_data=generate(16, seed=1), dev_data=generate(4, seed=2), out_dir=tmp_path, progress=False)
    train(cfg, **data)
    capsys.readouterr()
    again = train(cfg, resume=False, **data)
    assert "resuming" not in capsys.readouterr().out
    assert len(again.history) == 1 and again.test is None
