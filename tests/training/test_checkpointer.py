"""Training in spaCy's shape: dev evaluated once per epoch, test once, model-best written once per
improving epoch (plus once at the end with the test score), everything through the Checkpointer; and a
run folder left with debris by a kill is repaired at the next start (issue 16, item 3)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from helpers import REPO, tiny_model_config

pytestmark = pytest.mark.slow


def _config(epochs: int):
    from nerservice.config import NerConfig

    # One residual layer (KILLED_RUN's config must be this one): tracing the train step is most of a run this
    # small, two layers trace ~1.5x as long, and nothing here depends on the depth.
    return NerConfig(model=tiny_model_config(lstm_layers=1), training={"epochs": epochs, "batch_size": 8, "seed": 5,
                                                                       "patience": 10, "average_epochs": 0})


def test_dev_once_per_epoch_test_once_and_each_folder_written_once_per_epoch(tmp_path: Path, monkeypatch) -> None:
    from nerservice.artifacts import model_folder
    from nerservice.demo_corpus import generate
    from nerservice.training import checkpointer, trainer

    evaluated: list[int] = []
    real_eval = trainer.evaluate_predictor
    monkeypatch.setattr(trainer, "evaluate_predictor", lambda p, corpus: evaluated.append(len(corpus)) or
                        real_eval(p, corpus))
    saved: Counter[str] = Counter()
    real_save = model_folder.save_model
    monkeypatch.setattr(checkpointer, "save_model", lambda folder, **kw: saved.update([Path(folder).name]) or
                        real_save(folder, **kw))
    dev, test = generate(12, seed=2), generate(10, seed=3)
    out = trainer.train(_config(3), train_data=generate(40, seed=1), dev_data=dev, test_data=test,
                        out_dir=tmp_path, progress=False)
    improved = sum(1 for i, h in enumerate(out.history) if h["dev_f1"] > max([-1.0] + [x["dev_f1"] for x in
                                                                                        out.history[:i]]))
    assert evaluated == [len(dev)] * 3 + [len(test)]  # dev once per epoch, test once at the end
    assert saved == {"model-last": 3, "model-best": improved + 1}  # +1: the final metrics (test score)
    metrics = json.loads((tmp_path / "model-best" / "metrics.json").read_text())
    assert metrics["dev"] == out.dev and metrics["test"] == out.test and metrics["epoch"] == out.best_epoch
    assert out.dev["micro"]["f1"] == out.history[out.best_epoch - 1]["dev_f1"]  # the best epoch's own figures


KILLED_RUN = """
import os, signal, sys
from pathlib import Path
from nerservice.artifacts import files
from nerservice.config import NerConfig
from nerservice.demo_corpus import generate
from nerservice.training.trainer import train
sys.path.insert(0, "tests")
from helpers import tiny_model_config

files._exchange = lambda a, b: False  # a filesystem without RENAME_EXCHANGE: the two-rename swap
swaps = []
def hook(point):
    if point == "set-aside":
        swaps.append(point)
        if len(swaps) == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)  # between the two renames of this swap
files.crash_hook = hook
cfg = NerConfig(model=tiny_model_config(lstm_layers=1), training={"epochs": 3, "batch_size": 8, "seed": 5,
                                                                  "patience": 10, "average_epochs": 0})  # = _config(3)
train(cfg, train_data=generate(40, seed=1), dev_data=generate(12, seed=2), out_dir=sys.argv[1], progress=False)
"""


@pytest.mark.parametrize("kill_at_swap", [1, 3])  # epoch 2's model-last; epoch 2's checkpoint (or model-best)
def test_a_run_killed_mid_swap_resumes_and_leaves_no_debris(tmp_path: Path, kill_at_swap: int) -> None:
    from nerservice.artifacts.formats import verify_manifest
    from nerservice.config import NerConfig  # noqa: F401  (the library imports in this process too)
    from nerservice.demo_corpus import generate
    from nerservice.training.checkpoint import has_checkpoint
    from nerservice.training.trainer import train

    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-c", KILLED_RUN, str(out), str(kill_at_swap)], cwd=REPO,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    missing = [n for n in ("model-best", "model-last", "checkpoint") if not (out / n).exists()]
    aside = [p.name for p in out.glob(".*.old-*")]
    assert missing and aside, f"the kill should have hit between the renames: missing {missing}, aside {aside}"
    resumed = train(_config(3), train_data=generate(40, seed=1), dev_data=generate(12, seed=2), out_dir=out,
                    progress=False)
    assert [h["epoch"] for h in resumed.history] == [1, 2, 3]
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")], "staging debris left behind"
    for name in ("model-best", "model-last"):
        verify_manifest(out / name)
    assert has_checkpoint(out / "checkpoint")


def test_the_next_start_removes_staging_debris_and_restores_a_set_aside_folder(tmp_path: Path,
                                                                             tiny_random_model_dir: Path) -> None:
    from nerservice.artifacts.formats import verify_manifest
    from nerservice.artifacts.model_folder import load_model_folder
    from nerservice.training.checkpointer import Checkpointer

    shutil.copytree(tiny_random_model_dir, tmp_path / ".model-best.old-123")  # model-best itself is missing
    for junk in (".model-best.k2j4", ".checkpoint.abc", ".model-last.zz"):
        (tmp_path / junk).mkdir()
        (tmp_path / junk / "model.weights.h5").write_bytes(b"half")
    m = load_model_folder(tiny_random_model_dir)
    Checkpointer(tmp_path, vocabs=m.vocabs, config=m.config, lineage={})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model-best"]
    verify_manifest(tmp_path / "model-best")
    Checkpointer(tmp_path / "other", vocabs=m.vocabs, config=m.config, lineage={}, enabled=False)
    assert not (tmp_path / "other").exists()  # a non-chief rank writes nothing
