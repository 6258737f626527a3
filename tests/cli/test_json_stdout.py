"""``--json``: stdout is the JSON document alone (``json.loads`` of all of it, so ``... --json | jq`` works) and
every line printed for people — reading reports, progress, score tables, worker processes' lines — is on
stderr (``json_stdout`` in nerservice/cli/common.py, around every command in ``main``)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, TINY_OVERRIDES
from nerservice.cli.main import main
from nerservice.json_stdout import emit_json, json_stdout

# A token file with one malformed sentence: --lenient skips it and reports "skipped: FILE:LINE: ..." — a line
# for people printed while the corpus is read, before any result.
LENIENT_CORPUS = "Aspirin\tB-Chemical\nworks\tO\n\nbad line without tag\n\nAsthma\tB-Disease\nworsened\tO\n"


def test_json_stdout_sends_prints_to_stderr_and_restores_stdout(capsys) -> None:
    before = sys.stdout
    with pytest.raises(RuntimeError), json_stdout(True):
        print("for people")
        emit_json({"a": [1, 2]})
        raise RuntimeError("a failing command still gives stdout back")
    assert sys.stdout is before
    print("after")
    with json_stdout(False):
        print("no --json: stdout as ever")
    captured = capsys.readouterr()
    assert captured.out == json.dumps({"a": [1, 2]}, indent=2) + "\nafter\nno --json: stdout as ever\n"
    assert captured.err == "for people\n"


def test_evaluate_json_is_the_whole_stdout(tiny_random_model_dir: Path, tmp_path: Path, capsys) -> None:
    corpus = tmp_path / "lenient.tsv"
    corpus.write_text(LENIENT_CORPUS, encoding="utf-8")
    assert main(["evaluate", str(tiny_random_model_dir), str(corpus), "--lenient", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["sentences"] == 2
    assert f"skipped: {corpus}:4:" in captured.err
    # Without --json the same lines stay on stdout, beside the score table.
    assert main(["evaluate", str(tiny_random_model_dir), str(corpus), "--lenient"]) == 0
    captured = capsys.readouterr()
    assert f"skipped: {corpus}:4:" in captured.out and "micro" in captured.out


def test_a_real_process_writes_only_json_on_fd_1(tiny_random_model_dir: Path, tmp_path: Path) -> None:
    """What a shell pipe sees: the process's fd 1, TensorFlow and Keras included."""
    corpus = tmp_path / "lenient.tsv"
    corpus.write_text(LENIENT_CORPUS, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "nerservice.cli.main", "evaluate", str(tiny_random_model_dir),
                           str(corpus), "--lenient", "--json"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["sentences"] == 2
    assert f"skipped: {corpus}:4:" in proc.stderr


@pytest.mark.slow
def test_train_seeds_in_worker_processes_json_is_the_whole_stdout(demo_corpus, tmp_path: Path, capfd) -> None:
    """Not --quiet, --jobs 2: the parent's reading report and pool lines, and on a rerun with more epochs the
    workers' own "resuming from ..." lines (their inherited fd 1: capfd captures at the fd level), all on stderr.
    The same run checks what --seeds makes: one member per seed (in two worker processes, training/run_pool.py)
    and OUT/ensemble, scored on dev and test, whose test figure is the one printed."""
    from nerservice.artifacts.ensemble_folder import is_ensemble_dir
    from nerservice.artifacts.formats import load_model

    sets = [x for k, v in {**TINY_OVERRIDES, "training.epochs": 2, "model.lstm_layers": 1}.items()
            for x in ("--set", f"{k}={json.dumps(v)}")]
    out = tmp_path / "seeds"
    args = ["train", "--train", str(demo_corpus["train"]), "--dev", str(demo_corpus["dev"]), "--test",
            str(demo_corpus["test"]), "--out", str(out), "--seeds", "2", "--jobs", "2", "--json", *sets]
    assert main(args) == 0
    captured = capfd.readouterr()
    printed = json.loads(captured.out)
    assert printed["model_dir"] == str(out / "ensemble") and printed["test"]["micro"]["f1"] >= 0.0
    assert "train: 400 sentences" in captured.err and "2 runs, 2 at a time in worker processes" in captured.err
    assert "dev (2-model ensemble)" not in captured.err  # --json: the document instead of the score table
    # One epoch more: each worker resumes its run and prints where from (a finished run would be read back
    # from its folder without a worker line: training/finished.py).
    assert main([*args, "--set", "training.epochs=3"]) == 0
    captured = capfd.readouterr()
    printed = json.loads(captured.out)
    assert printed["model_dir"] == str(out / "ensemble")
    assert captured.err.count("resuming from") == 2 and "after epoch 2" in captured.err
    seed = TINY_OVERRIDES["training.seed"]
    members = [out / f"seed-{s}" / "model-best" for s in (seed, seed + 1)]
    assert [load_model(m).config.training.seed for m in members] == [seed, seed + 1]
    assert is_ensemble_dir(out / "ensemble")
    ens = load_model(out / "ensemble")
    assert set(ens.metrics) == {"dev", "test"}
    assert ens.metrics["test"]["micro"]["f1"] == pytest.approx(printed["test"]["micro"]["f1"])
