"""The ``nerservice`` command: help everywhere, train → evaluate → predict on the demo corpus, exit codes."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nerservice.cli.main import build_parser, main

BAD_CORPUS = "Aspirin\tB-Chemical\nworks\tO\n\nbad line without tag\n"


def _all_commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append(prefix + (name,))
                out.extend(_all_commands(sub, prefix + (name,)))
    return out


COMMANDS = _all_commands(build_parser())


def test_the_core_subcommands_are_registered() -> None:
    assert {("train",), ("evaluate",), ("predict",)} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_on_every_subcommand_exits_zero(command: tuple[str, ...], capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    assert "usage: nerservice " + " ".join(command) in capsys.readouterr().out


def test_the_installed_entry_point_runs() -> None:
    exe = Path(sys.executable).with_name("nerservice")
    proc = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "train" in proc.stdout and "predict" in proc.stdout
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("nerservice ")


def test_print_config_applies_overrides_and_shorthands(capsys) -> None:
    assert main(["train", "--train", "x", "--dev", "y", "--out", "z", "--print-config",
                 "--set", "model.lstm_layers=2", "--epochs", "4", "--dropout", "0.25"]) == 0
    cfg = json.loads(capsys.readouterr().out)
    assert cfg["model"]["lstm_layers"] == 2 and cfg["training"]["epochs"] == 4 and cfg["model"]["dropout"] == 0.25


def test_unknown_override_is_exit_code_2_with_a_message(capsys) -> None:
    assert main(["train", "--train", "x", "--dev", "y", "--out", "z", "--print-config",
                 "--set", "model.lstm_layerz=2"]) == 2
    assert "unknown config key 'model.lstm_layerz'" in capsys.readouterr().err


def test_malformed_corpus_is_exit_code_2_naming_file_and_line(tmp_path: Path) -> None:
    """A real process: stderr names file:line and what was expected; nothing is trained."""
    bad = tmp_path / "bad.tsv"
    bad.write_text(BAD_CORPUS, encoding="utf-8")
    exe = Path(sys.executable).with_name("nerservice")
    proc = subprocess.run([str(exe), "train", "--train", str(bad), "--dev", str(bad), "--out", str(tmp_path / "o"),
                           "--quiet"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert f"{bad}:4:" in proc.stderr and "expected" in proc.stderr and "NER201" in proc.stderr
    assert not (tmp_path / "o" / "model-best").exists()


def test_missing_model_is_exit_code_2(tmp_path: Path, capsys, demo_corpus) -> None:
    assert main(["evaluate", str(tmp_path / "no-such-model"), str(demo_corpus["test"])]) == 2
    err = capsys.readouterr().err
    assert "no such model directory" in err and "NER401" in err


@pytest.mark.slow
def test_train_prints_evaluation_and_writes_a_model(tmp_path: Path, capsys, demo_corpus) -> None:
    out = tmp_path / "run"
    rc = main(["train", "--train", str(demo_corpus["train"]), "--dev", str(demo_corpus["dev"]),
               "--test", str(demo_corpus["test"]), "--out", str(out), "--quiet", "--epochs", "2",
               "--set", "model.lstm_layers=1", "--set", "model.lstm_units=16", "--set", "model.dense_units=32",
               "--set", "model.word_embedding_dim=24", "--set", "model.char_lstm_units=8",
               "--set", "training.learning_rate=0.005", "--set", "training.batch_size=16"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "train: 400 sentences" in text
    assert "dev: entity-level (strict IOB2)" in text and "test: entity-level (strict IOB2)" in text
    assert "micro" in text and "Disease" in text and "token-level" in text and "NerDL's figure" in text
    assert f"model: {out / 'model-best'}" in text
    from nerservice.artifacts.formats import load_model

    loaded = load_model(out / "model-best")
    assert loaded.config.model.lstm_layers == 1 and loaded.config.training.epochs == 2
    assert (out / "model-last").is_dir() and (out / "checkpoint").is_dir()


@pytest.mark.slow
def test_evaluate_json_prints_the_documented_keys(tiny_model_dir: Path, demo_corpus, capsys) -> None:
    assert main(["evaluate", str(tiny_model_dir), str(demo_corpus["test"]), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # Documented: {"micro": {"precision", "recall", "f1"}, "per_type": {...}, "tokens": n}; the extras are
    # labelled (sentences, tag_level, token_level) and pinned here so a change to the output is a deliberate one.
    assert set(out) == {"micro", "per_type", "tokens", "sentences", "tag_level", "token_level"}
    assert {"precision", "recall", "f1"} <= set(out["micro"])
    assert all(0.0 <= out["micro"][k] <= 1.0 for k in ("precision", "recall", "f1"))
    assert out["micro"]["f1"] >= 0.9
    assert set(out["per_type"]) == {"Chemical", "Disease"}
    assert all({"precision", "recall", "f1", "support"} <= set(v) for v in out["per_type"].values())
    assert isinstance(out["tokens"], int) and out["tokens"] > 0 and out["sentences"] == 80


@pytest.mark.slow
def test_evaluate_accepts_a_training_output_folder(tiny_training, demo_corpus, capsys) -> None:
    assert main(["evaluate", str(tiny_training.out_dir), str(demo_corpus["dev"])]) == 0
    text = capsys.readouterr().out
    assert "entity-level (strict IOB2) over 80 sentences" in text and "micro" in text


@pytest.mark.slow
def test_predict_reads_stdin_and_writes_one_json_line_per_input_line(tiny_model_dir: Path) -> None:
    lines = ["Patients with breast cancer were treated with cisplatin.", "", "Nothing to see here.",
             "Lithium - induced nephrotoxicity 😀 was observed."]
    exe = Path(sys.executable).with_name("nerservice")
    proc = subprocess.run([str(exe), "predict", str(tiny_model_dir), "-"], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3, 4]
    assert [(e["text"], e["label"]) for e in rows[0]["entities"]] == [("breast cancer", "Disease"),
                                                                      ("cisplatin", "Chemical")]
    assert rows[1]["entities"] == []
    for text, row in zip(lines, rows):
        for e in row["entities"]:
            assert set(e) == {"start", "end", "label", "text", "score"}
            assert text[e["start"]:e["end"]] == e["text"]
    assert ("nephrotoxicity", "Disease") in [(e["text"], e["label"]) for e in rows[3]["entities"]]


@pytest.mark.slow
def test_predict_from_a_file_in_small_batches(tiny_model_dir: Path, tmp_path: Path, capsys) -> None:
    src = tmp_path / "in.txt"
    src.write_text("asthma\n" * 5 + "Treatment with aspirin and caffeine was well tolerated.\n", encoding="utf-8")
    assert main(["predict", str(tiny_model_dir), str(src), "--batch-lines", "2"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["line"] for r in rows] == list(range(1, 7))
    assert [e["text"] for e in rows[5]["entities"]] == ["aspirin", "caffeine"]
    # Model calls of 2 sentences / 16 padded tokens (the GPU settings' knobs) give the same answer.
    assert main(["predict", str(tiny_model_dir), str(src), "--batch-size", "2", "--token-budget", "16"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == rows


def test_predict_refuses_a_zero_batch_size(tiny_model_dir: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "in.txt").write_text("asthma\n", encoding="utf-8")
    assert main(["predict", str(tiny_model_dir), str(tmp_path / "in.txt"), "--batch-size", "0"]) == 2
    err = capsys.readouterr().err
    assert "--batch-size must be >= 1" in err and "NER" in err


def test_data_parallel_under_tensorflow_is_a_coded_error(demo_corpus, tmp_path: Path, capsys) -> None:
    """--data-parallel is the JAX multi-GPU path; under TensorFlow it is refused before anything trains."""
    rc = main(["train", "--train", str(demo_corpus["train"]), "--dev", str(demo_corpus["dev"]),
               "--out", str(tmp_path / "o"), "--quiet", "--data-parallel", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and "KERAS_BACKEND=jax" in err and "NER" in err
    assert not (tmp_path / "o" / "model-best").exists()


@pytest.mark.slow
def test_evaluate_errors_reports_where_the_errors_are(tiny_model_dir: Path, demo_corpus, capsys) -> None:
    args = ["evaluate", str(tiny_model_dir), str(demo_corpus["test"])]
    assert main([*args, "--errors", "--seen-in", str(demo_corpus["train"]), "--top", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    report = out["errors"]
    assert report["seen_known"] and len(report["missed"]) <= 3 and len(report["false_positives"]) <= 3
    groups = report["groups"].values()
    assert all(key.endswith((", seen", ", unseen")) for key in report["groups"])
    assert sum(g["gold"] for g in groups) == out["micro"]["support"]  # every gold mention in one group
    found = sum(g["found"] for g in groups)
    assert found == pytest.approx(out["micro"]["recall"] * out["micro"]["support"])
    assert main([*args, "--errors"]) == 0
    assert "where the errors are (mentions by shape)" in capsys.readouterr().out
    for bad in (["--seen-in", str(demo_corpus["train"])], ["--errors", "--top", "5000"],
                ["--errors", "--head", "ncbi"]):
        assert main([*args, *bad]) == 2, bad
