"""`nerservice models ...` and `nerservice train --register NAME --promote ALIAS`, end to end."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nerservice.cli.main import main

from .store_helpers import clone_with_dev_f1, tree_digest

SUBCOMMANDS = {"list": "--json", "show": "--json", "register": "--promote", "promote": "--if-better",
               "download": "--to"}


@pytest.mark.parametrize("sub, option", sorted(SUBCOMMANDS.items()))
def test_every_models_subcommand_has_help(sub, option, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["models", sub, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert option in out and "--store" in out


@pytest.fixture
def cli_env(monkeypatch, tmp_path, store_env):
    # Keep every cache and default location inside the test's temp dir.
    monkeypatch.setenv("NERSERVICE_STORE_DIR", str(tmp_path / "store-dir"))
    monkeypatch.setenv("NERSERVICE_CACHE_DIR", str(tmp_path / "cli-cache"))
    monkeypatch.setenv("NERSERVICE_STORE_URI", store_env.uri)
    return store_env


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_models_commands_round_trip(cli_env, model_name, tiny_model_dir, tmp_path, capsys):
    good = clone_with_dev_f1(tiny_model_dir, tmp_path / "good", 0.9)
    worse = clone_with_dev_f1(tiny_model_dir, tmp_path / "worse", 0.6)

    code, out, _ = _run(capsys, "models", "register", str(good), model_name, "--tag", "team=bio",
                        "--promote", "production", "--json")
    assert code == 0
    record = json.loads(out)
    assert (record["version"], record["aliases"], record["tags"]) == (1, ["production"], {"team": "bio"})

    code, out, _ = _run(capsys, "models", "register", str(worse), model_name, "--store", cli_env.uri)
    assert code == 0 and f"registered {model_name}/2" in out

    code, out, err = _run(capsys, "models", "promote", model_name, "2")
    assert code == 2 and "NER504" in err and "worse" in err and out == ""
    code, out, _ = _run(capsys, "models", "show", f"{model_name}@production")
    assert code == 0 and f"{model_name}/1  (complete)" in out and "dev_f1" in out

    code, out, _ = _run(capsys, "models", "promote", model_name, "2", "--force")
    assert code == 0 and f"{model_name}@production -> version 2" in out
    code, out, _ = _run(capsys, "models", "list", model_name, "--json")
    assert [(r["version"], r["aliases"]) for r in json.loads(out)] == [(2, ["production"]), (1, [])]
    code, out, _ = _run(capsys, "models", "list")
    assert code == 0 and model_name in out

    dest = tmp_path / "downloaded"
    code, out, _ = _run(capsys, "models", "download", f"{model_name}@production", "--to", str(dest))
    assert code == 0 and out.strip() == str(dest)
    assert tree_digest(dest) == tree_digest(worse)
    code, _, err = _run(capsys, "models", "download", f"{model_name}/1", "--to", str(dest))
    assert code == 2 and "not an empty folder" in err

    code, _, err = _run(capsys, "models", "show", "../etc/passwd")
    assert code == 2 and "NER503" in err
    code, _, err = _run(capsys, "models", "show", f"{model_name}/7")
    assert code == 2 and "NER501" in err


@pytest.mark.slow
def test_train_registers_and_promotes(store_env, model_name, demo_corpus, tmp_path):
    from helpers import TINY_OVERRIDES
    from nerservice.inference import Extractor

    # One residual layer: tracing the train step is most of a run this small, and nothing here depends on the depth.
    overrides = [a for k, v in {**TINY_OVERRIDES, "training.epochs": 3, "model.lstm_layers": 1}.items()
                 for a in ("--set", f"{k}={v}")]
    out_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "nerservice.cli.main", "train", "--train", str(demo_corpus["train"]),
           "--dev", str(demo_corpus["dev"]), "--test", str(demo_corpus["test"]), "--out", str(out_dir),
           "--quiet", "--register", model_name, "--promote", "production", *overrides]
    env = {**os.environ, **store_env.env(), "NERSERVICE_CACHE_DIR": str(tmp_path / "cache"),
           "NERSERVICE_STORE_DIR": str(tmp_path / "store-dir"), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"registered {model_name}/1" in done.stderr

    store = store_env.store(tmp_path / "check-cache")
    info = store.describe(f"{model_name}@production")
    assert info["version"] == 1 and info["status"] == "complete"
    assert 0.0 <= info["metrics"]["dev_f1"] <= 1.0 and "test_f1" in info["metrics"]
    resolved = store.resolve(f"{model_name}@production")
    assert tree_digest(resolved) == tree_digest(out_dir / "model-best")
    assert Extractor.load(resolved).labels == Extractor.load(out_dir / "model-best").labels

    # The training run: params, per-epoch curves (step = epoch), lineage tags, artifacts.
    client = store.client
    run = client.get_run(info["run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.params["model.lstm_units"] == "24" and run.data.params["training.epochs"] == "3"
    history = json.loads((out_dir / "model-best" / "history.json").read_text())
    epochs = [h["epoch"] for h in history]
    for key in ("loss", "dev_f1", "lr", "train_tokens_per_s", "dev_f1.Disease", "dev_f1.Chemical"):
        points = client.get_metric_history(info["run_id"], key)
        assert sorted(p.step for p in points) == epochs, key
    dev_curve = {p.step: p.value for p in client.get_metric_history(info["run_id"], "dev_f1")}
    assert dev_curve == pytest.approx({h["epoch"]: h["dev_f1"] for h in history})
    assert run.data.metrics["best_dev_f1"] == pytest.approx(info["metrics"]["dev_f1"])
    lineage = json.loads((out_dir / "model-best" / "lineage.json").read_text())
    assert run.data.tags["nerservice.lineage.corpus.train"] == lineage["corpus_fingerprints"]["train"]
    assert run.data.tags["nerservice.lineage.config_hash"] == lineage["config_hash"]
    assert run.data.tags["mlflow.source.git.commit"] == lineage["git_sha"]
    top = {Path(f.path).name for f in client.list_artifacts(info["run_id"])}
    assert {"history.png", "history.json", "metrics.json", "model"} <= top


@pytest.mark.slow
@pytest.mark.parametrize("store_env", ["embedded"], indirect=True)  # the callback path, not the store kind
def test_final_recipe_registers_with_phase2s_config(cli_env, model_name, demo_corpus, tmp_path, capsys):
    from helpers import TINY_OVERRIDES
    from nerservice.artifacts.model_folder import load_model_folder

    tiny = {**TINY_OVERRIDES, "training.epochs": 6, "training.patience": 2, "model.lstm_layers": 1}
    out = tmp_path / "final"
    code, _, err = _run(capsys, "train", "--train", str(demo_corpus["train"]), "--dev", str(demo_corpus["dev"]),
                        "--test", str(demo_corpus["test"]), "--out", str(out), "--quiet", "--final",
                        "--register", model_name, *[a for k, v in tiny.items() for a in ("--set", f"{k}={v}")])
    assert code == 0, err
    final = load_model_folder(out / "model-last")
    epochs = final.config.training.epochs  # phase 1's best epoch, not the command's 6
    store = cli_env.store(tmp_path / "check-cache")
    info = store.describe(f"{model_name}@latest")
    run = store.client.get_run(info["run_id"])
    assert run.data.params["training.epochs"] == run.data.params["training.patience"] == str(epochs)
    assert run.data.tags["nerservice.lineage.config_hash"] == final.lineage["config_hash"]
