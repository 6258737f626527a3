"""``bench/gpu/finetune_head.py`` (BENCHMARKS session 33) on a tiny two-corpus model trained for real: the start it
reports is the saved model's own figures (so the fine-tuned weights are compared with the right model), phase 1
never keeps worse-than-start dev weights, phase 2 runs exactly its epochs, and a corpora config that is not the
model's is refused before anything trains. In-process, on the suite's backend; the script's device runs use JAX."""
from __future__ import annotations

import importlib.util
import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import REPO

SCRIPT = REPO / "bench/gpu/finetune_head.py"


def run_script(monkeypatch: pytest.MonkeyPatch, out: Path, *args: str) -> dict[str, Any]:
    # The script imports its neighbour runtime.py as `runtime`, a name tests/runtime/ (a package) takes in a
    # whole-suite run: that module goes under the name for the call only.
    spec = importlib.util.spec_from_file_location("runtime", SCRIPT.parent / "runtime.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "runtime", module)
    # The script defaults KERAS_BACKEND to jax (the GPU machine's); set, its setdefault leaves the variable alone,
    # and it is restored after: left at jax, it would steer every later test and server of this worker.
    import keras

    monkeypatch.setenv("KERAS_BACKEND", keras.backend.backend())
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *args, "--json-out", str(out)])
    runpy.run_path(str(SCRIPT), run_name="__main__")
    assert os.environ["KERAS_BACKEND"] == keras.backend.backend()
    return json.loads(out.read_text())


def saved_test_f1(model_dir: Path) -> dict[str, float]:
    metrics = json.loads((model_dir / "metrics.json").read_text())
    return {c: round(100 * m["micro"]["f1"], 2) for c, m in metrics["test"]["per_corpus"].items()}


def test_phase_1_starts_from_the_saved_model_and_keeps_no_worse_dev(
        tiny_multi_run: Path, tiny_multi_corpora: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    start = tiny_multi_run / "model-best"
    r = run_script(monkeypatch, tmp_path / "p1.json", "--model", str(start), "--corpora", str(tiny_multi_corpora),
                   "--head", "dis", "--set", "training.epochs=3", "--set", "training.patience=3")
    assert r["start"]["test_f1"] == saved_test_f1(start)
    assert r["phase"] == 1 and 1 <= r["epochs_run"] <= 3
    assert r["kept"]["dev_f1"] >= r["start"]["dev_f1"]
    assert r["kept"]["dev_f1"] == max([r["start"]["dev_f1"], *(h["dev_f1"] for h in r["history"])])
    if r["kept_epoch"] == 0:  # no epoch beat the start: the start's weights, so the start's test figures
        assert r["kept"]["test_f1"] == r["start"]["test_f1"]
    else:
        assert r["history"][r["kept_epoch"] - 1]["best"]
    assert r["delta_test"] == {c: round(r["kept"]["test_f1"][c] - r["start"]["test_f1"][c], 2)
                               for c in r["start"]["test_f1"]}


def test_phase_2_trains_on_train_and_dev_for_its_epochs_and_keeps_the_last(
        tiny_multi_run: Path, tiny_multi_corpora: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    start = tiny_multi_run / "model-best"  # (model-last's metrics hold no test figures)
    r = run_script(monkeypatch, tmp_path / "p2.json", "--model", str(start), "--corpora", str(tiny_multi_corpora),
                   "--head", "chem", "--train-on-dev", "--set", "training.epochs=2",
                   "--set", "training.learning_rate=0.05")
    assert r["start"]["test_f1"] == saved_test_f1(start)
    assert (r["phase"], r["epochs_run"], r["kept_epoch"], r["kept"]["dev_f1"]) == (2, 2, 2, None)
    assert r["kept"]["test_f1"] != r["start"]["test_f1"]  # 2 epochs at 10x the tiny runs' rate move the weights


def test_a_corpora_config_that_is_not_the_models_is_refused(
        tiny_multi_run: Path, tiny_multi_corpora: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = json.loads(tiny_multi_corpora.read_text())
    for c in other["corpora"]:  # relative split paths, resolved against the config's folder
        c.update({k: str(tiny_multi_corpora.parent / c[k]) for k in ("train", "dev", "test")})
    other["corpora"][0]["train"] = other["corpora"][0]["dev"]
    wrong = tmp_path / "corpora.json"
    wrong.write_text(json.dumps(other))
    with pytest.raises(SystemExit, match="rebuild the model's gazetteer"):
        run_script(monkeypatch, tmp_path / "x.json", "--model", str(tiny_multi_run / "model-best"),
                   "--corpora", str(wrong), "--head", "dis")
    assert not (tmp_path / "x.json").exists()
