"""``nerservice train --corpora C --final``: phase 1 picks the epoch count by the mean dev F1 over the corpora,
phase 2 trains one multi-corpus model on every corpus's train + dev for exactly that count and keeps model-last."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import TINY_OVERRIDES, write_two_corpora
from nerservice.cli.main import main

pytestmark = [pytest.mark.slow]

TINY = [x for k, v in {**TINY_OVERRIDES, "training.epochs": 5, "training.patience": 2, "model.lstm_layers": 1}.items()
        for x in ("--set", f"{k}={json.dumps(v)}")]


def test_final_recipe_on_several_corpora(tmp_path: Path, capsys) -> None:
    from nerservice.artifacts.formats import verify_manifest
    from nerservice.artifacts.layout import MULTI, MULTI_FORMAT
    from nerservice.data import read_corpus
    from nerservice.inference import Extractor
    from nerservice.lineage import corpus_fingerprint

    config = write_two_corpora(tmp_path / "c", sizes=(80, 20, 20))
    weighted = json.loads(config.read_text())
    weighted["corpora"][1]["weight"] = 2.0  # the weights hold in both phases
    config.write_text(json.dumps(weighted))
    out = tmp_path / "final"
    assert main(["train", "--corpora", str(config), "--out", str(out), "--quiet", "--final", "--json", *TINY]) == 0
    stdout = capsys.readouterr().out
    printed = json.loads(stdout)  # --json: the document alone (the corpus summary lines are on stderr)
    phase1 = json.loads((out / "phase1" / "model-best" / "metrics.json").read_text())
    best_epoch = phase1["epoch"]
    verify_manifest(out / "model-last")
    manifest = json.loads((out / "model-last" / "manifest.json").read_text())
    assert manifest["format"] == MULTI_FORMAT and MULTI in manifest["files"]
    assert not (out / "model-best").exists()
    history = json.loads((out / "model-last" / "history.json").read_text())
    assert [h["epoch"] for h in history] == list(range(1, best_epoch + 1))  # exactly phase 1's best epoch count
    lineage = json.loads((out / "model-last" / "lineage.json").read_text())
    p1_lineage = json.loads((out / "phase1" / "model-best" / "lineage.json").read_text())
    # "dis" has no label map, so its files' sentences are what the model saw: phase 2 on train + dev, phase 1
    # on train, dev the same in both
    train_s, dev_s = (read_corpus(tmp_path / "c" / "dis" / f"{split}.tsv").sentences for split in ("train", "dev"))
    assert lineage["corpus_fingerprints"]["dis/train"] == corpus_fingerprint([*train_s, *dev_s])
    assert p1_lineage["corpus_fingerprints"]["dis/train"] == corpus_fingerprint(train_s)
    assert lineage["corpus_fingerprints"]["dis/dev"] == p1_lineage["corpus_fingerprints"]["dis/dev"]
    assert lineage["corpus_fingerprints"]["chem/train"] != p1_lineage["corpus_fingerprints"]["chem/train"]
    recipe = lineage["recipe"]
    assert recipe["name"] == "final" and recipe["phase"] == 2 and recipe["phase2"]["epochs"] == best_epoch
    assert recipe["phase1"]["dev_f1"] == pytest.approx(phase1["dev"]["micro"]["f1"])
    final = json.loads((out / "model-last" / "metrics.json").read_text())
    assert set(final["test"]["per_corpus"]) == {"dis", "chem"} and final["epoch"] == best_epoch
    assert printed["model_dir"] == str(out / "model-last") and printed["best_epoch"] == best_epoch
    assert printed["test"]["per_corpus"]["chem"]["micro"]["f1"] == pytest.approx(
        final["test"]["per_corpus"]["chem"]["micro"]["f1"])
    multi = json.loads((out / "model-last" / MULTI).read_text())
    assert multi["corpora"]["corpora"][1]["weight"] == 2.0
    assert Extractor.load(out / "model-last").labels == ["Disease", "Drug"]  # it serves as any multi model does
    # A rerun reads both finished phases back from their folders (training/finished.py): nothing trains again.
    assert main(["train", "--corpora", str(config), "--out", str(out), "--final", "--json", *TINY]) == 0
    rerun = capsys.readouterr()
    assert rerun.err.count("read back from its folder") == 2 and "epoch 1:" not in rerun.err
    assert json.loads(rerun.out)["test"] == printed["test"]


def test_seeds_make_a_multi_corpus_ensemble(tmp_path: Path, capsys) -> None:
    """``--corpora --seeds 2``: two multi-corpus models (seeds S, S+1) and OUT/ensemble, scored per corpus on
    each corpus's own head — the same figures ``nerservice evaluate --corpora`` computes from the saved folder."""
    from nerservice.artifacts.ensemble_folder import is_ensemble_dir
    from nerservice.artifacts.formats import load_model
    from nerservice.inference import Extractor

    config = write_two_corpora(tmp_path / "c", sizes=(60, 20, 20))
    out = tmp_path / "seeds"
    tiny = [*TINY, "--set", "training.epochs=2"]
    assert main(["train", "--corpora", str(config), "--out", str(out), "--quiet", "--seeds", "2", "--json",
                 *tiny]) == 0
    stdout = capsys.readouterr().out
    printed = json.loads(stdout)
    seed = int(TINY_OVERRIDES["training.seed"])
    members = [out / f"seed-{s}" / "model-best" for s in (seed, seed + 1)]
    assert [load_model(m).config.training.seed for m in members] == [seed, seed + 1]
    assert is_ensemble_dir(out / "ensemble") and printed["model_dir"] == str(out / "ensemble")
    ens = load_model(out / "ensemble")
    assert set(ens.metrics) == {"dev", "test"} and set(ens.metrics["test"]["per_corpus"]) == {"dis", "chem"}
    assert printed["test"]["per_corpus"]["chem"]["micro"]["f1"] == pytest.approx(
        ens.metrics["test"]["per_corpus"]["chem"]["micro"]["f1"])
    assert main(["evaluate", str(out / "ensemble"), "--corpora", str(config), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    for name in ("dis", "chem"):
        assert again["per_corpus"][name]["micro"] == pytest.approx(ens.metrics["test"]["per_corpus"][name]["micro"])
    for m in members:  # each member's lineage says which recipe made it
        assert json.loads((m / "lineage.json").read_text())["recipe"] == {"name": "seeds", "seeds": [seed, seed + 1]}
    assert Extractor.load(out / "ensemble").labels == ["Disease", "Drug"]
