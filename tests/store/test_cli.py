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
def test_final_recipe_trains_on_train_plus_dev_for_phase1s_epoch_count_and_registers_phase2s_config(
        cli_env, model_name, demo_corpus, tmp_path, capsys):
    """`nerservice train --final`: what it trains, keeps and records, and what `--register` sends to the store.
    One run for both (it was two identical trainings, one in tests/training/test_recipes.py): the
    registration is a callback on the same run and changes nothing it trains."""
    from helpers import TINY_OVERRIDES
    from nerservice.artifacts.formats import verify_manifest
    from nerservice.artifacts.model_folder import load_model_folder as load_model
    from nerservice.data import read_corpus
    from nerservice.lineage import corpus_fingerprint

    # One residual layer: tracing the train step is most of a run this small, two layers trace ~1.5x as long,
    # and nothing here depends on the depth (the demo corpus' dev F1 is 1.0 from epoch 3 with either).
    tiny = {**TINY_OVERRIDES, "training.epochs": 6, "training.patience": 2, "model.lstm_layers": 1}
    out = tmp_path / "final"
    argv = ["train", "--train", str(demo_corpus["train"]), "--dev", str(demo_corpus["dev"]), "--test",
            str(demo_corpus["test"]), "--out", str(out), "--quiet", *[a for k, v in tiny.items() for a in ("--set", f"{k}={v}")],
            "--final", "--json"]
    code, stdout, err = _run(capsys, *argv, "--register", model_name)
    assert code == 0, err
    printed = json.loads(stdout)
    phase1 = load_model(out / "phase1" / "model-best")
    best_epoch = phase1.metrics["epoch"]
    final = load_model(out / "model-last")
    verify_manifest(out / "model-last")  # lineage.json (the recipe record) is hashed in the manifest
    # Phase 2: exactly phase 1's best epoch count, no early stopping, on train + dev; nothing selected on dev.
    assert final.config.training.epochs == best_epoch == final.config.training.patience  # not the command's 6
    history = json.loads((out / "model-last" / "history.json").read_text())
    assert [h["epoch"] for h in history] == list(range(1, best_epoch + 1))
    assert not (out / "model-best").exists()
    train_s, dev_s = (read_corpus(demo_corpus[k]).sentences for k in ("train", "dev"))
    prints = final.lineage["corpus_fingerprints"]
    assert prints["train"] == corpus_fingerprint([*train_s, *dev_s]) and prints["dev"] == corpus_fingerprint(dev_s)
    assert phase1.lineage["corpus_fingerprints"]["train"] == corpus_fingerprint(train_s)
    recipe = final.lineage["recipe"]
    assert recipe["name"] == "final" and recipe["phase"] == 2
    assert recipe["phase1"]["best_epoch"] == best_epoch and recipe["phase2"]["epochs"] == best_epoch
    assert recipe["phase1"]["dev_f1"] == pytest.approx(phase1.metrics["dev"]["micro"]["f1"])
    assert phase1.lineage["recipe"] == {"name": "final", "phase": 1}
    # The final model was evaluated on test as model-last; the CLI reports it and the recipe.
    assert final.metrics["test"]["micro"]["f1"] == pytest.approx(printed["test"]["micro"]["f1"])
    assert final.metrics["epoch"] == best_epoch and printed["model_dir"] == str(out / "model-last")
    assert printed["recipe"]["phase1"]["best_epoch"] == best_epoch

    # --register: the store's run carries phase 2's config (the final model's), not the command's.
    store = cli_env.store(tmp_path / "check-cache")
    info = store.describe(f"{model_name}@latest")
    run = store.client.get_run(info["run_id"])
    assert run.data.params["training.epochs"] == run.data.params["training.patience"] == str(best_epoch)
    assert run.data.tags["nerservice.lineage.config_hash"] == final.lineage["config_hash"]

    # A rerun resumes both phases from their checkpoints and trains nothing again.
    code, stdout, err = _run(capsys, *argv)
    assert code == 0, err
    again = json.loads(stdout)
    assert again["test"]["micro"]["f1"] == pytest.approx(printed["test"]["micro"]["f1"])
